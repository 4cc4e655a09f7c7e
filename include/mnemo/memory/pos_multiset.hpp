// The multiset of positions one sequence holds in a cell array (cells.hpp):
// what seq_pos_min / seq_pos_max answer from, exactly, in O(1).
//
// Sorted (position, count) entries in blocks of at most `block` entries (4 KiB by
// default), a one-level B+-tree without the index: the blocks are found by binary
// search over their last entries. Why not std::map: one node allocation per insert
// and erase per touched cell made the sequence operations of a large cache cost a
// sizeable part of a decode step (docs/performance.md). Why not a count
// array over [min, max]: positions are caller data, and one sequence holding
// positions 0 and 2^31 - 2 would need 8 GiB. Here memory is O(distinct positions),
// an insert or erase anywhere is O(log blocks + block) (appending past the maximum,
// what decoding does, and removing the maximum, what a rollback does, are O(1)), and
// the bulk operations of seq_rm / seq_cp / seq_add / seq_div work on whole runs of
// entries: O(entries touched) or one linear merge.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "mnemo/base/assert.hpp"
#include "mnemo/base/seq_set.hpp"

namespace mnemo::memory {

/// A distinct position and how many cells of the sequence hold it (> 0).
struct pos_count {
  pos_t pos;
  std::int32_t count;
  friend bool operator==(const pos_count&, const pos_count&) = default;
};

/// A multiset of positions >= 0. min() / max() are -1 when it is empty.
class pos_multiset {
 public:
  static constexpr std::size_t k_default_block = 512;

  pos_multiset() = default;
  /// `block`: entries per block at most (>= 2); small values are for tests.
  explicit pos_multiset(std::size_t block) : block_(std::max<std::size_t>(block, 2)) {}

  bool empty() const noexcept { return blocks_.empty(); }
  /// Positions held, with multiplicity (cells of the sequence).
  std::size_t size() const noexcept { return total_; }
  std::size_t distinct() const noexcept { return distinct_; }
  std::size_t blocks() const noexcept { return blocks_.size(); }
  pos_t min() const noexcept { return empty() ? -1 : blocks_.front().front().pos; }
  pos_t max() const noexcept { return empty() ? -1 : blocks_.back().back().pos; }

  std::size_t count(pos_t p) const noexcept {
    if (empty() || p > max()) return 0;
    const block& b = *find_block(p);
    const auto it = lower(b.begin(), b.end(), p);
    return it != b.end() && it->pos == p ? static_cast<std::size_t>(it->count) : 0;
  }

  /// The representation's invariants hold (for tests): no empty or oversized block,
  /// positions strictly increasing, counts > 0, size() and distinct() exact.
  bool well_formed() const noexcept {
    std::size_t total = 0, distinct = 0;
    pos_t last = -1;
    for (const block& b : blocks_) {
      if (b.empty() || b.size() > block_) return false;
      for (const pos_count& e : b) {
        if (e.pos <= last || e.count <= 0) return false;
        last = e.pos;
        total += static_cast<std::size_t>(e.count);
      }
      distinct += b.size();
    }
    return total == total_ && distinct == distinct_;
  }

  /// Every entry, by increasing position.
  std::vector<pos_count> entries() const {
    std::vector<pos_count> r;
    r.reserve(distinct_);
    for (const block& b : blocks_) r.insert(r.end(), b.begin(), b.end());
    return r;
  }

  /// Adds n occurrences of p. @pre p >= 0, n > 0
  void insert(pos_t p, std::int32_t n = 1) {
    MNEMO_DASSERT(p >= 0 && n > 0);
    if (empty() || p > max()) return append(p, n);
    const auto b = find_block(p);  // p <= max(): some block ends at or after p
    const auto it = lower(b->begin(), b->end(), p);
    total_ += static_cast<std::size_t>(n);
    if (it->pos == p) {
      it->count += n;
      return;
    }
    b->insert(it, pos_count{p, n});
    ++distinct_;
    if (b->size() > block_) split(b);
  }

  /// Removes one occurrence of p; false (and nothing changes) when p is absent.
  bool erase(pos_t p) {
    if (empty() || p > max() || p < min()) return false;
    const auto b = find_block(p);
    const auto it = lower(b->begin(), b->end(), p);
    if (it->pos != p) return false;
    --total_;
    if (--it->count > 0) return true;
    b->erase(it);
    --distinct_;
    if (b->empty()) blocks_.erase(b);
    maybe_compact();
    return true;
  }

  /// Removes every occurrence of the positions in [p0, p1); returns how many.
  std::size_t erase_range(pos_t p0, pos_t p1) { return extract(p0, p1, nullptr); }

  /// Adds every occurrence src holds in [p0, p1) (src may be *this).
  void insert_range(const pos_multiset& src, pos_t p0, pos_t p1) {
    std::vector<pos_count> add;
    src.collect(p0, p1, add);
    merge(std::move(add));
  }

  /// Moves every occurrence of p in [p0, p1) to f(p); those with f(p) < 0 are
  /// dropped. @pre f is non-decreasing on [p0, p1) (p + delta, p / d for d > 0)
  template <class F>
  void transform_range(pos_t p0, pos_t p1, F f) {
    std::vector<pos_count> moved;
    extract(p0, p1, &moved);
    std::vector<pos_count> add;
    add.reserve(moved.size());
    for (const pos_count& e : moved) {
      const pos_t q = f(e.pos);
      if (q < 0) continue;
      MNEMO_DASSERT(add.empty() || q >= add.back().pos);
      if (!add.empty() && add.back().pos == q) {
        add.back().count += e.count;
      } else {
        add.push_back({q, e.count});
      }
    }
    merge(std::move(add));
  }

  void clear() noexcept {
    blocks_.clear();
    total_ = distinct_ = 0;
  }

 private:
  using block = std::vector<pos_count>;
  using block_iter = std::vector<block>::iterator;

  template <class It>
  static It lower(It first, It last, pos_t p) {
    return std::lower_bound(first, last, p, [](const pos_count& e, pos_t q) { return e.pos < q; });
  }
  /// The first block whose last position is >= p (end() when p > max()).
  block_iter find_block(pos_t p) {
    return std::partition_point(blocks_.begin(), blocks_.end(),
                                [p](const block& b) { return b.back().pos < p; });
  }
  std::vector<block>::const_iterator find_block(pos_t p) const {
    return std::partition_point(blocks_.begin(), blocks_.end(),
                                [p](const block& b) { return b.back().pos < p; });
  }

  /// @pre p > max()
  void append(pos_t p, std::int32_t n) {
    if (blocks_.empty() || blocks_.back().size() >= block_) blocks_.emplace_back();
    blocks_.back().push_back({p, n});
    total_ += static_cast<std::size_t>(n);
    ++distinct_;
  }

  void split(block_iter b) {
    const std::size_t half = b->size() / 2;
    block tail(b->begin() + static_cast<std::ptrdiff_t>(half), b->end());
    b->resize(half);
    blocks_.insert(b + 1, std::move(tail));
  }

  /// Blocks emptied by erasures are dropped, but blocks thinned out are not merged:
  /// rebuild once the average block is under 1/8 full, so memory stays O(distinct)
  /// (each rebuild follows >= 3/8 of the entries' worth of erasures: amortized O(1)).
  void maybe_compact() {
    if (blocks_.size() > 2 && distinct_ * 8 < blocks_.size() * block_) rebuild(entries());
  }

  /// Replaces the content with `flat` (sorted, distinct positions, counts > 0), in
  /// half-full blocks so that inserts in the middle do not split at once.
  void rebuild(const std::vector<pos_count>& flat) {
    blocks_.clear();
    total_ = 0;
    distinct_ = flat.size();
    const std::size_t per = std::max<std::size_t>(block_ / 2, 1);
    for (std::size_t i = 0; i < flat.size(); i += per) {
      const auto first = flat.begin() + static_cast<std::ptrdiff_t>(i);
      blocks_.emplace_back(first,
                           first + static_cast<std::ptrdiff_t>(std::min(per, flat.size() - i)));
    }
    for (const pos_count& e : flat) total_ += static_cast<std::size_t>(e.count);
  }

  /// Appends the entries in [p0, p1) to out.
  void collect(pos_t p0, pos_t p1, std::vector<pos_count>& out) const {
    if (p0 >= p1) return;
    for (auto b = find_block(p0); b != blocks_.end() && b->front().pos < p1; ++b) {
      const auto lo = lower(b->begin(), b->end(), p0);
      out.insert(out.end(), lo, lower(lo, b->end(), p1));
    }
  }

  /// Removes the entries in [p0, p1), appending them to *out when out is not null;
  /// returns the occurrences removed. Blocks entirely inside the range are dropped
  /// whole.
  std::size_t extract(pos_t p0, pos_t p1, std::vector<pos_count>* out) {
    if (p0 >= p1 || empty()) return 0;
    const auto b0 = find_block(p0);
    const auto b1 = std::partition_point(b0, blocks_.end(),
                                         [p1](const block& b) { return b.front().pos < p1; });
    std::size_t removed = 0;
    for (auto b = b0; b != b1; ++b) {
      const auto lo = lower(b->begin(), b->end(), p0), hi = lower(lo, b->end(), p1);
      for (auto it = lo; it != hi; ++it) removed += static_cast<std::size_t>(it->count);
      if (out != nullptr) out->insert(out->end(), lo, hi);
      distinct_ -= static_cast<std::size_t>(hi - lo);
      b->erase(lo, hi);
    }
    blocks_.erase(std::remove_if(b0, b1, [](const block& b) { return b.empty(); }), b1);
    total_ -= removed;
    maybe_compact();
    return removed;
  }

  /// Adds `add` (sorted, distinct positions, counts > 0): appended when it lies past
  /// max(), inserted one by one when small (O(log + block) each), else one linear
  /// merge and rebuild.
  void merge(std::vector<pos_count> add) {
    if (add.empty()) return;
    if (empty() || add.front().pos > max()) {
      for (const pos_count& e : add) append(e.pos, e.count);
      return;
    }
    if (add.size() * 16 < distinct_) {
      for (const pos_count& e : add) insert(e.pos, e.count);
      return;
    }
    const std::vector<pos_count> mine = entries();
    std::vector<pos_count> all;
    all.reserve(mine.size() + add.size());
    auto a = mine.cbegin();
    auto b = add.cbegin();
    while (a != mine.end() || b != add.end()) {
      if (b == add.end() || (a != mine.end() && a->pos < b->pos)) {
        all.push_back(*a++);
      } else if (a == mine.end() || b->pos < a->pos) {
        all.push_back(*b++);
      } else {
        all.push_back({a->pos, a->count + b->count});
        ++a, ++b;
      }
    }
    rebuild(all);
  }

  std::vector<block> blocks_;  // no block is empty; positions increase across all of them
  std::size_t block_ = k_default_block;
  std::size_t total_ = 0, distinct_ = 0;
};

}  // namespace mnemo::memory
