// Q-Hitter (Zhang et al., MLSys 2024; keys_values `qh2o`): heavy hitters that also
// quantise well. Each cell keeps H2O's accumulated attention mass S_j and, from
// insert, its quantisation error e_j (the L2 error of the key row plus that of the
// value row under symmetric absmax quantisation to `bits` bits per head row); the
// score is
//   c * mm(S_j) + ((c - 1) / 2) * mm(e_j) + (1 - c),   c = `c` (0.5),
// mm = min-max normalisation over the lane's live cells. The normalisation is redone
// after every call's accumulation (O(cells)), so the score eviction reads is current.
// Needs signal::mass, all rows; the `recent` newest tokens are protected.
#pragma once

#include <cmath>
#include <limits>

#include "mnemo/evict/concepts.hpp"

namespace mnemo::evict {

struct q_hitter {
  static constexpr std::size_t state_floats = 3;  // S (mass), e (q-error), combined score
  static constexpr bool uses_attention = true;
  std::size_t recent = 16;
  float c = 0.5f;
  unsigned bits = 4;
  std::size_t n_head_kv = 1, d_k = 0, d_v = 0;  // the rows' geometry (set by the user)

  /// ||x - Q(x)||: x quantised to integers in [-(2^(bits-1) - 1), 2^(bits-1) - 1]
  /// with the scale max|x| / (2^(bits-1) - 1), as a symmetric per-row quantiser does.
  static float quant_error(const float* x, std::size_t n, unsigned bits) noexcept {
    float amax = 0.0f;
    for (std::size_t i = 0; i < n; ++i) amax = std::fabs(x[i]) > amax ? std::fabs(x[i]) : amax;
    if (!(amax > 0.0f)) return 0.0f;
    const float qmax = static_cast<float>((1u << (bits - 1)) - 1u);
    const float scale = amax / qmax, inv = qmax / amax;
    float err = 0.0f;
    for (std::size_t i = 0; i < n; ++i) {
      const float r = x[i] - std::nearbyint(x[i] * inv) * scale;
      err += r * r;
    }
    return std::sqrt(err);
  }

  stats_request request(const step_info&) const noexcept { return {stats_request::all_rows}; }
  void on_insert(const step_info& s, slot_view v, std::size_t slot, const float* k,
                 const float* val) const noexcept {
    float e = 0.0f;
    const std::size_t h0 = s.first_head(), h1 = h0 + s.head_count(n_head_kv);
    for (std::size_t h = h0; h < h1; ++h)
      e += quant_error(k + h * d_k, d_k, bits) + quant_error(val + h * d_v, d_v, bits);
    v.state[3 * slot] = 0.0f;
    v.state[3 * slot + 1] = e;
    v.state[3 * slot + 2] = 0.0f;
  }
  void on_attention(const step_info&, slot_view v, const attention_signals& m) const noexcept {
    constexpr float inf = std::numeric_limits<float>::infinity();
    float s_lo = inf, s_hi = -inf, e_lo = inf, e_hi = -inf;
    for (std::size_t j = 0; j < m.stride; ++j) {
      if (!v.live(j)) continue;
      const float s = (v.state[3 * j] += m.total(j)), e = v.state[3 * j + 1];
      s_lo = s < s_lo ? s : s_lo;
      s_hi = s > s_hi ? s : s_hi;
      e_lo = e < e_lo ? e : e_lo;
      e_hi = e > e_hi ? e : e_hi;
    }
    const float s_inv = s_hi > s_lo ? 1.0f / (s_hi - s_lo) : 0.0f;
    const float e_inv = e_hi > e_lo ? 1.0f / (e_hi - e_lo) : 0.0f;
    for (std::size_t j = 0; j < m.stride; ++j)
      if (v.live(j))
        v.state[3 * j + 2] = c * ((v.state[3 * j] - s_lo) * s_inv) +
                             (c - 1.0f) * 0.5f * ((v.state[3 * j + 1] - e_lo) * e_inv) + (1.0f - c);
  }
  float score(const step_info&, slot_view v, std::size_t slot) const noexcept {
    return v.state[3 * slot + 2];
  }
  bool protect(const step_info& s, slot_view v, std::size_t slot) const noexcept {
    return in_recent_window(s, v, slot, recent);
  }
};
static_assert(eviction_policy<q_hitter>);

}  // namespace mnemo::evict
