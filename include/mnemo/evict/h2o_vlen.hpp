// h2o-vlen (keys_values, Seeger et al.): H2O whose per-call term weighs attention by
// the value norm, renormalised over the slots: a slot adds
// n_rows * m_j ||v_j|| / sum_l m_l ||v_l||, with m_j its mass averaged over the GQA
// group (tokens that are attended but carry near-zero values matter less). Value
// norms are taken at insert; per layer, mass and norms are summed over the lane's KV
// heads. The `recent` newest tokens are protected.
#pragma once

#include <cmath>

#include "mnemo/evict/concepts.hpp"

namespace mnemo::evict {

struct h2o_vlen {
  static constexpr std::size_t state_floats = 2;  // accumulated score, ||v||
  static constexpr bool uses_attention = true;
  std::size_t recent = 16;
  std::size_t n_head_kv = 1, d_v = 0;  // the value row's geometry (set by the user)

  stats_request request(const step_info&) const noexcept { return {stats_request::all_rows}; }
  void on_insert(const step_info& s, slot_view v, std::size_t slot, const float*,
                 const float* val) const noexcept {
    float norms = 0.0f;
    const std::size_t h0 = s.first_head(), h1 = h0 + s.head_count(n_head_kv);
    for (std::size_t h = h0; h < h1; ++h) {
      float q = 0.0f;
      for (std::size_t i = 0; i < d_v; ++i) q += val[h * d_v + i] * val[h * d_v + i];
      norms += std::sqrt(q);
    }
    v.state[2 * slot] = 0.0f;
    v.state[2 * slot + 1] = norms;
  }
  void on_attention(const step_info&, slot_view v, const attention_signals& m) const noexcept {
    const float g = m.group > 0 ? static_cast<float>(m.group) : 1.0f;
    float z = 0.0f;
    for (std::size_t j = 0; j < m.stride; ++j)
      if (v.live(j)) z += m.total(j) / g * v.state[2 * j + 1];
    if (!(z > 0.0f)) return;
    const float scale = static_cast<float>(m.rows) / z;
    for (std::size_t j = 0; j < m.stride; ++j)
      if (v.live(j)) v.state[2 * j] += scale * (m.total(j) / g) * v.state[2 * j + 1];
  }
  float score(const step_info&, slot_view v, std::size_t slot) const noexcept {
    return v.state[2 * slot];
  }
  bool protect(const step_info& s, slot_view v, std::size_t slot) const noexcept {
    return in_recent_window(s, v, slot, recent);
  }
};
static_assert(eviction_policy<h2o_vlen>);

}  // namespace mnemo::evict
