// q4_K weights again as tiles of 16 rows, the layout the one-token product reads on CPUs
// with AVX-512 VNNI and VBMI (model/detail/matmul_k_tiles.hpp):
//
//   tile t (rows 16 t .. 16 t + 15), super-block b (values 256 b .. 256 b + 255), 2304 bytes:
//     [32]   the 16 rows' f16 d
//     [32]   the 16 rows' f16 dmin
//     [192]  3 vectors of 64 bytes; bytes 4 r .. 4 r + 3 of vector k are bytes
//            4 k .. 4 k + 3 of row r's 12 packed scale bytes
//     [2048] 32 vectors of 64 bytes; bytes 4 r .. 4 r + 3 of vector 8 c + k are code
//            bytes 32 c + 4 k .. 32 c + 4 k + 3 of row r's super-block
//
// So a 32-bit lane holds one row throughout: 4 codes of one sub-block in its low nibbles
// (values 64 c + 4 k ..) and 4 of the next in its high nibbles (values 64 c + 32 + 4 k ..),
// and the scales of 4 sub-blocks once unpacked. The same bytes as the rows (144 per
// super-block and row), only moved; weight_tiles (weight_tiles.hpp) holds them.
#pragma once

#include <cstddef>
#include <cstring>

#include "mnemo/dtype/weight_blocks.hpp"
#include "mnemo/model/tile_layout.hpp"
#include "mnemo/model/weight.hpp"

namespace mnemo::model {

inline constexpr std::size_t k_q4_K_tile_d_bytes = 2 * k_tile_rows;  // d, then dmin
inline constexpr std::size_t k_q4_K_tile_scales_at = 2 * k_q4_K_tile_d_bytes;
inline constexpr std::size_t k_q4_K_tile_codes_at = k_q4_K_tile_scales_at + 3 * 64;
inline constexpr std::size_t k_q4_K_tile_block_bytes = k_tile_rows * sizeof(dtype::block_q4_K);
static_assert(sizeof(dtype::block_q4_K) == 144 && k_q4_K_tile_block_bytes == 2304 &&
              k_q4_K_tile_codes_at + 32 * 64 == k_q4_K_tile_block_bytes);

/// Row r's d, dmin and packed scales of a q4_K or q5_K block, at the tile block o (the
/// head both layouts share).
template <class Block>
void place_k4_head(const Block& b, std::size_t r, std::byte* o) noexcept {
  std::memcpy(o + 2 * r, &b.d, 2);
  std::memcpy(o + k_q4_K_tile_d_bytes + 2 * r, &b.dmin, 2);
  to_lanes(o + k_q4_K_tile_scales_at, r, b.scales, sizeof b.scales);
}

/// Copies the whole tiles of q4_K weight w into out (n_out / 16 * 16 rows' bytes).
inline void interleave_q4_K(const weight& w, std::byte* out) noexcept {
  const auto place = [](const dtype::block_q4_K& b, std::size_t r, std::byte* o) {
    place_k4_head(b, r, o);
    to_lanes(o + k_q4_K_tile_codes_at, r, b.qs, sizeof b.qs);
  };
  interleave_tiles<dtype::block_q4_K>(w, out, place);
}

}  // namespace mnemo::model
