// Expected Attention (Devoto, Jeblick, Jégou 2025, arXiv 2510.00636; kvpress
// ExpectedAttentionPress): score a cell by the attention the *next* queries are
// expected to give it. From the pre-RoPE queries of the observation window (the last
// `window` query rows the lane has seen, prefill or decode, sink rows skipped): mean
// mu and covariance Sigma per query head; the rotation averaged over the next
// `n_future` positions, Rbar = mean_tau R(T + tau); then
//   z_j = k_j . (Rbar mu) / sqrt(d) + k_j^T (Rbar Sigma Rbar^T) k_j / (2 d),
//   s_j = exp(z_j - L) averaged over the query heads of the KV head, L the head's
//         log-sum-exp of z over the lane's cells (the softmax),
//   score_j = (s_j + epsilon) * ||v_j||,
// averaged over the lane's KV heads per layer (the lane's own head per KV head).
// Both terms come from the key's dots with the window's rows, y_i = (Rbar q_i) . k:
// k . Rbar mu is their mean and k^T Rbar Sigma Rbar^T k the mean of (y_i - mean y)^2,
// the same numbers in O(window x d) per key instead of O(d^2), with no pass over the
// window for mu.
//
// The window lives in the lane's state (evict::lane_floats_of), so it carries over
// between calls: every call adds its newest rows (signal::query, the post-RoPE
// queries turned back with `rope`, which must be the model's). At the end of a
// prefill chunk every cell is rescored (and L recomputed); every `rescore_every`
// decode steps too (kvpress's decoding press compresses periodically from a buffer of
// recent queries the same way). The tokens decoded in between are scored together,
// against the window of that step and the last L, once there are `recent` of them:
// until then they are among the `recent` newest, which are protected, so the window
// is read once per `recent` tokens instead of once per token (unscored cells stay
// protected whatever their positions). The first `n_sink` positions are protected too.
#pragma once

#include <algorithm>
#include <cmath>
#include <complex>
#include <vector>

#include "mnemo/attention/rope.hpp"
#include "mnemo/evict/concepts.hpp"
#include "mnemo/evict/lane_kernels.hpp"
#include "mnemo/evict/lane_rescore.hpp"

namespace mnemo::evict {

struct expected_attention {
  static constexpr std::size_t state_floats = 2;  // score, mean ||v|| over the lane's heads
  static constexpr bool uses_attention = true;
  static constexpr signal_set signals = signal::query;
  /// Each write to the lane state is declared (slot_view::will_write): a decode step
  /// changes one query row of the window, which is what a rollback then keeps, instead
  /// of a copy of the whole window ([window, query heads, d_k] floats) per step.
  static constexpr bool journals_lane = true;
  std::size_t window = 32;          // query rows the statistics come from
  std::size_t n_future = 512;       // future positions the rotation is averaged over
  pos_t n_sink = 4;                 // protected first positions; their query rows are skipped
  std::size_t recent = 16;          // protected newest positions
  std::size_t rescore_every = 512;  // decode steps between rescores of every cell
  float epsilon = 0.0f;             // added to the expected attention; a score below 0 counts as 0
  std::size_t n_head_kv = 1, d_v = 0;  // the value row's geometry (set by the user)
  std::size_t group = 1;               // query heads per KV head (the model's)
  attention::rope_config rope;         // the model's (hparams().rope())

  // The lane state: a header, the last full rescore's log-sum-exp per query head, and
  // the window's pre-RoPE query rows as a ring.
  // fresh: tokens decoded since the last scoring.
  static constexpr std::size_t held = 0, next = 1, since = 2, scored = 3, fresh = 4, header = 5;
  std::size_t lane_floats(std::size_t lane_heads, std::size_t d_k) const noexcept {
    const std::size_t qh = lane_heads * group;
    return header + qh + window * qh * d_k;
  }

  /// Pair c's averaged rotation over positions T + 1 .. T + n, as (cos, sin) means
  /// (the Dirichlet kernel: the mean of e^{i (T + tau) w} is e^{i (T + (n + 1) / 2) w}
  /// sin(n w / 2) / (n sin(w / 2)), accurate for small w too).
  static std::complex<double> mean_rotation(double w, double T, std::size_t n) noexcept {
    if (n == 0) return std::polar(1.0, T * w);
    const double N = static_cast<double>(n), sh = std::sin(w / 2.0);
    if (std::abs(sh) < 1e-12) return std::polar(1.0, (T + 1.0) * w);  // w = 2 pi m: all equal
    return std::polar(1.0, (T + (N + 1.0) / 2.0) * w) * (std::sin(N * w / 2.0) / (N * sh));
  }
  /// out[e * stride] = (Rbar^T k)[e] for e < d, Rbar's pairs given as (re, im) [n_rot / 2].
  void turn_back(const float* re, const float* im, const float* k, float* out, std::size_t stride,
                 std::size_t d) const noexcept {
    for (std::size_t e = 0; e < d; ++e) out[e * stride] = k[e];
    if (rope.layout == attention::rope_layout::none) return;
    const std::size_t half = rope.n_rot / 2;
    const bool normal = rope.layout == attention::rope_layout::normal;
    for (std::size_t c = 0; c < half; ++c) {
      const std::size_t a = normal ? 2 * c : c, b = normal ? 2 * c + 1 : c + half;
      out[a * stride] = re[c] * k[a] + im[c] * k[b];
      out[b * stride] = re[c] * k[b] - im[c] * k[a];
    }
  }

  /// z[h * m + t] for query head h and the cell in slot cells[t] (m cells): each key
  /// turned by Rbar^T (so the window's rows are used as stored: (Rbar q) . k = q .
  /// (Rbar^T k)), then key_lanes keys at a time against the g x w window rows of their
  /// KV head (dot_key_lanes_f32), and the mean and squared deviation of those w dots
  /// per query head and key (k . Rbar mu is their mean, k^T Rbar Sigma Rbar^T k the
  /// mean of the squared deviations).
  void window_logits(const step_info& s, slot_view v, const lane_keys& keys,
                     const std::vector<std::size_t>& cells, std::size_t d, std::size_t g,
                     std::size_t w, float* z) const noexcept {
    constexpr std::size_t L = key_lanes<>;
    const std::size_t H = keys.n_head_kv, QH = H * g, m = cells.size();
    thread_local std::vector<float> re, im, krow, kt, y;
    thread_local std::vector<const float*> rows;
    re.resize(rope.n_rot / 2);
    im.resize(rope.n_rot / 2);
    const double T = static_cast<double>(s.pos_end) - 1.0;
    const double log_base = std::log(static_cast<double>(rope.freq_base));
    for (std::size_t c = 0; c < re.size(); ++c) {
      const std::complex<double> r = mean_rotation(rope.pair_frequency(c, log_base), T, n_future);
      re[c] = static_cast<float>(r.real());
      im[c] = static_cast<float>(r.imag());
    }
    krow.resize(L * H * d);
    kt.resize(d * L);
    y.resize(g * w * L);
    rows.resize(g * w);
    const float* ring = v.lane.data() + header + QH;  // [w, QH, d]
    const float inv_sqrt_d = 1.0f / std::sqrt(static_cast<float>(d));
    const float cov_scale = 1.0f / (2.0f * static_cast<float>(d) * static_cast<float>(w));
    float mean[L], spread[L];
    for (std::size_t t0 = 0; t0 < m; t0 += L) {
      const std::size_t nl = std::min(L, m - t0);
      for (std::size_t l = 0; l < nl; ++l) keys.row(cells[t0 + l], &krow[l * H * d]);
      if (nl < L) std::fill(kt.begin(), kt.end(), 0.0f);
      for (std::size_t kh = 0; kh < H; ++kh) {
        for (std::size_t l = 0; l < nl; ++l)  // kt [d, L]: key l's Rbar^T k in lane l
          turn_back(re.data(), im.data(), &krow[(l * H + kh) * d], &kt[l], L, d);
        for (std::size_t r = 0; r < g; ++r)
          for (std::size_t i = 0; i < w; ++i) rows[r * w + i] = ring + (i * QH + kh * g + r) * d;
        dot_key_lanes_f32(kt.data(), d, rows.data(), g * w, y.data());
        for (std::size_t r = 0; r < g; ++r) {
          lane_moments_f32(&y[r * w * L], w, mean, spread);
          for (std::size_t l = 0; l < nl; ++l)
            z[(kh * g + r) * m + t0 + l] = mean[l] * inv_sqrt_d + spread[l] * cov_scale;
        }
      }
    }
  }

  stats_request request(const step_info&) const noexcept { return {window, signal::query}; }
  void on_insert(const step_info& s, slot_view v, std::size_t slot, const float*,
                 const float* val) const noexcept {
    float norms = 0.0f;
    const std::size_t h0 = s.first_head(), nh = s.head_count(n_head_kv);
    for (std::size_t h = h0; h < h0 + nh; ++h) {
      float q = 0.0f;
      for (std::size_t i = 0; i < d_v; ++i) q += val[h * d_v + i] * val[h * d_v + i];
      norms += std::sqrt(q);
    }
    v.state[2 * slot] = -1.0f;  // unscored: rescore scores it
    v.state[2 * slot + 1] = norms / static_cast<float>(nh);
  }
  /// Adds the call's query rows (pre-RoPE, sink rows skipped) to the lane's window.
  void on_attention(const step_info&, slot_view v, const attention_signals& sg) const noexcept {
    const std::size_t QH = sg.n_q_head(), d = sg.d_k;
    if (sg.query == nullptr || window == 0 || v.lane.size() != header + QH + window * QH * d)
      return;  // no queries, or not the geometry lane_floats was given (group, d_k)
    float* ring = v.lane.data() + header + QH;
    thread_local attention::rope_table back;  // refilled per row, its storage reused
    v.will_write(0, header);
    for (std::size_t r = 0; r < sg.rows; ++r) {
      if (sg.row_pos[r] < n_sink) continue;
      const auto i = static_cast<std::size_t>(v.lane[next]);
      float* dst = ring + i * QH * d;
      v.will_write(header + QH + i * QH * d, QH * d);
      for (std::size_t e = 0; e < QH * d; ++e) dst[e] = sg.query[r * QH * d + e];
      if (rope.layout != attention::rope_layout::none && sg.row_pos[r] != 0) {
        back.fill(rope, -static_cast<double>(sg.row_pos[r]));
        for (std::size_t h = 0; h < QH; ++h) attention::rope_apply(rope, back, dst + h * d);
      }
      v.lane[next] = static_cast<float>((i + 1) % window);
      v.lane[held] = std::min(v.lane[held] + 1.0f, static_cast<float>(window));
    }
  }

  /// Scores cells from the window: every live cell after a prefill chunk, at the first
  /// scoring and every rescore_every decode steps; else the unscored cells once `recent`
  /// tokens were decoded since the last scoring (until then they are the protected newest).
  void rescore(const step_info& s, slot_view v, const lane_keys& keys,
               const attention_signals* sg) const noexcept {
    if (sg == nullptr || sg->query == nullptr) return;
    const std::size_t d = sg->d_k, g = sg->group, H = keys.n_head_kv, QH = H * g;
    const std::size_t n = v.pos.size();
    if (v.lane.size() != header + QH + window * QH * d) return;
    const auto w = static_cast<std::size_t>(v.lane[held]);
    if (w == 0) return;
    v.will_write(0, header + QH);  // the counters and, at a full rescore, L
    v.lane[since] += 1.0f;
    const bool all = s.prefill() || v.lane[scored] == 0.0f ||
                     v.lane[since] >= static_cast<float>(std::max<std::size_t>(rescore_every, 1));
    v.lane[fresh] += static_cast<float>(s.n_new);
    if (!all && v.lane[fresh] < static_cast<float>(std::max<std::size_t>(recent, 1))) return;
    v.lane[fresh] = 0.0f;
    thread_local std::vector<std::size_t> todo;
    todo.clear();
    for (std::size_t j = 0; j < n; ++j)
      if (v.live(j) && (all || v.state[2 * j] < 0.0f)) todo.push_back(j);
    if (todo.empty()) return;
    const std::size_t m = todo.size();
    thread_local std::vector<float> z, a;
    z.resize(QH * m);
    window_logits(s, v, keys, todo, d, g, w, z.data());
    float* lse = v.lane.data() + header;
    if (all) {
      for (std::size_t h = 0; h < QH; ++h) lse[h] = log_sum_exp_f32(&z[h * m], m);
      v.lane[scored] = 1.0f;
      v.lane[since] = 0.0f;
    }
    a.assign(m, 0.0f);
    for (std::size_t h = 0; h < QH; ++h) add_exp_f32(&z[h * m], m, lse[h], a.data());
    for (std::size_t t = 0; t < m; ++t) {
      const std::size_t j = todo[t];
      // At least 0: a negative score marks a cell not scored yet (protected).
      v.state[2 * j] =
          std::max(0.0f, (a[t] / static_cast<float>(QH) + epsilon) * v.state[2 * j + 1]);
    }
  }
  float score(const step_info&, slot_view v, std::size_t slot) const noexcept {
    return v.state[2 * slot];
  }
  bool protect(const step_info& s, slot_view v, std::size_t slot) const noexcept {
    return v.pos[slot] < n_sink || in_recent_window(s, v, slot, recent) || v.state[2 * slot] < 0.0f;
  }
};
static_assert(eviction_policy<expected_attention> && lane_rescorer<expected_attention>);

}  // namespace mnemo::evict
