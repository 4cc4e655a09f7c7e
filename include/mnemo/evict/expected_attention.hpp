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
// prefill chunk every cell is rescored (and L recomputed); at a decode step the new
// token is scored against the current window and the last L, and every
// `rescore_every` decode steps all cells are rescored (kvpress's decoding press
// compresses periodically from a buffer of recent queries the same way). A decode
// step thus costs one key's score plus 1 / rescore_every of a full rescore. The first
// `n_sink` positions and the `recent` newest are protected.
#pragma once

#include <algorithm>
#include <cmath>
#include <complex>
#include <vector>

#include "mnemo/attention/rope.hpp"
#include "mnemo/evict/concepts.hpp"
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
  std::size_t rescore_every = 256;  // decode steps between rescores of every cell
  float epsilon = 0.0f;
  std::size_t n_head_kv = 1, d_v = 0;  // the value row's geometry (set by the user)
  std::size_t group = 1;               // query heads per KV head (the model's)
  attention::rope_config rope;         // the model's (hparams().rope())

  // The lane state: a header, the last full rescore's log-sum-exp per query head, and
  // the window's pre-RoPE query rows as a ring.
  static constexpr std::size_t held = 0, next = 1, since = 2, scored = 3, header = 4;
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
  /// x <- Rbar x for the pair means `m` ([n_rot / 2]); Rbar^T x when `transposed`.
  void apply_mean(const std::vector<std::complex<double>>& m, float* x,
                  bool transposed = false) const noexcept {
    if (rope.layout == attention::rope_layout::none) return;
    const std::size_t half = rope.n_rot / 2;
    const bool normal = rope.layout == attention::rope_layout::normal;
    for (std::size_t c = 0; c < half; ++c) {
      const std::size_t a = normal ? 2 * c : c, b = normal ? 2 * c + 1 : c + half;
      const double re = m[c].real(), im = transposed ? -m[c].imag() : m[c].imag();
      const double x0 = x[a], x1 = x[b];
      x[a] = static_cast<float>(re * x0 - im * x1);
      x[b] = static_cast<float>(im * x0 + re * x1);
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
    v.state[2 * slot] = 0.0f;
    v.state[2 * slot + 1] = norms / static_cast<float>(nh);
  }
  /// Adds the call's query rows (pre-RoPE, sink rows skipped) to the lane's window.
  void on_attention(const step_info&, slot_view v, const attention_signals& sg) const noexcept {
    const std::size_t QH = sg.n_q_head(), d = sg.d_k;
    if (sg.query == nullptr || window == 0 || v.lane.size() != header + QH + window * QH * d)
      return;  // no queries, or not the geometry lane_floats was given (group, d_k)
    float* ring = v.lane.data() + header + QH;
    v.will_write(0, header);
    for (std::size_t r = 0; r < sg.rows; ++r) {
      if (sg.row_pos[r] < n_sink) continue;
      const auto i = static_cast<std::size_t>(v.lane[next]);
      float* dst = ring + i * QH * d;
      v.will_write(header + QH + i * QH * d, QH * d);
      for (std::size_t e = 0; e < QH * d; ++e) dst[e] = sg.query[r * QH * d + e];
      for (std::size_t h = 0; h < QH; ++h)
        attention::rope_rotate(rope, dst + h * d, -static_cast<double>(sg.row_pos[r]));
      v.lane[next] = static_cast<float>((i + 1) % window);
      v.lane[held] = std::min(v.lane[held] + 1.0f, static_cast<float>(window));
    }
  }

  /// Scores cells from the window: every live cell after a prefill chunk, at the first
  /// scoring and every rescore_every decode steps; else the call's new tokens only.
  void rescore(const step_info& s, slot_view v, const lane_keys& keys,
               const attention_signals* sg) const noexcept {
    if (sg == nullptr || sg->query == nullptr) return;
    const std::size_t d = sg->d_k, g = sg->group, H = keys.n_head_kv, QH = H * g;
    const std::size_t n = v.pos.size();
    if (v.lane.size() != header + QH + window * QH * d) return;
    const auto w = static_cast<std::size_t>(v.lane[held]);
    if (w == 0) return;
    float* lse = v.lane.data() + header;
    const float* ring = lse + QH;
    v.will_write(0, header + QH);  // the counters and, at a full rescore, L
    v.lane[since] += 1.0f;
    const bool all = s.prefill() || v.lane[scored] == 0.0f ||
                     v.lane[since] >= static_cast<float>(std::max<std::size_t>(rescore_every, 1));
    thread_local std::vector<float> u, row, y, z;
    thread_local std::vector<std::complex<double>> rbar;
    rbar.resize(rope.n_rot / 2);
    const double T = static_cast<double>(s.pos_end) - 1.0;
    for (std::size_t c = 0; c < rbar.size(); ++c)
      rbar[c] = mean_rotation(rope.pair_frequency(c), T, n_future);
    const float inv_sqrt_d = 1.0f / std::sqrt(static_cast<float>(d));
    const float cov_scale = 1.0f / (2.0f * static_cast<float>(d) * static_cast<float>(w));
    const float inv_w = 1.0f / static_cast<float>(w);
    // z of one key from its dots with the window's rows, y_i = (Rbar q_i) . k: k . Rbar
    // mu is the mean of the y_i and k^T Rbar Sigma Rbar^T k the mean of (y_i - mean
    // y)^2, so neither mu nor a centred window is formed: a decode step costs the w
    // dots per query head (dot_rows_f32) and no pass over the window for its mean.
    auto z_of = [&](const float* yh) {
      float m = 0.0f;
      for (std::size_t i = 0; i < w; ++i) m += yh[i];
      m *= inv_w;
      float c = 0.0f;
      for (std::size_t i = 0; i < w; ++i) c += (yh[i] - m) * (yh[i] - m);
      return m * inv_sqrt_d + c * cov_scale;
    };
    row.resize(H * d);
    y.resize(g * w);
    if (!all) {  // a decode step scores its own tokens: (Rbar q) . k = q . (Rbar^T k), so
                 // the window's rows are used as they are, O(w d) per query head
      const pos_t first_new = s.pos_end - static_cast<pos_t>(s.n_new);
      for (std::size_t j = 0; j < n; ++j) {
        if (!v.live(j) || v.pos[j] < first_new) continue;
        keys.row(j, row.data());
        for (std::size_t kh = 0; kh < H; ++kh) apply_mean(rbar, &row[kh * d], true);
        float a = 0.0f;
        for (std::size_t h = 0; h < QH; ++h) {  // ring: [w, QH, d]
          dot_rows_f32(&row[(h / g) * d], &ring[h * d], w, QH * d, d, y.data());
          a += std::exp(z_of(y.data()) - lse[h]);
        }
        v.state[2 * j] = (a / static_cast<float>(QH) + epsilon) * v.state[2 * j + 1];
      }
      return;
    }
    // Every cell: x_i = Rbar q_i once, [QH, w, d], so a KV head's group is g x w
    // consecutive rows, then g x w dots per key and KV head.
    u.resize(QH * w * d);
    for (std::size_t h = 0; h < QH; ++h)
      for (std::size_t i = 0; i < w; ++i) {
        float* xi = &u[(h * w + i) * d];
        std::copy_n(&ring[(i * QH + h) * d], d, xi);
        apply_mean(rbar, xi);
      }
    z.resize(QH * n);
    for (std::size_t j = 0; j < n; ++j) {
      if (!v.live(j)) continue;
      keys.row(j, row.data());
      for (std::size_t kh = 0; kh < H; ++kh) {
        dot_rows_f32(&row[kh * d], &u[kh * g * w * d], g * w, d, d, y.data());
        for (std::size_t r = 0; r < g; ++r) z[(kh * g + r) * n + j] = z_of(&y[r * w]);
      }
    }
    for (std::size_t h = 0; h < QH; ++h) {  // each head's log-sum-exp over every live cell
      float mx = -INFINITY, tot = 0.0f;
      for (std::size_t j = 0; j < n; ++j)
        if (v.live(j)) mx = z[h * n + j] > mx ? z[h * n + j] : mx;
      for (std::size_t j = 0; j < n; ++j)
        if (v.live(j)) tot += std::exp(z[h * n + j] - mx);
      lse[h] = mx + std::log(tot);
    }
    v.lane[scored] = 1.0f;
    v.lane[since] = 0.0f;
    for (std::size_t j = 0; j < n; ++j) {
      if (!v.live(j)) continue;
      float a = 0.0f;
      for (std::size_t h = 0; h < QH; ++h) a += std::exp(z[h * n + j] - lse[h]);
      v.state[2 * j] = (a / static_cast<float>(QH) + epsilon) * v.state[2 * j + 1];
    }
  }
  float score(const step_info&, slot_view v, std::size_t slot) const noexcept {
    return v.state[2 * slot];
  }
  bool protect(const step_info& s, slot_view v, std::size_t slot) const noexcept {
    return v.pos[slot] < n_sink || in_recent_window(s, v, slot, recent);
  }
};
static_assert(eviction_policy<expected_attention> && lane_rescorer<expected_attention>);

}  // namespace mnemo::evict
