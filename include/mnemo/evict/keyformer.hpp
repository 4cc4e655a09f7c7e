// Keyformer (Adnan et al. 2024, arXiv 2403.09054): H2O-style accumulation of a
// Gumbel-softmax of the pre-softmax logits, S_j += sum over rows and query heads of
// softmax_j((s_j + zeta_j) / tau), zeta ~ Gumbel(0, 1), with a temperature that
// grows during generation (tau = tau_init + tau_delta per decoded position from
// `decode_from`). The noise regularises the discarded tokens' missing mass; it needs
// the raw logits (signal::logits), which probabilities cannot give back. The `recent`
// newest tokens are protected. A prefill chunk scores its last `prefill_rows` rows
// only (the logits export is rows x heads x cells).
//
// Noise: zeta is one of 4096 Gumbel quantiles picked by a hash of (seed, row
// position, query head, key position), so runs are reproducible and a cell costs
// one multiply-shift and a table load instead of a 64-bit mix, two logs and a
// division (that was ~48% of the attention time at B = 1024; the softmax is
// vectorised with the attention kernel's exp).
#pragma once

#include <array>
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "mnemo/evict/concepts.hpp"
#include "mnemo/simd/simd.hpp"

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

  static constexpr unsigned noise_bits = 12;  // 4096 quantiles: |zeta| <= 9.0
  /// The Gumbel(0, 1) quantiles -log(-log((i + 0.5) / 4096)), built once.
  static const std::array<float, std::size_t{1} << noise_bits>& gumbel_table() noexcept {
    static const auto t = [] {
      std::array<float, std::size_t{1} << noise_bits> a{};
      for (std::size_t i = 0; i < a.size(); ++i)
        a[i] = static_cast<float>(
            -std::log(-std::log((static_cast<double>(i) + 0.5) / static_cast<double>(a.size()))));
      return a;
    }();
    return t;
  }
  /// The per-(row, head) half of the hash: a 64-bit mix of (seed, row, model-wide head).
  static std::uint64_t row_key(std::uint64_t seed, pos_t row, std::size_t head) noexcept {
    std::uint64_t z = seed ^ (static_cast<std::uint64_t>(row) * 0x9e3779b97f4a7c15ull) ^
                      (static_cast<std::uint64_t>(head) << 48);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  }
  /// The table index of key position `key` under a row key (the per-cell half).
  static std::size_t noise_index(std::uint64_t rk, pos_t key) noexcept {
    const std::uint64_t z = (rk ^ static_cast<std::uint64_t>(key)) * 0xd6e8feb86659fd93ull;
    return static_cast<std::size_t>(z >> (64 - noise_bits));
  }
  /// Gumbel(0, 1) noise of (row position, model-wide query head, key position).
  static float gumbel(std::uint64_t seed, pos_t row, std::size_t head, pos_t key) noexcept {
    return gumbel_table()[noise_index(row_key(seed, row, head), key)];
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
  template <class Isa = simd::native>
  void on_attention(const step_info& s, slot_view v, const attention_signals& m) const noexcept {
    using O = simd::ops<Isa>;
    constexpr std::size_t W = O::lanes;
    constexpr float ninf = -std::numeric_limits<float>::infinity();
    thread_local std::vector<float> z;  // [stride] noisy, tempered logits of one row and head
    thread_local std::vector<std::uint32_t> idx;  // [stride] the noise's table index per cell
    const std::size_t n = m.stride, nv = n - n % W;
    z.resize(n);
    idx.resize(n);
    const auto& table = gumbel_table();
    const std::size_t qh = m.n_q_head(), head0 = s.first_head() * m.group;
    for (std::size_t r = 0; r < m.rows; ++r) {
      const float inv_tau = 1.0f / temperature(m.row_pos[r]);
      for (std::size_t h = 0; h < qh; ++h) {
        const float* l = &m.logits[(r * qh + h) * n];
        const std::uint64_t rk = row_key(seed, m.row_pos[r], head0 + h);
        // Two plain loops, which the compiler vectorises (64-bit multiplies; the table
        // loads and a select): the live test inside one loop kept it scalar. Dead or
        // unattended cells: -inf, which the exp below turns into 0.
        for (std::size_t j = 0; j < n; ++j)
          idx[j] = static_cast<std::uint32_t>(noise_index(rk, v.pos[j]));
        for (std::size_t j = 0; j < n; ++j) {
          const float x = (l[j] + table[idx[j]]) * inv_tau;
          z[j] = v.live(j) && l[j] != ninf ? x : ninf;
        }
        typename O::vf mv = O::set1(ninf);
        for (std::size_t j = 0; j < nv; j += W) mv = O::max(mv, O::load(&z[j]));
        float mx = O::reduce_max(mv);
        for (std::size_t j = nv; j < n; ++j) mx = z[j] > mx ? z[j] : mx;
        if (mx == ninf) continue;
        const typename O::vf vmx = O::set1(mx);
        typename O::vf sv = O::zero();
        for (std::size_t j = 0; j < nv; j += W) {
          const typename O::vf e = O::exp(O::sub(O::load(&z[j]), vmx));
          O::store(&z[j], e);
          sv = O::add(sv, e);
        }
        float sum = O::reduce_add(sv);
        for (std::size_t j = nv; j < n; ++j) sum += (z[j] = std::exp(z[j] - mx));
        // Dead cells add exp(-inf) = 0 to state nobody reads: no branch, so it vectorises.
        const float inv = 1.0f / sum;
        for (std::size_t j = 0; j < n; ++j) v.state[j] += z[j] * inv;
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
