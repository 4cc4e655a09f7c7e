// SnapKV (Li et al. 2024, arXiv 2404.14469): at the end of a prefill chunk the last
// `window` query rows (the observation window) score every slot by their attention
// mass, smoothed by an average pool of width `pool` over neighbouring positions;
// the window itself is kept. Decode steps ask for no statistics: decoded tokens are
// protected while in the newest `window` positions and then score 0, so decode
// behaves as a sliding window on top of the prefill's selection (the paper
// compresses once, at the end of the prompt; a bounded cache must also bound decode).
#pragma once

#include <algorithm>
#include <vector>

#include "mnemo/evict/concepts.hpp"

namespace mnemo::evict {

struct snapkv {
  static constexpr std::size_t state_floats = 1;  // pooled observation-window mass
  static constexpr bool uses_attention = true;
  std::size_t window = 16;  // observation window (rows) and protected recent tokens
  std::size_t pool = 5;     // average-pool width over positions (odd; 1 = none)

  stats_request request(const step_info& s) const noexcept { return {s.prefill() ? window : 0}; }
  void on_insert(const step_info&, slot_view v, std::size_t slot, const float*,
                 const float*) const noexcept {
    v.state[slot] = 0.0f;
  }
  /// Pools along positions: slots sorted by position, each score the mean of the
  /// raw mass of its `pool` neighbours. Scratch is thread-local, so a warm call
  /// does not allocate.
  void on_attention(const step_info&, slot_view v, const attention_mass& m) const noexcept {
    thread_local std::vector<std::uint32_t> order;
    thread_local std::vector<float> raw;
    order.clear();
    for (std::size_t j = 0; j < m.stride; ++j)
      if (v.live(j)) order.push_back(static_cast<std::uint32_t>(j));
    std::sort(order.begin(), order.end(),
              [&](std::uint32_t a, std::uint32_t b) { return v.pos[a] < v.pos[b]; });
    raw.resize(order.size());
    for (std::size_t i = 0; i < order.size(); ++i) raw[i] = m.total(order[i]);
    const std::size_t half = pool / 2;
    for (std::size_t i = 0; i < order.size(); ++i) {
      const std::size_t lo = i >= half ? i - half : 0, hi = std::min(order.size(), i + half + 1);
      float s = 0.0f;
      for (std::size_t t = lo; t < hi; ++t) s += raw[t];
      v.state[order[i]] = s / static_cast<float>(hi - lo);
    }
  }
  float score(const step_info&, slot_view v, std::size_t slot) const noexcept {
    return v.state[slot];
  }
  bool protect(const step_info& s, slot_view v, std::size_t slot) const noexcept {
    return in_recent_window(s, v, slot, window);
  }
};
static_assert(eviction_policy<snapkv>);

}  // namespace mnemo::evict
