// KeyDiff (Park et al. 2025, "KeyDiff"; kvpress KeyDiffPress): keys that point
// the way most keys point are redundant, so a cell's score is
//   -cos(k_j, a),  a = the mean of the lane's normalised keys k_l / ||k_l||,
// per KV head (summed over the lane's heads per layer, the lane's own head per KV
// head), and the cell most similar to the anchor goes first. The anchor moves with
// every token, so the lane is rescored from its cached keys right before each
// eviction (evict/lane_rescore.hpp): O(cells x d_k) once per eviction, amortised by
// `evict_chunk` (drop that many at once when full). Needs the keys only: no
// attention signal. The first `n_sink` positions are protected.
#pragma once

#include <cmath>
#include <vector>

#include "mnemo/evict/concepts.hpp"
#include "mnemo/evict/lane_kernels.hpp"
#include "mnemo/evict/lane_rescore.hpp"

namespace mnemo::evict {

struct key_diff : policy_defaults {
  static constexpr std::size_t state_floats = 1;  // -sum over heads of cos(k, anchor)
  std::size_t evict_chunk = 16;
  pos_t n_sink = 0;

  void on_insert(const step_info&, slot_view v, std::size_t slot, const float*,
                 const float*) const noexcept {
    v.state[slot] = 0.0f;  // rescored before any eviction
  }
  /// Two passes over the live cells: the anchor (sum of unit keys, per head), then
  /// each cell's cosine with it. Scratch is thread-local (no allocation when warm).
  void rescore(const step_info&, slot_view v, const lane_keys& keys,
               const attention_signals*) const noexcept {
    const std::size_t H = keys.n_head_kv, d = keys.d_k, n = v.pos.size();
    thread_local std::vector<float> row, anchor, inv_norm;
    row.resize(H * d);
    anchor.assign(H * d, 0.0f);
    inv_norm.resize(n * H);
    for (std::size_t j = 0; j < n; ++j) {
      if (!v.live(j)) continue;
      keys.row(j, row.data());
      for (std::size_t h = 0; h < H; ++h) {
        const float* k = &row[h * d];
        const float s = dot_f32(k, k, d);
        const float inv = s > 0.0f ? 1.0f / std::sqrt(s) : 0.0f;
        inv_norm[j * H + h] = inv;
        float* a = &anchor[h * d];
        for (std::size_t i = 0; i < d; ++i) a[i] += k[i] * inv;
      }
    }
    for (std::size_t h = 0; h < H; ++h) {  // cos with the sum = cos with the mean
      const float s = dot_f32(&anchor[h * d], &anchor[h * d], d);
      const float inv = s > 0.0f ? 1.0f / std::sqrt(s) : 0.0f;
      for (std::size_t i = 0; i < d; ++i) anchor[h * d + i] *= inv;
    }
    for (std::size_t j = 0; j < n; ++j) {
      if (!v.live(j)) continue;
      keys.row(j, row.data());
      float cos_sum = 0.0f;
      for (std::size_t h = 0; h < H; ++h)
        cos_sum += dot_f32(&row[h * d], &anchor[h * d], d) * inv_norm[j * H + h];
      v.state[j] = -cos_sum;
    }
  }
  float score(const step_info&, slot_view v, std::size_t slot) const noexcept {
    return v.state[slot];
  }
  bool protect(const step_info&, slot_view v, std::size_t slot) const noexcept {
    return v.pos[slot] < n_sink;
  }
};
static_assert(eviction_policy<key_diff> && lane_rescorer<key_diff>);

}  // namespace mnemo::evict
