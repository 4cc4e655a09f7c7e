// q2_K weights again as tiles of 16 rows, the layout the one-token product reads on CPUs
// with AVX-512 VNNI and VBMI (model/detail/matmul_k_tiles.hpp):
//
//   tile t (rows 16 t .. 16 t + 15), super-block b (values 256 b .. 256 b + 255), 1344 bytes:
//     [32]   the 16 rows' f16 d
//     [32]   the 16 rows' f16 dmin
//     [256]  4 vectors of 64 bytes; bytes 4 r .. 4 r + 3 of vector k are row r's scale
//            bytes 4 k .. 4 k + 3 (scale of group 4 k + i in the low nibble, min in the high)
//     [1024] 16 vectors; bytes 4 r .. 4 r + 3 of vector v are qs bytes 4 v .. 4 v + 3
//
// So a 32-bit lane holds one row throughout: qs vector 8 h + j' holds, in bits 2 k and
// 2 k + 1 of its bytes, the codes of values 128 h + 32 k + 4 j' .. + 3, 4 consecutive
// values of one group of 16. The same bytes as the rows (84 per super-block and row),
// only moved; weight_tiles (weight_tiles.hpp) holds them.
#pragma once

#include <cstddef>
#include <cstring>

#include "mnemo/dtype/weight_blocks.hpp"
#include "mnemo/model/tile_layout.hpp"
#include "mnemo/model/weight.hpp"

namespace mnemo::model {

inline constexpr std::size_t k_q2_K_tile_scales_at = 4 * k_tile_rows;
inline constexpr std::size_t k_q2_K_tile_codes_at = k_q2_K_tile_scales_at + 4 * 64;
inline constexpr std::size_t k_q2_K_tile_block_bytes = k_tile_rows * sizeof(dtype::block_q2_K);
static_assert(sizeof(dtype::block_q2_K) == 84 && k_q2_K_tile_block_bytes == 1344 &&
              k_q2_K_tile_codes_at + 16 * 64 == k_q2_K_tile_block_bytes);

/// Copies the whole tiles of q2_K weight w into out (n_out / 16 * 16 rows' bytes).
inline void interleave_q2_K(const weight& w, std::byte* out) noexcept {
  const auto place = [](const dtype::block_q2_K& b, std::size_t r, std::byte* o) {
    std::memcpy(o + 2 * r, &b.d, 2);
    std::memcpy(o + 2 * k_tile_rows + 2 * r, &b.dmin, 2);
    to_lanes(o + k_q2_K_tile_scales_at, r, b.scales, sizeof b.scales);
    to_lanes(o + k_q2_K_tile_codes_at, r, b.qs, sizeof b.qs);
  };
  interleave_tiles<dtype::block_q2_K>(w, out, place);
}

}  // namespace mnemo::model
