// Products of a weight matrix with f32 activations, for every storage type and ISA:
//
//   mul_mat<Isa>(w, x, x_stride, n_tok, y, y_stride, n_threads, ws)
//       y[t] = W x[t] for t < n_tok:  [n_tok, n_in] f32 x W [n_out, n_in] -> [n_tok, n_out] f32
//   mul_mat_many<Isa>(products, x, x_stride, n_tok, n_threads, ws)
//       the same for several weights of one input (q, k, v; gate, up): one parallel region
//       and one rounding (from k_gemm_min_tokens tokens: one transpose) of x for all of
//       them, the same values as one mul_mat each
//   get_row<Isa>(w, r, out)           out = float(row r of W)   (embedding lookup) [n_in]
//
// Rows of x and y are x_stride / y_stride floats apart. n_tok == 1 is decode (a
// matrix-vector product, bound by the weight bytes); larger n_tok is prefill.
// Preconditions are debug asserts: the model checks shapes when it loads.
//
// Four kernels (docs/products.md): for up to 5 tokens (f32 / f16 / bf16: 16), the weight
// rows stream through dtype's dot or tiles decoded in registers (detail/matmul_gemv.inl);
// from 6 tokens (f32 / f16 / bf16: 17) to
// k_gemm_min_tokens - 1, strips of 4 weight rows are decoded once per call into L1 and
// register tiles of 4 rows x 2-4 tokens run over them (detail/matmul_small_m.inl); from
// k_gemm_min_tokens to the ISA's k_lanes_max_tokens (AVX-512: 128), x is transposed once
// and strips of 6 weight rows, decoded into L1, are broadcast against it
// (detail/matmul_lanes.inl); beyond, panels of weight rows are decoded and transposed
// into the workspace and the same register-tiled micro-kernel runs over them
// (detail/matmul_gemm.inl; both give the same floats). All sum in f32 with fma, in an
// ISA-dependent order; y does not depend on n_threads.
//
// For q8_0 and q4_0 weights, x is first rounded to q8_0 per block of 32 values, as ggml
// does (its vec_dot_type), on every path and ISA: one token on a CPU with AVX-512 VNNI
// and VBMI multiplies the 8-bit codes (detail/matmul_int8.hpp; for a q4_0 weight with
// tiles, q4_0_tiles.hpp, from the tiles: detail/matmul_int8_tiles.hpp), the other paths
// the dequantised values, so a token's product does not depend on how many tokens share
// the call beyond the order of the f32 sums.
//
// The weight-only types (q4_1, q5_0, q5_1, q2_K .. q6_K) take their own path, ggml's
// integer dot products: x rounded to q8_K / q8_1 / q8_0 blocks, exact integer sums per
// block, the same floats on every ISA (detail/matmul_quant.hpp, detail/quant_dot.hpp).
#pragma once

#include <algorithm>
#include <cstddef>
#include <span>
#include <type_traits>

#include "mnemo/base/aligned_buffer.hpp"
#include "mnemo/base/assert.hpp"
#include "mnemo/base/parallel.hpp"
#include "mnemo/base/status.hpp"
#include "mnemo/dtype/rows.hpp"
#include "mnemo/dtype/visit.hpp"
#include "mnemo/model/weight.hpp"
#include "mnemo/simd/isa.hpp"

#define MNEMO_MODEL_MATMUL_INTERNAL_ 1
#include "mnemo/model/detail/matmul_int8.hpp"
#include "mnemo/model/detail/matmul_int8_tiles.hpp"
#include "mnemo/model/detail/matmul_k_tiles.hpp"
#include "mnemo/model/detail/matmul_kernels.hpp"
#include "mnemo/model/detail/matmul_quant.hpp"
#undef MNEMO_MODEL_MATMUL_INTERNAL_

namespace mnemo::model {

/// From this many tokens on, mul_mat runs the register-tiled product (token lanes, then
/// packed panels); below, it streams weight rows (measured crossover, docs/products.md).
inline constexpr std::size_t k_gemm_min_tokens = 48;

/// The streaming product uses at most one thread per this many weight bytes: waking a
/// thread costs a few microseconds, the time one core streams ~64 KiB from DRAM.
inline constexpr std::size_t k_decode_min_bytes_per_thread = 64 * 1024;

/// The same for one token, whose 8-bit kernels stream faster per core: a 147 KiB q4_0
/// product took 9 us on one thread and 13 on two, a 272 KiB q8_0 one the same on both
/// (docs/products.md).
inline constexpr std::size_t k_one_token_min_bytes_per_thread = 128 * 1024;

/// Scratch the products reuse between calls (no allocation per call once warm): the
/// packed weight panels of the many-token product, one slice per thread, x rounded
/// to q8_0 for q8_0 / q4_0 weights, and x in 8-bit blocks for the weight-only types.
struct matmul_workspace {
  aligned_buffer<float> scratch;
  aligned_buffer<float> rounded_x;
  aligned_buffer<unsigned char> quant_x;

  /// Makes room for `floats` floats of scratch (keeps a larger buffer). no_space when
  /// it cannot.
  status reserve_floats(std::size_t floats) { return grow(scratch, floats); }

  /// Makes room for x rounded to q8_0 for n_tok tokens of n_in values on n_threads
  /// threads (the products of q8_0 / q4_0 weights grow it on first use otherwise).
  /// no_space when it cannot.
  status reserve_rounded_x(std::size_t n_tok, std::size_t n_in, int n_threads) {
    const auto nt = static_cast<std::size_t>(n_threads <= 0 ? default_thread_count() : n_threads);
    return grow(rounded_x, std::max(n_tok * n_in, nt * detail::int8_x_floats(n_in)));
  }

  /// Makes room for x of n_tok tokens in the 8-bit blocks of weight-only type t
  /// (q4_1 .. q6_K, whose products grow it on first use otherwise). no_space when it
  /// cannot.
  status reserve_quant_x(dtype::element_type t, std::size_t n_tok, std::size_t n_in) {
    return grow(quant_x, n_tok * detail::quant_x_bytes(t, n_in));
  }

 private:
  template <class T>
  static status grow(aligned_buffer<T>& b, std::size_t n) {
    if (b.size() >= n) return status{};
    auto made = aligned_buffer<T>::make(n);
    if (!made.is_ok()) return made.to_status();
    b = std::move(made).value();
    return status{};
  }
};

/// Floats of workspace mul_mat<Isa> needs per thread for the many-token product.
template <simd::isa_tag Isa = simd::native>
constexpr std::size_t matmul_scratch_floats_per_thread() noexcept {
  return detail::matmul_kernels<Isa>::gemm_scratch_floats;
}

/// Allocates the workspace for n_threads (0 = default_thread_count()) up front, so that
/// mul_mat never allocates. Optional: mul_mat grows the workspace itself, and falls back
/// to the streaming kernel (slower for many tokens, same results within rounding) when
/// memory is short.
template <simd::isa_tag Isa = simd::native>
status matmul_reserve(matmul_workspace& ws, int n_threads) {
  const int nt = n_threads <= 0 ? default_thread_count() : n_threads;
  return ws.reserve_floats(static_cast<std::size_t>(nt) * matmul_scratch_floats_per_thread<Isa>());
}

/// One product of a mul_mat_many call: y = W x, rows of y y_stride floats apart.
struct product_out {
  const weight* w;
  float* y;
  std::size_t y_stride;
};

namespace detail {
/// The panel the i-th item handed out works on, so that the items running at the same
/// time are far apart in y: panels [0, n) are cut into nt runs of consecutive panels,
/// and items take the runs' first panels, then their second ones, and so on. Threads
/// on adjacent panels write neighbouring bytes of every row of y (each core's
/// prefetchers then likely pull in lines the other is writing): handed out in order,
/// the 2-thread product was 1-18% slower (docs/products.md). A bijection on [0, n).
inline std::size_t spread_panel(std::size_t i, std::size_t n, std::size_t nt) noexcept {
  const std::size_t base = n / nt, rem = n % nt;
  const auto run_start = [&](std::size_t run) { return run * base + (run < rem ? run : rem); };
  if (i < base * nt) return run_start(i % nt) + i / nt;
  return run_start(i - base * nt) + base;
}

/// dst = x rounded to q8_0 and back: per block of 32, dx * round(x / dx) with ggml's dx
/// (dtype's q8_0 encode). [n] -> [n] @pre n % 32 == 0
template <simd::isa_tag Isa>
void round_through_q8_0(const float* x, float* dst, std::size_t n) noexcept {
  for (std::size_t b = 0; b < n; b += 32) {
    dtype::block_q8_0 q;
    dtype::encode_row<Isa>(x + b, &q, 32);
    dtype::decode_row<Isa>(&q, dst + b, 32);
  }
}

/// q8_0 and q4_0: weights whose products take x rounded to q8_0.
template <class E>
inline constexpr bool is_quantised =
    std::is_same_v<E, dtype::block_q8_0> || std::is_same_v<E, dtype::block_q4_0>;

/// x as the products of weights of type E take it: for q8_0 / q4_0, rounded to q8_0 into
/// ws.rounded_x (int8 == false), or left for the one-token 8-bit kernels, which pack it
/// per thread (int8 == true); when the workspace cannot grow, x as it is (the product
/// then differs by that rounding, ~1e-3 relative).
struct product_input {
  const float* x;
  std::size_t x_stride;
  bool int8 = false;
};

template <simd::isa_tag Isa, class E>
product_input prepare_input(const float* x, std::size_t x_stride, std::size_t n_tok,
                            std::size_t n_in, int nt, matmul_workspace& ws) {
  product_input in{x, x_stride};
  if constexpr (is_quantised<E>) {
    if (ws.reserve_rounded_x(n_tok, n_in, nt).is_ok()) {
      if constexpr (has_int8_decode<Isa>) in.int8 = n_tok == 1 && simd::detail::cpu().avx512_int8;
      if (!in.int8) {
        // token by token, on every thread for prefill
        float* rx = ws.rounded_x.data();
        const int round_threads = n_tok >= k_gemm_min_tokens ? nt : 1;
        parallel_for(n_tok, round_threads, [&](std::size_t t, int) {
          round_through_q8_0<Isa>(x + t * x_stride, rx + t * n_in, n_in);
        });
        in.x = rx;
        in.x_stride = n_in;
      }
    }
  }
  return in;
}

/// Rows a streaming range of w starts and ends on (0 and n_out aside): whole 16-row
/// tiles for a q4_0 weight with tiles under the one-token 8-bit kernel, else 4-row tiles.
template <class E>
std::size_t range_unit(const weight& w, bool int8) noexcept {
  const bool tiled = std::is_same_v<E, dtype::block_q4_0> && int8 && w.tiles != nullptr;
  return tiled ? k_q4_0_tile_rows : 4;
}

/// y rows [r0, r1) of W x, streaming: the one-token 8-bit kernels when in.int8 (from the
/// tiles where w has them and the range holds whole tiles; `packed` is the thread's
/// slice of ws.rounded_x), the small-M kernel for the token counts it takes when
/// the thread has `scratch` (its slice of ws.scratch, else null), else the f32 streaming
/// kernel. @pre r0 a multiple of range_unit, r1 too or n_out
template <simd::isa_tag Isa, class E>
void product_rows(const weight& w, std::size_t r0, std::size_t r1, const product_input& in,
                  std::size_t n_tok, float* y, std::size_t y_stride, float* packed,
                  float* scratch) noexcept {
  const auto* base = reinterpret_cast<const unsigned char*>(w.data);
  if constexpr (is_quantised<E> && has_int8_decode<Isa>) {
    if (in.int8) {
      std::size_t r = r0;  // rows from r on are read as rows
      if (range_unit<E>(w, true) == k_q4_0_tile_rows && r1 - r0 >= k_q4_0_tile_rows) {
        const std::size_t t0 = r0 / k_q4_0_tile_rows, t1 = r1 / k_q4_0_tile_rows;
        int8_tile_decode<Isa>::gemv(
            reinterpret_cast<const unsigned char*>(w.tiles) + r0 * w.row_bytes, t1 - t0,
            w.n_in / 32, in.x, reinterpret_cast<int8_x_block*>(packed), y + r0);
        r = t1 * k_q4_0_tile_rows;
      }
      if (r < r1)
        int8_decode<Isa>::template gemv1<E>(base + r * w.row_bytes, w.row_bytes, r1 - r, w.n_in,
                                            in.x, reinterpret_cast<int8_x_group*>(packed), y + r);
      return;
    }
  }
  if (scratch != nullptr) {
    matmul_kernels<Isa>::template gemv_small_m<E>(base + r0 * w.row_bytes, w.row_bytes, r1 - r0,
                                                  w.n_in, in.x, in.x_stride, n_tok, y + r0,
                                                  y_stride, scratch);
    return;
  }
  matmul_kernels<Isa>::template gemv<E>(base + r0 * w.row_bytes, w.row_bytes, r1 - r0, w.n_in, in.x,
                                        in.x_stride, n_tok, y + r0, y_stride);
}

/// Whether n_tok tokens take the small-M kernel (matmul_small_m.inl): fewer tokens run
/// faster through the streaming tiles (f32 / f16 / bf16 rows: up to k_few_tokens_max
/// tokens in register tiles of up to 8, two per call over the same rows), and from
/// k_gemm_min_tokens on the packed product runs.
template <simd::isa_tag Isa, class E>
constexpr bool takes_small_m(std::size_t n_tok) noexcept {
  using kernels = matmul_kernels<Isa>;
  const std::size_t min_tokens =
      is_quantised<E> ? kernels::k_small_m_min_tokens : kernels::k_few_tokens_max + 1;
  return n_tok >= min_tokens && n_tok <= kernels::k_small_m_max_tokens;
}

/// Thread slot `part`'s slice of ws.rounded_x for the 8-bit kernels' packed x, or null
/// when in does not take them.
inline float* packed_x_slice(matmul_workspace& ws, const product_input& in, std::size_t part,
                             std::size_t n_in) noexcept {
  return in.int8 ? ws.rounded_x.data() + part * int8_x_floats(n_in) : nullptr;
}

/// Threads for a streaming product of `bytes` of weights: one per
/// k_one_token_min_bytes_per_thread (one token) or k_decode_min_bytes_per_thread, at
/// most nt.
inline std::size_t streaming_parts(std::size_t bytes, std::size_t n_tok, int nt) noexcept {
  const std::size_t min_bytes =
      n_tok == 1 ? k_one_token_min_bytes_per_thread : k_decode_min_bytes_per_thread;
  const std::size_t by_size = std::max<std::size_t>(1, bytes / min_bytes);
  return std::min<std::size_t>(static_cast<std::size_t>(nt), by_size);
}

/// The streaming products of weights of type E, all of input `in`: their tiles
/// (range_unit) in order as one sequence, split into one contiguous range per thread (a
/// static split: each thread streams one long range, which the prefetchers follow), and
/// fewer threads when the weights are too small to pay for waking one.
template <simd::isa_tag Isa, class E>
void stream_products(std::span<const product_out> products, const product_input& in,
                     std::size_t n_tok, int nt, matmul_workspace& ws) {
  std::size_t n_units = 0, bytes = 0;
  for (const product_out& p : products) {
    const std::size_t unit = range_unit<E>(*p.w, in.int8);
    n_units += (p.w->n_out + unit - 1) / unit;
    bytes += p.w->n_out * p.w->row_bytes;
  }
  const std::size_t n_parts = streaming_parts(bytes, n_tok, nt);
  const std::size_t n_in = products.front().w->n_in;
  constexpr std::size_t scratch_floats = matmul_kernels<Isa>::gemm_scratch_floats;
  static_assert(matmul_kernels<Isa>::small_m_scratch_floats <= scratch_floats);
  const bool small_m =
      takes_small_m<Isa, E>(n_tok) && matmul_reserve<Isa>(ws, static_cast<int>(n_parts)).is_ok();
  parallel_for(n_parts, static_cast<int>(n_parts), [&](std::size_t part, int) {
    const std::size_t u0 = n_units * part / n_parts, u1 = n_units * (part + 1) / n_parts;
    float* packed = packed_x_slice(ws, in, part, n_in);
    float* scratch = small_m ? ws.scratch.data() + part * scratch_floats : nullptr;
    std::size_t first = 0;  // the first unit of the product at hand
    for (const product_out& p : products) {
      const weight& w = *p.w;
      const std::size_t unit = range_unit<E>(w, in.int8);
      const std::size_t units = (w.n_out + unit - 1) / unit;
      const std::size_t a = std::max(u0, first), b = std::min(u1, first + units);
      if (a < b) {
        const std::size_t r0 = (a - first) * unit, r1 = std::min(w.n_out, (b - first) * unit);
        product_rows<Isa, E>(w, r0, r1, in, n_tok, p.y, p.y_stride, packed, scratch);
      }
      first += units;
    }
  });
}

/// Whether the one-token product of w reads its k-quant tiles (matmul_k_tiles.hpp).
template <simd::isa_tag Isa>
bool reads_k_tiles(const weight& w) noexcept {
  if constexpr (has_k_tile_decode<Isa>)
    return is_k_tiled(w.type) && w.tiles != nullptr && simd::detail::cpu().avx512_int8;
  return false;
}

/// The token-lane product (detail/matmul_lanes.inl) of n_tok tokens for each of
/// `products` (one input, one storage type and width), when the ISA takes that count and
/// the workspace can hold x^T: x transposed once over the threads, then the products'
/// runs of rows in one parallel region, handed out by ticket in spread_panel's order.
/// False when it did not run.
template <simd::isa_tag Isa, class E>
bool lanes_products(std::span<const product_out> products, const product_input& in,
                    std::size_t n_tok, int nt, matmul_workspace& ws) {
  using kernels = matmul_kernels<Isa>;
  if constexpr (kernels::k_lanes_max_tokens == 0) {
    return false;
  } else {
    if (n_tok > kernels::k_lanes_max_tokens) return false;
    const std::size_t n_in = products.front().w->n_in;
    const std::size_t per_thread = kernels::lanes_scratch_floats;
    const std::size_t slices = static_cast<std::size_t>(nt) * per_thread;
    if (!ws.reserve_floats(slices + kernels::lanes_x_floats(n_tok, n_in)).is_ok()) return false;
    float* xt = ws.scratch.data() + slices;
    constexpr std::size_t columns = 256;  // x^T columns per packing item
    parallel_for((n_in + columns - 1) / columns, nt, [&](std::size_t i, int) {
      kernels::pack_lanes_x(in.x, in.x_stride, n_tok, n_in, i * columns,
                            std::min(n_in, (i + 1) * columns), xt);
    });
    constexpr std::size_t item_rows = 8 * kernels::k_mr;
    std::size_t n_items = 0;
    for (const product_out& p : products) n_items += (p.w->n_out + item_rows - 1) / item_rows;
    parallel_for(n_items, nt, [&](std::size_t item, int thread) {
      std::size_t i = spread_panel(item, n_items, static_cast<std::size_t>(nt));
      for (const product_out& p : products) {
        const weight& w = *p.w;
        const std::size_t items = (w.n_out + item_rows - 1) / item_rows;
        if (i >= items) {
          i -= items;
          continue;
        }
        const std::size_t r0 = i * item_rows;
        kernels::template gemm_lanes<E>(
            reinterpret_cast<const unsigned char*>(w.data) + r0 * w.row_bytes, w.row_bytes,
            std::min(item_rows, w.n_out - r0), n_in, xt, n_tok, p.y + r0, p.y_stride,
            ws.scratch.data() + static_cast<std::size_t>(thread) * per_thread);
        return;
      }
    });
    return true;
  }
}

/// mul_mat of a weight-only quantised type (detail/matmul_quant.hpp): x rounded to the
/// type's 8-bit blocks, then integer dot products; the rows split over the threads as
/// the streaming product splits them, by weight bytes below k_gemm_min_tokens. One
/// token of a k-quant weight with tiles reads the tiles (the rows past the
/// last whole tile: dot), with the same values.
template <simd::isa_tag Isa>
void quant_mul_mat(const weight& w, const float* x, std::size_t x_stride, std::size_t n_tok,
                   float* y, std::size_t y_stride, int nt, matmul_workspace& ws) {
  const bool tiled = n_tok == 1 && reads_k_tiles<Isa>(w);
  // whole 4-row tiles per part, or whole 16-row tiles of the tile layout
  const std::size_t unit = tiled ? k_tile_rows : 4;
  const std::size_t n_units = (w.n_out + unit - 1) / unit;
  // Many tokens: k_quant_parts_per_thread parts per thread, handed out by ticket, so that
  // a thread slowed by another process leaves its share to the others (one range per
  // thread waited for the slowest).
  const std::size_t n_parts =
      n_tok < k_gemm_min_tokens
          ? streaming_parts(w.n_bytes(), n_tok, nt)
          : std::min<std::size_t>(
                nt == 1 ? 1 : static_cast<std::size_t>(nt) * k_quant_parts_per_thread, n_units);
  // Never more threads than asked: the parts beyond nt are tickets, not threads.
  const int n_workers =
      static_cast<int>(std::min<std::size_t>(static_cast<std::size_t>(nt), n_parts));
  const auto rows_of = [&](std::size_t part, std::size_t& r0, std::size_t& r1) {
    r0 = n_units * part / n_parts * unit;
    r1 = std::min(w.n_out, n_units * (part + 1) / n_parts * unit);
  };
  visit_weight_block(w.type, [&]<class E>(dtype::type_tag<E>) {
    const std::size_t x_bytes = quant_x_bytes(w.type, w.n_in);
    if (!ws.reserve_quant_x(w.type, n_tok, w.n_in).is_ok()) {
      parallel_for(n_parts, n_workers, [&](std::size_t part, int) {
        std::size_t r0, r1;
        rows_of(part, r0, r1);
        decoded_rows<E>(w, r0, r1, x, x_stride, n_tok, y, y_stride);
      });
      return;
    }
    unsigned char* qx = ws.quant_x.data();
    parallel_for(n_tok, n_tok >= k_gemm_min_tokens ? nt : 1, [&](std::size_t t, int) {
      quant_dot<Isa>::template quantize_x<E>(
          x + t * x_stride, reinterpret_cast<activation_block_t<E>*>(qx + t * x_bytes), w.n_in);
    });
    parallel_for(n_parts, n_workers, [&](std::size_t part, int) {
      std::size_t r0, r1;
      rows_of(part, r0, r1);
      if constexpr (has_k_tiles<E> && has_k_tile_decode<Isa>) {
        if (tiled) {
          const std::size_t n_tiles = (r1 - r0) / k_tile_rows;
          k_tile_decode<Isa>::template gemv<E>(
              reinterpret_cast<const unsigned char*>(w.tiles) + r0 * w.row_bytes, n_tiles,
              w.n_in / dtype::k_super_block, reinterpret_cast<const dtype::block_q8_K*>(qx),
              y + r0);
          r0 += n_tiles * k_tile_rows;
        }
      }
      quant_rows<Isa, E>(w, r0, r1, qx, x_bytes, n_tok, y, y_stride);
    });
  });
}

}  // namespace detail

template <simd::isa_tag Isa = simd::native>
void mul_mat(const weight& w, const float* x, std::size_t x_stride, std::size_t n_tok, float* y,
             std::size_t y_stride, int n_threads, matmul_workspace& ws) {
  using kernels = detail::matmul_kernels<Isa>;
  MNEMO_DASSERT(x_stride >= w.n_in && y_stride >= w.n_out);
  MNEMO_DASSERT(w.n_in % dtype::block_size(w.type) == 0);
  if (n_tok == 0 || w.n_out == 0) return;
  const int nt = n_threads <= 0 ? default_thread_count() : n_threads;
  if (!dtype::is_kv_type(w.type)) {
    detail::quant_mul_mat<Isa>(w, x, x_stride, n_tok, y, y_stride, nt, ws);
    return;
  }
  const auto* base = reinterpret_cast<const unsigned char*>(w.data);
  dtype::visit(w.type, [&]<class E>(dtype::type_tag<E>) {
    const detail::product_input in =
        detail::prepare_input<Isa, E>(x, x_stride, n_tok, w.n_in, nt, ws);
    const product_out one{&w, y, y_stride};
    if (n_tok >= k_gemm_min_tokens && detail::lanes_products<Isa, E>({&one, 1}, in, n_tok, nt, ws))
      return;
    if (n_tok >= k_gemm_min_tokens && matmul_reserve<Isa>(ws, nt).is_ok()) {
      // Items: panels of k_nr outputs; with fewer panels than 2 per thread, also blocks
      // of tokens (each block packs the panel again, so only when threads would idle).
      // Handed out dynamically, not as one range per thread: a thread that is preempted
      // on a shared machine then costs a panel, not half the call (docs/products.md),
      // and in detail::spread_panel's order.
      constexpr std::size_t nr = kernels::k_nr;
      const std::size_t n_panels = (w.n_out + nr - 1) / nr;
      const std::size_t want = 2 * static_cast<std::size_t>(nt);
      std::size_t n_tb = n_panels >= want ? 1 : (want + n_panels - 1) / n_panels;
      n_tb = std::min(n_tb, (n_tok + 63) / 64);
      const std::size_t tb = (n_tok + n_tb - 1) / n_tb;
      float* scratch = ws.scratch.data();
      parallel_for(n_panels * n_tb, nt, [&](std::size_t item, int thread) {
        const std::size_t panel =
            detail::spread_panel(item % n_panels, n_panels, static_cast<std::size_t>(nt));
        const std::size_t t0 = item / n_panels * tb;
        const std::size_t o0 = panel * nr, t1 = std::min(n_tok, t0 + tb);
        if (t0 >= t1) return;
        kernels::template gemm_panel<E>(
            base + o0 * w.row_bytes, w.row_bytes, std::min(nr, w.n_out - o0), w.n_in,
            in.x + t0 * in.x_stride, in.x_stride, t1 - t0, y + t0 * y_stride + o0, y_stride,
            scratch + static_cast<std::size_t>(thread) * kernels::gemm_scratch_floats);
      });
      return;
    }
    detail::stream_products<Isa, E>({&one, 1}, in, n_tok, nt, ws);
  });
}

/// mul_mat for each of `products`, all of one input x (the same n_in and storage type,
/// as q, k and v, or gate and up, are): below k_gemm_min_tokens the weights' rows are
/// split over the threads as one sequence, so the group costs one parallel region, x is
/// rounded once (the one-token 8-bit kernels still pack it once per product a thread
/// reaches: rows and tiles take different packings), and a small weight (k, v) is not
/// streamed by one thread alone. From k_gemm_min_tokens to the ISA's k_lanes_max_tokens
/// x is transposed once for the group and the token-lane product runs every weight's rows
/// in one parallel region. The values are those of one mul_mat each. Products of other
/// types or widths, and longer prefills, run one by one.
template <simd::isa_tag Isa = simd::native>
void mul_mat_many(std::span<const product_out> products, const float* x, std::size_t x_stride,
                  std::size_t n_tok, int n_threads, matmul_workspace& ws) {
  if (products.empty() || n_tok == 0) return;
  const weight& w0 = *products.front().w;
  bool alike = true;
  for (const product_out& p : products) {
    MNEMO_DASSERT(x_stride >= p.w->n_in && p.y_stride >= p.w->n_out);
    alike = alike && p.w->type == w0.type && p.w->n_in == w0.n_in && dtype::is_kv_type(p.w->type);
  }
  // Grouped only where a grouped kernel runs, so that x is not rounded for nothing.
  const bool grouped = alike && (n_tok < k_gemm_min_tokens ||
                                 n_tok <= detail::matmul_kernels<Isa>::k_lanes_max_tokens);
  const int nt = n_threads <= 0 ? default_thread_count() : n_threads;
  bool done = false;
  if (grouped)
    dtype::visit(w0.type, [&]<class E>(dtype::type_tag<E>) {
      const detail::product_input in =
          detail::prepare_input<Isa, E>(x, x_stride, n_tok, w0.n_in, nt, ws);
      if (n_tok < k_gemm_min_tokens) {
        detail::stream_products<Isa, E>(products, in, n_tok, nt, ws);
        done = true;
      } else {
        done = detail::lanes_products<Isa, E>(products, in, n_tok, nt, ws);
      }
    });
  if (!done)
    for (const product_out& p : products)
      mul_mat<Isa>(*p.w, x, x_stride, n_tok, p.y, p.y_stride, n_threads, ws);
}

template <simd::isa_tag Isa = simd::native>
void get_row(const weight& w, std::size_t r, float* out) noexcept {
  MNEMO_DASSERT(r < w.n_out);
  if (!dtype::is_kv_type(w.type)) {
    dtype::decode_any_row<Isa>(w.type, w.row(r), out, w.n_in);
    return;
  }
  dtype::visit(w.type, [&]<class E>(dtype::type_tag<E>) {
    dtype::decode_row<Isa>(reinterpret_cast<const E*>(w.row(r)), out, w.n_in);
  });
}

// MNEMO_PRODUCTS_DECLARE_(Isa, prefix): the two products of one ISA, for an explicit
// instantiation (prefix empty) or its declaration (prefix extern).
#define MNEMO_PRODUCTS_DECLARE_(Isa, prefix)                                                       \
  prefix template void mul_mat<Isa>(const weight&, const float*, std::size_t, std::size_t, float*, \
                                    std::size_t, int, matmul_workspace&);                          \
  prefix template void mul_mat_many<Isa>(std::span<const product_out>, const float*, std::size_t,  \
                                         std::size_t, int, matmul_workspace&);
#define MNEMO_PRODUCTS_INSTANTIATE(Isa) MNEMO_PRODUCTS_DECLARE_(Isa, )
#define MNEMO_PRODUCTS_EXTERN_(Isa) MNEMO_PRODUCTS_DECLARE_(Isa, extern)

#if defined(MNEMO_EXTERN_KERNELS)
// The products of the native ISA are compiled once, in the mnemo::kernels library
// (src/kernels/products.cpp), not in every translation unit that runs a model
// (docs/compile-time.md).
MNEMO_PRODUCTS_EXTERN_(simd::native)
#endif
#if defined(MNEMO_EXTERN_OTHER_ISA_KERNELS)
// The other compiled ISAs' too (src/kernels/other_isas.cpp): the tests and benches that
// compare every ISA the CPU has would otherwise compile each of them again.
MNEMO_FOREACH_OTHER_ISA(MNEMO_PRODUCTS_EXTERN_)
#endif
#undef MNEMO_PRODUCTS_EXTERN_

}  // namespace mnemo::model
