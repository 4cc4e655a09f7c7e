// memory::sliding_window's sequence operations with the window rules, slot search and
// forgetting (the class and its documentation are in sliding_window.hpp). An operation
// that would continue a sequence where its window was forgotten is `unsupported`,
// naming the sequence and the earliest position it can resume from.
#pragma once

#include <algorithm>
#include <cstdint>
#include <limits>
#include <vector>

#include "mnemo/memory/window/sliding_window.hpp"

namespace mnemo::memory {

// ---- checks: the status the operation would return, nothing changed ---------------

template <dtype::kv_element KE, dtype::kv_element VE>
status sliding_window<KE, VE>::check_seq_rm(seq_id s, pos_t p0, pos_t p1) const {
  MNEMO_RETURN_IF_ERROR(check_seq(s, cfg_.n_seq_max, "seq_rm", true));
  MNEMO_RETURN_IF_ERROR(check_not_in_batch(in_batch(), "seq_rm"));
  const pos_range r = pos_range::of(p0, p1);
  if (r.empty()) return {};
  const bool whole = r.p0 == 0 && r.p1 == std::numeric_limits<pos_t>::max();
  for (seq_id q = s < 0 ? 0 : s; q < (s < 0 ? cfg_.n_seq_max : s + 1) && !whole; ++q) {
    // What is left continues after its highest position: that window must be held.
    pos_t top = -1;
    bool touched = false;
    for (const auto& [p, n] : cells_.seq_positions(q)) {
      if (!r.contains(p)) top = std::max(top, p);
      touched = touched || r.contains(p);
    }
    if (touched && !continuable(horizon_[idx(q)], top)) return lost(q, top + 1, "seq_rm");
  }
  return {};
}

template <dtype::kv_element KE, dtype::kv_element VE>
status sliding_window<KE, VE>::check_seq_cp(seq_id src, seq_id dst, pos_t p0, pos_t p1) const {
  MNEMO_RETURN_IF_ERROR(check_seq(src, cfg_.n_seq_max, "seq_cp"));
  MNEMO_RETURN_IF_ERROR(check_seq(dst, cfg_.n_seq_max, "seq_cp"));
  MNEMO_RETURN_IF_ERROR(check_not_in_batch(in_batch(), "seq_cp"));
  if (src == dst) return {};
  // dst continues after the highest position it holds afterwards: its window there
  // must be held.
  const pos_range r = pos_range::of(p0, p1);
  pos_t top = -1;
  for (const auto& [p, n] : cells_.seq_positions(src))
    if (r.contains(p)) top = std::max(top, p);
  for (const auto& [p, n] : cells_.seq_positions(dst))
    if (!r.contains(p)) top = std::max(top, p);
  const pos_t h = copied_horizon(horizon_[idx(src)], horizon_[idx(dst)], r);
  if (!continuable(h, top))
    return make_status(status_code::unsupported,
                       "seq_cp: sequence %d would continue at %d, whose %s window of %d "
                       "reaches below %d, where sequence %d forgot its positions (it can "
                       "resume from %d)",
                       label(dst), top + 1, attention::to_string(cfg_.window).data(), cfg_.n_swa, h,
                       label(src), earliest_restorable_pos(src));
  return {};
}

template <dtype::kv_element KE, dtype::kv_element VE>
status sliding_window<KE, VE>::check_seq_keep(seq_id s) const {
  MNEMO_RETURN_IF_ERROR(check_seq(s, cfg_.n_seq_max, "seq_keep"));
  return check_not_in_batch(in_batch(), "seq_keep");
}

template <dtype::kv_element KE, dtype::kv_element VE>
status sliding_window<KE, VE>::check_seq_add(seq_id s, pos_t p0, pos_t p1, pos_t delta) const {
  MNEMO_RETURN_IF_ERROR(check_add_overflow(label(s), seq_pos_max(s), p0, p1, delta));
  return check_shift(
      s, p0, p1, "seq_add", [delta](pos_t p) { return p + delta; }, delta == 0);
}

template <dtype::kv_element KE, dtype::kv_element VE>
status sliding_window<KE, VE>::check_seq_div(seq_id s, pos_t p0, pos_t p1, int d) const {
  MNEMO_RETURN_IF_ERROR(check_divisor(d));
  return check_shift(
      s, p0, p1, "seq_div", [d](pos_t p) { return p / d; }, d == 1);
}

// ---- the operations -------------------------------------------------------------------

template <dtype::kv_element KE, dtype::kv_element VE>
status sliding_window<KE, VE>::seq_rm(seq_id s, pos_t p0, pos_t p1) {
  MNEMO_RETURN_IF_ERROR(check_seq_rm(s, p0, p1));
  const pos_range r = pos_range::of(p0, p1);
  this->remove_seq(s, r);
  if (r.p0 == 0 && r.p1 == std::numeric_limits<pos_t>::max())  // the whole history
    for (seq_id q = s < 0 ? 0 : s; q < (s < 0 ? cfg_.n_seq_max : s + 1); ++q) horizon_[idx(q)] = 0;
  return {};
}

template <dtype::kv_element KE, dtype::kv_element VE>
status sliding_window<KE, VE>::seq_cp(seq_id src, seq_id dst, pos_t p0, pos_t p1) {
  MNEMO_RETURN_IF_ERROR(check_seq_cp(src, dst, p0, p1));
  if (src != dst) {
    const pos_range r = pos_range::of(p0, p1);
    horizon_[idx(dst)] = copied_horizon(horizon_[idx(src)], horizon_[idx(dst)], r);
    this->copy_seq(src, dst, r);
  }
  return {};
}

template <dtype::kv_element KE, dtype::kv_element VE>
status sliding_window<KE, VE>::seq_keep(seq_id s) {
  MNEMO_RETURN_IF_ERROR(check_seq_keep(s));
  this->keep_seq(s);
  for (seq_id q = 0; q < cfg_.n_seq_max; ++q)
    if (q != s) horizon_[idx(q)] = 0;
  return {};
}

template <dtype::kv_element KE, dtype::kv_element VE>
status sliding_window<KE, VE>::seq_add(seq_id s, pos_t p0, pos_t p1, pos_t delta) {
  MNEMO_RETURN_IF_ERROR(check_seq_add(s, p0, p1, delta));
  shift(
      s, p0, p1, [delta](pos_t p) { return p + delta; }, delta == 0);
  return {};
}

template <dtype::kv_element KE, dtype::kv_element VE>
status sliding_window<KE, VE>::seq_div(seq_id s, pos_t p0, pos_t p1, int d) {
  MNEMO_RETURN_IF_ERROR(check_seq_div(s, p0, p1, d));
  shift(
      s, p0, p1, [d](pos_t p) { return p / d; }, d == 1);
  return {};
}

// ---- window rules -----------------------------------------------------------------------

/// Positions >= 0, one or more sequences below n_seq_max, and no token where its
/// sequence's window was forgotten (a continuation from an old position).
template <dtype::kv_element KE, dtype::kv_element VE>
status sliding_window<KE, VE>::check_tokens(const char* op, std::size_t u,
                                            const ubatch_tokens& ub) const {
  MNEMO_RETURN_IF_ERROR(check_token_count(op, u, ub));
  for (std::size_t j = 0; j < ub.size(); ++j) {
    MNEMO_RETURN_IF_ERROR(check_unified_token(op, u, j, ub, cfg_.n_seq_max));
    for (seq_id s = 0; s < cfg_.n_seq_max; ++s)
      if (ub.seqs[j].contains(s) &&
          !resumable(cfg_.window, cfg_.n_swa, horizon_[idx(s)], ub.pos[j]))
        return lost(s, ub.pos[j], op);
  }
  return {};
}

template <dtype::kv_element KE, dtype::kv_element VE>
status sliding_window<KE, VE>::lost(seq_id s, pos_t at, const char* op) const {
  return make_status(status_code::unsupported,
                     "%s: sequence %d cannot continue at position %d: its %s window of %d "
                     "forgot the positions below %d; the earliest position it can resume from "
                     "is %d (or 0, starting over)",
                     op, label(s), at, attention::to_string(cfg_.window).data(), cfg_.n_swa,
                     horizon_[idx(s)], earliest_restorable_pos(s));
}

/// Whether a sequence whose highest held position is top (-1: none) and whose
/// positions below h were forgotten can continue at top + 1: it must hold something
/// from h up (otherwise its last positions are forgotten ones) and the window there.
template <dtype::kv_element KE, dtype::kv_element VE>
bool sliding_window<KE, VE>::continuable(pos_t h, pos_t top) const {
  if (h <= 0) return true;
  return top >= h && resumable(cfg_.window, cfg_.n_swa, h, top + 1);
}

template <dtype::kv_element KE, dtype::kv_element VE>
template <class NewPos>
status sliding_window<KE, VE>::check_shift(seq_id s, pos_t p0, pos_t p1, const char* op,
                                           NewPos new_pos, bool noop) const {
  MNEMO_RETURN_IF_ERROR(
      check_shift_allowed(s, cfg_.n_seq_max, in_batch(), cfg_.shift_supported, op));
  const pos_range r = pos_range::of(p0, p1);
  if (noop || r.empty()) return {};
  // The next query after the move must find its window held.
  const pos_t h = horizon_[idx(s)];
  if (h > 0) {
    pos_t top = -1;
    for (const auto& [p, n] : cells_.seq_positions(s)) {
      (void)n;
      top = std::max(top, r.contains(p) ? new_pos(p) : p);
    }
    const pos_t h2 = moved_horizon(h, r, new_pos);
    if (!continuable(h2, top))
      return make_status(status_code::unsupported,
                         "%s: sequence %d would continue at %d, whose %s window of %d reaches "
                         "below %d, where its positions were forgotten (it can resume from %d "
                         "as it is)",
                         op, label(s), top + 1, attention::to_string(cfg_.window).data(),
                         cfg_.n_swa, h2, earliest_restorable_pos(s));
  }
  return this->check_unshare_room(s, r, op, label(s));
}

template <dtype::kv_element KE, dtype::kv_element VE>
template <class NewPos>
void sliding_window<KE, VE>::shift(seq_id s, pos_t p0, pos_t p1, NewPos new_pos, bool noop) {
  const pos_range r = pos_range::of(p0, p1);
  if (noop || r.empty()) return;
  horizon_[idx(s)] = moved_horizon(horizon_[idx(s)], r, new_pos);
  this->move_seq(s, r, new_pos);
}

// ---- placement and forgetting ---------------------------------------------------------

template <dtype::kv_element KE, dtype::kv_element VE>
bool sliding_window<KE, VE>::usable(std::size_t i, seq_id except) const noexcept {
  const cell_array& c = cells_;
  if (c.empty(i) || (except >= 0 && c.owners(i) == seq_set::of(except))) return true;
  if (cfg_.swa_full) return false;
  const pos_t p = c.pos(i);
  bool masked = true;
  // An owner's last position stays even when its next query masks it (a chunk
  // boundary, a window of 1), so seq_pos_max remains the position to continue from.
  for_each_seq(c.owners(i), [&](seq_id o) {
    if (o == except) return;
    const pos_t top = c.seq_pos_max(o);
    masked =
        masked && p < top && attention::is_masked_by_window(cfg_.window, cfg_.n_swa, p, top + 1);
  });
  return masked;
}

template <dtype::kv_element KE, dtype::kv_element VE>
void sliding_window<KE, VE>::overwrite(std::size_t c, pos_t p, const seq_set& owners,
                                       std::vector<pos_t>& bump) {
  if (!cells_.empty(c)) {
    const pos_t old = cells_.pos(c);
    for_each_seq(cells_.owners(c),
                 [&](seq_id o) { bump[idx(o)] = std::max(bump[idx(o)], old + 1); });
    cells_.release(c);
  }
  cells_.occupy(c, p, owners);
}

template <dtype::kv_element KE, dtype::kv_element VE>
void sliding_window<KE, VE>::forget_below(const std::vector<pos_t>& bump, bool log) {
  bool any = false;
  for (seq_id s = 0; s < cfg_.n_seq_max; ++s)
    if (bump[idx(s)] > horizon_[idx(s)]) horizon_[idx(s)] = bump[idx(s)], any = true;
  if (!any) return;
  for (std::size_t i = 0; i < cells_.size(); ++i) {
    if (cells_.empty(i)) continue;
    const seq_set o = cells_.owners(i);
    for_each_seq(o, [&](seq_id s) {
      if (bump[idx(s)] > 0 && cells_.pos(i) < horizon_[idx(s)]) {
        if (log) tx_.save(i, cells_);
        if (cells_.remove_owner(i, s)) this->lower_head(i);
      }
    });
  }
}

/// The slot scan from the head, taking usable cells in scan order, not necessarily
/// contiguous.
template <dtype::kv_element KE, dtype::kv_element VE>
status sliding_window<KE, VE>::find_slots(std::size_t u, std::size_t n,
                                          std::vector<std::uint32_t>& slots) const {
  if (n > size())
    return make_status(status_code::no_space,
                       "micro-batch %zu has %zu tokens but the window cache has %zu cells", u, n,
                       size());
  std::size_t head = head_;
  scan_slots(
      head, cells_.used(), cells_.size(), n, [&](std::size_t i) { return usable(i); }, slots);
  if (slots.size() < n)
    return make_status(status_code::no_space,
                       "no room for micro-batch %zu: %zu tokens, %zu cells free or out of every "
                       "window of %zu",
                       u, n, slots.size(), size());
  return {};
}

/// Occupies `slots` with micro-batch tokens; `rows`: save overwritten rows (apply).
template <dtype::kv_element KE, dtype::kv_element VE>
void sliding_window<KE, VE>::place(std::span<const std::uint32_t> slots, const ubatch_tokens& ub,
                                   bool rows) {
  bump_.assign(horizon_.size(), 0);
  for (std::size_t j = 0; j < slots.size(); ++j) {
    tx_.save(slots[j], cells_);
    if (rows) tx_.save_rows(slots[j], kv_);
    overwrite(slots[j], ub.pos[j], ub.seqs[j], bump_);
  }
  forget_below(bump_, true);
  if (!slots.empty()) head_ = slots.back() + 1;
}

}  // namespace mnemo::memory
