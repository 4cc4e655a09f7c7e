// Policies on synthetic Q/K/V with planted structure (docs/eviction.md): each
// policy's defining behaviour, budgets at the edges, and the attention mass export
// checked against an independent recomputation.
#include <algorithm>

#include "evict/harness.hpp"
#include <gtest/gtest.h>

#include "mnemo/evict/h2o.hpp"
#include "mnemo/evict/key_norm.hpp"
#include "mnemo/evict/last_recent.hpp"
#include "mnemo/evict/snapkv.hpp"
#include "mnemo/evict/streaming_llm.hpp"
#include "mnemo/evict/tova.hpp"

namespace {

using namespace evict_test;
using mnemo::pos_t;

static_assert(mnemo::memory::kv_memory<mnemo::memory::bounded<mnemo::evict::h2o, float>>);
static_assert(mnemo::model::attention_observer<mnemo::memory::bounded<mnemo::evict::tova, float>>);

std::vector<pos_t> sorted(std::vector<pos_t> v) {
  std::sort(v.begin(), v.end());
  return v;
}

TEST(EvictPolicy, StreamingKeepsSinksAndRecent) {
  const synthetic s = make_synthetic({.n_tokens = 100, .seed = 3});
  mnemo::evict::streaming_llm p;
  p.n_sink = 4;
  const run_result r = run_synthetic(s, 40, 8, 16, p);
  std::vector<pos_t> want{0, 1, 2, 3};
  for (pos_t q = 88; q < 100; ++q) want.push_back(q);
  EXPECT_EQ(sorted(r.kept), want);
}

TEST(EvictPolicy, LastRecentKeepsNewest) {
  const synthetic s = make_synthetic({.n_tokens = 60, .seed = 4});
  const run_result r = run_synthetic(s, 30, 10, 8, mnemo::evict::last_recent{});
  std::vector<pos_t> want;
  for (pos_t q = 52; q < 60; ++q) want.push_back(q);
  EXPECT_EQ(sorted(r.kept), want);
}

TEST(EvictPolicy, H2ORetainsHeavyHitterThatLastRecentLoses) {
  for (std::uint64_t seed = 1; seed <= 5; ++seed) {
    const synthetic s = make_synthetic({.n_tokens = 200, .heavy = 30, .seed = seed});
    mnemo::evict::h2o h;
    h.recent = 8;
    EXPECT_TRUE(run_synthetic(s, 64, 16, 24, h).heavy_kept_at_end) << "seed " << seed;
    EXPECT_FALSE(run_synthetic(s, 64, 16, 24, mnemo::evict::last_recent{}).heavy_kept_at_end)
        << "seed " << seed;
  }
}

TEST(EvictPolicy, TovaRetainsHeavyHitter) {
  const synthetic s = make_synthetic({.n_tokens = 200, .heavy = 30, .seed = 9});
  EXPECT_TRUE(run_synthetic(s, 64, 16, 24, mnemo::evict::tova{}).heavy_kept_at_end);
}

TEST(EvictPolicy, SnapKVKeepsWindowAndSelectsByObservation) {
  const synthetic s = make_synthetic({.n_tokens = 80, .heavy = 10, .seed = 5});
  mnemo::evict::snapkv p;
  p.window = 8;
  const run_result r = run_synthetic(s, 80, 80, 20, p);  // one prefill chunk, no decode
  const auto kept = sorted(r.kept);
  ASSERT_EQ(kept.size(), 20u);
  for (pos_t q = 72; q < 80; ++q)
    EXPECT_TRUE(std::binary_search(kept.begin(), kept.end(), q)) << "window position " << q;
  EXPECT_TRUE(r.heavy_kept_at_end);
}

TEST(EvictPolicy, KeyNormEvictsLargestKeys) {
  synthetic s = make_synthetic({.n_tokens = 40, .seed = 6});
  // Give positions 5 and 17 tiny keys: they must survive a budget of 2.
  for (pos_t t : {5, 17})
    for (std::size_t i = 0; i < s.d; ++i) s.k[static_cast<std::size_t>(t) * s.d + i] *= 0.01f;
  mnemo::evict::key_norm p;
  p.n_head_kv = s.n_head_kv;
  p.d_k = s.d;
  const run_result r = run_synthetic(s, 40, 8, 2, p);
  EXPECT_EQ(sorted(r.kept), (std::vector<pos_t>{5, 17}));
}

TEST(EvictBudget, EdgeCases) {
  const synthetic s = make_synthetic({.n_tokens = 50, .seed = 7});
  mnemo::evict::streaming_llm p;
  p.n_sink = 4;
  EXPECT_TRUE(run_synthetic(s, 20, 5, 0, p).kept.empty());                 // budget 0
  EXPECT_EQ(run_synthetic(s, 20, 5, 1, p).kept, (std::vector<pos_t>{0}));  // only a sink
  EXPECT_EQ(sorted(run_synthetic(s, 20, 5, 4, p).kept), (std::vector<pos_t>{0, 1, 2, 3}));
  EXPECT_EQ(run_synthetic(s, 20, 5, 1000, p).kept.size(), 50u);  // > context
  EXPECT_EQ(run_synthetic(s, 20, 5, 1, mnemo::evict::last_recent{}).kept, (std::vector<pos_t>{49}));
}

TEST(EvictBudget, DecodeViewsReadAtMostBudgetPlusNewTokens) {
  const synthetic s = make_synthetic({.n_tokens = 300, .seed = 8});
  for (std::size_t budget : {0u, 1u, 16u, 64u}) {
    mnemo::evict::h2o h;
    h.recent = 4;
    // Decode only (prefill of 1 token), and prefill chunks of 32 then decode.
    EXPECT_LE(run_synthetic(s, 1, 1, budget, h).max_view_cells, budget + 1) << budget;
    EXPECT_LE(run_synthetic(s, 128, 32, budget, h).max_view_cells, budget + 32) << budget;
  }
}

/// Records the mass it is handed, to check E1 against an fp64 recomputation.
struct mass_probe : mnemo::evict::policy_defaults {
  static constexpr bool uses_attention = true;
  static constexpr std::size_t state_floats = 1;
  mnemo::evict::stats_request request(const mnemo::evict::step_info&) const noexcept {
    return {mnemo::evict::stats_request::all_rows};
  }
  void on_attention(const mnemo::evict::step_info&, mnemo::evict::slot_view v,
                    const mnemo::evict::attention_mass& m) const noexcept {
    for (std::size_t j = 0; j < m.stride; ++j) v.state[j] = v.live(j) ? m.total(j) : 0.0f;
  }
  float score(const mnemo::evict::step_info&, mnemo::evict::slot_view v,
              std::size_t slot) const noexcept {
    return static_cast<float>(v.pos[slot]);
  }
};

TEST(EvictStats, MassMatchesReferenceAndIsConserved) {
  // One prefill chunk of 24 rows into an empty cache: cell j gets the causal softmax
  // weight of every row t >= j, summed over both query heads.
  const synthetic s = make_synthetic({.n_tokens = 24, .seed = 11});
  mnemo::memory::bounded_config cfg = synthetic_config(s, 100, 24);
  auto m = mnemo::memory::bounded<mass_probe, float>::make(cfg).value();
  std::vector<pos_t> pos(24);
  std::vector<mnemo::seq_id> seq(24, 0);
  std::vector<mnemo::seq_set> sets(24, mnemo::seq_set::of(0));
  for (std::size_t j = 0; j < 24; ++j) pos[j] = static_cast<pos_t>(j);
  const mnemo::memory::ubatch_tokens ub{pos, sets};
  ASSERT_TRUE(m.prepare(std::span(&ub, 1)).is_ok());
  ASSERT_TRUE(m.apply(0, ub).is_ok());
  for (std::size_t j = 0; j < 24; ++j) m.write_kv(0, 0, j, &s.k[j * s.d], &s.v[j * s.d]);
  mnemo::memory::layer_views lv;
  m.views(0, 0, lv);
  std::vector<float> out(24 * s.n_head * s.d);
  mnemo::attention::workspace ws;
  mnemo::attention::params ap;
  ap.scale = 1.0f / std::sqrt(static_cast<float>(s.d));
  const mnemo::attention::query_batch qb{s.q.data(), 24, pos.data(), seq.data(), nullptr};
  ASSERT_TRUE((mnemo::model::attend_observed<mnemo::simd::native, float, float>(
                   m, 0, 0, {s.n_head, s.n_head_kv, s.d, s.d}, ap, qb, lv, out.data(), ws, {1}))
                  .is_ok());
  std::vector<double> ref(24, 0.0);
  for (std::size_t t = 0; t < 24; ++t)
    for (std::size_t h = 0; h < s.n_head; ++h) {
      std::vector<double> l(t + 1);
      double mx = -1e300, z = 0.0;
      for (std::size_t j = 0; j <= t; ++j) {
        double dot = 0.0;
        for (std::size_t i = 0; i < s.d; ++i)
          dot += double(s.q[(t * s.n_head + h) * s.d + i]) * s.k[j * s.d + i];
        l[j] = dot * ap.scale;
        mx = std::max(mx, l[j]);
      }
      for (double& x : l) z += (x = std::exp(x - mx));
      for (std::size_t j = 0; j <= t; ++j) ref[j] += l[j] / z;
    }
  const auto& ln = m.lane_of(0, 0);
  double total = 0.0;
  for (std::size_t slot = 0; slot < 24; ++slot) {
    const auto j = static_cast<std::size_t>(ln.pos[slot]);
    EXPECT_NEAR(ln.state[slot], ref[j], 1e-4) << "position " << j << " seed 11";
    total += ln.state[slot];
  }
  EXPECT_NEAR(total, 24.0 * s.n_head, 1e-3);  // mass conservation
  m.commit();
}

}  // namespace
