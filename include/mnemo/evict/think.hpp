// ThinK (Xu et al. 2024, arXiv 2407.21018): query-driven key-channel pruning. From an
// observation window of queries (the last `w` prefill rows) and the cached keys, each
// KV head h scores its key channels
//   c_{h,ch} = mean_{q in G(h), rows} q_ch^2  *  mean_j k_{j,ch}^2
// and drops the lowest-scoring ones. Pruning is done in RoPE pairs (a pair's score is
// the sum of its two channels): dropping one channel of a rotation pair would leave
// the other rotating alone, so a later re-rotation (compact positions, seq_add) of a
// pruned key would be wrong. Pairs follow the layout: (2i, 2i + 1) for normal,
// (i, i + n_rot / 2) for NeoX; channels past n_rot pair as (n_rot + 2j, n_rot + 2j + 1).
//
// Every head keeps the same number of pairs (its own ones), so the pruned keys are
// rows of kept_channels() per head and one kernel call attends all heads: keys are
// stored pruned ([cells, n_head_kv, kept]: K memory shrinks by kept / d_k), queries
// are gathered to the same channels, and the logit scale stays 1 / sqrt(d_k) of the
// full head. Values are untouched.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "mnemo/attention/kv_view.hpp"
#include "mnemo/attention/rope.hpp"
#include "mnemo/base/status.hpp"
#include "mnemo/evict/concepts.hpp"

namespace mnemo::evict {

struct think_config {
  std::size_t n_head_kv = 1, group = 1, d_k = 0;
  attention::rope_layout layout = attention::rope_layout::normal;
  std::size_t n_rot = 0;     // rotated channels per head; 0: all (d_k)
  double prune_ratio = 0.5;  // fraction of channel pairs dropped per KV head (rounded down)

  status validate() const {
    const std::size_t rot = n_rot == 0 ? d_k : n_rot;
    if (n_head_kv == 0 || group == 0 || d_k == 0 || d_k % 2 != 0 || rot % 2 != 0 || rot > d_k)
      return make_status(status_code::invalid_argument,
                         "think: n_head_kv (%zu) and group (%zu) must be > 0, d_k (%zu) and n_rot "
                         "(%zu) even with n_rot <= d_k",
                         n_head_kv, group, d_k, n_rot);
    if (!(prune_ratio >= 0.0 && prune_ratio < 1.0))
      return make_status(status_code::invalid_argument,
                         "think: prune_ratio must be in [0, 1) (got %g); at least one pair stays",
                         prune_ratio);
    return {};
  }
  std::size_t n_pairs() const noexcept { return d_k / 2; }
  /// Pairs each head keeps (at least one).
  std::size_t kept_pairs() const noexcept {
    const std::size_t drop = static_cast<std::size_t>(prune_ratio * static_cast<double>(n_pairs()));
    return std::max<std::size_t>(1, n_pairs() - drop);
  }
  /// The two channels of pair i.
  std::pair<std::uint32_t, std::uint32_t> pair(std::size_t i) const noexcept {
    const std::size_t rot = n_rot == 0 ? d_k : n_rot;
    if (layout == attention::rope_layout::neox && i < rot / 2)
      return {static_cast<std::uint32_t>(i), static_cast<std::uint32_t>(i + rot / 2)};
    return {static_cast<std::uint32_t>(2 * i), static_cast<std::uint32_t>(2 * i + 1)};
  }
};

/// The channel choice of one layer (one sequence) and the gathers that apply it.
class think_pruner {
 public:
  static result<think_pruner> make(const think_config& c) {
    MNEMO_RETURN_IF_ERROR(c.validate());
    think_pruner t;
    t.cfg_ = c;
    t.kept_ = 2 * c.kept_pairs();
    t.ch_.resize(c.n_head_kv * t.kept_);
    for (std::size_t h = 0; h < c.n_head_kv; ++h)  // before choose(): the lowest pairs
      t.keep_pairs(h, [](std::size_t) { return 0.0; });
    return t;
  }

  const think_config& config() const noexcept { return cfg_; }
  std::size_t kept_channels() const noexcept { return kept_; }
  /// KV head h's kept channels, increasing.
  std::span<const std::uint32_t> channels(std::size_t h) const noexcept {
    return std::span<const std::uint32_t>(ch_).subspan(h * kept_, kept_);
  }
  /// The attention shape over pruned keys (d_k = kept_channels()).
  attention::shape pruned_shape(const attention::shape& sh) const noexcept {
    return {sh.n_head, sh.n_head_kv, kept_, sh.d_v};
  }

  /// Chooses the channels from the window's queries q: [n_rows, n_head_kv * group,
  /// d_k] and the keys k: [n_cells, n_head_kv, d_k] (post-RoPE, f32).
  void choose(const float* q, std::size_t n_rows, const float* k, std::size_t n_cells) {
    const std::size_t H = cfg_.n_head_kv, g = cfg_.group, d = cfg_.d_k;
    std::vector<double> qs(d), ks(d);
    for (std::size_t h = 0; h < H; ++h) {
      std::fill(qs.begin(), qs.end(), 0.0);
      std::fill(ks.begin(), ks.end(), 0.0);
      for (std::size_t r = 0; r < n_rows; ++r)
        for (std::size_t i = 0; i < g; ++i) {
          const float* x = q + (r * H * g + h * g + i) * d;
          for (std::size_t c = 0; c < d; ++c) qs[c] += double(x[c]) * x[c];
        }
      for (std::size_t j = 0; j < n_cells; ++j) {
        const float* x = k + (j * H + h) * d;
        for (std::size_t c = 0; c < d; ++c) ks[c] += double(x[c]) * x[c];
      }
      // The means' denominators are the same for every channel: they do not change
      // the order, so the sums are compared directly.
      keep_pairs(h, [&](std::size_t i) {
        const auto [a, b] = cfg_.pair(i);
        return qs[a] * ks[a] + qs[b] * ks[b];
      });
    }
  }

  /// Pruned key rows: k [n_cells, n_head_kv, d_k] -> out [n_cells, n_head_kv, kept].
  void prune_keys(const float* k, std::size_t n_cells, float* out) const noexcept {
    const std::size_t H = cfg_.n_head_kv, d = cfg_.d_k;
    for (std::size_t j = 0; j < n_cells; ++j)
      for (std::size_t h = 0; h < H; ++h) {
        const float* x = k + (j * H + h) * d;
        float* y = out + (j * H + h) * kept_;
        for (std::size_t i = 0; i < kept_; ++i) y[i] = x[ch_[h * kept_ + i]];
      }
  }
  /// Queries gathered to their KV head's channels: q [n_rows, n_head, d_k] ->
  /// out [n_rows, n_head, kept].
  void gather_queries(const float* q, std::size_t n_rows, float* out) const noexcept {
    const std::size_t H = cfg_.n_head_kv * cfg_.group, d = cfg_.d_k;
    for (std::size_t r = 0; r < n_rows; ++r)
      for (std::size_t qh = 0; qh < H; ++qh) {
        const std::uint32_t* c = ch_.data() + (qh / cfg_.group) * kept_;
        const float* x = q + (r * H + qh) * d;
        float* y = out + (r * H + qh) * kept_;
        for (std::size_t i = 0; i < kept_; ++i) y[i] = x[c[i]];
      }
  }

 private:
  /// Keeps head h's kept_pairs() pairs with the highest score (ties: the lower pair).
  template <class Score>
  void keep_pairs(std::size_t h, Score score) {
    const std::size_t np = cfg_.n_pairs(), kp = kept_ / 2;
    std::vector<double> s(np);
    std::vector<std::uint32_t> order(np);
    for (std::size_t i = 0; i < np; ++i) {
      s[i] = score(i);
      order[i] = static_cast<std::uint32_t>(i);
    }
    std::stable_sort(order.begin(), order.end(),
                     [&](std::uint32_t a, std::uint32_t b) { return s[a] > s[b]; });
    std::uint32_t* out = ch_.data() + h * kept_;
    for (std::size_t i = 0; i < kp; ++i) {
      const auto [a, b] = cfg_.pair(order[i]);
      out[2 * i] = a;
      out[2 * i + 1] = b;
    }
    std::sort(out, out + kept_);
  }

  think_config cfg_;
  std::size_t kept_ = 0;
  std::vector<std::uint32_t> ch_;  // [n_head_kv, kept]
};
static_assert(key_channel_pruner<think_pruner>);

}  // namespace mnemo::evict
