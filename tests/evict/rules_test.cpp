// Each policy of the second set (random, oracle, h2o normalised by age, h2o-vlen,
// Scissorhands with chunked eviction, Keyformer) against an independent fp64 model
// of its rule (evict/rule_model.hpp): the kept positions must be equal after every
// call of a chunked prefill and decode, per layer with 2 KV heads.
#include <algorithm>
#include <bit>
#include <cmath>

#include "evict/rule_model.hpp"
#include <gtest/gtest.h>

#include "mnemo/evict/budget_schedule.hpp"
#include "mnemo/evict/duo_attention.hpp"
#include "mnemo/evict/h2o_normalised.hpp"
#include "mnemo/evict/h2o_vlen.hpp"
#include "mnemo/evict/keyformer.hpp"
#include "mnemo/evict/last_recent.hpp"
#include "mnemo/evict/oracle.hpp"
#include "mnemo/evict/random_evict.hpp"
#include "mnemo/evict/scissorhands.hpp"
#include "mnemo/evict/streaming_llm.hpp"

namespace {

using namespace evict_test;
namespace ev = mnemo::evict;

TEST(EvictRules, RandomAndOracle) {
  const synthetic s = data(90, 3);
  ev::random_evict rp;
  rp.seed = 9;
  ref_rule r;
  r.rows = [](std::size_t) { return 0; };
  r.insert = [&](cell& c, const synthetic&) {
    // Recomputes the documented hash: uniform from (seed, layer 0, head 0, position).
    std::uint64_t z = rp.seed ^ (static_cast<std::uint64_t>(c.pos) * 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    z ^= z >> 31;
    c.st = {static_cast<double>(z >> 40) / 16777216.0};
  };
  r.observe = [](std::vector<cell>&, const call_view&) {};
  r.score = [](const cell& c, pos_t) { return c.st[0]; };
  for (std::size_t b : {0u, 1u, 7u, 20u}) compare(s, r, rp, b, 40, 10, "random");

  std::vector<float> future(90);
  mnemo::splitmix64 g{4};
  for (float& f : future) f = static_cast<float>(g.next() % 1000);
  ev::oracle op;
  op.future_mass = future;
  r.insert = [](cell&, const synthetic&) {};
  r.score = [&](const cell& c, pos_t) { return double(future[static_cast<std::size_t>(c.pos)]); };
  for (std::size_t b : {1u, 16u}) compare(s, r, op, b, 40, 10, "oracle");
}

TEST(EvictRules, H2ONormalisedByAge) {
  for (std::uint64_t seed : {1u, 2u}) {
    const synthetic s = data(100, seed);
    ev::h2o_normalised p;
    p.recent = 4;
    ref_rule r;
    r.recent = 4;
    r.rows = [](std::size_t n) { return n; };
    r.insert = [](cell& c, const synthetic&) { c.st = {0.0, 0.0}; };
    r.observe = [](std::vector<cell>& cs, const call_view& cv) {
      for (std::size_t c = 0; c < cs.size(); ++c) {
        cs[c].st[0] += mass_of(cv, c);
        for (pos_t rp : cv.row_pos) cs[c].st[1] += rp >= cs[c].pos;
      }
    };
    r.score = [](const cell& c, pos_t) { return c.st[0] / std::max(c.st[1], 1.0); };
    for (std::size_t b : {6u, 24u}) compare(s, r, p, b, 48, 16, "h2o normalised");
  }
}

TEST(EvictRules, H2OVlen) {
  const synthetic s = data(100, 5);
  ev::h2o_vlen p;
  p.recent = 4;
  p.n_head_kv = 2;
  p.d_v = s.d;
  ref_rule r;
  r.recent = 4;
  r.rows = [](std::size_t n) { return n; };
  r.insert = [](cell& c, const synthetic& sy) {
    double norms = 0.0;
    for (std::size_t h = 0; h < 2; ++h) {
      double q = 0.0;
      for (std::size_t i = 0; i < sy.d; ++i) {
        const double x = sy.v[(static_cast<std::size_t>(c.pos) * 2 + h) * sy.d + i];
        q += x * x;
      }
      norms += std::sqrt(q);
    }
    c.st = {0.0, norms};
  };
  r.observe = [](std::vector<cell>& cs, const call_view& cv) {
    const double g = 2.0;  // query heads per KV head
    double z = 0.0;
    for (std::size_t c = 0; c < cs.size(); ++c) z += mass_of(cv, c) / g * cs[c].st[1];
    for (std::size_t c = 0; c < cs.size(); ++c)
      cs[c].st[0] += static_cast<double>(cv.row_pos.size()) * mass_of(cv, c) / g * cs[c].st[1] / z;
  };
  r.score = [](const cell& c, pos_t) { return c.st[0]; };
  for (std::size_t b : {6u, 24u}) compare(s, r, p, b, 48, 16, "h2o-vlen");
}

TEST(EvictRules, ScissorhandsChunked) {
  const synthetic s = data(120, 7);
  for (std::size_t m : {1u, 4u}) {
    ev::scissorhands p;
    p.recent = 4;
    p.history = 8;
    p.evict_chunk = m;
    ref_rule r;
    r.recent = 4;
    r.chunk = m;
    r.rows = [](std::size_t) { return 1; };
    r.insert = [](cell& c, const synthetic&) { c.st = {0.0}; };
    r.observe = [](std::vector<cell>& cs, const call_view& cv) {
      double total = 0.0;
      for (std::size_t c = 0; c < cs.size(); ++c) total += mass_of(cv, c);
      const double threshold = total / static_cast<double>(cs.size());
      for (std::size_t c = 0; c < cs.size(); ++c) {
        const auto bits = static_cast<std::uint32_t>(cs[c].st[0]);
        cs[c].st[0] = ((bits << 1) | (mass_of(cv, c) < threshold ? 1u : 0u)) & 0xffu;
      }
    };
    r.score = [](const cell& c, pos_t) {
      return -double(std::popcount(static_cast<std::uint32_t>(c.st[0])));
    };
    for (std::size_t b : {5u, 20u}) compare(s, r, p, b, 40, 8, "scissorhands");
  }
}

TEST(EvictRules, KeyformerGumbelSoftmaxOnLogits) {
  const synthetic s = data(100, 8);
  ev::keyformer p;
  p.recent = 4;
  p.prefill_rows = 6;
  p.decode_from = 48;
  p.tau_delta = 0.05f;
  ref_rule r;
  r.recent = 4;
  r.rows = [](std::size_t n) { return n > 1 ? 6 : 1; };
  r.insert = [](cell& c, const synthetic&) { c.st = {0.0}; };
  r.observe = [&](std::vector<cell>& cs, const call_view& cv) {
    for (std::size_t ri = 0; ri < cv.row_pos.size(); ++ri) {
      const pos_t row = cv.row_pos[ri];
      const double tau = row < 48 ? 1.0 : 1.0 + 0.05 * (row - 48 + 1);
      for (std::size_t qh = 0; qh < cv.n_head; ++qh) {
        const auto& l = cv.logit[ri * cv.n_head + qh];
        std::vector<double> z(cs.size(), -INFINITY);
        double mx = -INFINITY, sum = 0.0;
        for (std::size_t c = 0; c < cs.size(); ++c)
          if (!std::isinf(l[c]))
            mx = std::max(mx,
                          z[c] = (l[c] + ev::keyformer::gumbel(p.seed, row, qh, cs[c].pos)) / tau);
        for (std::size_t c = 0; c < cs.size(); ++c)
          if (!std::isinf(z[c])) sum += std::exp(z[c] - mx);
        for (std::size_t c = 0; c < cs.size(); ++c)
          if (!std::isinf(z[c])) cs[c].st[0] += std::exp(z[c] - mx) / sum;
      }
    }
  };
  r.score = [](const cell& c, pos_t) { return c.st[0]; };
  for (std::size_t b : {6u, 24u}) compare(s, r, p, b, 48, 16, "keyformer");
}

TEST(EvictRules, PyramidScheduleAndPerLayerBudgets) {
  // The schedule: linear from 2B - B/beta down to B/beta, total n_layer * B.
  for (std::size_t L : {2u, 5u, 32u})
    for (std::size_t B : {16u, 100u, 1024u}) {
      const auto b = ev::pyramid_budgets(L, B, 20.0);
      ASSERT_EQ(b.size(), L);
      std::size_t sum = 0;
      for (std::size_t l = 0; l < L; ++l) {
        const double want =
            (2.0 * B - B / 20.0) + (B / 20.0 - (2.0 * B - B / 20.0)) * double(l) / double(L - 1);
        EXPECT_NEAR(double(b[l]), want, 1.0 + 1e-9) << "layer " << l << " of " << L << ", B " << B;
        if (l > 0) {
          EXPECT_LE(b[l], b[l - 1] + 1);
        }
        sum += b[l];
      }
      EXPECT_EQ(sum, L * B);
    }
  // A 3-layer cache keeps each layer's own budget (last-recent: the newest b_l).
  const synthetic s = data(64, 2);
  mnemo::memory::bounded_config cfg;
  cfg.shape = {3, s.n_head_kv, s.d, s.d};
  cfg.layer_budgets = {20, 9, 1};
  cfg.max_ubatch = 8;
  cfg.rope.layout = mnemo::attention::rope_layout::none;
  auto m = mnemo::memory::bounded<ev::last_recent, float>::make(cfg).value();
  EXPECT_EQ(m.capacity(), 28u);
  // Each layer stores its own budget + max_ubatch rows: 28, 17 and 9.
  const std::size_t row = 2 * s.n_head_kv * s.d * sizeof(float);
  EXPECT_EQ(m.report().total_bytes, (28u + 17u + 9u) * row);
  for (std::size_t l = 0; l < 3; ++l)
    EXPECT_EQ(m.report().layers[l].k_bytes + m.report().layers[l].v_bytes,
              (cfg.layer_budgets[l] + 8) * row);
  mnemo::attention::workspace ws;
  mnemo::memory::layer_views lv;
  const mnemo::attention::shape sh{s.n_head, s.n_head_kv, s.d, s.d};
  mnemo::attention::params ap;
  ap.scale = 0.25f;
  for (std::size_t t = 0; t < 64; t += 8) {
    std::vector<pos_t> pos(8);
    std::vector<mnemo::seq_id> seq(8, 0);
    std::vector<mnemo::seq_set> sets(8, mnemo::seq_set::of(0));
    for (std::size_t j = 0; j < 8; ++j) pos[j] = static_cast<pos_t>(t + j);
    const mnemo::memory::ubatch_tokens ub{pos, sets};
    ASSERT_TRUE(m.prepare(std::span(&ub, 1)).is_ok());
    ASSERT_TRUE(m.apply(0, ub).is_ok());
    for (std::size_t l = 0; l < 3; ++l) {
      for (std::size_t j = 0; j < 8; ++j)
        m.write_kv(l, 0, j, &s.k[(t + j) * s.n_head_kv * s.d], &s.v[(t + j) * s.n_head_kv * s.d]);
      m.views(l, 0, lv);
      std::vector<float> out(8 * s.n_head * s.d);
      const mnemo::attention::query_batch qb{&s.q[t * s.n_head * s.d], 8, pos.data(), seq.data(),
                                             nullptr};
      ASSERT_TRUE((mnemo::model::attend_observed<mnemo::simd::native, float, float>(
                       m, l, 0, sh, ap, qb, lv, out.data(), ws, {1}))
                      .is_ok());
    }
    m.commit();
    for (std::size_t l = 0; l < 3; ++l) {
      std::vector<pos_t> got;
      for (pos_t q : m.lane_of(0, l).pos)
        if (q >= 0) got.push_back(q);
      std::sort(got.begin(), got.end());
      std::vector<pos_t> want;
      for (std::size_t q = t + 8 > cfg.layer_budgets[l] ? t + 8 - cfg.layer_budgets[l] : 0;
           q < t + 8; ++q)
        want.push_back(static_cast<pos_t>(q));
      ASSERT_EQ(got, want) << "layer " << l << " after " << t + 8 << " tokens";
    }
  }
  cfg.layer_budgets = {4, 4};
  EXPECT_FALSE((mnemo::memory::bounded<ev::last_recent, float>::make(cfg).is_ok()));
}

TEST(EvictRules, DuoAttentionRaggedHeadBudgets) {
  // KV head 0 retrieval (budget 24), head 1 streaming (4 sinks + 6 recent): each head
  // keeps exactly what StreamingLLM keeps at its own budget, and reads only that.
  const synthetic s = data(80, 6);
  const std::uint8_t profile[2] = {1, 0};
  run_options o;
  o.granularity = mnemo::memory::kv_granularity::per_kv_head;
  mnemo::memory::bounded_config cfg;
  cfg.shape = {1, s.n_head_kv, s.d, s.d};
  cfg.granularity = o.granularity;
  cfg.head_budgets = ev::duo_attention_budgets(profile, 24, 4, 6);
  ASSERT_EQ(cfg.head_budgets, (std::vector<std::size_t>{24, 10}));
  cfg.max_ubatch = 8;
  cfg.rope.layout = mnemo::attention::rope_layout::none;
  ev::streaming_llm p;
  p.n_sink = 4;
  auto m = mnemo::memory::bounded<ev::streaming_llm, float>::make(cfg, p).value();
  // Each head stores its own budget + max_ubatch rows of one head: (24 + 8) + (10 + 8),
  // not 2 x (24 + 8) as lanes sized for the largest budget would.
  const std::size_t head_row = 2 * s.d * sizeof(float);
  EXPECT_EQ(m.report().total_bytes, (32u + 18u) * head_row);
  EXPECT_EQ(m.lane_slots(0, 0), 32u);
  EXPECT_EQ(m.lane_slots(0, 1), 18u);
  mnemo::attention::workspace ws;
  mnemo::memory::layer_views lv;
  const mnemo::attention::shape sh{s.n_head, s.n_head_kv, s.d, s.d};
  mnemo::attention::params ap;
  ap.scale = 0.25f;
  std::size_t t = 0;
  while (t < 80) {
    const std::size_t n = t < 40 ? 8 : 1;
    std::vector<pos_t> pos;
    std::vector<mnemo::seq_id> seq;
    ASSERT_NO_FATAL_FAILURE(feed_rows(m, s, t, n, pos, seq, lv));
    if (t >= 40) {  // decode: head h's stream holds its kept cells + the new token
      ASSERT_EQ(lv.segments.size(), 2u);
      EXPECT_EQ(lv.segments[0].n_cells, 25u);
      EXPECT_EQ(lv.segments[1].n_cells, 11u);
    }
    std::vector<float> out(n * s.n_head * s.d);
    const mnemo::attention::query_batch qb{&s.q[t * s.n_head * s.d], n, pos.data(), seq.data(),
                                           nullptr};
    ASSERT_TRUE((mnemo::model::attend_observed<mnemo::simd::native, float, float>(
                     m, 0, 0, sh, ap, qb, lv, out.data(), ws, {1}))
                    .is_ok());
    m.commit();
    t += n;
    for (std::size_t h = 0; h < 2; ++h) {
      const std::size_t b = cfg.head_budgets[h];
      std::vector<pos_t> want, got;
      for (std::size_t q = 0; q < t; ++q)
        if (t <= b || q < 4 || q >= t - (b - 4)) want.push_back(static_cast<pos_t>(q));
      for (pos_t q : m.lane_of(0, 0, h).pos)
        if (q >= 0) got.push_back(q);
      std::sort(got.begin(), got.end());
      ASSERT_EQ(got, want) << "KV head " << h << " after " << t << " tokens";
    }
  }
  cfg.granularity = mnemo::memory::kv_granularity::per_layer;  // head budgets need per-head lanes
  EXPECT_FALSE((mnemo::memory::bounded<ev::streaming_llm, float>::make(cfg).is_ok()));
}

}  // namespace
