// Scissorhands (Liu et al. 2023, arXiv 2305.17118), "persistence of importance": a
// token that drew little attention over the last `history` steps will keep drawing
// little. Each call the newest query's attention marks every slot as low (below
// `low` times the uniform share 1/live of the lane's mass) or not; a slot's score is
// minus its count of low steps in the window, so the most often ignored goes first.
// The `recent` newest tokens are protected. The paper drops m tokens at once when
// the budget is reached: set `evict_chunk` (1 = one per step).
#pragma once

#include <bit>
#include <cstdint>

#include "mnemo/evict/concepts.hpp"

namespace mnemo::evict {

struct scissorhands {
  static constexpr std::size_t state_floats = 1;  // low-step bits, newest in bit 0
  static constexpr bool uses_attention = true;
  static constexpr std::size_t max_history = 24;  // bits a float holds exactly
  std::size_t recent = 16;
  std::size_t history = 24;  // window w in steps (<= max_history)
  float low = 1.0f;          // a step is low below low * (lane mass / live slots)
  std::size_t evict_chunk = 1;

  stats_request request(const step_info&) const noexcept { return {1}; }
  void on_insert(const step_info&, slot_view v, std::size_t slot, const float*,
                 const float*) const noexcept {
    v.state[slot] = 0.0f;
  }
  void on_attention(const step_info&, slot_view v, const attention_signals& m) const noexcept {
    float total = 0.0f;
    std::size_t live = 0;
    for (std::size_t j = 0; j < m.stride; ++j)
      if (v.live(j)) total += m.total(j), ++live;
    if (live == 0) return;
    const float threshold = low * total / static_cast<float>(live);
    const std::uint32_t mask = (1u << (history < max_history ? history : max_history)) - 1u;
    for (std::size_t j = 0; j < m.stride; ++j) {
      if (!v.live(j)) continue;
      const auto bits = static_cast<std::uint32_t>(v.state[j]);
      v.state[j] = static_cast<float>(((bits << 1) | (m.total(j) < threshold ? 1u : 0u)) & mask);
    }
  }
  float score(const step_info&, slot_view v, std::size_t slot) const noexcept {
    return -static_cast<float>(std::popcount(static_cast<std::uint32_t>(v.state[slot])));
  }
  bool protect(const step_info& s, slot_view v, std::size_t slot) const noexcept {
    return in_recent_window(s, v, slot, recent);
  }
};
static_assert(eviction_policy<scissorhands>);

}  // namespace mnemo::evict
