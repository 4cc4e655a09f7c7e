// Drives a bounded memory without a model: one layer, one sequence, synthetic
// Q/K/V with planted structure (docs/eviction.md), attention through
// model::attend_observed exactly as the Llama decoder calls it.
#pragma once

#include <cmath>
#include <cstdint>
#include <vector>

#include "common/splitmix64.hpp"
#include <gtest/gtest.h>

#include "mnemo/memory/bounded/bounded.hpp"
#include "mnemo/model/attend_observed.hpp"

namespace evict_test {

using namespace mnemo;

/// Rows of a synthetic sequence. Keys all have norm `key_norm` (equalised, so the
/// signal is in directions only) unless norm_leak is set.
struct synthetic {
  std::size_t n_head = 2, n_head_kv = 1, d = 32;
  std::size_t n_tokens = 0;
  std::vector<float> q, k, v;  // [n_tokens, heads, d]
  pos_t heavy = -1, needle = -1;
  std::size_t n_question = 0;
};

struct synthetic_spec {
  std::size_t n_tokens = 256;
  std::size_t n_question = 8;  // the last rows look for the needle
  pos_t heavy = 40;            // a token every query attends (a heavy hitter)
  pos_t needle = 100;          // a token only the question rows attend
  float strength = 8.0f;       // logit boost of the planted alignments
  std::uint64_t seed = 1;
};

inline synthetic make_synthetic(const synthetic_spec& sp) {
  synthetic s;
  s.n_tokens = sp.n_tokens;
  s.heavy = sp.heavy;
  s.needle = sp.needle;
  s.n_question = sp.n_question;
  const std::size_t d = s.d, H = s.n_head, Hk = s.n_head_kv;
  mnemo_test::splitmix64 g{sp.seed};
  auto normal = [&] { return static_cast<float>(g.normal()); };
  // Two fixed unit directions: u (heavy hitter), w (needle); orthogonal by construction.
  std::vector<float> u(d, 0.0f), w(d, 0.0f);
  u[0] = 1.0f;
  w[1] = 1.0f;
  const float kn = std::sqrt(static_cast<float>(d));
  s.q.resize(sp.n_tokens * H * d);
  s.k.resize(sp.n_tokens * Hk * d);
  s.v.resize(sp.n_tokens * Hk * d);
  const float scale = 1.0f / std::sqrt(static_cast<float>(d));
  for (std::size_t t = 0; t < sp.n_tokens; ++t) {
    for (std::size_t h = 0; h < Hk; ++h) {
      float* kr = &s.k[(t * Hk + h) * d];
      for (std::size_t i = 0; i < d; ++i) kr[i] = normal();
      kr[0] = kr[1] = 0.0f;  // random keys carry no planted direction
      const bool heavy = static_cast<pos_t>(t) == sp.heavy,
                 needle = static_cast<pos_t>(t) == sp.needle;
      if (heavy || needle) {
        for (std::size_t i = 0; i < d; ++i) kr[i] *= 0.3f;
        kr[heavy ? 0 : 1] = 1.0f;
      }
      float n = 0.0f;
      for (std::size_t i = 0; i < d; ++i) n += kr[i] * kr[i];
      n = std::sqrt(n);
      for (std::size_t i = 0; i < d; ++i) kr[i] *= kn / n;  // equal norms
      for (std::size_t i = 0; i < d; ++i) s.v[(t * Hk + h) * d + i] = normal();
    }
    const bool question = t + sp.n_question >= sp.n_tokens;
    for (std::size_t h = 0; h < H; ++h) {
      float* qr = &s.q[(t * H + h) * d];
      for (std::size_t i = 0; i < d; ++i) qr[i] = 0.3f * normal();
      // logit of a planted key ~ q . k * scale with |k| = sqrt(d): component c gives c.
      qr[0] = sp.strength * 0.5f / (kn * scale) * 1.0f;
      if (question) qr[1] = sp.strength / (kn * scale);
    }
  }
  return s;
}

/// What one run of a memory over a synthetic sequence produced.
struct run_result {
  std::vector<float> out;   // [n_decode, n_head, d] attention output of decode rows
  std::vector<pos_t> kept;  // positions held at the end (lane 0)
  std::vector<std::vector<pos_t>> kept_per_lane;  // [lanes] positions held at the end
  std::size_t max_view_cells = 0;                 // most cells handed to attention in one call
  bool heavy_kept_at_end = false, needle_kept_at_question = false;
};

/// How a synthetic run configures its memory beyond the budget.
struct run_options {
  memory::position_mode mode = memory::position_mode::original;
  memory::kv_granularity granularity = memory::kv_granularity::per_layer;
  memory::budget_rule rule = memory::budget_rule::kept;
  // Per layer / per KV head, as bounded_config's (empty: the one budget everywhere).
  std::vector<std::size_t> layer_budgets{}, head_budgets{};

  /// Sets these fields of a memory's configuration.
  void apply(memory::bounded_config& c) const {
    c.positions = mode;
    c.granularity = granularity;
    c.rule = rule;
    c.layer_budgets = layer_budgets;
    c.head_budgets = head_budgets;
  }
};

/// A one-layer bounded memory's configuration for `s`'s heads: `budget` cells per
/// lane, micro-batches of up to `max_ubatch` tokens, keys stored as given (no RoPE).
inline memory::bounded_config synthetic_config(const synthetic& s, std::size_t budget,
                                               std::size_t max_ubatch) {
  memory::bounded_config cfg;
  cfg.shape = {1, s.n_head_kv, s.d, s.d};
  cfg.budget = budget;
  cfg.max_ubatch = max_ubatch;
  cfg.rope.layout = attention::rope_layout::none;
  return cfg;
}

/// Prefill `n_prefill` tokens in chunks of `chunk`, then decode the rest one by one.
template <class Policy>
run_result run_synthetic(const synthetic& s, std::size_t n_prefill, std::size_t chunk,
                         std::size_t budget, Policy policy, run_options o) {
  const memory::position_mode mode = o.mode;
  memory::bounded_config cfg = synthetic_config(s, budget, chunk);
  o.apply(cfg);
  auto m = memory::bounded<Policy, float>::make(cfg, policy).value();
  const attention::shape sh{s.n_head, s.n_head_kv, s.d, s.d};
  attention::params ap;
  ap.scale = 1.0f / std::sqrt(static_cast<float>(s.d));
  attention::workspace ws;
  memory::layer_views lv;
  run_result r;
  const std::size_t H = s.n_head, Hk = s.n_head_kv, d = s.d;
  std::vector<float> out;
  std::size_t t = 0;
  while (t < s.n_tokens) {
    const std::size_t n = t < n_prefill ? std::min(chunk, n_prefill - t) : 1;
    std::vector<pos_t> pos(n);
    std::vector<seq_id> seq(n, 0);
    std::vector<seq_set> sets(n, seq_set::of(0));
    for (std::size_t j = 0; j < n; ++j)
      pos[j] = mode == memory::position_mode::compact ? m.seq_pos_max(0) + 1 + static_cast<pos_t>(j)
                                                      : static_cast<pos_t>(t + j);
    const memory::ubatch_tokens ub{pos, sets};
    EXPECT_TRUE(m.prepare(std::span(&ub, 1)).is_ok());
    EXPECT_TRUE(m.apply(0, ub).is_ok());
    for (std::size_t j = 0; j < n; ++j)
      m.write_kv(0, 0, j, &s.k[(t + j) * Hk * d], &s.v[(t + j) * Hk * d]);
    m.views(0, 0, lv);
    for (const auto& st : lv.streams) r.max_view_cells = std::max(r.max_view_cells, st.n_cells());
    EXPECT_EQ(r.max_view_cells, m.view_stats().max_cells);
    out.assign(n * H * d, 0.0f);
    const attention::query_batch qb{&s.q[t * H * d], n, pos.data(), seq.data(), nullptr};
    const status st = model::attend_observed<simd::native, float, float>(
        m, 0, 0, sh, ap, qb, lv, out.data(), ws, attention::options{1});
    EXPECT_TRUE(st.is_ok()) << st.message();
    m.commit();
    if (t >= n_prefill) r.out.insert(r.out.end(), out.begin(), out.end());
    t += n;
    auto holds = [&](pos_t p) {  // in every lane
      for (std::size_t h = 0; h < m.lanes_per_layer(); ++h) {
        bool found = false;
        for (pos_t q : m.lane_of(0, 0, h).pos) found |= q == p;
        if (!found) return false;
      }
      return true;
    };
    if (t == s.n_tokens - s.n_question) r.needle_kept_at_question = holds(s.needle);
  }
  for (pos_t p : m.lane_of(0, 0).pos)
    if (p >= 0) r.kept.push_back(p);
  r.kept_per_lane.resize(m.lanes_per_layer());
  for (std::size_t h = 0; h < m.lanes_per_layer(); ++h)
    for (pos_t p : m.lane_of(0, 0, h).pos)
      if (p >= 0) r.kept_per_lane[h].push_back(p);
  for (pos_t p : r.kept) r.heavy_kept_at_end |= p == s.heavy;
  return r;
}

template <class Policy>
run_result run_synthetic(const synthetic& s, std::size_t n_prefill, std::size_t chunk,
                         std::size_t budget, Policy policy = {},
                         memory::position_mode mode = memory::position_mode::original) {
  return run_synthetic(s, n_prefill, chunk, budget, policy, run_options{mode});
}

/// Mean relative L2 error of the decode rows of `a` against `ref`.
inline double relative_error(const std::vector<float>& a, const std::vector<float>& ref,
                             std::size_t row) {
  double sum = 0.0;
  std::size_t n = 0;
  for (std::size_t i = 0; i + row <= ref.size(); i += row, ++n) {
    double e = 0.0, r = 0.0;
    for (std::size_t j = 0; j < row; ++j) {
      e += (a[i + j] - ref[i + j]) * double(a[i + j] - ref[i + j]);
      r += ref[i + j] * double(ref[i + j]);
    }
    sum += std::sqrt(e / std::max(r, 1e-30));
  }
  return n ? sum / static_cast<double>(n) : 0.0;
}

}  // namespace evict_test
