// H2O normalised by age (keys_values `h2o` with score normalisation; kvpress
// ObservedAttentionPress divides the same way): a slot's accumulated attention mass
// divided by the number of query rows that could see it, so old tokens do not win
// merely by having been observed longer. Per layer the mass is summed over KV heads
// (per-KV-head lanes: the lane's head); the `recent` newest tokens are protected.
#pragma once

#include <algorithm>

#include "mnemo/evict/concepts.hpp"

namespace mnemo::evict {

struct h2o_normalised {
  static constexpr std::size_t state_floats = 2;  // accumulated mass, observer rows
  static constexpr bool uses_attention = true;
  std::size_t recent = 16;

  stats_request request(const step_info&) const noexcept { return {stats_request::all_rows}; }
  void on_insert(const step_info&, slot_view v, std::size_t slot, const float*,
                 const float*) const noexcept {
    v.state[2 * slot] = v.state[2 * slot + 1] = 0.0f;
  }
  /// A row observes the slots at or before its position (causal), so the count of a
  /// slot's observers in this call is the number of rows with row_pos >= its position.
  void on_attention(const step_info&, slot_view v, const attention_signals& m) const noexcept {
    for (std::size_t j = 0; j < m.stride; ++j) {
      if (!v.live(j)) continue;
      const pos_t* first = std::lower_bound(m.row_pos, m.row_pos + m.rows, v.pos[j]);
      v.state[2 * j] += m.total(j);
      v.state[2 * j + 1] += static_cast<float>(m.row_pos + m.rows - first);
    }
  }
  float score(const step_info&, slot_view v, std::size_t slot) const noexcept {
    return v.state[2 * slot] / std::max(v.state[2 * slot + 1], 1.0f);
  }
  bool protect(const step_info& s, slot_view v, std::size_t slot) const noexcept {
    return in_recent_window(s, v, slot, recent);
  }
};
static_assert(eviction_policy<h2o_normalised>);

}  // namespace mnemo::evict
