// The fp64 model the rule tests drive a bounded cache against (docs/eviction.md):
// cells with per-cell state, causal softmax attention of every query head over the
// cells the lane holds, a rule's update from the requested rows, an optional
// rescoring of every cell before an eviction, and eviction of the lowest
// (unprotected, score, position) down to the kept size (minus m - 1 for the chunked
// trigger) after each call. compare() checks the kept positions after every call of
// a chunked prefill and decode, per layer with 2 KV heads.
#pragma once

#include <algorithm>
#include <cmath>
#include <functional>
#include <tuple>

#include "evict/harness.hpp"
#include <gtest/gtest.h>

namespace evict_test {

/// 4 query heads on 2 KV heads, d 16, random Q/K/V with a few keys that queries favour
/// (so attention is not uniform and the rules disagree).
inline synthetic data(std::size_t n, std::uint64_t seed) {
  synthetic s;
  s.n_head = 4;
  s.n_head_kv = 2;
  s.d = 16;
  s.n_tokens = n;
  mnemo::splitmix64 g{seed};
  for (auto* a : {&s.q, &s.k, &s.v}) {
    a->resize(n * (a == &s.q ? s.n_head : s.n_head_kv) * s.d);
    for (float& x : *a) x = static_cast<float>(g.normal());
  }
  for (std::size_t t = 0; t < n; ++t) {
    for (std::size_t h = 0; h < s.n_head; ++h) s.q[(t * s.n_head + h) * s.d] = 3.0f;
    if (g.next() % 5 == 0)
      for (std::size_t h = 0; h < s.n_head_kv; ++h) s.k[(t * s.n_head_kv + h) * s.d] = 2.5f;
  }
  return s;
}

struct cell {
  pos_t pos;
  std::vector<double> st;
};
/// One call's attention as the fp64 model sees it, for the requested rows.
struct call_view {
  std::vector<pos_t> row_pos;
  std::vector<std::vector<double>> logit, prob;  // [row * n_head + qh][cell]; -inf: masked
  std::size_t n_head = 0;
  pos_t pos_end = 0;
};

/// A rule of the fp64 model.
struct ref_rule {
  std::function<std::size_t(std::size_t n_new)> rows;  // requested rows of a call
  std::function<void(cell&, const synthetic&)> insert;
  std::function<void(std::vector<cell>&, const call_view&)> observe;
  std::function<double(const cell&, pos_t pos_end)> score;
  std::size_t recent = 0;  // protected newest positions
  std::size_t chunk = 1;
  /// Optional: rescores every cell from the whole lane before an eviction.
  std::function<void(std::vector<cell>&, const synthetic&)> rescore;
};

/// Runs the model and the bounded cache side by side; compares kept sets per call.
/// Rows [t, t + n) of s as micro-batch 0 of sequence 0 in the one-layer memory m: planned,
/// applied, K/V written; pos / seq are the rows' positions and sequence, lv layer 0's
/// views. Call it inside ASSERT_NO_FATAL_FAILURE.
template <class Memory>
void feed_rows(Memory& m, const synthetic& s, std::size_t t, std::size_t n, std::vector<pos_t>& pos,
               std::vector<mnemo::seq_id>& seq, mnemo::memory::layer_views& lv) {
  pos.resize(n);
  seq.assign(n, 0);
  std::vector<mnemo::seq_set> sets(n, mnemo::seq_set::of(0));
  for (std::size_t j = 0; j < n; ++j) pos[j] = static_cast<pos_t>(t + j);
  const mnemo::memory::ubatch_tokens ub{pos, sets};
  ASSERT_TRUE(m.prepare(std::span(&ub, 1)).is_ok());
  ASSERT_TRUE(m.apply(0, ub).is_ok());
  const std::size_t row = s.n_head_kv * s.d;
  for (std::size_t j = 0; j < n; ++j) m.write_kv(0, 0, j, &s.k[(t + j) * row], &s.v[(t + j) * row]);
  m.views(0, 0, lv);
}

template <class Policy>
void compare(const synthetic& s, const ref_rule& rule, Policy p, std::size_t budget,
             std::size_t n_prefill, std::size_t chunk, const char* name) {
  mnemo::memory::bounded_config cfg = synthetic_config(s, budget, chunk);
  auto m = mnemo::memory::bounded<Policy, float>::make(cfg, p).value();
  const mnemo::attention::shape sh{s.n_head, s.n_head_kv, s.d, s.d};
  mnemo::attention::params ap;
  const double scale = 1.0 / std::sqrt(static_cast<double>(s.d));
  ap.scale = static_cast<float>(scale);
  mnemo::attention::workspace ws;
  mnemo::memory::layer_views lv;
  std::vector<cell> cells;
  const std::size_t d = s.d, Hk = s.n_head_kv, H = s.n_head, g = H / Hk;
  std::size_t t = 0;
  while (t < s.n_tokens) {
    const std::size_t n = t < n_prefill ? std::min(chunk, n_prefill - t) : 1;
    std::vector<pos_t> pos;
    std::vector<mnemo::seq_id> seq;
    ASSERT_NO_FATAL_FAILURE(feed_rows(m, s, t, n, pos, seq, lv));
    std::vector<float> out(n * H * d);
    const mnemo::attention::query_batch qb{&s.q[t * H * d], n, pos.data(), seq.data(), nullptr};
    ASSERT_TRUE((mnemo::model::attend_observed<mnemo::simd::native, float, float>(
                     m, 0, 0, sh, ap, qb, lv, out.data(), ws, {1}))
                    .is_ok());
    m.commit();
    // The model: insert, attend, observe, evict.
    for (std::size_t j = t; j < t + n; ++j) {
      cells.push_back({static_cast<pos_t>(j), {}});
      rule.insert(cells.back(), s);
    }
    call_view cv;
    cv.n_head = H;
    cv.pos_end = static_cast<pos_t>(t + n);
    const std::size_t rows = std::min(rule.rows(n), n);
    for (std::size_t i = t + n - rows; i < t + n; ++i) {
      cv.row_pos.push_back(static_cast<pos_t>(i));
      for (std::size_t qh = 0; qh < H; ++qh) {
        std::vector<double> l(cells.size(), -INFINITY), a(cells.size(), 0.0);
        double mx = -INFINITY, z = 0.0;
        for (std::size_t c = 0; c < cells.size(); ++c) {
          if (cells[c].pos > static_cast<pos_t>(i)) continue;
          const auto j = static_cast<std::size_t>(cells[c].pos);
          double dot = 0.0;
          for (std::size_t e = 0; e < d; ++e)
            dot += double(s.q[(i * H + qh) * d + e]) * s.k[(j * Hk + qh / g) * d + e];
          mx = std::max(mx, l[c] = dot * scale);
        }
        for (std::size_t c = 0; c < cells.size(); ++c)
          if (!std::isinf(l[c])) z += std::exp(l[c] - mx);
        for (std::size_t c = 0; c < cells.size(); ++c)
          if (!std::isinf(l[c])) a[c] = std::exp(l[c] - mx) / z;
        cv.logit.push_back(l);
        cv.prob.push_back(a);
      }
    }
    if (rows > 0) rule.observe(cells, cv);
    const std::size_t kept = budget;
    if (cells.size() > kept) {
      const std::size_t n_evict = std::min(cells.size(), cells.size() - kept + rule.chunk - 1);
      if (rule.rescore) rule.rescore(cells, s);
      auto key = [&](const cell& c) {
        const bool prot = c.pos >= cv.pos_end - static_cast<pos_t>(rule.recent);
        return std::make_tuple(prot, rule.score(c, cv.pos_end), c.pos);
      };
      std::sort(cells.begin(), cells.end(),
                [&](const cell& a, const cell& b) { return key(a) < key(b); });
      cells.erase(cells.begin(), cells.begin() + static_cast<std::ptrdiff_t>(n_evict));
    }
    std::vector<pos_t> want, got;
    for (const cell& c : cells) want.push_back(c.pos);
    for (pos_t q : m.lane_of(0, 0).pos)
      if (q >= 0) got.push_back(q);
    std::sort(want.begin(), want.end());
    std::sort(got.begin(), got.end());
    ASSERT_EQ(got, want) << name << ": kept sets differ after the call ending at " << t + n
                         << " (budget " << budget << ", seed in data)";
    t += n;
  }
}

/// Mass of cell c summed over the query heads of every requested row.
inline double mass_of(const call_view& cv, std::size_t c) {
  double m = 0.0;
  for (const auto& a : cv.prob) m += a[c];
  return m;
}

}  // namespace evict_test
