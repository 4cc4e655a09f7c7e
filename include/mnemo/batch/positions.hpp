// Models of position_source for callers without a memory object at hand: an empty
// memory, and an explicit table (tests, and composites that snapshot their parts).
#pragma once

#include <array>

#include "mnemo/base/assert.hpp"
#include "mnemo/base/seq_set.hpp"
#include "mnemo/batch/concepts.hpp"

namespace mnemo {

/// A memory that holds nothing: every sequence may start at any position.
struct empty_memory {
  constexpr pos_t pos_min(seq_id) const noexcept { return -1; }
  constexpr pos_t pos_max(seq_id) const noexcept { return -1; }
};

/// Explicit [pos_min, pos_max] per sequence; -1 (empty) unless set.
class position_table {
 public:
  constexpr position_table() noexcept {
    min_.fill(-1);
    max_.fill(-1);
  }
  /// Sequence s holds positions [lo, hi].  @pre 0 <= s < k_max_seq, 0 <= lo <= hi
  constexpr position_table& set(seq_id s, pos_t lo, pos_t hi) noexcept {
    MNEMO_DASSERT(s >= 0 && s < k_max_seq && 0 <= lo && lo <= hi);
    min_[s] = lo;
    max_[s] = hi;
    return *this;
  }
  constexpr position_table& erase(seq_id s) noexcept {
    min_[s] = max_[s] = -1;
    return *this;
  }
  constexpr pos_t pos_min(seq_id s) const noexcept { return in(s) ? min_[s] : -1; }
  constexpr pos_t pos_max(seq_id s) const noexcept { return in(s) ? max_[s] : -1; }

 private:
  static constexpr bool in(seq_id s) noexcept { return s >= 0 && s < k_max_seq; }
  std::array<pos_t, k_max_seq> min_{};
  std::array<pos_t, k_max_seq> max_{};
};

static_assert(position_source<empty_memory>);
static_assert(position_source<position_table>);

}  // namespace mnemo
