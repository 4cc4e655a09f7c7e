// Keyformer (Adnan et al. 2024, arXiv 2403.09054): H2O-style accumulation of a
// Gumbel-softmax of the pre-softmax logits, S_j += sum over rows and query heads of
// softmax_j((s_j + zeta_j) / tau), zeta ~ Gumbel(0, 1), with a temperature that
// grows during generation (tau = tau_init + tau_delta per decoded position from
// `decode_from`). The noise regularises the discarded tokens' missing mass; it needs
// the raw logits (signal::logits), which probabilities cannot give back. Noise is a
// hash of (seed, row position, query head, key position), so runs are reproducible.
// The `recent` newest tokens are protected. A prefill chunk scores its last
// `prefill_rows` rows only (the logits export is rows x heads x cells).
#pragma once

#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "mnemo/evict/concepts.hpp"

namespace mnemo::evict {

struct keyformer {
  static constexpr std::size_t state_floats = 1;  // accumulated Gumbel-softmax mass
  static constexpr bool uses_attention = true;
  static constexpr signal_set signals = signal::logits;
  std::size_t recent = 16;
  std::size_t prefill_rows = 64;
  float tau_init = 1.0f, tau_delta = 0.01f;
  pos_t decode_from = std::numeric_limits<pos_t>::max();  // first generated position
  std::uint64_t seed = 1;

  /// Gumbel(0, 1) noise of (row position, model-wide query head, key position).
  static double gumbel(std::uint64_t seed, pos_t row, std::size_t head, pos_t key) noexcept {
    std::uint64_t z = seed ^ (static_cast<std::uint64_t>(row) * 0x9e3779b97f4a7c15ull) ^
                      (static_cast<std::uint64_t>(key) * 0xc2b2ae3d27d4eb4full) ^
                      (static_cast<std::uint64_t>(head) << 48);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    z ^= z >> 31;
    const double u = (static_cast<double>(z >> 11) + 0.5) / 9007199254740992.0;  // (0, 1)
    return -std::log(-std::log(u));
  }
  float temperature(pos_t row) const noexcept {
    return row < decode_from ? tau_init
                             : tau_init + tau_delta * static_cast<float>(row - decode_from + 1);
  }

  stats_request request(const step_info& s) const noexcept {
    return {s.prefill() ? prefill_rows : 1, signal::logits};
  }
  void on_insert(const step_info&, slot_view v, std::size_t slot, const float*,
                 const float*) const noexcept {
    v.state[slot] = 0.0f;
  }
  /// Scratch is thread-local, so a warm call does not allocate.
  void on_attention(const step_info& s, slot_view v, const attention_signals& m) const noexcept {
    thread_local std::vector<float> z;  // [stride] noisy, tempered logits of one row and head
    z.resize(m.stride);
    const std::size_t qh = m.n_q_head(), head0 = s.first_head() * m.group;
    for (std::size_t r = 0; r < m.rows; ++r) {
      const double tau = temperature(m.row_pos[r]);
      for (std::size_t h = 0; h < qh; ++h) {
        float mx = -std::numeric_limits<float>::infinity();
        for (std::size_t j = 0; j < m.stride; ++j) {
          const float l = m.logit(r, h, j);
          z[j] = -std::numeric_limits<float>::infinity();
          if (!v.live(j) || std::isinf(l)) continue;
          z[j] = static_cast<float>((l + gumbel(seed, m.row_pos[r], head0 + h, v.pos[j])) / tau);
          mx = z[j] > mx ? z[j] : mx;
        }
        if (std::isinf(mx)) continue;
        float sum = 0.0f;
        for (std::size_t j = 0; j < m.stride; ++j)
          if (!std::isinf(z[j])) sum += (z[j] = std::exp(z[j] - mx));
        for (std::size_t j = 0; j < m.stride; ++j)
          if (!std::isinf(z[j])) v.state[j] += z[j] / sum;
      }
    }
  }
  float score(const step_info&, slot_view v, std::size_t slot) const noexcept {
    return v.state[slot];
  }
  bool protect(const step_info& s, slot_view v, std::size_t slot) const noexcept {
    return in_recent_window(s, v, slot, recent);
  }
};
static_assert(eviction_policy<keyformer>);

}  // namespace mnemo::evict
