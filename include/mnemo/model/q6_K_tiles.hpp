// q6_K weights again as tiles of 16 rows, the layout the one-token product reads on CPUs
// with AVX-512 VNNI and VBMI (model/detail/matmul_k_tiles.hpp):
//
//   tile t (rows 16 t .. 16 t + 15), super-block b (values 256 b .. 256 b + 255), 3360 bytes:
//     [32]   the 16 rows' f16 d
//     [256]  4 vectors of 64 bytes; bytes 4 r .. 4 r + 3 of vector k are row r's int8
//            scales 4 k .. 4 k + 3
//     [2048] 32 vectors; bytes 4 r .. 4 r + 3 of vector j are ql bytes 4 j .. 4 j + 3 of
//            row r's super-block
//     [1024] 16 vectors; bytes 4 r .. 4 r + 3 of vector j are qh bytes 4 j .. 4 j + 3
//
// So a 32-bit lane holds one row throughout: with l = 4 j' .. 4 j' + 3, ql vectors
// 16 h + j' and 16 h + 8 + j' and qh vector 8 h + j' hold the codes of values
// 128 h + 32 k + l for k = 0..3, 4 consecutive values of one scale group each. The same
// bytes as the rows (210 per super-block and row), only moved; weight_tiles
// (weight_tiles.hpp) holds them.
#pragma once

#include <cstddef>
#include <cstring>

#include "mnemo/dtype/weight_blocks.hpp"
#include "mnemo/model/weight.hpp"

namespace mnemo::model {

inline constexpr std::size_t k_q6_K_tile_scales_at = 2 * k_tile_rows;
inline constexpr std::size_t k_q6_K_tile_ql_at = k_q6_K_tile_scales_at + 4 * 64;
inline constexpr std::size_t k_q6_K_tile_qh_at = k_q6_K_tile_ql_at + 32 * 64;
inline constexpr std::size_t k_q6_K_tile_block_bytes = k_tile_rows * sizeof(dtype::block_q6_K);
static_assert(sizeof(dtype::block_q6_K) == 210 && k_q6_K_tile_block_bytes == 3360 &&
              k_q6_K_tile_qh_at + 16 * 64 == k_q6_K_tile_block_bytes);

/// Copies the whole tiles of q6_K weight w into out (n_out / 16 * 16 rows' bytes).
inline void interleave_q6_K(const weight& w, std::byte* out) noexcept {
  const std::size_t n_blocks = w.n_in / 256, n_tiles = w.n_out / k_tile_rows;
  for (std::size_t t = 0; t < n_tiles; ++t)
    for (std::size_t b = 0; b < n_blocks; ++b) {
      std::byte* o = out + (t * n_blocks + b) * k_q6_K_tile_block_bytes;
      for (std::size_t r = 0; r < k_tile_rows; ++r) {
        dtype::block_q6_K blk;
        std::memcpy(&blk, w.row(t * k_tile_rows + r) + b * sizeof blk, sizeof blk);
        std::memcpy(o + 2 * r, &blk.d, 2);
        for (std::size_t k = 0; k < 4; ++k)
          std::memcpy(o + k_q6_K_tile_scales_at + 64 * k + 4 * r, blk.scales + 4 * k, 4);
        for (std::size_t j = 0; j < 32; ++j)
          std::memcpy(o + k_q6_K_tile_ql_at + 64 * j + 4 * r, blk.ql + 4 * j, 4);
        for (std::size_t j = 0; j < 16; ++j)
          std::memcpy(o + k_q6_K_tile_qh_at + 64 * j + 4 * r, blk.qh + 4 * j, 4);
      }
    }
}

}  // namespace mnemo::model
