// mul_mat for the weight-only quantised types (q4_1, q5_0, q5_1, q2_K .. q6_K), as ggml
// computes them on the CPU: each token's x is rounded to the weight type's activation
// blocks once (q8_K, q8_1 or q8_0: detail/quant_dot.hpp), then every output is one
// integer dot product per block (quant_dot<Isa>::dot; for the k-quants on x86 with two or
// more tokens, k_tile8_rows / k_tile_rows: 8 rows at a time on AVX-512, 4 on AVX2, each
// super-block unpacked once per token group, the same floats). The rows are split over the
// threads (matmul.hpp's quant_mul_mat: one range per thread for few tokens, ranges handed out by
// ticket for many), and tokens go through a range in groups (quant_token_group: up to 160 KiB of
// rounded x), so that a group's rounded x stays in L2 while the rows stream past it once per group.
#pragma once

#if !defined(MNEMO_MODEL_MATMUL_INTERNAL_)
#error "mnemo/model/detail/matmul_quant.hpp is internal: include mnemo/model/matmul.hpp"
#endif

#include <algorithm>
#include <cstddef>
#include <type_traits>

#include "mnemo/base/parallel.hpp"
#include "mnemo/dtype/element_type.hpp"
#include "mnemo/dtype/visit.hpp"
#include "mnemo/dtype/weight_decode.hpp"
#include "mnemo/model/detail/quant_dot.hpp"
#include "mnemo/model/weight.hpp"
#include "mnemo/simd/prefetch.hpp"

namespace mnemo::model::detail {

/// Tokens whose rounded x a thread's rows meet before the next row: as many as fit in
/// this many bytes (L2-resident while the rows stream past them), and at least
/// k_quant_min_token_group. 64 tokens of x rounded to q8_K are 73 KiB per 1024 values,
/// so the short prompts and batched decode of d_model 1024..2048 read each row once per
/// call; before, groups of 16 read the weights n_tok / 16 times from DRAM.
inline constexpr std::size_t k_quant_group_bytes = 160 * 1024;
inline constexpr std::size_t k_quant_min_token_group = 16;

/// Tokens per group for x of `x_bytes` per token.
inline std::size_t quant_token_group(std::size_t x_bytes) noexcept {
  return std::max(k_quant_min_token_group, k_quant_group_bytes / x_bytes);
}

/// Parts of a many-token product per thread (each a range of whole 4-row tiles).
inline constexpr std::size_t k_quant_parts_per_thread = 8;

/// How far ahead of the row being read the rows are prefetched: as the one-token
/// streaming kernel (matmul_gemv.inl's k_decode_prefetch_bytes), software prefetch is
/// what streams the weights on the Zen VMs this was measured on.
inline constexpr std::size_t k_quant_prefetch_bytes = 8192;

/// fn(type_tag<E>{}) for the weight block type E that `t` names. @pre !is_kv_type(t)
template <class Fn>
decltype(auto) visit_weight_block(dtype::element_type t, Fn&& fn) {
  using dtype::type_tag;
  switch (t) {
    case dtype::element_type::q4_1: return fn(type_tag<dtype::block_q4_1>{});
    case dtype::element_type::q5_0: return fn(type_tag<dtype::block_q5_0>{});
    case dtype::element_type::q5_1: return fn(type_tag<dtype::block_q5_1>{});
    case dtype::element_type::q2_K: return fn(type_tag<dtype::block_q2_K>{});
    case dtype::element_type::q3_K: return fn(type_tag<dtype::block_q3_K>{});
    case dtype::element_type::q4_K: return fn(type_tag<dtype::block_q4_K>{});
    case dtype::element_type::q5_K: return fn(type_tag<dtype::block_q5_K>{});
    default: break;
  }
  MNEMO_DASSERT(t == dtype::element_type::q6_K);
  return fn(type_tag<dtype::block_q6_K>{});
}

/// Bytes of one token's x rounded for weights of type t with n_in values.
inline std::size_t quant_x_bytes(dtype::element_type t, std::size_t n_in) noexcept {
  return visit_weight_block(t, [&]<class E>(dtype::type_tag<E>) {
    return n_in / dtype::element_traits<E>::block_size * sizeof(activation_block_t<E>);
  });
}

/// y rows [r0, r1) of W x for n_tok tokens of rounded x (qx, `x_bytes` apart).
template <simd::isa_tag Isa, class E>
void quant_rows(const weight& w, std::size_t r0, std::size_t r1, const unsigned char* qx,
                std::size_t x_bytes, std::size_t n_tok, float* y, std::size_t y_stride) noexcept {
  using A = activation_block_t<E>;
  const std::size_t nb = w.n_in / dtype::element_traits<E>::block_size;
  const simd::prefetch_target target = simd::current_prefetch_target();
  // The rows k_quant_prefetch_bytes ahead, never past the range (another thread's).
  const std::size_t ahead = std::max<std::size_t>(1, k_quant_prefetch_bytes / w.row_bytes);
  const std::size_t group = quant_token_group(x_bytes);
  const auto prefetch_row = [&](std::size_t i) {
    const auto* p = reinterpret_cast<const unsigned char*>(w.row(i));
    for (std::size_t k = 0; k < w.row_bytes; k += 64) simd::prefetch(p + k, target);
  };
  for (std::size_t t0 = 0; t0 < n_tok; t0 += group) {
    const std::size_t t1 = std::min(n_tok, t0 + group);
    std::size_t r = r0;
    // Two or more tokens: R rows at a time, each super-block unpacked once per group,
    // the next tile's rows prefetched.
    const auto tiles = [&]<std::size_t R>(std::integral_constant<std::size_t, R>, auto kernel) {
      for (; t1 - t0 >= 2 && r + R <= r1; r += R) {
        for (std::size_t k = R; k < 2 * R && r + k < r1; ++k) prefetch_row(r + k);
        const E* rows[R];
        for (std::size_t k = 0; k < R; ++k) rows[k] = reinterpret_cast<const E*>(w.row(r + k));
        kernel(rows, nb, qx, x_bytes, t0, t1, y + r, y_stride);
      }
    };
    if constexpr (is_k_quant<E> && quant_dot<Isa>::k_tiles8)
      tiles(std::integral_constant<std::size_t, 8>{}, quant_dot<Isa>::template k_tile8_rows<E>);
    if constexpr (is_k_quant<E> && quant_dot<Isa>::k_tiles)
      tiles(std::integral_constant<std::size_t, 4>{}, quant_dot<Isa>::template k_tile_rows<E>);
    for (; r < r1; ++r) {
      if (r + ahead < r1) prefetch_row(r + ahead);
      const E* row = reinterpret_cast<const E*>(w.row(r));
      for (std::size_t t = t0; t < t1; ++t)
        y[t * y_stride + r] =
            quant_dot<Isa>::dot(row, reinterpret_cast<const A*>(qx + t * x_bytes), nb);
    }
  }
}

/// The product with x as it is, for when the workspace cannot hold the rounded x: each
/// row decoded block by block and multiplied in f32 (slower; differs from the rounded
/// product by the activation rounding, ~1e-3 relative).
template <class E>
void decoded_rows(const weight& w, std::size_t r0, std::size_t r1, const float* x,
                  std::size_t x_stride, std::size_t n_tok, float* y,
                  std::size_t y_stride) noexcept {
  constexpr std::size_t bs = dtype::element_traits<E>::block_size;
  float v[bs];
  for (std::size_t r = r0; r < r1; ++r) {
    const E* row = reinterpret_cast<const E*>(w.row(r));
    for (std::size_t t = 0; t < n_tok; ++t) {
      float acc = 0.0f;
      for (std::size_t b = 0; b < w.n_in / bs; ++b) {
        dtype::decode_block(row[b], v);
        for (std::size_t i = 0; i < bs; ++i) acc += v[i] * x[t * x_stride + b * bs + i];
      }
      y[t * y_stride + r] = acc;
    }
  }
}

}  // namespace mnemo::model::detail
