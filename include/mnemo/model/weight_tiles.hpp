// weight_tiles: the store of a model's weights held a second time as tiles of 16 rows,
// the layouts the one-token products read on CPUs with AVX-512 VNNI and VBMI: q4_0
// (q4_0_tiles.hpp) and the k-quants (q2_K_tiles.hpp .. q6_K_tiles.hpp).
// It copies a weight's whole tiles (the last n_out % 16 rows stay rows only) and points
// weight::tiles at them; the other products and get_row keep reading the rows. So a
// model's weights of these types take their bytes twice in memory: the rows in the
// file's mapping (clean pages the kernel can drop while only one-token products run) and
// the tiles. A host short of memory turns the tiles off before it loads a model
// (set_weight_tiles_enabled(false)): the one-token products then read the rows.
#pragma once

#include <cstddef>
#include <span>
#include <type_traits>
#include <utility>
#include <vector>

#include "mnemo/base/aligned_buffer.hpp"
#include "mnemo/base/process_setting.hpp"
#include "mnemo/dtype/element_type.hpp"
#include "mnemo/gguf/tensor.hpp"
#include "mnemo/model/q2_K_tiles.hpp"
#include "mnemo/model/q3_K_tiles.hpp"
#include "mnemo/model/q4_0_tiles.hpp"
#include "mnemo/model/q4_K_tiles.hpp"
#include "mnemo/model/q5_K_tiles.hpp"
#include "mnemo/model/q6_K_tiles.hpp"
#include "mnemo/model/weight.hpp"
#include "mnemo/simd/cpu.hpp"
#include "mnemo/simd/isa.hpp"

namespace mnemo::model {

/// Whether weights of type t have a tile layout.
constexpr bool has_tile_layout(dtype::element_type t) noexcept {
  return t == dtype::element_type::q4_0 || is_k_tiled(t);
}

/// Bytes of w's whole tiles (n_out / 16 of them; 0 for fewer than 16 rows or a type
/// without tiles).
inline std::size_t tiles_bytes(const weight& w) noexcept {
  return has_tile_layout(w.type) ? w.n_out / k_tile_rows * k_tile_rows * w.row_bytes : 0;
}

/// Bytes that the tiles of every tiled matrix among `tensors` take at 64-byte offsets:
/// the most a model's weight_tiles can be asked for while it binds them.
inline std::size_t tiles_bound(std::span<const gguf::tensor> tensors) noexcept {
  std::size_t n = 0;
  for (const gguf::tensor& t : tensors)
    if (t.element_type && has_tile_layout(*t.element_type) && t.n_dims == 2)
      n += (t.dims[1] / k_tile_rows * k_tile_rows * t.row_bytes + 63) / 64 * 64;
  return n;  // the file holds these bytes as rows, so the sum cannot overflow
}

namespace detail {
inline process_setting<bool>& weight_tiles_setting() noexcept {
  static process_setting<bool> on{true};
  return on;
}
}  // namespace detail

/// Whether models loaded from now on hold tiles where their one-token products would
/// read them (the default). Process-wide, as simd::set_prefetch_target; a model keeps
/// what it was loaded with.
inline bool weight_tiles_enabled() noexcept { return detail::weight_tiles_setting().get(); }

/// false: models loaded afterwards keep only the rows (no second copy of their q4_0 and
/// k-quant weights; one-token products of those types read the rows, slower where the
/// tiles would be used: docs/products.md).
inline void set_weight_tiles_enabled(bool on) noexcept { detail::weight_tiles_setting().set(on); }

/// Owns the tiles of a model's q4_0 and k-quant weights.
class weight_tiles {
 public:
  /// Whether models loaded now get tiles: they are enabled (weight_tiles_enabled) and
  /// one-token products at simd::native, the ISA models run at by default, read tiles on
  /// this CPU: native is AVX-512 and the CPU has VNNI and VBMI. (Elsewhere the tiles
  /// would only take memory; a host that runs AVX-512 products in a build whose native
  /// ISA is narrower attaches them with `always`.)
  static bool used() noexcept {
    return weight_tiles_enabled() && std::is_same_v<simd::native, simd::avx512> &&
           simd::detail::cpu().avx512_int8;
  }

  /// Where used(), one buffer of `bytes` (tiles_bound of a file) that attach fills
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

  /// For a weight of a tiled type with 16 rows or more (and, unless `always`, where used()):
  /// copies its whole tiles into memory this store owns and points w.tiles at them.
  /// Otherwise, and when the memory cannot be allocated (the products then read the
  /// rows: q4_0 with the same values up to the order of the f32 sums, the k-quants with
  /// the same values), w is left as it is.
  void attach(weight& w, bool always = false) {
    if (!has_tile_layout(w.type) || !(always || used())) return;
    const std::size_t n = tiles_bytes(w);
    if (n == 0) return;
    std::byte* out = take(n);
    if (out == nullptr) return;
    switch (w.type) {
      case dtype::element_type::q4_0: interleave_q4_0(w, out); break;
      case dtype::element_type::q2_K: interleave_q2_K(w, out); break;
      case dtype::element_type::q3_K: interleave_q3_K(w, out); break;
      case dtype::element_type::q4_K: interleave_q4_K(w, out); break;
      case dtype::element_type::q5_K: interleave_q5_K(w, out); break;
      default: interleave_q6_K(w, out); break;
    }
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
