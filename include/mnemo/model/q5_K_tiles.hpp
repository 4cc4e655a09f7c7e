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
#include "mnemo/model/tile_layout.hpp"
#include "mnemo/model/weight.hpp"

namespace mnemo::model {

inline constexpr std::size_t k_q5_K_tile_qh_at = k_q4_K_tile_codes_at;  // after q4_K's head
inline constexpr std::size_t k_q5_K_tile_codes_at = k_q5_K_tile_qh_at + 8 * 64;
inline constexpr std::size_t k_q5_K_tile_block_bytes = k_tile_rows * sizeof(dtype::block_q5_K);
static_assert(sizeof(dtype::block_q5_K) == 176 && k_q5_K_tile_block_bytes == 2816 &&
              k_q5_K_tile_codes_at + 32 * 64 == k_q5_K_tile_block_bytes);

/// Copies the whole tiles of q5_K weight w into out (n_out / 16 * 16 rows' bytes).
inline void interleave_q5_K(const weight& w, std::byte* out) noexcept {
  const auto place = [](const dtype::block_q5_K& b, std::size_t r, std::byte* o) {
    place_k4_head(b, r, o);
    to_lanes(o + k_q5_K_tile_qh_at, r, b.qh, sizeof b.qh);
    to_lanes(o + k_q5_K_tile_codes_at, r, b.qs, sizeof b.qs);
  };
  interleave_tiles<dtype::block_q5_K>(w, out, place);
}

}  // namespace mnemo::model
