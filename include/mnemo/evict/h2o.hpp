// H2O, the heavy-hitter oracle (Zhang et al. 2023, arXiv 2306.14048): a slot's score
// is the attention mass it has received from every query row since it was written
// (all prefill rows included), summed over KV heads and their GQA groups; the
// `recent` newest tokens are protected. Per layer: one slot set for all heads.
#pragma once

#include "mnemo/evict/concepts.hpp"

namespace mnemo::evict {

struct h2o {
  static constexpr std::size_t state_floats = 1;  // accumulated mass
  static constexpr bool uses_attention = true;
  std::size_t recent = 16;

  stats_request request(const step_info&) const noexcept { return {stats_request::all_rows}; }
  void on_insert(const step_info&, slot_view v, std::size_t slot, const float*,
                 const float*) const noexcept {
    v.state[slot] = 0.0f;
  }
  void on_attention(const step_info&, slot_view v, const attention_mass& m) const noexcept {
    // A dead slot adds 0 (its state is reset on insert): no branch, so it vectorises.
    m.for_each_total_run([&](std::size_t first, std::size_t n, const float* total) {
      for (std::size_t j = 0; j < n; ++j) v.state[first + j] += v.live(first + j) ? total[j] : 0.0f;
    });
  }
  float score(const step_info&, slot_view v, std::size_t slot) const noexcept {
    return v.state[slot];
  }
  bool protect(const step_info& s, slot_view v, std::size_t slot) const noexcept {
    return in_recent_window(s, v, slot, recent);
  }
};
static_assert(eviction_policy<h2o>);

}  // namespace mnemo::evict
