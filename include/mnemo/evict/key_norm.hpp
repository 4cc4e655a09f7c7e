// KNorm (Devoto et al. 2024, arXiv 2406.11430): keys with a low L2 norm draw more
// attention in trained LLMs, so the slot with the largest key norm (summed over KV
// heads per layer, the lane's own head with per-KV-head lanes) goes first.
// Insert-time only: no attention statistics. RoPE is orthogonal, so the norm of the
// rotated key is the norm of the key.
#pragma once

#include <cmath>

#include "mnemo/evict/concepts.hpp"

namespace mnemo::evict {

struct key_norm : policy_defaults {
  static constexpr std::size_t state_floats = 1;  // -||k||
  std::size_t n_head_kv = 1, d_k = 0;             // the key row's geometry (set by the user)
  pos_t n_sink = 0;                               // optional protected first positions

  void on_insert(const step_info& s, slot_view v, std::size_t slot, const float* k,
                 const float*) const noexcept {
    float norms = 0.0f;  // per layer: summed over the KV heads; per head: the lane's head
    const std::size_t h0 = s.first_head(), h1 = h0 + s.head_count(n_head_kv);
    for (std::size_t h = h0; h < h1; ++h) {
      float s = 0.0f;
      for (std::size_t i = 0; i < d_k; ++i) s += k[h * d_k + i] * k[h * d_k + i];
      norms += std::sqrt(s);
    }
    v.state[slot] = -norms;
  }
  float score(const step_info&, slot_view v, std::size_t slot) const noexcept {
    return v.state[slot];
  }
  bool protect(const step_info&, slot_view v, std::size_t slot) const noexcept {
    return v.pos[slot] < n_sink;
  }
};
static_assert(eviction_policy<key_norm>);

}  // namespace mnemo::evict
