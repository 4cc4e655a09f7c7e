// AdaKV (evict/adakv.hpp) on the pooled bounded cache against an independent fp64
// model of its rule: per KV head a set of kept positions; after each call, when the
// heads hold more than n_head_kv x kept together, each head keeps its own top
// floor(alpha x kept) and the rest of the total is the global top of the remaining
// cells (by score, then newer position); the decode rows' attention (the group's
// queries, causal softmax) over each head's cells before the call's eviction. Also:
// the bytes allocated equal uniform budget B's, less than lanes sized for the largest
// head's budget; the heads' budgets are ragged and sum to n_head_kv x B; bad configs
// get a status (state files: adakv_state_test.cpp).
#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <set>
#include <string>

#include "evict/needle_model.hpp"
#include <gtest/gtest.h>

#include "mnemo/evict/adakv.hpp"
#include "mnemo/evict/h2o.hpp"
#include "mnemo/evict/snapkv.hpp"
#include "mnemo/evict/tova.hpp"

namespace {

using namespace evict_test;
namespace ev = mnemo::evict;

/// A score per (KV head, position): uniform in [h / 2, h / 2 + 1), so later heads win
/// the global top more often and the budgets come out ragged.
float planted_score(std::size_t head, pos_t p) {
  std::uint64_t z = static_cast<std::uint64_t>(p) * 0x9e3779b97f4a7c15ull ^ (head + 1) << 48;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  z ^= z >> 31;
  return static_cast<float>(z >> 40) / 16777216.0f + 0.5f * static_cast<float>(head);
}

/// Scores that fall with the position (older cells first: a dense lane then holds its
/// highest scores in its lowest slots, as H2O's accumulated mass does) or rise with it.
float older_higher(std::size_t head, pos_t p) {
  return -static_cast<float>(p) - 0.375f * static_cast<float>(head);
}
float newer_higher(std::size_t head, pos_t p) {
  return static_cast<float>(p) + 0.375f * static_cast<float>(head);
}

using score_fn = float (*)(std::size_t, pos_t);

/// A score per (KV head, position), given at insert.
template <score_fn Score>
struct scored : ev::policy_defaults {
  static constexpr std::size_t state_floats = 1;
  void on_insert(const ev::step_info& s, ev::slot_view v, std::size_t slot, const float*,
                 const float*) const noexcept {
    v.state[slot] = Score(s.kv_head, v.pos[slot]);
  }
  float score(const ev::step_info&, ev::slot_view v, std::size_t slot) const noexcept {
    return v.state[slot];
  }
};
using planted = scored<planted_score>;

synthetic random_rows(std::size_t n, std::size_t n_kv, std::size_t group, std::uint64_t seed) {
  synthetic s;
  s.n_head = n_kv * group;
  s.n_head_kv = n_kv;
  s.d = 16;
  s.n_tokens = n;
  mnemo_test::splitmix64 g{seed};
  s.q.resize(n * s.n_head * s.d);
  s.k.resize(n * n_kv * s.d);
  s.v.resize(s.k.size());
  for (auto* a : {&s.q, &s.k, &s.v})
    for (float& x : *a) x = static_cast<float>(g.normal());
  return s;
}

/// The fp64 model: kept positions per head at the end and the decode rows' outputs.
struct model_run {
  std::vector<std::vector<pos_t>> kept;
  std::vector<double> out;
  std::vector<std::size_t> max_kept;  // per head, the most cells it kept after a call
};

model_run run_model(const synthetic& s, std::size_t n_prefill, std::size_t chunk,
                    std::size_t budget, double alpha, score_fn score = planted_score) {
  const std::size_t H = s.n_head_kv, g = s.n_head / H, d = s.d;
  model_run m;
  m.kept.resize(H);
  m.max_kept.assign(H, 0);
  const double scale = 1.0 / std::sqrt(static_cast<double>(d));
  std::size_t t = 0;
  while (t < s.n_tokens) {
    const std::size_t n = t < n_prefill ? std::min(chunk, n_prefill - t) : 1;
    for (std::size_t h = 0; h < H; ++h)
      for (std::size_t j = 0; j < n; ++j) m.kept[h].push_back(static_cast<pos_t>(t + j));
    if (t >= n_prefill)  // a decode row attends every cell its head holds
      for (std::size_t qh = 0; qh < s.n_head; ++qh) {
        const std::size_t h = qh / g;
        std::vector<double> l;
        double mx = -1e300, z = 0.0;
        for (pos_t p : m.kept[h]) {
          double dot = 0.0;
          for (std::size_t i = 0; i < d; ++i)
            dot += double(s.q[(t * s.n_head + qh) * d + i]) * s.k[(p * H + h) * d + i];
          l.push_back(dot * scale);
          mx = std::max(mx, l.back());
        }
        for (double& e : l) z += (e = std::exp(e - mx));
        for (std::size_t i = 0; i < d; ++i) {
          double o = 0.0;
          for (std::size_t c = 0; c < l.size(); ++c)
            o += l[c] / z * s.v[(m.kept[h][c] * H + h) * d + i];
          m.out.push_back(o);
        }
      }
    std::size_t total = 0;
    for (const auto& k : m.kept) total += k.size();
    if (total > H * budget) {
      // Each head's cells best first (score, then newer position).
      auto best_first = [](const std::pair<double, pos_t>& a, const std::pair<double, pos_t>& b) {
        return a.first != b.first ? a.first > b.first : a.second > b.second;
      };
      const auto forced = static_cast<std::size_t>(alpha * static_cast<double>(budget));
      std::vector<std::vector<pos_t>> keep(H);
      std::vector<std::tuple<double, pos_t, std::size_t>> rest;
      for (std::size_t h = 0; h < H; ++h) {
        std::vector<std::pair<double, pos_t>> c;
        for (pos_t p : m.kept[h]) c.push_back({score(h, p), p});
        std::sort(c.begin(), c.end(), best_first);
        for (std::size_t i = 0; i < c.size(); ++i) {
          if (i < forced)
            keep[h].push_back(c[i].second);
          else
            rest.push_back({c[i].first, c[i].second, h});
        }
      }
      std::sort(rest.begin(), rest.end(), [](const auto& a, const auto& b) {
        return std::get<0>(a) != std::get<0>(b) ? std::get<0>(a) > std::get<0>(b)
                                                : std::get<1>(a) > std::get<1>(b);
      });
      std::size_t n_keep = 0;
      for (const auto& k : keep) n_keep += k.size();
      for (std::size_t i = 0; i + n_keep < H * budget && i < rest.size(); ++i)
        keep[std::get<2>(rest[i])].push_back(std::get<1>(rest[i]));
      for (std::size_t h = 0; h < H; ++h) {
        std::sort(keep[h].begin(), keep[h].end());
        m.kept[h] = keep[h];
      }
    }
    for (std::size_t h = 0; h < H; ++h) m.max_kept[h] = std::max(m.max_kept[h], m.kept[h].size());
    t += n;
  }
  return m;
}

TEST(EvictAdakv, KeptSetsAndOutputsMatchFp64) {
  run_options o;
  o.granularity = memory::kv_granularity::per_kv_head;
  for (std::uint64_t seed = 1; seed <= 3; ++seed)
    for (std::size_t budget : {0, 1, 5, 12, 40, 200})
      for (double alpha : {0.0, 0.2, 0.5}) {
        SCOPED_TRACE(::testing::Message()
                     << "seed " << seed << " budget " << budget << " alpha " << alpha);
        const synthetic s = random_rows(120, 4, 2, seed);
        ev::adakv<planted> p;
        p.alpha = alpha;
        const run_result r = run_synthetic(s, 88, 8, budget, p, o);
        const model_run m = run_model(s, 88, 8, budget, alpha);
        std::size_t total = 0;
        for (std::size_t h = 0; h < 4; ++h) {
          std::vector<pos_t> got = r.kept_per_lane[h];
          std::sort(got.begin(), got.end());
          ASSERT_EQ(got, m.kept[h]) << "head " << h;
          total += got.size();
        }
        EXPECT_EQ(total, std::min<std::size_t>(4 * budget, 4 * 120));
        // Each head's view holds its own cells only (one segment per run of pool pages):
        // at most its kept cells and the call's tokens.
        const std::size_t widest = *std::max_element(m.max_kept.begin(), m.max_kept.end());
        EXPECT_LE(r.max_view_cells, widest + 8);
        ASSERT_EQ(r.out.size(), m.out.size());
        for (std::size_t i = 0; i < r.out.size(); ++i)
          ASSERT_NEAR(r.out[i], m.out[i], 2e-4) << "first difference at output " << i;
      }
}

// Lanes of a few hundred cells, decode steps evicting one cell per head: each head's
// lowest cells are found from a sampled bound, whichever way the scores run with the
// slot (falling, rising, random); the kept sets are the model's.
TEST(EvictAdakv, KeptSetsMatchFp64WhateverTheSlotOrder) {
  run_options o;
  o.granularity = memory::kv_granularity::per_kv_head;
  const synthetic s = random_rows(360, 2, 2, 4);
  auto check = [&](auto policy, score_fn score, const char* name) {
    for (std::size_t budget : {70, 150})
      for (double alpha : {0.0, 0.2, 0.6}) {
        SCOPED_TRACE(::testing::Message() << name << " budget " << budget << " alpha " << alpha);
        policy.alpha = alpha;
        const run_result r = run_synthetic(s, 160, 16, budget, policy, o);
        const model_run m = run_model(s, 160, 16, budget, alpha, score);
        for (std::size_t h = 0; h < 2; ++h) {
          std::vector<pos_t> got = r.kept_per_lane[h];
          std::sort(got.begin(), got.end());
          ASSERT_EQ(got, m.kept[h]) << "head " << h;
        }
        ASSERT_EQ(r.out.size(), m.out.size());
        for (std::size_t i = 0; i < r.out.size(); ++i)
          ASSERT_NEAR(r.out[i], m.out[i], 2e-4) << "first difference at output " << i;
      }
  };
  check(ev::adakv<scored<older_higher>>{}, older_higher, "older higher");
  check(ev::adakv<scored<newer_higher>>{}, newer_higher, "newer higher");
  check(ev::adakv<planted>{}, planted_score, "random");
}

// With alpha = 1 every head keeps its own top B: the per-KV-head lanes' rule. The pooled
// cache keeps the same cells and attends to them alike (pages of 1 to 16 cells).
TEST(EvictAdakv, AlphaOneIsThePerHeadLanes) {
  run_options o;
  o.granularity = memory::kv_granularity::per_kv_head;
  for (std::size_t budget : {5, 40, 300}) {
    SCOPED_TRACE(::testing::Message() << "budget " << budget);
    const synthetic s = random_rows(400, 4, 2, 11);
    ev::adakv<planted> p;
    p.alpha = 1.0;
    const run_result pooled = run_synthetic(s, 300, 8, budget, p, o);
    const run_result lanes = run_synthetic(s, 300, 8, budget, planted{}, o);
    for (std::size_t h = 0; h < 4; ++h) {
      std::vector<pos_t> a = pooled.kept_per_lane[h], b = lanes.kept_per_lane[h];
      std::sort(a.begin(), a.end());
      std::sort(b.begin(), b.end());
      ASSERT_EQ(a, b) << "head " << h;
    }
    EXPECT_EQ(pooled.max_view_cells, lanes.max_view_cells);
    ASSERT_EQ(pooled.out.size(), lanes.out.size());
    for (std::size_t i = 0; i < pooled.out.size(); ++i)
      ASSERT_NEAR(pooled.out[i], lanes.out[i], 1e-5) << "first difference at output " << i;
  }
}

TEST(EvictAdakv, RaggedBudgetsCostUniformBytes) {
  const synthetic s = random_rows(160, 4, 2, 7);
  const std::size_t B = 24;
  memory::bounded_config c;
  c.shape = {1, 4, 16, 16};
  c.budget = B;
  c.max_ubatch = 8;
  c.rope.layout = attention::rope_layout::none;
  c.granularity = memory::kv_granularity::per_kv_head;
  ev::adakv<planted> p;
  auto pooled = memory::bounded<ev::adakv<planted>, float>::make(c, p).value();
  const model_run m = run_model(s, 128, 8, B, p.alpha);
  const std::size_t largest = *std::max_element(m.max_kept.begin(), m.max_kept.end());
  std::size_t smallest = B;
  for (const auto& k : m.kept) smallest = std::min(smallest, k.size());
  EXPECT_GT(largest, B) << "the budgets must come out ragged";
  EXPECT_LT(smallest, B);
  // Uniform budget B (per layer, and per head with every head at B): the same bytes,
  // plus the pool's slack of one partly filled page per head (pages of C rows, C at
  // most (B + max_ubatch) / 16): here C = 2, 4 x 32 rows + 4 rows of slack.
  memory::bounded_config u = c;
  u.granularity = memory::kv_granularity::per_layer;
  auto uniform = memory::bounded<planted, float>::make(u).value();
  const std::size_t row_bytes = 2 * 16 * sizeof(float), C = pooled.page_cells(0);
  EXPECT_EQ(C, 2u);
  EXPECT_EQ(pooled.rows_per_seq(0), (4 * 32 + 4 * (C - 1)) / C * C);
  EXPECT_EQ(pooled.report().total_bytes, pooled.rows_per_seq(0) * row_bytes);
  EXPECT_EQ(uniform.report().total_bytes, 4 * 32 * row_bytes);
  EXPECT_LE(pooled.report().total_bytes * 16, uniform.report().total_bytes * 17);
  // Lanes sized for the largest head's budget (what per-head lanes without a pool
  // need to hold these ragged sets): n_head_kv x (largest + max_ubatch) rows.
  memory::bounded_config w = c;
  w.head_budgets.assign(4, largest);
  auto widest = memory::bounded<planted, float>::make(w).value();
  EXPECT_LT(pooled.report().total_bytes, widest.report().total_bytes);
  // The pool after the model's run: every head's cells fill n_head_kv x B of it.
  const run_result r = run_synthetic(s, 128, 8, B, p, run_options{.granularity = c.granularity});
  std::size_t held = 0;
  for (const auto& k : r.kept_per_lane) held += k.size();
  EXPECT_EQ(held, 4 * B);
  std::printf(
      "AdaKV B %zu: pooled %zu bytes, uniform %zu bytes; lanes for the largest head "
      "(%zu) %zu bytes\n",
      B, pooled.report().total_bytes, uniform.report().total_bytes, largest,
      widest.report().total_bytes);
}

TEST(EvictAdakv, AttentionScorerKeepsTheTotal) {
  run_options o;
  o.granularity = memory::kv_granularity::per_kv_head;
  const synthetic s = random_rows(150, 4, 2, 3);
  ev::adakv<ev::h2o> p;
  p.recent = 4;
  const run_result r = run_synthetic(s, 110, 10, 16, p, o);
  std::size_t total = 0, lo = 1000, hi = 0;
  for (const auto& k : r.kept_per_lane) {
    total += k.size();
    lo = std::min(lo, k.size());
    hi = std::max(hi, k.size());
  }
  EXPECT_EQ(total, 4u * 16u);
  EXPECT_GE(lo, static_cast<std::size_t>(0.2 * 16));  // the safeguard
  for (float x : r.out) ASSERT_TRUE(std::isfinite(x));
}

void rollback_case(std::size_t budget, std::size_t first, std::size_t second);

// A transaction of several micro-batches evicts in one head's lane and reuses the cell
// for another head's token; rollback restores every lane and every row byte for byte.
// Pool pages of 1, 2 and 4 cells (budgets 6, 28, 60).
TEST(EvictAdakv, RollbackAcrossMicroBatchesIsExact) {
  for (const auto [budget, first, second] :
       {std::array<std::size_t, 3>{6, 3, 3}, {28, 10, 6}, {60, 17, 6}}) {
    SCOPED_TRACE(::testing::Message() << "budget " << budget);
    rollback_case(budget, first, second);
  }
}

void rollback_case(std::size_t budget, std::size_t first, std::size_t second) {
  const synthetic s = random_rows(4 * (first + second), 4, 2, 5);
  memory::bounded_config c;
  c.shape = {1, 4, 16, 16};
  c.budget = budget;
  c.max_ubatch = 4;
  c.rope.layout = attention::rope_layout::none;
  c.granularity = memory::kv_granularity::per_kv_head;
  auto m = memory::bounded<ev::adakv<planted>, float>::make(c).value();
  const attention::shape sh{8, 4, 16, 16};
  attention::params ap;
  ap.scale = 0.25f;
  attention::workspace ws;
  memory::layer_views lv;
  std::vector<float> out(4 * 8 * 16);
  // Runs tokens [t0, t0 + 4 n) as n micro-batches of 4 in one transaction.
  auto run = [&](std::size_t t0, std::size_t n) {
    std::vector<std::vector<pos_t>> pos(n, std::vector<pos_t>(4));
    std::vector<seq_id> seq(4, 0);
    std::vector<seq_set> sets(4, seq_set::of(0));
    std::vector<memory::ubatch_tokens> ubs;
    for (std::size_t u = 0; u < n; ++u) {
      for (std::size_t j = 0; j < 4; ++j) pos[u][j] = static_cast<pos_t>(t0 + 4 * u + j);
      ubs.push_back({pos[u], sets});
    }
    ASSERT_TRUE(m.prepare(ubs).is_ok());
    for (std::size_t u = 0; u < n; ++u) {
      ASSERT_TRUE(m.apply(u, ubs[u]).is_ok());
      const std::size_t t = t0 + 4 * u;
      for (std::size_t j = 0; j < 4; ++j)
        m.write_kv(0, u, j, &s.k[(t + j) * 4 * 16], &s.v[(t + j) * 4 * 16]);
      m.views(0, u, lv);
      const attention::query_batch qb{&s.q[t * 8 * 16], 4, pos[u].data(), seq.data(), nullptr};
      ASSERT_TRUE((model::attend_observed<simd::native, float, float>(m, 0, u, sh, ap, qb, lv,
                                                                      out.data(), ws, {1})
                       .is_ok()));
    }
  };
  run(0, first);
  m.commit();
  auto snapshot = [&] {
    std::vector<float> bytes;
    for (std::size_t h = 0; h < 4; ++h) {
      const auto& ln = m.lane_of(0, 0, h);
      for (std::size_t j = 0; j < ln.pos.size(); ++j) {
        bytes.push_back(static_cast<float>(ln.pos[j]));
        if (ln.pos[j] < 0) continue;
        const float* k = m.k_part(0, 0, j, h);
        const float* v = m.v_part(0, 0, j, h);
        bytes.insert(bytes.end(), k, k + 16);
        bytes.insert(bytes.end(), v, v + 16);
        bytes.push_back(ln.state[j]);
      }
    }
    return bytes;
  };
  const std::vector<float> before = snapshot();
  run(4 * first, second);
  EXPECT_NE(snapshot(), before);
  m.rollback();
  EXPECT_EQ(snapshot(), before);
}

TEST(EvictAdakv, BadConfigsGetAStatus) {
  memory::bounded_config c;
  c.shape = {1, 2, 16, 16};
  c.budget = 8;
  c.max_ubatch = 4;
  c.rope.layout = attention::rope_layout::none;
  EXPECT_FALSE((memory::bounded<ev::adakv<planted>, float>::make(c).is_ok()));  // per layer
  c.granularity = memory::kv_granularity::per_kv_head;
  c.head_budgets = {4, 8};
  EXPECT_FALSE((memory::bounded<ev::adakv<planted>, float>::make(c).is_ok()));
}

}  // namespace

// ---- the needle model (docs/eviction.md, quality table) -------------------------------
namespace needle {

using namespace evict_test;
const bool k_big = std::getenv("MNEMO_EVICT_BIG") != nullptr;

// AdaKV around per-head scorers on the hand-wired needle model (2 KV heads: the
// retrieval head and the recency head get their own budgets from one pool).
TEST(EvictAdakv, NeedleModelTable) {
  const std::size_t n_prompt = k_big ? 2048 : 512, n_seeds = k_big ? 8 : 3;
  run_options o;
  o.granularity = memory::kv_granularity::per_kv_head;
  const std::vector<needle_run> runs = needle_runs(n_prompt, n_seeds);
  auto table = [&](const char* name, auto policy) {
    for (std::size_t b : {n_prompt / 16, n_prompt / 8, n_prompt / 4, n_prompt / 2}) {
      quality_sum sum;
      for (const needle_run& sr : runs) {
        const quality q = measure_needle(sr.nm, sr.s, sr.full, b, policy, o);
        if (std::string(name).find("tova") != std::string::npos) {
          EXPECT_TRUE(q.answer_right) << name << " budget " << b << " seed " << sr.nm.spec().seed;
        }
        sum.add(q);
      }
      std::printf("| %s | %zu ", name, b);
      sum.print(n_seeds);
    }
  };
  ev::adakv<ev::h2o> h;
  h.recent = 8;
  table("adakv h2o", h);
  table("adakv tova", ev::adakv<ev::tova>{});
  ev::adakv<ev::snapkv> sn;
  sn.window = 8;
  table("adakv snapkv", sn);
}

}  // namespace needle
