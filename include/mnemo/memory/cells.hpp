// The metadata of one cell array (a stream): per cell its position, owner set and
// pending shift; per sequence the multiset of positions it holds (seq_pos_min / max
// answer from it). Every mutation goes through these methods so the derived data stay
// exact.
//
// The sequence operations that touch many cells (seq_rm, seq_cp, seq_keep, seq_add,
// seq_div, defragmentation) are methods here too: they change the cells in one pass
// and then each affected multiset once, by whole runs of positions, instead of an
// update per cell, because an update per cell made the sequence operations of a large
// cache cost a sizeable part of a decode step; what is left is mostly the scan of the
// cells (docs/performance.md, "Memory").
#pragma once

#include <algorithm>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <span>
#include <utility>
#include <vector>

#include "mnemo/base/assert.hpp"
#include "mnemo/base/seq_set.hpp"
#include "mnemo/memory/pos_multiset.hpp"
#include "mnemo/memory/types.hpp"

namespace mnemo::memory {

/// Calls fn(s) for every sequence s of o, by increasing id.
template <class Fn>
void for_each_seq(const seq_set& o, Fn&& fn) {
  for (int w = 0; w < k_max_seq / 64; ++w)
    for (std::uint64_t bits = o.words[w]; bits != 0; bits &= bits - 1)
      fn(static_cast<seq_id>(w * 64 + std::countr_zero(bits)));
}

class cell_array {
 public:
  cell_array() = default;
  explicit cell_array(std::size_t size)
      : pos_(size, -1), owners_(size), shift_(size, 0), seq_pos_(k_max_seq) {}

  std::size_t size() const noexcept { return pos_.size(); }
  std::size_t used() const noexcept { return used_; }
  bool empty(std::size_t i) const noexcept { return pos_[i] < 0; }
  pos_t pos(std::size_t i) const noexcept { return pos_[i]; }
  const seq_set& owners(std::size_t i) const noexcept { return owners_[i]; }
  pos_t shift(std::size_t i) const noexcept { return shift_[i]; }
  bool has_shift() const noexcept { return has_shift_; }
  /// Cells [0, used_max_p1()) hold every non-empty cell: what attention must look at.
  std::size_t used_max_p1() const noexcept {
    std::size_t n = used_max_p1_;
    while (n > 0 && pos_[n - 1] < 0) --n;
    return n;
  }
  const pos_t* pos_data() const noexcept { return pos_.data(); }
  const seq_set* owners_data() const noexcept { return owners_.data(); }

  /// The lowest / highest position s holds, or -1. O(1).
  pos_t seq_pos_min(seq_id s) const noexcept { return seq_pos_[s].min(); }
  pos_t seq_pos_max(seq_id s) const noexcept { return seq_pos_[s].max(); }
  /// Cells s holds (with multiplicity of positions). O(1).
  std::size_t seq_cells(seq_id s) const noexcept { return seq_pos_[s].size(); }
  /// The multiset of s's positions as (position, count) pairs by increasing position.
  std::vector<std::pair<pos_t, int>> seq_positions(seq_id s) const {
    std::vector<std::pair<pos_t, int>> r;
    for (const pos_count& e : seq_pos_[s].entries()) r.emplace_back(e.pos, e.count);
    return r;
  }

  // ---- one cell at a time ----------------------------------------------------------

  /// Makes empty cell i hold position p for `owners`. @pre empty(i), p >= 0
  void occupy(std::size_t i, pos_t p, const seq_set& owners) {
    MNEMO_DASSERT(empty(i) && p >= 0);
    pos_[i] = p;
    owners_[i] = owners;
    shift_[i] = 0;
    for_each_seq(owners, [&](seq_id s) { seq_pos_[s].insert(p); });
    ++used_;
    used_max_p1_ = std::max(used_max_p1_, i + 1);
  }

  /// Empties cell i (whatever it holds).
  void release(std::size_t i) {
    if (empty(i)) return;
    for_each_seq(owners_[i], [&](seq_id s) { drop(s, pos_[i]); });
    free_cell(i);
  }

  /// Adds s to the owners of non-empty cell i.
  void add_owner(std::size_t i, seq_id s) {
    MNEMO_DASSERT(!empty(i));
    if (owners_[i].contains(s)) return;
    owners_[i].insert(s);
    seq_pos_[s].insert(pos_[i]);
  }

  /// Removes s from cell i; the cell becomes empty when no owner is left.
  /// Returns whether it did.
  bool remove_owner(std::size_t i, seq_id s) {
    if (empty(i) || !owners_[i].contains(s)) return false;
    owners_[i].erase(s);
    drop(s, pos_[i]);
    if (!owners_[i].empty()) return false;
    free_cell(i);
    return true;
  }

  /// Moves cell i to position p (a pending shift of p - old is recorded);
  /// a negative p empties the cell (as seq_add does). Returns whether it emptied.
  bool move(std::size_t i, pos_t p) {
    MNEMO_DASSERT(!empty(i));
    const pos_t old = pos_[i];
    if (p < 0) {
      release(i);
      return true;
    }
    for_each_seq(owners_[i], [&](seq_id s) {
      drop(s, old);
      seq_pos_[s].insert(p);
    });
    pos_[i] = p;
    shift_[i] += p - old;
    has_shift_ = true;
    return false;
  }

  /// Restores cell i exactly (used by rollback and state restore).
  void restore(std::size_t i, pos_t p, const seq_set& owners, pos_t shift) {
    release(i);
    if (p < 0) return;
    occupy(i, p, owners);
    shift_[i] = shift;
  }

  /// Moves everything cell `from` holds to empty cell `to` (defragmentation); the
  /// position multisets do not change.
  void relocate(std::size_t from, std::size_t to) {
    MNEMO_DASSERT(!empty(from) && empty(to));
    pos_[to] = pos_[from];
    owners_[to] = owners_[from];
    shift_[to] = shift_[from];
    pos_[from] = -1;
    owners_[from].clear();
    shift_[from] = 0;
    used_max_p1_ = std::max(used_max_p1_, to + 1);
  }

  /// Copy-on-write of a shared cell: s leaves `from` (which keeps its other owners)
  /// and empty cell `to` holds the same position and pending shift for s alone; s's
  /// multiset does not change.
  void split_owner(std::size_t from, std::size_t to, seq_id s) {
    MNEMO_DASSERT(!empty(from) && empty(to) && owners_[from].contains(s) &&
                  owners_[from].count() > 1);
    owners_[from].erase(s);
    pos_[to] = pos_[from];
    owners_[to] = seq_set::of(s);
    shift_[to] = shift_[from];
    has_shift_ = has_shift_ || shift_[to] != 0;
    ++used_;
    used_max_p1_ = std::max(used_max_p1_, to + 1);
  }

  // ---- sequence operations: cells in one pass, multisets by runs -------------------

  /// seq_rm: removes s (every sequence when s < 0) from the cells at positions in r;
  /// cells left without owner become free. Returns the lowest cell freed, or size().
  std::size_t remove_seq(seq_id s, pos_range r) {
    std::size_t lowest = size();
    if (r.empty()) return lowest;
    for (std::size_t i = 0; i < size(); ++i) {
      if (empty(i) || !r.contains(pos_[i])) continue;
      if (s >= 0) {
        if (!owners_[i].contains(s)) continue;
        owners_[i].erase(s);
        if (!owners_[i].empty()) continue;
      }
      free_cell(i);
      lowest = std::min(lowest, i);
    }
    if (s >= 0) {
      seq_pos_[s].erase_range(r.p0, r.p1);
    } else {
      for (auto& m : seq_pos_) m.erase_range(r.p0, r.p1);
    }
    return lowest;
  }

  /// seq_cp: dst holds exactly src's cells at positions in r afterwards, sharing
  /// them (dst's own cells there are removed first). Returns the lowest cell freed
  /// by that removal, or size(). @pre src != dst
  std::size_t copy_seq(seq_id src, seq_id dst, pos_range r) {
    MNEMO_DASSERT(src != dst);
    std::size_t lowest = size();
    if (r.empty()) return lowest;
    for (std::size_t i = 0; i < size(); ++i) {  // one pass: dst leaves, then joins src
      if (empty(i) || !r.contains(pos_[i])) continue;
      seq_set& o = owners_[i];
      if (o.contains(src)) {
        o.insert(dst);
      } else if (o.contains(dst)) {
        o.erase(dst);
        if (o.empty()) {
          free_cell(i);
          lowest = std::min(lowest, i);
        }
      }
    }
    seq_pos_[dst].erase_range(r.p0, r.p1);
    seq_pos_[dst].insert_range(seq_pos_[src], r.p0, r.p1);
    return lowest;
  }

  /// seq_keep: cells without s become free, cells with s keep only s. Returns the
  /// lowest cell freed, or size().
  std::size_t keep_seq(seq_id s) {
    std::size_t lowest = size();
    const seq_set only = seq_set::of(s);
    for (std::size_t i = 0; i < size(); ++i) {
      if (empty(i)) continue;
      if (!owners_[i].contains(s)) {
        free_cell(i);
        lowest = std::min(lowest, i);
      } else {
        owners_[i] = only;
      }
    }
    for (seq_id q = 0; q < static_cast<seq_id>(seq_pos_.size()); ++q)
      if (q != s) seq_pos_[q].clear();
    return lowest;
  }

  /// seq_add / seq_div: moves each of `cells` to new_pos(its position), recording
  /// the pending shift; cells whose new position is negative become free. Returns
  /// whether any did. @pre `cells` are exactly the cells of s at positions in r, each
  /// owned by s alone (shared ones were split off first); new_pos is non-decreasing.
  template <class NewPos>
  bool move_seq(seq_id s, pos_range r, std::span<const std::size_t> cells, NewPos new_pos) {
    bool freed = false;
    for (std::size_t i : cells) {
      MNEMO_DASSERT(r.contains(pos_[i]) && owners_[i] == seq_set::of(s));
      const pos_t old = pos_[i], p = new_pos(old);
      if (p < 0) {
        free_cell(i);
        freed = true;
        continue;
      }
      pos_[i] = p;
      shift_[i] += p - old;
      has_shift_ = true;
    }
    seq_pos_[s].transform_range(r.p0, r.p1, new_pos);
    return freed;
  }

  void set_has_shift(bool v) noexcept { has_shift_ = v; }
  void clear_shifts() noexcept {
    std::fill(shift_.begin(), shift_.end(), 0);
    has_shift_ = false;
  }

  void clear() {
    std::fill(pos_.begin(), pos_.end(), -1);
    for (auto& o : owners_) o.clear();
    std::fill(shift_.begin(), shift_.end(), 0);
    for (auto& m : seq_pos_) m.clear();
    used_ = 0;
    used_max_p1_ = 0;
    has_shift_ = false;
  }

 private:
  void drop(seq_id s, pos_t p) {
    [[maybe_unused]] const bool found = seq_pos_[s].erase(p);
    MNEMO_DASSERT(found);
  }
  /// Empties cell i without touching the multisets (the caller updates them).
  void free_cell(std::size_t i) {
    pos_[i] = -1;
    owners_[i].clear();
    shift_[i] = 0;
    --used_;
  }

  std::vector<pos_t> pos_;
  std::vector<seq_set> owners_;
  std::vector<pos_t> shift_;
  std::vector<pos_multiset> seq_pos_;  // [k_max_seq]
  std::size_t used_ = 0;
  std::size_t used_max_p1_ = 0;  // an upper bound, tightened lazily
  bool has_shift_ = false;
};

}  // namespace mnemo::memory
