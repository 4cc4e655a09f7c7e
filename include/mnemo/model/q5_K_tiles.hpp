// q5_K weights again as tiles of 16 rows, the layout the one-token product reads on CPUs
// with AVX-512 VNNI and VBMI (model/detail/matmul_k_tiles.hpp): q4_K's (q4_K_tiles.hpp)
// with the fifth bits between the scales and the codes.
//
//   tile t (rows 16 t .. 16 t + 15), super-block b (values 256 b .. 256 b + 255), 2816 bytes:
//     [32]   the 16 rows' f16 d
//     [32]   the 16 rows' f16 dmin
//     [192]  3 vectors of 64 bytes; bytes 4 r .. 4 r + 3 of vector k are bytes
//            4 k .. 4 k + 3 of row r's 12 packed scale bytes
//     [512]  8 vectors; bytes 4 r .. 4 r + 3 of vector k are qh bytes 4 k .. 4 k + 3
//     [2048] 32 vectors; bytes 4 r .. 4 r + 3 of vector 8 c + k are code bytes
//            32 c + 4 k .. 32 c + 4 k + 3 of row r's super-block
//
// So the lane of vector 8 c + k that holds 4 low and 4 high nibbles of row r meets their
// fifth bits (bits 2 c and 2 c + 1) in the same lane of qh vector k. The same bytes as the
// rows (176 per super-block and row), only moved; weight_tiles (weight_tiles.hpp) holds
// them.
#pragma once

#include <cstddef>
#include <cstring>

#include "mnemo/dtype/weight_blocks.hpp"
#include "mnemo/model/q4_K_tiles.hpp"
#include "mnemo/model/weight.hpp"

namespace mnemo::model {

inline constexpr std::size_t k_q5_K_tile_qh_at = k_q4_K_tile_codes_at;  // after q4_K's head
inline constexpr std::size_t k_q5_K_tile_codes_at = k_q5_K_tile_qh_at + 8 * 64;
inline constexpr std::size_t k_q5_K_tile_block_bytes = k_tile_rows * sizeof(dtype::block_q5_K);
static_assert(sizeof(dtype::block_q5_K) == 176 && k_q5_K_tile_block_bytes == 2816 &&
              k_q5_K_tile_codes_at + 32 * 64 == k_q5_K_tile_block_bytes);

/// Copies the whole tiles of q5_K weight w into out (n_out / 16 * 16 rows' bytes).
inline void interleave_q5_K(const weight& w, std::byte* out) noexcept {
  const std::size_t n_blocks = w.n_in / 256, n_tiles = w.n_out / k_tile_rows;
  for (std::size_t t = 0; t < n_tiles; ++t)
    for (std::size_t b = 0; b < n_blocks; ++b) {
      std::byte* o = out + (t * n_blocks + b) * k_q5_K_tile_block_bytes;
      for (std::size_t r = 0; r < k_tile_rows; ++r) {
        dtype::block_q5_K blk;
        std::memcpy(&blk, w.row(t * k_tile_rows + r) + b * sizeof blk, sizeof blk);
        std::memcpy(o + 2 * r, &blk.d, 2);
        std::memcpy(o + k_q4_K_tile_d_bytes + 2 * r, &blk.dmin, 2);
        for (std::size_t k = 0; k < 3; ++k)
          std::memcpy(o + k_q4_K_tile_scales_at + 64 * k + 4 * r, blk.scales + 4 * k, 4);
        for (std::size_t k = 0; k < 8; ++k)
          std::memcpy(o + k_q5_K_tile_qh_at + 64 * k + 4 * r, blk.qh + 4 * k, 4);
        for (std::size_t v = 0; v < 32; ++v)
          std::memcpy(o + k_q5_K_tile_codes_at + 64 * v + 4 * r, blk.qs + 4 * v, 4);
      }
    }
}

}  // namespace mnemo::model
