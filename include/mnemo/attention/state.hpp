// Partial attention as a value {o, m, l} (STYLE rule 8): o is the softmax numerator
// sum_j e^(s_j - m) v_j, m the running max logit, l = sum_j e^(s_j - m). Split-K,
// threads and streams all combine partials with the same associative merge().
#pragma once

#include <cmath>
#include <cstddef>
#include <limits>
#include <span>
#include <vector>

namespace mnemo::attention {

inline constexpr float k_neg_inf = -std::numeric_limits<float>::infinity();

/// Merges partial (o2, m2, l2) into (o1, m1, l1). Empty partials (l == 0, m = -inf)
/// are identities, so no -inf - -inf ever reaches exp().
inline void merge_partial(std::span<float> o1, float& m1, float& l1, std::span<const float> o2,
                          float m2, float l2) noexcept {
  if (l2 == 0.0f) return;
  if (l1 == 0.0f) {
    for (std::size_t i = 0; i < o1.size(); ++i) o1[i] = o2[i];
    m1 = m2;
    l1 = l2;
    return;
  }
  const float m = m1 > m2 ? m1 : m2;
  const float a1 = std::exp(m1 - m);
  const float a2 = std::exp(m2 - m);
  for (std::size_t i = 0; i < o1.size(); ++i) o1[i] = o1[i] * a1 + o2[i] * a2;
  m1 = m;
  l1 = l1 * a1 + l2 * a2;
}

/// Writes o / l, or zeros when nothing was attended.
inline void finalize_partial(std::span<const float> o, float l, std::span<float> out) noexcept {
  if (!(l > 0.0f)) {
    for (float& x : out) x = 0.0f;
    return;
  }
  const float inv = 1.0f / l;
  for (std::size_t i = 0; i < out.size(); ++i) out[i] = o[i] * inv;
}

/// An owning partial state for one query row and head.
struct attention_state {
  std::vector<float> o;
  float m = k_neg_inf;
  float l = 0.0f;

  attention_state() = default;
  explicit attention_state(std::size_t d_v) : o(d_v, 0.0f) {}

  bool empty() const noexcept { return l == 0.0f; }

  /// Adds one attended value row with logit s.
  void add(float s, std::span<const float> v) {
    attention_state one(o.size());
    for (std::size_t i = 0; i < v.size(); ++i) one.o[i] = v[i];
    one.m = s;
    one.l = 1.0f;
    merge(one);
  }

  attention_state& merge(const attention_state& other) {
    merge_partial(o, m, l, other.o, other.m, other.l);
    return *this;
  }

  /// The attention output o / l (zeros when empty).
  std::vector<float> output() const {
    std::vector<float> out(o.size());
    finalize_partial(o, l, out);
    return out;
  }
  /// log sum_j e^(s_j), -inf when empty.
  float lse() const noexcept { return l > 0.0f ? m + std::log(l) : k_neg_inf; }
};

}  // namespace mnemo::attention
