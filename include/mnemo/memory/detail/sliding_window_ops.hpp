// Sequence operations of memory::sliding_window (spec §1.3 with the window rules of
// §4.4): each has a check_* twin that says, without changing anything, whether it
// would succeed (the composite memory validates every part with them before it
// changes any, layered.hpp). An operation that would continue a sequence where its
// window was forgotten is `unsupported`, naming the sequence and the earliest
// position it can resume from.
#pragma once

#if !defined(MNEMO_MEMORY_DETAIL_OK_)
#error "mnemo/memory/detail/ headers are internal: include mnemo/memory/sliding_window.hpp"
#endif

#include <algorithm>
#include <cstdint>
#include <limits>
#include <vector>

#include "mnemo/attention/rope.hpp"
#include "mnemo/dtype/dtype.hpp"
#include "mnemo/memory/types.hpp"
#include "mnemo/memory/window_rules.hpp"

namespace mnemo::memory::detail {

template <class M>
class sliding_window_ops {
 public:
  // ---- checks: the status the operation would return, nothing changed -----------

  status check_seq_rm(seq_id s, pos_t p0, pos_t p1) const {
    MNEMO_RETURN_IF_ERROR(check_seq(s, m().cfg_.n_seq_max, "seq_rm", true));
    MNEMO_RETURN_IF_ERROR(no_open_batch("seq_rm"));
    const pos_range r = pos_range::of(p0, p1);
    if (r.empty()) return {};
    const bool whole = r.p0 == 0 && r.p1 == std::numeric_limits<pos_t>::max();
    for (seq_id q = s < 0 ? 0 : s; q < (s < 0 ? m().cfg_.n_seq_max : s + 1) && !whole; ++q) {
      // What is left continues after its highest position: that window must be held.
      pos_t top = -1;
      bool touched = false;
      for (const auto& [p, n] : m().cells_.seq_positions(q)) {
        if (!r.contains(p)) top = std::max(top, p);
        touched = touched || r.contains(p);
      }
      if (touched && !continuable(m().horizon_[idx(q)], top)) return lost(q, top + 1, "seq_rm");
    }
    return {};
  }

  status check_seq_cp(seq_id src, seq_id dst, pos_t p0, pos_t p1) const {
    MNEMO_RETURN_IF_ERROR(check_seq(src, m().cfg_.n_seq_max, "seq_cp"));
    MNEMO_RETURN_IF_ERROR(check_seq(dst, m().cfg_.n_seq_max, "seq_cp"));
    MNEMO_RETURN_IF_ERROR(no_open_batch("seq_cp"));
    if (src == dst) return {};
    // dst continues after the highest position it holds afterwards: its window there
    // must be held.
    const pos_range r = pos_range::of(p0, p1);
    pos_t top = -1;
    for (const auto& [p, n] : m().cells_.seq_positions(src))
      if (r.contains(p)) top = std::max(top, p);
    for (const auto& [p, n] : m().cells_.seq_positions(dst))
      if (!r.contains(p)) top = std::max(top, p);
    const pos_t h = copied_horizon(src, dst, r);
    if (!continuable(h, top))
      return make_status(status_code::unsupported,
                         "seq_cp: sequence %d would continue at %d, whose %s window of %d "
                         "reaches below %d, where sequence %d forgot its positions (it can "
                         "resume from %d)",
                         label(dst), top + 1, attention::to_string(m().cfg_.window).data(),
                         m().cfg_.n_swa, h, label(src), m().earliest_restorable_pos(src));
    return {};
  }

  status check_seq_keep(seq_id s) const {
    MNEMO_RETURN_IF_ERROR(check_seq(s, m().cfg_.n_seq_max, "seq_keep"));
    return no_open_batch("seq_keep");
  }

  status check_seq_add(seq_id s, pos_t p0, pos_t p1, pos_t delta) const {
    const pos_t top = m().seq_pos_max(s);
    if (delta > 0 && top >= 0 && top > std::numeric_limits<pos_t>::max() - delta &&
        pos_range::of(p0, p1).p0 <= top)
      return make_status(status_code::out_of_range,
                         "seq_add: position %d + %d overflows the position type", top, delta);
    return check_shift(
        s, p0, p1, "seq_add", [delta](pos_t p) { return p + delta; }, delta == 0);
  }

  status check_seq_div(seq_id s, pos_t p0, pos_t p1, int d) const {
    if (d <= 0)
      return make_status(status_code::invalid_argument, "seq_div: divisor %d must be > 0", d);
    return check_shift(
        s, p0, p1, "seq_div", [d](pos_t p) { return p / d; }, d == 1);
  }

  // ---- the operations ---------------------------------------------------------------

  /// Removes s (every sequence when s == -1) from the cells at positions in [p0, p1).
  status seq_rm(seq_id s, pos_t p0, pos_t p1) {
    MNEMO_RETURN_IF_ERROR(check_seq_rm(s, p0, p1));
    M& c = m();
    const pos_range r = pos_range::of(p0, p1);
    c.head_ = std::min(c.head_, c.cells_.remove_seq(s, r));
    if (r.p0 == 0 && r.p1 == std::numeric_limits<pos_t>::max())  // the whole history
      for (seq_id q = s < 0 ? 0 : s; q < (s < 0 ? c.cfg_.n_seq_max : s + 1); ++q)
        c.horizon_[idx(q)] = 0;
    return {};
  }

  /// dst holds exactly src's cells in [p0, p1) afterwards, sharing them, and inherits
  /// src's horizon (spec §4.4: a copy has the same truncated window).
  status seq_cp(seq_id src, seq_id dst, pos_t p0, pos_t p1) {
    MNEMO_RETURN_IF_ERROR(check_seq_cp(src, dst, p0, p1));
    if (src == dst) return {};
    M& c = m();
    const pos_t h = copied_horizon(src, dst, pos_range::of(p0, p1));
    c.head_ = std::min(c.head_, c.cells_.copy_seq(src, dst, pos_range::of(p0, p1)));
    c.horizon_[idx(dst)] = h;
    return {};
  }

  status seq_keep(seq_id s) {
    MNEMO_RETURN_IF_ERROR(check_seq_keep(s));
    m().head_ = std::min(m().head_, m().cells_.keep_seq(s));
    for (seq_id q = 0; q < m().cfg_.n_seq_max; ++q)
      if (q != s) m().horizon_[idx(q)] = 0;
    return {};
  }

  /// Adds delta to the positions of s in [p0, p1) (copy-on-write of shared cells, as
  /// in full_cache); the horizon moves with the positions above it.
  status seq_add(seq_id s, pos_t p0, pos_t p1, pos_t delta) {
    MNEMO_RETURN_IF_ERROR(check_seq_add(s, p0, p1, delta));
    return shift(
        s, p0, p1, [delta](pos_t p) { return p + delta; }, delta == 0);
  }

  status seq_div(seq_id s, pos_t p0, pos_t p1, int d) {
    MNEMO_RETURN_IF_ERROR(check_seq_div(s, p0, p1, d));
    return shift(
        s, p0, p1, [d](pos_t p) { return p / d; }, d == 1);
  }

  /// Frees every cell and forgets every horizon; with `data` the K/V bytes are zeroed.
  void clear(bool data) {
    M& c = m();
    c.cells_.clear();
    c.head_ = 0;
    c.tx_.reset();
    c.plan_.clear();
    c.next_u_ = 0;
    std::fill(c.horizon_.begin(), c.horizon_.end(), 0);
    if (data) c.kv_.zero();
  }

  /// K-shift (spec §2.6): every shifted cell's K rows are rotated by its pending shift.
  status update() {
    M& c = m();
    if (c.tx_.open()) return no_open_batch("update");
    if (!c.cells_.has_shift()) return {};
    if (c.cfg_.rope.layout != attention::rope_layout::none) rotate_shifted_keys();
    c.cells_.clear_shifts();
    return {};
  }

 protected:
  status no_open_batch(const char* op) const {
    if (!m().in_batch()) return {};
    return make_status(status_code::invalid_argument,
                       "%s: a batch is prepared or being applied; commit() or rollback() first",
                       op);
  }

  /// Positions >= 0, one or more sequences below n_seq_max, and no token where its
  /// sequence's window was forgotten (a continuation from an old position, §4.4).
  status check_tokens(const char* op, std::size_t u, const ubatch_tokens& ub) const {
    const auto& cfg = m().cfg_;
    if (ub.seqs.size() != ub.pos.size())
      return make_status(status_code::invalid_argument,
                         "%s: micro-batch %zu has %zu positions but %zu sequence sets", op, u,
                         ub.pos.size(), ub.seqs.size());
    seq_set allowed;
    for (seq_id s = 0; s < cfg.n_seq_max; ++s) allowed.insert(s);
    for (std::size_t j = 0; j < ub.size(); ++j) {
      bool outside = false;
      for (int w = 0; w < k_max_seq / 64; ++w)
        outside |= (ub.seqs[j].words[w] & ~allowed.words[w]) != 0;
      if (ub.pos[j] < 0 || ub.seqs[j].empty() || outside)
        return make_status(status_code::invalid_argument,
                           "%s: token %zu of micro-batch %zu needs a position >= 0 (has %d) "
                           "and one or more sequences in [0, %d)",
                           op, j, u, ub.pos[j], cfg.n_seq_max);
      for (seq_id s = 0; s < cfg.n_seq_max; ++s)
        if (ub.seqs[j].contains(s) &&
            !resumable(cfg.window, cfg.n_swa, m().horizon_[idx(s)], ub.pos[j]))
          return lost(s, ub.pos[j], op);
    }
    return {};
  }

 private:
  const M& m() const noexcept { return static_cast<const M&>(*this); }
  M& m() noexcept { return static_cast<M&>(*this); }
  static std::size_t idx(seq_id s) noexcept { return static_cast<std::size_t>(s); }
  /// How a status names sequence s (config seq_label_base).
  seq_id label(seq_id s) const noexcept { return s + m().cfg_.seq_label_base; }

  status lost(seq_id s, pos_t at, const char* op) const {
    return make_status(status_code::unsupported,
                       "%s: sequence %d cannot continue at position %d: its %s window of %d "
                       "forgot the positions below %d; the earliest position it can resume from "
                       "is %d (or 0, starting over)",
                       op, label(s), at, attention::to_string(m().cfg_.window).data(),
                       m().cfg_.n_swa, m().horizon_[idx(s)], m().earliest_restorable_pos(s));
  }

  /// Whether a sequence whose highest held position is top (-1: none) and whose
  /// positions below h were forgotten can continue at top + 1: it must hold something
  /// from h up (otherwise its last positions are forgotten ones) and the window there.
  bool continuable(pos_t h, pos_t top) const {
    if (h <= 0) return true;
    return top >= h && resumable(m().cfg_.window, m().cfg_.n_swa, h, top + 1);
  }

  /// dst's horizon after seq_cp (window_rules.hpp).
  pos_t copied_horizon(seq_id src, seq_id dst, pos_range r) const {
    return memory::copied_horizon(m().horizon_[idx(src)], m().horizon_[idx(dst)], r);
  }

  /// The horizon after moving [p0, p1) by new_pos: one above every forgotten position
  /// (all below h) where it lands. Forgotten positions outside the range stay (the
  /// highest is h - 1, or p0 - 1 when h - 1 moves); those inside land at most at
  /// new_pos(min(p1, h) - 1), new_pos being non-decreasing.
  template <class NewPos>
  static pos_t moved_horizon(pos_t h, pos_range r, NewPos new_pos) {
    if (h <= 0) return h;
    pos_t h2 = r.contains(h - 1) ? r.p0 : h;
    if (r.p0 < h) h2 = std::max<pos_t>(h2, new_pos(std::min(r.p1, h) - 1) + 1);
    return std::max<pos_t>(0, h2);
  }

  template <class NewPos>
  status check_shift(seq_id s, pos_t p0, pos_t p1, const char* op, NewPos new_pos,
                     bool noop) const {
    const M& c = m();
    MNEMO_RETURN_IF_ERROR(check_seq(s, c.cfg_.n_seq_max, op));
    MNEMO_RETURN_IF_ERROR(no_open_batch(op));
    if (!c.cfg_.shift_supported)
      return make_status(status_code::unsupported,
                         "%s: this model's positions cannot be shifted (no K-shift)", op);
    const pos_range r = pos_range::of(p0, p1);
    if (noop || r.empty()) return {};
    // The next query after the move must find its window held.
    const pos_t h = c.horizon_[idx(s)];
    if (h > 0) {
      pos_t top = -1;
      for (const auto& [p, n] : c.cells_.seq_positions(s)) {
        (void)n;
        top = std::max(top, r.contains(p) ? new_pos(p) : p);
      }
      const pos_t h2 = moved_horizon(h, r, new_pos);
      if (!continuable(h2, top))
        return make_status(status_code::unsupported,
                           "%s: sequence %d would continue at %d, whose %s window of %d reaches "
                           "below %d, where its positions were forgotten (it can resume from %d "
                           "as it is)",
                           op, label(s), top + 1, attention::to_string(c.cfg_.window).data(),
                           c.cfg_.n_swa, h2, c.earliest_restorable_pos(s));
    }
    std::size_t shared = 0, free_cells = 0;
    for (std::size_t i = 0; i < c.cells_.size(); ++i) {
      if (c.cells_.empty(i)) {
        ++free_cells;
        continue;
      }
      const seq_set& o = c.cells_.owners(i);
      shared += r.contains(c.cells_.pos(i)) && o.contains(s) && o.count() > 1;
    }
    if (free_cells < shared)
      return make_status(status_code::no_space,
                         "%s: sequence %d shares %zu cells with other sequences and needs as many "
                         "free cells to move them apart, but only %zu are free",
                         op, label(s), shared, free_cells);
    return {};
  }

  template <class NewPos>
  status shift(seq_id s, pos_t p0, pos_t p1, NewPos new_pos, bool noop) {
    const pos_range r = pos_range::of(p0, p1);
    if (noop || r.empty()) return {};
    M& c = m();
    auto& cells = c.cells_;
    std::vector<std::size_t> mine, shared, free_cells;
    for (std::size_t i = 0; i < cells.size(); ++i) {
      if (cells.empty(i)) continue;
      if (!r.contains(cells.pos(i)) || !cells.owners(i).contains(s)) continue;
      (cells.owners(i).count() > 1 ? shared : mine).push_back(i);
    }
    for (std::size_t i = 0; i < cells.size() && free_cells.size() < shared.size(); ++i)
      if (cells.empty(i)) free_cells.push_back(i);
    for (std::size_t k = 0; k < shared.size(); ++k) {  // copy-on-write (D-18)
      c.kv_.copy_cell(shared[k], free_cells[k]);
      cells.split_owner(shared[k], free_cells[k], s);
      mine.push_back(free_cells[k]);
    }
    std::sort(mine.begin(), mine.end());
    c.horizon_[idx(s)] = moved_horizon(c.horizon_[idx(s)], r, new_pos);
    if (cells.move_seq(s, r, mine, new_pos)) {
      c.head_ = 0;
      for (std::size_t i = 0; i < cells.size(); ++i)
        if (cells.empty(i)) {
          c.head_ = i;
          break;
        }
    }
    return {};
  }

  /// As full_cache: one angle table per distinct shift.
  void rotate_shifted_keys() {
    M& c = m();
    const auto& sh = c.cfg_.shape;
    std::vector<float> row(sh.n_head_kv * sh.d_k);
    pos_t table_shift = 0;
    attention::rope_table table(c.cfg_.rope, 0.0);
    for (std::size_t i = 0; i < c.cells_.size(); ++i) {
      if (c.cells_.empty(i) || c.cells_.shift(i) == 0) continue;
      if (c.cells_.shift(i) != table_shift) {
        table_shift = c.cells_.shift(i);
        table = attention::rope_table(c.cfg_.rope, table_shift);
      }
      for (std::size_t l = 0; l < sh.n_layer; ++l) {
        dtype::row_kernels<simd::native>::decode(c.kv_.k(l, i), row.data(), row.size());
        for (std::size_t h = 0; h < sh.n_head_kv; ++h)
          attention::rope_apply(c.cfg_.rope, table, row.data() + h * sh.d_k);
        dtype::row_kernels<simd::native>::encode(row.data(), c.kv_.k(l, i), row.size());
      }
    }
  }
};

}  // namespace mnemo::memory::detail
