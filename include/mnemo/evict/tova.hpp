// TOVA (Oren et al. 2024, arXiv 2401.06104, "Transformers are Multi-State RNNs"):
// a slot's score is the attention of the current (last) query only, summed over all
// heads of the layer; the lowest goes. Nothing is protected (the newest token has
// just been attended by itself and usually scores high).
#pragma once

#include "mnemo/evict/concepts.hpp"

namespace mnemo::evict {

struct tova {
  static constexpr std::size_t state_floats = 1;  // the last query's mass
  static constexpr bool uses_attention = true;

  stats_request request(const step_info&) const noexcept { return {1}; }
  void on_insert(const step_info&, slot_view v, std::size_t slot, const float*,
                 const float*) const noexcept {
    v.state[slot] = 0.0f;
  }
  void on_attention(const step_info&, slot_view v, const attention_mass& m) const noexcept {
    m.for_each_total_run([&](std::size_t first, std::size_t n, const float* total) {
      for (std::size_t j = first; j < first + n; ++j)
        v.state[j] = v.live(j) ? total[j - first] : v.state[j];
    });
  }
  float score(const step_info&, slot_view v, std::size_t slot) const noexcept {
    return v.state[slot];
  }
  bool protect(const step_info&, slot_view, std::size_t) const noexcept { return false; }
};
static_assert(eviction_policy<tova>);

}  // namespace mnemo::evict
