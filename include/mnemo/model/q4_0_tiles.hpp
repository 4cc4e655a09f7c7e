// q4_0 weights again as tiles of 16 rows, the layout the one-token product reads on CPUs
// with AVX-512 VNNI and VBMI (model/detail/matmul_int8_tiles.hpp):
//
//   tile t (rows 16 t .. 16 t + 15), block b (values 32 b .. 32 b + 31), 288 bytes:
//     [32]  the 16 rows' f16 scales
//     [256] 4 vectors of 64 bytes; bytes 4 r .. 4 r + 3 of vector j are code bytes
//           4 j .. 4 j + 3 of row r's block
//
// The same bytes as the rows (18 per block and row), only moved. weight_tiles copies a
// weight's whole tiles (the last n_out % 16 rows stay rows only) and points
// weight::tiles at them; the other products and get_row keep reading the rows. So a
// model's q4_0 weights take their bytes twice in memory: the rows in the file's mapping
// (clean pages the kernel can drop while only one-token products run) and the tiles.
#pragma once

#include <cstddef>
#include <cstring>
#include <span>
#include <type_traits>
#include <utility>
#include <vector>

#include "mnemo/base/aligned_buffer.hpp"
#include "mnemo/dtype/types.hpp"
#include "mnemo/gguf/tensor.hpp"
#include "mnemo/model/weight.hpp"
#include "mnemo/simd/cpu.hpp"
#include "mnemo/simd/isa.hpp"

namespace mnemo::model {

inline constexpr std::size_t k_q4_0_tile_rows = 16;
inline constexpr std::size_t k_q4_0_tile_scale_bytes = k_q4_0_tile_rows * 2;
inline constexpr std::size_t k_q4_0_tile_block_bytes = k_q4_0_tile_rows * sizeof(dtype::block_q4_0);
static_assert(sizeof(dtype::block_q4_0) == 18 && k_q4_0_tile_block_bytes == 288);

/// Bytes of w's whole tiles (n_out / 16 of them; 0 for fewer than 16 rows).
inline std::size_t q4_0_tiles_bytes(const weight& w) noexcept {
  return w.n_out / k_q4_0_tile_rows * k_q4_0_tile_rows * w.row_bytes;
}

/// Copies the whole tiles of q4_0 weight w into out (q4_0_tiles_bytes(w) bytes).
inline void interleave_q4_0(const weight& w, std::byte* out) noexcept {
  const std::size_t n_blocks = w.n_in / 32, n_tiles = w.n_out / k_q4_0_tile_rows;
  for (std::size_t t = 0; t < n_tiles; ++t)
    for (std::size_t b = 0; b < n_blocks; ++b) {
      std::byte* o = out + (t * n_blocks + b) * k_q4_0_tile_block_bytes;
      for (std::size_t r = 0; r < k_q4_0_tile_rows; ++r) {
        const std::byte* block = w.row(t * k_q4_0_tile_rows + r) + b * sizeof(dtype::block_q4_0);
        std::memcpy(o + 2 * r, block, 2);  // the f16 scale
        for (std::size_t j = 0; j < 4; ++j)
          std::memcpy(o + k_q4_0_tile_scale_bytes + 64 * j + 4 * r, block + 2 + 4 * j, 4);
      }
    }
}

/// Bytes that the tiles of every q4_0 matrix among `tensors` take at 64-byte offsets:
/// the most a model's weight_tiles can be asked for while it binds them.
inline std::size_t q4_0_tiles_bound(std::span<const gguf::tensor> tensors) noexcept {
  std::size_t n = 0;
  for (const gguf::tensor& t : tensors)
    if (t.element_type == dtype::element_type::q4_0 && t.n_dims == 2)
      n += (t.dims[1] / k_q4_0_tile_rows * k_q4_0_tile_rows * t.row_bytes + 63) / 64 * 64;
  return n;  // the file holds these bytes as rows, so the sum cannot overflow
}

/// Owns the tiles of a model's q4_0 weights.
class weight_tiles {
 public:
  /// Whether one-token products at simd::native, the ISA models run at by default, read
  /// tiles on this CPU: native is AVX-512 and the CPU has VNNI and VBMI. (Elsewhere the
  /// tiles would only take memory; a host that runs AVX-512 products in a build whose
  /// native ISA is narrower attaches them with `always`.)
  static bool used() noexcept {
    return std::is_same_v<simd::native, simd::avx512> && simd::detail::cpu().avx512_int8;
  }

  /// Where used(), one buffer of `bytes` (q4_0_tiles_bound of a file) that attach fills
  /// before it allocates buffers of its own: a model's tiles then share huge pages, where
  /// one buffer per weight is mostly too small for them (the 155M q4_0 Llama's one-token
  /// products: 0.84-0.87 -> 0.89-0.90 of the paired read pass, its generation +15%;
  /// docs/performance.md). Its pages are touched only as tiles are written, so a bound
  /// costs address space, not memory. Only the first call that gets a buffer counts;
  /// without one attach allocates per weight.
  void reserve(std::size_t bytes) {
    if (!arena_.empty() || bytes == 0 || !used()) return;
    auto made = aligned_buffer<std::byte>::make_for_overwrite(bytes);
    if (made.is_ok()) arena_ = std::move(made).value();
  }

  /// For a q4_0 weight of 16 rows or more (and, unless `always`, where used()): copies
  /// its whole tiles into memory this store owns and points w.tiles at them. Otherwise,
  /// and when the memory cannot be allocated (the products then read the rows, with the
  /// same values up to the order of the f32 sums), w is left as it is.
  void attach(weight& w, bool always = false) {
    if (w.type != dtype::element_type::q4_0 || !(always || used())) return;
    const std::size_t n = q4_0_tiles_bytes(w);
    if (n == 0) return;
    std::byte* out = take(n);
    if (out == nullptr) return;
    interleave_q4_0(w, out);
    w.tiles = out;
    bytes_ += n;
  }

  /// Bytes of tiles held.
  std::size_t bytes() const noexcept { return bytes_; }

 private:
  /// n bytes at the next 64-byte offset of the reserved buffer, else a buffer of their
  /// own; null when neither can be had.
  std::byte* take(std::size_t n) {
    const std::size_t at = (arena_used_ + 63) / 64 * 64;
    if (at <= arena_.size() && n <= arena_.size() - at) {
      arena_used_ = at + n;
      return arena_.data() + at;
    }
    auto made = aligned_buffer<std::byte>::make(n);
    if (!made.is_ok()) return nullptr;
    buffers_.push_back(std::move(made).value());
    return buffers_.back().data();
  }

  aligned_buffer<std::byte> arena_;  // reserve()'s buffer, filled from the front
  std::size_t arena_used_ = 0;
  std::vector<aligned_buffer<std::byte>> buffers_;  // tiles that did not fit in it
  std::size_t bytes_ = 0;
};

}  // namespace mnemo::model
