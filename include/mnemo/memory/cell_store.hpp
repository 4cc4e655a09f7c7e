// The cells and K/V rows of a unified memory: one cell array that every sequence
// shares, with its K/V rows per layer, the head where the slot scan starts and the
// planned cells of each micro-batch. The full cache and the sliding window are both
// built on it and differ only in which cells they may take for a new token (a free
// cell; or one every owner's window has left) and what they remember of forgotten
// positions, so what they do alike lives here once: the attention view, K/V writes, the
// slot scan, shifts with copy-on-write of shared cells, K-shift and the report.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

#include "mnemo/attention/kv_view.hpp"
#include "mnemo/attention/rope.hpp"
#include "mnemo/dtype/dtype.hpp"
#include "mnemo/memory/cells.hpp"
#include "mnemo/memory/concepts.hpp"
#include "mnemo/memory/key_rotator.hpp"
#include "mnemo/memory/kv_storage.hpp"
#include "mnemo/memory/types.hpp"

namespace mnemo::memory {

/// The slot scan of llama.cpp's cache: from `head` (reset to 0 when there
/// are enough holes before it: more than twice the tokens beyond the used count), the
/// first n cells `usable` accepts in scan order, wrapping around; fewer when there are
/// not as many.
template <class Usable>
void scan_slots(std::size_t& head, std::size_t used, std::size_t size, std::size_t n,
                Usable&& usable, std::vector<std::uint32_t>& out) {
  if (head > used + 2 * n) head = 0;
  for (std::size_t k = 0; k < size && out.size() < n; ++k) {
    const std::size_t i = (head + k) % size;
    if (usable(i)) out.push_back(static_cast<std::uint32_t>(i));
  }
}

/// The base of a unified strategy: what it shows the model and the caller (cells,
/// rows, views, K/V writes) is the same for every unified strategy; the strategy adds
/// its configuration, planning (filling plan_) and transactions.
template <dtype::kv_element KE, dtype::kv_element VE>
class cell_store {
 public:
  using k_element = KE;
  using v_element = VE;

  std::size_t size() const noexcept { return cells_.size(); }
  std::size_t used() const noexcept { return cells_.used(); }
  const cell_array& cells() const noexcept { return cells_; }
  const kv_storage<KE, VE>& storage() const noexcept { return kv_; }
  kv_storage<KE, VE>& storage() noexcept { return kv_; }
  bool has_pending_shift() const noexcept { return cells_.has_shift(); }

  /// The lowest / highest position s holds, or -1 (also for an id outside [0, n_seq_max)).
  pos_t seq_pos_min(seq_id s) const noexcept { return valid(s) ? cells_.seq_pos_min(s) : -1; }
  pos_t seq_pos_max(seq_id s) const noexcept { return valid(s) ? cells_.seq_pos_max(s) : -1; }

  /// The cells micro-batch u's tokens go to (valid after prepare()).
  std::span<const std::uint32_t> slots(std::size_t u) const noexcept { return plan_[u]; }

  /// Stores the K and V rows of token j of micro-batch u for one layer.
  /// k: [n_head_kv, d_k] f32, v: [n_head_kv, d_v] f32.
  template <class Isa = simd::native>
  void write_kv(std::size_t layer, std::size_t u, std::size_t j, const float* k,
                const float* v) noexcept {
    const std::size_t c = plan_[u][j];
    const kv_shape& sh = kv_.shape();
    dtype::row_kernels<Isa>::encode(k, kv_.k(layer, c), sh.n_head_kv * sh.d_k);
    dtype::row_kernels<Isa>::encode(v, kv_.v(layer, c), sh.n_head_kv * sh.d_v);
  }

  /// The attention view of one layer: cells [0, used_max_p1) with their positions and
  /// owners. Valid until the next mutation.
  attention::kv_segment segment(std::size_t layer) const noexcept {
    attention::kv_segment s;
    s.k = kv_.k(layer, 0);
    s.v = kv_.v(layer, 0);
    s.k_stride = kv_.k_row_bytes();
    s.v_stride = kv_.v_row_bytes();
    s.pos = cells_.pos_data();
    s.owners = cells_.owners_data();
    s.n_cells = cells_.used_max_p1();
    return s;
  }

  /// The attention views of one layer for micro-batch u (memory::kv_memory): every
  /// token reads the one shared stream, segment(layer).
  void views(std::size_t layer, std::size_t u, layer_views& out) const {
    (void)u;  // one stream for every micro-batch
    out.segments.assign(1, segment(layer));
    out.streams.assign(1, attention::kv_view{{out.segments.data(), 1}});
    out.token_stream.clear();
    out.window = {};
  }

  /// For state_read: cells restored from a parsed state, the scan from cell 0 again.
  cell_array& mutable_cells() noexcept { return cells_; }
  void reset_head() noexcept { head_ = 0; }

 protected:
  cell_store() = default;

  status init(const kv_shape& shape, std::size_t size, seq_id n_seq_max) {
    MNEMO_ASSIGN_OR_RETURN(kv_, (kv_storage<KE, VE>::make(shape, size)));
    cells_ = cell_array(size);
    n_seq_max_ = n_seq_max;
    return {};
  }

  bool valid(seq_id s) const noexcept { return s >= 0 && s < n_seq_max_; }
  /// A freed cell below the head is taken first next time.
  void lower_head(std::size_t freed) noexcept { head_ = std::min(head_, freed); }

  // ---- sequence operations that only change cells ---------------------------------

  void remove_seq(seq_id s, pos_range r) { lower_head(cells_.remove_seq(s, r)); }
  void copy_seq(seq_id src, seq_id dst, pos_range r) { lower_head(cells_.copy_seq(src, dst, r)); }
  void keep_seq(seq_id s) { lower_head(cells_.keep_seq(s)); }

  /// A shift moves s's cells apart from the other owners of shared ones, so it needs
  /// one free cell per cell of s in r that s shares. `label` is how the refusal names s.
  status check_unshare_room(seq_id s, pos_range r, const char* op, seq_id label) const {
    std::size_t shared = 0, free_cells = 0;
    for (std::size_t i = 0; i < cells_.size(); ++i) {
      if (cells_.empty(i)) {
        ++free_cells;
        continue;
      }
      const seq_set& o = cells_.owners(i);
      shared += r.contains(cells_.pos(i)) && o.contains(s) && o.count() > 1;
    }
    if (free_cells < shared)
      return make_status(status_code::no_space,
                         "%s: sequence %d shares %zu cells with other sequences and needs as many "
                         "free cells to move them apart, but only %zu are free",
                         op, label, shared, free_cells);
    return {};
  }

  /// Moves s's cells with positions in r to new_pos(position), recording the pending
  /// shift; a shared cell is copied first (K/V rows included) so its other owners keep
  /// their position. Cells moved below 0 are freed. @pre check_unshare_room passed;
  /// new_pos is non-decreasing
  template <class NewPos>
  void move_seq(seq_id s, pos_range r, NewPos new_pos) {
    std::vector<std::size_t> mine, shared, free_cells;
    for (std::size_t i = 0; i < cells_.size(); ++i) {
      if (cells_.empty(i) || !r.contains(cells_.pos(i)) || !cells_.owners(i).contains(s)) continue;
      (cells_.owners(i).count() > 1 ? shared : mine).push_back(i);
    }
    for (std::size_t i = 0; i < cells_.size() && free_cells.size() < shared.size(); ++i)
      if (cells_.empty(i)) free_cells.push_back(i);
    MNEMO_DASSERT(free_cells.size() == shared.size());
    for (std::size_t k = 0; k < shared.size(); ++k) {
      kv_.copy_cell(shared[k], free_cells[k]);
      cells_.split_owner(shared[k], free_cells[k], s);
      mine.push_back(free_cells[k]);
    }
    std::sort(mine.begin(), mine.end());
    if (cells_.move_seq(s, r, mine, new_pos)) {
      head_ = 0;
      while (head_ < cells_.size() && !cells_.empty(head_)) ++head_;
      if (head_ == cells_.size()) head_ = 0;
    }
  }

  /// K-shift: rotates every shifted cell's keys by its pending shift in every layer
  /// (only clears the shifts with rope_layout::none).
  void apply_shifts(const attention::rope_config& rope) {
    if (!cells_.has_shift()) return;
    if (rope.layout != attention::rope_layout::none) {
      const kv_shape& sh = kv_.shape();
      key_rotator<KE> rot(rope, sh.n_head_kv, sh.d_k);
      for (std::size_t i = 0; i < cells_.size(); ++i) {
        if (cells_.empty(i) || cells_.shift(i) == 0) continue;
        for (std::size_t l = 0; l < sh.n_layer; ++l) rot.rotate(kv_.k(l, i), cells_.shift(i));
      }
    }
    cells_.clear_shifts();
  }

  /// Frees every cell and drops the plan; with `data` the K/V bytes are zeroed too.
  void clear_cells(bool data) {
    cells_.clear();
    head_ = 0;
    plan_.clear();
    if (data) kv_.zero();
  }

  /// Bytes per layer of `kind`, cells, and cells per sequence.
  memory_report report_as(std::string_view kind) const {
    memory_report r;
    add_kv_layers(r, kv_.shape().n_layer, kind, dtype::element_traits<KE>::name,
                  dtype::element_traits<VE>::name, kv_.k_row_bytes() * size(),
                  kv_.v_row_bytes() * size());
    r.cells = size();
    r.cells_used = cells_.used();
    for (seq_id s = 0; s < n_seq_max_; ++s)
      if (const std::size_t n = cells_.seq_cells(s)) r.cells_per_seq.push_back({s, n});
    return r;
  }

  kv_storage<KE, VE> kv_;
  cell_array cells_;
  std::size_t head_ = 0;  // where the next slot scan starts
  seq_id n_seq_max_ = 1;
  std::vector<std::vector<std::uint32_t>> plan_;  // [micro-batch][token] cell
};

}  // namespace mnemo::memory
