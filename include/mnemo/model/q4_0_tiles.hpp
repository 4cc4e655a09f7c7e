// q4_0 weights again as tiles of 16 rows, the layout the one-token product reads on CPUs
// with AVX-512 VNNI and VBMI (model/detail/matmul_int8_tiles.hpp):
//
//   tile t (rows 16 t .. 16 t + 15), block b (values 32 b .. 32 b + 31), 288 bytes:
//     [32]  the 16 rows' f16 scales
//     [256] 4 vectors of 64 bytes; bytes 4 r .. 4 r + 3 of vector j are code bytes
//           4 j .. 4 j + 3 of row r's block
//
// The same bytes as the rows (18 per block and row), only moved; weight_tiles
// (weight_tiles.hpp) holds them.
#pragma once

#include <cstddef>
#include <cstring>

#include "mnemo/dtype/types.hpp"
#include "mnemo/model/tile_layout.hpp"
#include "mnemo/model/weight.hpp"

namespace mnemo::model {

inline constexpr std::size_t k_q4_0_tile_rows = k_tile_rows;
inline constexpr std::size_t k_q4_0_tile_scale_bytes = k_q4_0_tile_rows * 2;
inline constexpr std::size_t k_q4_0_tile_block_bytes = k_q4_0_tile_rows * sizeof(dtype::block_q4_0);
static_assert(sizeof(dtype::block_q4_0) == 18 && k_q4_0_tile_block_bytes == 288);

/// Copies the whole tiles of q4_0 weight w into out (n_out / 16 * 16 rows' bytes).
inline void interleave_q4_0(const weight& w, std::byte* out) noexcept {
  const auto place = [](const dtype::block_q4_0& b, std::size_t r, std::byte* o) {
    std::memcpy(o + 2 * r, &b.d, 2);  // the f16 scale
    to_lanes(o + k_q4_0_tile_scale_bytes, r, b.qs, sizeof b.qs);
  };
  interleave_tiles<dtype::block_q4_0>(w, out, place);
}

}  // namespace mnemo::model
