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
#include "mnemo/model/tile_layout.hpp"
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
  const auto place = [](const dtype::block_q6_K& b, std::size_t r, std::byte* o) {
    std::memcpy(o + 2 * r, &b.d, 2);
    to_lanes(o + k_q6_K_tile_scales_at, r, b.scales, sizeof b.scales);
    to_lanes(o + k_q6_K_tile_ql_at, r, b.ql, sizeof b.ql);
    to_lanes(o + k_q6_K_tile_qh_at, r, b.qh, sizeof b.qh);
  };
  interleave_tiles<dtype::block_q6_K>(w, out, place);
}

}  // namespace mnemo::model
