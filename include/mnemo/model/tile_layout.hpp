// What every tile layout shares (q4_0_tiles.hpp, q2_K_tiles.hpp .. q6_K_tiles.hpp): tile
// t holds rows 16 t .. 16 t + 15 block by block, 16 rows' bytes per block, each row's
// bytes in one 32-bit lane of 64-byte vectors.
#pragma once

#include <cstddef>
#include <cstring>

#include "mnemo/dtype/element_type.hpp"
#include "mnemo/model/weight.hpp"

namespace mnemo::model {

/// n bytes of src (n a multiple of 4) into lane r of the 64-byte vectors at o: byte i
/// at o + 64 (i / 4) + 4 r + i % 4.
inline void to_lanes(std::byte* o, std::size_t r, const void* src, std::size_t n) noexcept {
  const auto* s = static_cast<const unsigned char*>(src);
  for (std::size_t v = 0; v < n / 4; ++v) std::memcpy(o + 64 * v + 4 * r, s + 4 * v, 4);
}

/// The whole tiles of w (blocks of type E) into out (n_out / 16 * 16 rows' bytes):
/// place(block, r, o) puts row r's copy of one block into that block's bytes of the
/// tile, at o.
template <class E, class Place>
void interleave_tiles(const weight& w, std::byte* out, Place place) noexcept {
  constexpr std::size_t block_bytes = k_tile_rows * sizeof(E);
  const std::size_t n_blocks = w.n_in / dtype::element_traits<E>::block_size;
  const std::size_t n_tiles = w.n_out / k_tile_rows;
  for (std::size_t t = 0; t < n_tiles; ++t)
    for (std::size_t b = 0; b < n_blocks; ++b) {
      std::byte* o = out + (t * n_blocks + b) * block_bytes;
      for (std::size_t r = 0; r < k_tile_rows; ++r) {
        E blk;
        std::memcpy(&blk, w.row(t * k_tile_rows + r) + b * sizeof blk, sizeof blk);
        place(blk, r, o);
      }
    }
}

}  // namespace mnemo::model
