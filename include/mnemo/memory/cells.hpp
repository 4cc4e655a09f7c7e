// The metadata of one cell array (a stream): per cell its position, owner set and
// pending shift; per sequence the multiset of positions it holds (spec/memory.md
// §2.1). Every mutation goes through these methods so the derived data stay exact.
#pragma once

#include <algorithm>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <map>
#include <vector>

#include "mnemo/base/assert.hpp"
#include "mnemo/base/seq_set.hpp"

namespace mnemo::memory {

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

  /// The lowest / highest position s holds, or -1.
  pos_t seq_pos_min(seq_id s) const noexcept {
    const auto& m = seq_pos_[s];
    return m.empty() ? -1 : m.begin()->first;
  }
  pos_t seq_pos_max(seq_id s) const noexcept {
    const auto& m = seq_pos_[s];
    return m.empty() ? -1 : m.rbegin()->first;
  }
  /// Cells s holds (with multiplicity of positions).
  std::size_t seq_cells(seq_id s) const noexcept {
    std::size_t n = 0;
    for (const auto& [p, c] : seq_pos_[s]) n += static_cast<std::size_t>(c);
    return n;
  }
  const std::map<pos_t, int>& seq_positions(seq_id s) const noexcept { return seq_pos_[s]; }

  /// Makes empty cell i hold position p for `owners`. @pre empty(i), p >= 0
  void occupy(std::size_t i, pos_t p, const seq_set& owners) {
    MNEMO_DASSERT(empty(i) && p >= 0);
    pos_[i] = p;
    owners_[i] = owners;
    shift_[i] = 0;
    for_each_owner(owners, [&](seq_id s) { ++seq_pos_[s][p]; });
    ++used_;
    used_max_p1_ = std::max(used_max_p1_, i + 1);
  }

  /// Empties cell i (whatever it holds).
  void release(std::size_t i) {
    if (empty(i)) return;
    for_each_owner(owners_[i], [&](seq_id s) { drop(s, pos_[i]); });
    pos_[i] = -1;
    owners_[i].clear();
    shift_[i] = 0;
    --used_;
  }

  /// Adds s to the owners of non-empty cell i.
  void add_owner(std::size_t i, seq_id s) {
    MNEMO_DASSERT(!empty(i));
    if (owners_[i].contains(s)) return;
    owners_[i].insert(s);
    ++seq_pos_[s][pos_[i]];
  }

  /// Removes s from cell i; the cell becomes empty when no owner is left.
  /// Returns whether it did.
  bool remove_owner(std::size_t i, seq_id s) {
    if (empty(i) || !owners_[i].contains(s)) return false;
    owners_[i].erase(s);
    drop(s, pos_[i]);
    if (owners_[i].empty()) {
      pos_[i] = -1;
      shift_[i] = 0;
      --used_;
      return true;
    }
    return false;
  }

  /// Moves cell i to position p (a pending shift of p - old is recorded);
  /// a negative p empties the cell (spec §1.3 seq_add). Returns whether it emptied.
  bool move(std::size_t i, pos_t p) {
    MNEMO_DASSERT(!empty(i));
    const pos_t old = pos_[i];
    if (p < 0) {
      release(i);
      return true;
    }
    for_each_owner(owners_[i], [&](seq_id s) {
      drop(s, old);
      ++seq_pos_[s][p];
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
  template <class Fn>
  static void for_each_owner(const seq_set& o, Fn&& fn) {
    for (int w = 0; w < k_max_seq / 64; ++w) {
      std::uint64_t bits = o.words[w];
      while (bits) {
        const int b = std::countr_zero(bits);
        fn(static_cast<seq_id>(w * 64 + b));
        bits &= bits - 1;
      }
    }
  }
  void drop(seq_id s, pos_t p) {
    auto it = seq_pos_[s].find(p);
    MNEMO_DASSERT(it != seq_pos_[s].end());
    if (--it->second == 0) seq_pos_[s].erase(it);
  }

  std::vector<pos_t> pos_;
  std::vector<seq_set> owners_;
  std::vector<pos_t> shift_;
  std::vector<std::map<pos_t, int>> seq_pos_;
  std::size_t used_ = 0;
  std::size_t used_max_p1_ = 0;  // an upper bound, tightened lazily
  bool has_shift_ = false;
};

}  // namespace mnemo::memory
