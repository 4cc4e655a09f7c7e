// Per-KV-head lanes (kv_granularity::per_kv_head) and the read-bounded budget
// (budget_rule::read) against an independent fp64 model of bounded eviction: per
// KV head a list of kept (position, score) cells, causal softmax attention of the
// group's query heads over them, the policy's score rule, and eviction of the
// lowest (unprotected, score, position) down to the kept size after each call.
#include <algorithm>
#include <cmath>

#include "evict/harness.hpp"
#include <gtest/gtest.h>

#include "mnemo/attention/reference.hpp"
#include "mnemo/evict/h2o.hpp"
#include "mnemo/evict/key_norm.hpp"
#include "mnemo/evict/last_recent.hpp"
#include "mnemo/evict/streaming_llm.hpp"
#include "mnemo/evict/tova.hpp"

namespace {

using namespace evict_test;
using mnemo::memory::budget_rule;
using mnemo::memory::kv_granularity;

/// 2 KV heads x group 2, d 32. KV head h has its own heavy hitter at position
/// 20 + 30 h: only that head's key points along u, and only its group's queries
/// look along u. Key norms are equal, so only the attention signal tells them apart.
synthetic two_head_synthetic(std::size_t n, std::uint64_t seed) {
  synthetic s;
  s.n_head = 4;
  s.n_head_kv = 2;
  s.d = 32;
  s.n_tokens = n;
  const std::size_t d = s.d;
  mnemo_test::splitmix64 g{seed};
  const float kn = std::sqrt(static_cast<float>(d));
  s.q.resize(n * s.n_head * d);
  s.k.resize(n * s.n_head_kv * d);
  s.v.resize(n * s.n_head_kv * d);
  for (std::size_t t = 0; t < n; ++t) {
    for (std::size_t h = 0; h < s.n_head_kv; ++h) {
      float* kr = &s.k[(t * s.n_head_kv + h) * d];
      for (std::size_t i = 0; i < d; ++i) kr[i] = static_cast<float>(g.normal());
      kr[0] = 0.0f;
      if (t == 20 + 30 * h) {
        for (std::size_t i = 0; i < d; ++i) kr[i] *= 0.3f;
        kr[0] = 1.0f;
      }
      float nn = 0.0f;
      for (std::size_t i = 0; i < d; ++i) nn += kr[i] * kr[i];
      for (std::size_t i = 0; i < d; ++i) kr[i] *= kn / std::sqrt(nn);
      for (std::size_t i = 0; i < d; ++i)
        s.v[(t * s.n_head_kv + h) * d + i] = static_cast<float>(g.normal());
    }
    for (std::size_t qh = 0; qh < s.n_head; ++qh) {
      float* qr = &s.q[(t * s.n_head + qh) * d];
      for (std::size_t i = 0; i < d; ++i) qr[i] = 0.3f * static_cast<float>(g.normal());
      qr[0] = 10.0f;  // logit ~ 5 on the head's heavy hitter
    }
  }
  return s;
}

enum class rule_kind { h2o, tova, streaming, key_norm };

/// The independent model. Returns the decode rows' outputs [n_decode, n_head, d] and
/// the kept positions per KV head (per_head false: one set from head-summed scores).
struct ref_result {
  std::vector<float> out;
  std::vector<std::vector<pos_t>> kept;
};

ref_result reference(const synthetic& s, std::size_t n_prefill, std::size_t chunk,
                     std::size_t kept_size, rule_kind rule, bool per_head, std::size_t recent,
                     pos_t n_sink) {
  const std::size_t d = s.d, Hk = s.n_head_kv, g = s.n_head / Hk;
  const std::size_t lanes = per_head ? Hk : 1;
  struct cell {
    pos_t pos;
    double score;
  };
  std::vector<std::vector<cell>> lane(lanes);
  ref_result r;
  const double scale = 1.0 / std::sqrt(static_cast<double>(d));
  std::size_t t = 0;
  while (t < s.n_tokens) {
    const std::size_t n = t < n_prefill ? std::min(chunk, n_prefill - t) : 1;
    const pos_t pos_end = static_cast<pos_t>(t + n);
    for (std::size_t L = 0; L < lanes; ++L)
      for (std::size_t j = t; j < t + n; ++j) {
        double score = 0.0;
        if (rule == rule_kind::key_norm) {
          const std::size_t h0 = per_head ? L : 0, h1 = per_head ? L + 1 : Hk;
          for (std::size_t h = h0; h < h1; ++h) {
            double nn = 0.0;
            for (std::size_t i = 0; i < d; ++i)
              nn += double(s.k[(j * Hk + h) * d + i]) * s.k[(j * Hk + h) * d + i];
            score -= std::sqrt(nn);
          }
        }
        lane[L].push_back({static_cast<pos_t>(j), score});
      }
    std::vector<std::vector<double>> mass(lanes);
    for (std::size_t L = 0; L < lanes; ++L) mass[L].assign(lane[L].size(), 0.0);
    for (std::size_t i = t; i < t + n; ++i)
      for (std::size_t qh = 0; qh < s.n_head; ++qh) {
        const std::size_t h = qh / g, L = per_head ? h : 0;
        const auto& cs = lane[L];
        std::vector<double> a(cs.size(), 0.0);
        double mx = -1e300, z = 0.0;
        for (std::size_t c = 0; c < cs.size(); ++c) {
          if (cs[c].pos > static_cast<pos_t>(i)) continue;
          double dot = 0.0;
          const auto j = static_cast<std::size_t>(cs[c].pos);
          for (std::size_t e = 0; e < d; ++e)
            dot += double(s.q[(i * s.n_head + qh) * d + e]) * s.k[(j * Hk + h) * d + e];
          a[c] = dot * scale;
          mx = std::max(mx, a[c]);
        }
        for (std::size_t c = 0; c < cs.size(); ++c)
          z += cs[c].pos > static_cast<pos_t>(i) ? (a[c] = 0.0) : (a[c] = std::exp(a[c] - mx));
        std::vector<double> o(d, 0.0);
        for (std::size_t c = 0; c < cs.size(); ++c) {
          a[c] /= z;
          const auto j = static_cast<std::size_t>(cs[c].pos);
          for (std::size_t e = 0; e < d; ++e) o[e] += a[c] * s.v[(j * Hk + h) * d + e];
        }
        if (t >= n_prefill)
          for (double x : o) r.out.push_back(static_cast<float>(x));
        const bool counted = rule == rule_kind::h2o || (rule == rule_kind::tova && i + 1 == t + n);
        if (counted)
          for (std::size_t c = 0; c < cs.size(); ++c) mass[L][c] += a[c];
      }
    for (std::size_t L = 0; L < lanes; ++L) {
      auto& cs = lane[L];
      for (std::size_t c = 0; c < cs.size(); ++c) {
        if (rule == rule_kind::h2o) cs[c].score += mass[L][c];
        if (rule == rule_kind::tova) cs[c].score = mass[L][c];
        if (rule == rule_kind::streaming)
          cs[c].score = cs[c].pos < n_sink ? -double(cs[c].pos) : double(cs[c].pos);
      }
      auto prot = [&](const cell& c) {
        if (rule == rule_kind::h2o) return c.pos >= pos_end - static_cast<pos_t>(recent);
        if (rule == rule_kind::streaming) return c.pos < n_sink;
        return false;
      };
      while (cs.size() > kept_size) {
        std::size_t v = 0;
        for (std::size_t c = 1; c < cs.size(); ++c) {
          const cell &x = cs[c], &b = cs[v];
          const bool px = prot(x), pb = prot(b);
          if (px != pb ? !px
                       : (float(x.score) != float(b.score) ? x.score < b.score : x.pos < b.pos))
            v = c;
        }
        cs.erase(cs.begin() + static_cast<std::ptrdiff_t>(v));
      }
    }
    t += n;
  }
  for (auto& cs : lane) {
    std::vector<pos_t> p;
    for (const cell& c : cs) p.push_back(c.pos);
    std::sort(p.begin(), p.end());
    r.kept.push_back(p);
  }
  return r;
}

std::vector<pos_t> sorted(std::vector<pos_t> v) {
  std::sort(v.begin(), v.end());
  return v;
}

std::size_t kept_of(std::size_t budget, budget_rule rule) {
  return rule == budget_rule::kept ? budget : (budget > 0 ? budget - 1 : 0);
}

template <class Policy>
void expect_matches_reference(const synthetic& s, std::size_t n_prefill, std::size_t chunk,
                              std::size_t budget, Policy p, rule_kind kind, run_options o,
                              std::size_t recent, pos_t n_sink, const char* what) {
  const bool per_head = o.granularity == kv_granularity::per_kv_head;
  const run_result r = run_synthetic(s, n_prefill, chunk, budget, p, o);
  const ref_result ref =
      reference(s, n_prefill, chunk, kept_of(budget, o.rule), kind, per_head, recent, n_sink);
  ASSERT_EQ(r.kept_per_lane.size(), ref.kept.size()) << what;
  for (std::size_t h = 0; h < ref.kept.size(); ++h)
    EXPECT_EQ(sorted(r.kept_per_lane[h]), ref.kept[h])
        << what << " lane " << h << " budget " << budget;
  ASSERT_EQ(r.out.size(), ref.out.size()) << what;
  for (std::size_t i = 0; i < ref.out.size(); ++i)
    ASSERT_NEAR(r.out[i], ref.out[i], 2e-4f)
        << what << " budget " << budget << ": first differing element " << i;
}

const run_options k_per_head{.granularity = kv_granularity::per_kv_head, .rule = budget_rule::kept};
const run_options k_per_head_read{.granularity = kv_granularity::per_kv_head,
                                  .rule = budget_rule::read};
const run_options k_per_layer_read{.granularity = kv_granularity::per_layer,
                                   .rule = budget_rule::read};

TEST(EvictPerHead, MatchesIndependentReference) {
  for (std::uint64_t seed : {1u, 2u}) {
    const synthetic s = two_head_synthetic(120, seed);
    mnemo::evict::h2o h;
    h.recent = 4;
    mnemo::evict::streaming_llm st;
    st.n_sink = 4;
    mnemo::evict::key_norm kn;
    kn.n_head_kv = s.n_head_kv;
    kn.d_k = s.d;
    synthetic sn = s;  // key norms spread per (token, head), so key-norm has no ties
    mnemo_test::splitmix64 g{seed + 100};
    for (std::size_t r = 0; r < sn.n_tokens * sn.n_head_kv; ++r) {
      const float f = 0.5f + static_cast<float>(g.next() % 1000003) / 1000003.0f;
      for (std::size_t i = 0; i < sn.d; ++i) sn.k[r * sn.d + i] *= f;
    }
    for (run_options o : {k_per_head, k_per_head_read, k_per_layer_read})
      for (std::size_t b : {0u, 1u, 4u, 12u, 200u}) {
        expect_matches_reference(s, 40, 8, b, h, rule_kind::h2o, o, 4, 0, "h2o");
        expect_matches_reference(s, 40, 8, b, mnemo::evict::tova{}, rule_kind::tova, o, 0, 0,
                                 "tova");
        expect_matches_reference(s, 40, 8, b, st, rule_kind::streaming, o, 0, 4, "streaming");
        expect_matches_reference(sn, 40, 8, b, kn, rule_kind::key_norm, o, 0, 0, "key-norm");
      }
  }
}

TEST(EvictPerHead, HeadsKeepTheirOwnHeavyHitters) {
  const synthetic s = two_head_synthetic(160, 3);
  mnemo::evict::h2o h;
  h.recent = 4;
  const run_result r = run_synthetic(s, 32, 8, 12, h, k_per_head);
  ASSERT_EQ(r.kept_per_lane.size(), 2u);
  auto has = [](const std::vector<pos_t>& v, pos_t p) {
    return std::find(v.begin(), v.end(), p) != v.end();
  };
  EXPECT_TRUE(has(r.kept_per_lane[0], 20));
  EXPECT_FALSE(has(r.kept_per_lane[0], 50));
  EXPECT_TRUE(has(r.kept_per_lane[1], 50));
  EXPECT_FALSE(has(r.kept_per_lane[1], 20));
  EXPECT_NE(sorted(r.kept_per_lane[0]), sorted(r.kept_per_lane[1]));
  // Position-only policies give every head the same set.
  mnemo::evict::streaming_llm st;
  const run_result q = run_synthetic(s, 32, 8, 12, st, k_per_head);
  EXPECT_EQ(sorted(q.kept_per_lane[0]), sorted(q.kept_per_lane[1]));
}

TEST(EvictPerHead, SamePolicyPerLayerAndPerHeadAgreeWhenSetsAgree) {
  // StreamingLLM keeps the same positions in every head, so per-head lanes must give
  // the per-layer outputs (the same cells, attended one KV head at a time).
  const synthetic s = two_head_synthetic(100, 4);
  mnemo::evict::streaming_llm st;
  st.n_sink = 4;
  for (std::size_t b : {0u, 1u, 4u, 16u, 1000u}) {
    const run_result a = run_synthetic(s, 24, 8, b, st, run_options{});
    const run_result c = run_synthetic(s, 24, 8, b, st, k_per_head);
    for (const auto& lane : c.kept_per_lane) EXPECT_EQ(sorted(lane), sorted(a.kept)) << b;
    ASSERT_EQ(a.out.size(), c.out.size());
    for (std::size_t i = 0; i < a.out.size(); ++i)
      ASSERT_NEAR(a.out[i], c.out[i], 1e-5f) << "budget " << b << " element " << i;
  }
}

TEST(EvictReadBound, DecodeReadsAtMostBudgetCells) {
  const synthetic s = two_head_synthetic(80, 5);
  mnemo::evict::h2o h;
  h.recent = 2;
  for (run_options o : {run_options{}, k_per_head, k_per_layer_read, k_per_head_read})
    for (std::size_t b : {0u, 1u, 2u, 16u}) {
      const bool read = o.rule == budget_rule::read;
      // Decode only: the kept cells plus the step's own token.
      const run_result r = run_synthetic(s, 1, 1, b, h, o);
      EXPECT_EQ(r.max_view_cells, read ? std::max<std::size_t>(b, 1) : b + 1)
          << "budget " << b << " read " << read;
      for (const auto& lane : r.kept_per_lane) EXPECT_EQ(lane.size(), kept_of(b, o.rule));
      // Prefill chunks of 8: kept + 8 at most.
      EXPECT_LE(run_synthetic(s, 40, 8, b, h, o).max_view_cells, kept_of(b, o.rule) + 8)
          << "budget " << b << " read " << read;
    }
}

TEST(EvictPerHead, BudgetEdgeCases) {
  const synthetic s = two_head_synthetic(50, 6);
  mnemo::evict::streaming_llm p;
  p.n_sink = 4;
  for (run_options o : {k_per_head, k_per_head_read}) {
    const bool read = o.rule == budget_rule::read;
    for (const auto& l : run_synthetic(s, 20, 5, 0, p, o).kept_per_lane) EXPECT_TRUE(l.empty());
    for (const auto& l : run_synthetic(s, 20, 5, 1, p, o).kept_per_lane)
      EXPECT_EQ(l, read ? std::vector<pos_t>{} : std::vector<pos_t>{0});
    for (const auto& l : run_synthetic(s, 20, 5, 4, p, o).kept_per_lane)
      EXPECT_EQ(sorted(l), read ? (std::vector<pos_t>{0, 1, 2}) : (std::vector<pos_t>{0, 1, 2, 3}));
    for (const auto& l : run_synthetic(s, 20, 5, 1000, p, o).kept_per_lane)
      EXPECT_EQ(l.size(), 50u);
  }
}

// A per-head memory's views hold one KV head's rows per stream: attention::attend
// called on them directly with the layer's shape (instead of through
// model::attend_observed) is refused with a status naming the strides, and writes
// nothing; with one KV head per call (attend_observed's shape) the same views attend.
TEST(EvictPerHead, DirectAttendOnPerHeadViewsIsRefused) {
  const synthetic s = two_head_synthetic(8, 7);
  mnemo::memory::bounded_config cfg = synthetic_config(s, 16, 8);
  k_per_head.apply(cfg);
  auto m = mnemo::memory::bounded<mnemo::evict::streaming_llm, float>::make(cfg, {}).value();
  std::vector<pos_t> pos(s.n_tokens);
  for (std::size_t j = 0; j < pos.size(); ++j) pos[j] = static_cast<pos_t>(j);
  std::vector<seq_id> seq(pos.size(), 0);
  std::vector<mnemo::seq_set> sets(pos.size(), mnemo::seq_set::of(0));
  const mnemo::memory::ubatch_tokens ub{pos, sets};
  ASSERT_TRUE(m.prepare(std::span(&ub, 1)).is_ok());
  ASSERT_TRUE(m.apply(0, ub).is_ok());
  for (std::size_t j = 0; j < pos.size(); ++j)
    m.write_kv(0, 0, j, &s.k[j * s.n_head_kv * s.d], &s.v[j * s.n_head_kv * s.d]);
  mnemo::memory::layer_views lv;
  m.views(0, 0, lv);
  ASSERT_EQ(lv.streams.size(), s.n_head_kv);  // head-major lanes of the one sequence
  mnemo::attention::params ap;
  mnemo::attention::workspace ws;
  const mnemo::attention::query_batch qb{s.q.data(), pos.size(), pos.data(), seq.data(), nullptr};
  std::vector<float> out(pos.size() * s.n_head * s.d, 7.0f);
  const mnemo::attention::shape layer{s.n_head, s.n_head_kv, s.d, s.d};
  const mnemo::status st = mnemo::attention::attend<mnemo::simd::native, float, float>(
      layer, ap, qb, lv.streams, out.data(), ws, mnemo::attention::options{1});
  EXPECT_EQ(st.code(), mnemo::status_code::invalid_argument);
  EXPECT_NE(st.message().find("strides"), std::string::npos) << st.message();
  for (float x : out) ASSERT_EQ(x, 7.0f);
  // One KV head per call over its own stream, as attend_observed calls the kernel:
  // head 0's group for the first token, equal to the reference kernel.
  const mnemo::attention::shape one{s.n_head / s.n_head_kv, 1, s.d, s.d};
  const mnemo::attention::query_batch q0{s.q.data(), 1, pos.data(), seq.data(), nullptr};
  const auto head0 = std::span(lv.streams.data(), 1);
  std::vector<float> ref(one.n_head * s.d);
  ASSERT_TRUE((mnemo::attention::attend<mnemo::simd::native, float, float>(
                   one, ap, q0, head0, out.data(), ws, mnemo::attention::options{1})
                   .is_ok()));
  ASSERT_TRUE(
      (mnemo::attention::reference_attend<float, float>(one, ap, q0, head0, ref.data()).is_ok()));
  for (std::size_t i = 0; i < ref.size(); ++i) EXPECT_NEAR(out[i], ref[i], 1e-5f) << "output " << i;
}

}  // namespace
