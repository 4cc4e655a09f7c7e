// ThinK (evict/think.hpp) against an independent fp64 model of its rule: channel
// scores as means of q^2 over the window and the group times means of k^2 over the
// cells, pair scores, the top pairs per KV head (ties to the lower pair); kept
// channels closed under RoPE pairing for normal, NeoX and partial rotation; the
// kernel over the pruned keys (f32 and f16 storage, decode and a causal chunk) against
// an fp64 attention whose logits sum over the kept channels only, scaled by the full
// head's 1/sqrt(d_k); prune ratio 0 gives the plain kernel; bad configs get a status.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <set>
#include <vector>

#include "common/splitmix64.hpp"
#include "evict/needle_model.hpp"
#include <gtest/gtest.h>

#include "mnemo/attention/attend.hpp"
#include "mnemo/attention/reference.hpp"
#include "mnemo/dtype/rows.hpp"
#include "mnemo/evict/last_recent.hpp"
#include "mnemo/evict/think.hpp"

namespace {

using namespace mnemo;

struct case_spec {
  std::size_t n_head_kv, group, d, n_rot;
  attention::rope_layout layout;
  double ratio;
  std::size_t n_cells, window;
};

/// The channels the fp64 rule keeps for each KV head, increasing.
std::vector<std::vector<std::uint32_t>> brute_channels(const case_spec& c,
                                                       const std::vector<float>& q,
                                                       const std::vector<float>& k) {
  const std::size_t rot = c.n_rot == 0 ? c.d : c.n_rot, np = c.d / 2;
  auto pair = [&](std::size_t i) -> std::pair<std::size_t, std::size_t> {
    if (c.layout == attention::rope_layout::neox && i < rot / 2) return {i, i + rot / 2};
    return {2 * i, 2 * i + 1};
  };
  const std::size_t keep =
      std::max<std::size_t>(1, np - static_cast<std::size_t>(c.ratio * double(np)));
  const std::size_t H = c.n_head_kv * c.group, first_row = c.n_cells - c.window;
  std::vector<std::vector<std::uint32_t>> out(c.n_head_kv);
  for (std::size_t h = 0; h < c.n_head_kv; ++h) {
    std::vector<double> score(c.d);
    for (std::size_t ch = 0; ch < c.d; ++ch) {
      double qm = 0.0, km = 0.0;
      for (std::size_t r = first_row; r < c.n_cells; ++r)
        for (std::size_t i = 0; i < c.group; ++i) {
          const double x = q[(r * H + h * c.group + i) * c.d + ch];
          qm += x * x / double(c.window * c.group);
        }
      for (std::size_t j = 0; j < c.n_cells; ++j) {
        const double x = k[(j * c.n_head_kv + h) * c.d + ch];
        km += x * x / double(c.n_cells);
      }
      score[ch] = qm * km;
    }
    std::vector<std::pair<double, std::size_t>> ps;
    for (std::size_t i = 0; i < np; ++i) {
      const auto [a, b] = pair(i);
      ps.push_back({-(score[a] + score[b]), i});
    }
    std::sort(ps.begin(), ps.end());  // highest score first, then the lower pair
    for (std::size_t i = 0; i < keep; ++i) {
      const auto [a, b] = pair(ps[i].second);
      out[h].push_back(static_cast<std::uint32_t>(a));
      out[h].push_back(static_cast<std::uint32_t>(b));
    }
    std::sort(out[h].begin(), out[h].end());
  }
  return out;
}

template <class E>
void check_case(const case_spec& c, std::uint64_t seed, double tol) {
  SCOPED_TRACE(::testing::Message()
               << "seed " << seed << " heads " << c.n_head_kv << "x" << c.group << " d " << c.d
               << " n_rot " << c.n_rot << " ratio " << c.ratio);
  mnemo_test::splitmix64 g{seed};
  const std::size_t H = c.n_head_kv * c.group, n = c.n_cells;
  std::vector<float> q(n * H * c.d), k(n * c.n_head_kv * c.d), v(k.size());
  // Channel energies differ per channel and head, so the choice is not arbitrary.
  for (std::size_t j = 0; j < n; ++j)
    for (std::size_t h = 0; h < c.n_head_kv; ++h)
      for (std::size_t ch = 0; ch < c.d; ++ch) {
        const float w = 0.2f + static_cast<float>((ch * 7 + h * 3) % 11) / 5.0f;
        k[(j * c.n_head_kv + h) * c.d + ch] = w * static_cast<float>(g.normal());
        v[(j * c.n_head_kv + h) * c.d + ch] = static_cast<float>(g.normal());
      }
  for (float& x : q) x = static_cast<float>(g.normal());
  evict::think_config tc;
  tc.n_head_kv = c.n_head_kv;
  tc.group = c.group;
  tc.d_k = c.d;
  tc.layout = c.layout;
  tc.n_rot = c.n_rot;
  tc.prune_ratio = c.ratio;
  auto t = evict::think_pruner::make(tc).value();
  t.choose(&q[(n - c.window) * H * c.d], c.window, k.data(), n);
  const auto want = brute_channels(c, q, k);
  for (std::size_t h = 0; h < c.n_head_kv; ++h) {
    const auto got = t.channels(h);
    ASSERT_EQ(std::vector<std::uint32_t>(got.begin(), got.end()), want[h]) << "head " << h;
    const std::set<std::uint32_t> kept(got.begin(), got.end());
    for (std::size_t i = 0; i < c.d / 2; ++i) {  // closed under RoPE pairing
      const auto [a, b] = tc.pair(i);
      EXPECT_EQ(kept.count(a), kept.count(b)) << "pair " << i;
    }
  }
  // Pruned keys stored in E; the kernel attends them with gathered queries.
  const std::size_t kc = t.kept_channels();
  std::vector<float> kp(n * c.n_head_kv * kc), kpd(kp.size()), qg(q.size() / c.d * kc);
  t.prune_keys(k.data(), n, kp.data());
  t.gather_queries(q.data(), n, qg.data());
  std::vector<E> ks(kp.size()), vs(v.size());
  dtype::encode_row<simd::scalar>(kp.data(), ks.data(), kp.size());
  dtype::encode_row<simd::scalar>(v.data(), vs.data(), v.size());
  dtype::decode_row<simd::scalar>(ks.data(), kpd.data(), kp.size());
  std::vector<float> vd(v.size());
  dtype::decode_row<simd::scalar>(vs.data(), vd.data(), v.size());
  std::vector<pos_t> pos(n);
  std::vector<seq_id> seq(n, 0);
  for (std::size_t j = 0; j < n; ++j) pos[j] = static_cast<pos_t>(j);
  const attention::shape full{H, c.n_head_kv, c.d, c.d};
  const attention::shape sh = t.pruned_shape(full);
  attention::params ap;
  ap.scale = 1.0f / std::sqrt(static_cast<float>(c.d));  // the full head's scale
  const attention::kv_segment seg{
      ks.data(), vs.data(), c.n_head_kv * kc * sizeof(E), c.n_head_kv * c.d * sizeof(E), pos.data(),
      nullptr,   n};
  const attention::kv_view view{std::span(&seg, 1)};
  attention::workspace ws;
  // Rows: the last one (decode) and a causal chunk of the last 5.
  for (std::size_t rows : {std::size_t{1}, std::size_t{5}}) {
    const std::size_t r0 = n - rows;
    const attention::query_batch qb{&qg[r0 * H * kc], rows, &pos[r0], &seq[r0], nullptr};
    std::vector<float> out(rows * H * c.d);
    const status st =
        attention::attend<simd::native, E, E>(sh, ap, qb, std::span(&view, 1), out.data(), ws, {1});
    ASSERT_TRUE(st.is_ok()) << st.message();
    for (std::size_t r = 0; r < rows; ++r)
      for (std::size_t qh = 0; qh < H; ++qh) {
        const std::size_t h = qh / c.group, t_row = r0 + r;
        std::vector<double> l(t_row + 1);
        double mx = -1e300, z = 0.0;
        for (std::size_t j = 0; j <= t_row; ++j) {
          double dot = 0.0;  // kept channels of the full rows (k as stored)
          for (std::size_t i = 0; i < kc; ++i)
            dot += double(q[(t_row * H + qh) * c.d + want[h][i]]) *
                   kpd[(j * c.n_head_kv + h) * kc + i];
          mx = std::max(mx, l[j] = dot * ap.scale);
        }
        for (double& e : l) z += (e = std::exp(e - mx));
        for (std::size_t ch = 0; ch < c.d; ++ch) {
          double o = 0.0;
          for (std::size_t j = 0; j <= t_row; ++j)
            o += l[j] / z * vd[(j * c.n_head_kv + h) * c.d + ch];
          ASSERT_NEAR(out[(r * H + qh) * c.d + ch], o, tol)
              << "rows " << rows << " row " << r << " head " << qh << " channel " << ch;
        }
      }
  }
  // K memory shrinks to kept / d_k.
  EXPECT_EQ(ks.size() * c.d, k.size() * kc);
}

TEST(EvictThink, ChannelsAndAttentionMatchFp64) {
  using L = attention::rope_layout;
  const case_spec cases[] = {
      {2, 2, 16, 0, L::normal, 0.5, 40, 8},  {2, 2, 16, 0, L::neox, 0.5, 40, 8},
      {1, 4, 32, 16, L::neox, 0.75, 33, 4},  {2, 1, 16, 8, L::normal, 0.25, 20, 3},
      {4, 2, 64, 0, L::normal, 0.5, 70, 16}, {2, 2, 8, 0, L::normal, 0.9, 12, 12},
      {2, 3, 16, 0, L::neox, 0.0, 25, 5},
  };
  for (std::uint64_t seed = 1; seed <= 4; ++seed)
    for (const case_spec& c : cases) {
      check_case<float>(c, seed, 2e-5);
      check_case<dtype::f16>(c, seed, 2e-3);
    }
}

// Pruned keys have any even size; the kernel's odd-size decode path once accumulated
// logits onto stale scratch. Every even size up to 24, decode, against the reference.
TEST(EvictThink, PrunedKeySizesOffTheLaneWidth) {
  mnemo_test::splitmix64 g{11};
  for (std::size_t dk = 2; dk <= 24; dk += 2) {
    const std::size_t n = 40, dv = 16;
    std::vector<float> q(4 * dk), k(n * 2 * dk), v(n * 2 * dv), a(4 * dv), b(4 * dv);
    for (auto* x : {&q, &k, &v})
      for (float& f : *x) f = static_cast<float>(g.normal());
    std::vector<pos_t> pos(n);
    for (std::size_t j = 0; j < n; ++j) pos[j] = static_cast<pos_t>(j);
    const attention::kv_segment seg{k.data(),   v.data(), 2 * dk * 4, 2 * dv * 4,
                                    pos.data(), nullptr,  n};
    const attention::kv_view view{std::span(&seg, 1)};
    const attention::shape sh{4, 2, dk, dv};
    attention::params ap;
    ap.scale = 0.3f;
    const pos_t qp[1] = {static_cast<pos_t>(n - 1)};
    const seq_id qs[1] = {0};
    const attention::query_batch qb{q.data(), 1, qp, qs, nullptr};
    attention::workspace ws;
    ASSERT_TRUE((attention::attend<simd::native, float, float>(sh, ap, qb, std::span(&view, 1),
                                                               a.data(), ws, {1})
                     .is_ok()));
    ASSERT_TRUE(
        (attention::reference_attend<float, float>(sh, ap, qb, std::span(&view, 1), b.data())
             .is_ok()));
    for (std::size_t i = 0; i < a.size(); ++i) ASSERT_NEAR(a[i], b[i], 1e-5) << "d_k " << dk;
  }
}

TEST(EvictThink, RatioZeroIsThePlainKernel) {
  mnemo_test::splitmix64 g{5};
  const std::size_t n = 30, d = 16;
  std::vector<float> q(n * 4 * d), k(n * 2 * d), v(k.size());
  for (auto* a : {&q, &k, &v})
    for (float& x : *a) x = static_cast<float>(g.normal());
  evict::think_config tc{2, 2, d, attention::rope_layout::normal, 0, 0.0};
  auto t = evict::think_pruner::make(tc).value();
  t.choose(q.data(), n, k.data(), n);
  ASSERT_EQ(t.kept_channels(), d);
  std::vector<float> kp(k.size()), qg(q.size());
  t.prune_keys(k.data(), n, kp.data());
  t.gather_queries(q.data(), n, qg.data());
  EXPECT_EQ(kp, k);
  EXPECT_EQ(qg, q);
}

TEST(EvictThink, BadConfigGetsAStatus) {
  using L = attention::rope_layout;
  EXPECT_FALSE(evict::think_pruner::make({2, 2, 15, L::normal, 0, 0.5}).is_ok());
  EXPECT_FALSE(evict::think_pruner::make({2, 2, 16, L::normal, 18, 0.5}).is_ok());
  EXPECT_FALSE(evict::think_pruner::make({2, 2, 16, L::normal, 0, 1.0}).is_ok());
  EXPECT_FALSE(evict::think_pruner::make({0, 2, 16, L::normal, 0, 0.5}).is_ok());
  auto t = evict::think_pruner::make({2, 2, 16, L::normal, 0, 0.99}).value();
  EXPECT_EQ(t.kept_channels(), 2u);  // at least one pair stays
}

}  // namespace

// ---- the needle model (docs/eviction.md, quality table) -------------------------------
namespace needle {

using namespace evict_test;
const bool k_big = std::getenv("MNEMO_EVICT_BIG") != nullptr;

/// ThinK over the needle model's sequence: channels chosen at the end of the prefill
/// from the last `window` prefill queries (the question is not among them) and the
/// prefill's keys; every decode row attends every token's pruned key. Returns the
/// decode rows' outputs and whether head 0 kept channel 0 (the needle's).
std::pair<std::vector<float>, bool> run_think(const needle_model& nm, const synthetic& s,
                                              double ratio, std::size_t window) {
  const std::size_t d = needle_model::d, row = 2 * d, n_prefill = nm.spec().n_prompt - 1;
  const evict::think_config tc{2, 1, d, attention::rope_layout::normal, 0, ratio};
  auto t = evict::think_pruner::make(tc).value();
  t.choose(&s.q[(n_prefill - window) * row], window, s.k.data(), n_prefill);
  const std::size_t kc = t.kept_channels();
  std::vector<float> kp(s.n_tokens * 2 * kc), qg(2 * kc);
  t.prune_keys(s.k.data(), s.n_tokens, kp.data());
  std::vector<pos_t> pos(s.n_tokens);
  for (std::size_t j = 0; j < s.n_tokens; ++j) pos[j] = static_cast<pos_t>(j);
  const attention::shape sh = t.pruned_shape({2, 2, d, d});
  attention::params ap;
  ap.scale = 0.25f;
  attention::workspace ws;
  std::vector<float> out, o(row);
  for (std::size_t r = n_prefill; r < s.n_tokens; ++r) {
    const attention::kv_segment seg{kp.data(),  s.v.data(), 2 * kc * 4, row * 4,
                                    pos.data(), nullptr,    r + 1};
    const attention::kv_view view{std::span(&seg, 1)};
    t.gather_queries(&s.q[r * row], 1, qg.data());
    const seq_id seq[1] = {0};
    const attention::query_batch qb{qg.data(), 1, &pos[r], seq, nullptr};
    EXPECT_TRUE((attention::attend<simd::native, float, float>(sh, ap, qb, std::span(&view, 1),
                                                               o.data(), ws, {1})
                     .is_ok()));
    out.insert(out.end(), o.begin(), o.end());
  }
  return {out, t.channels(0)[0] == 0};
}

// Head 0's queries live in channel 0 alone, so its pair (0, 1) is the only one with a
// nonzero score and survives every ratio: the needle is always found. The recency
// head loses pairs, which the table measures.
TEST(EvictThink, NeedleModelKeepsTheNeedleChannel) {
  const std::size_t n_prompt = k_big ? 2048 : 512, n_seeds = k_big ? 8 : 3;
  std::printf(
      "| think (window 8) | pairs dropped | needle channel | answer right | top-1 | first "
      "div | KL |\n");
  for (double ratio : {0.0, 0.125, 0.25, 0.5, 0.75}) {
    quality_sum sum;
    for (std::uint64_t seed = 1; seed <= n_seeds; ++seed) {
      const needle_model nm(table_spec(n_prompt, seed));
      const synthetic s = nm.rows(nm.full_sequence());
      const run_result full = run_synthetic(s, n_prompt - 1, 32, s.n_tokens, evict::last_recent{});
      const auto [out, ch0] = run_think(nm, s, ratio, 8);
      const quality q = needle_quality(nm, full, out, ch0, 2 * needle_model::d);
      EXPECT_TRUE(q.needle_kept && q.answer_right) << "ratio " << ratio << " seed " << seed;
      if (ratio == 0.0) {
        EXPECT_LT(q.kl, 1e-9) << "seed " << seed;
      }
      sum.add(q);
    }
    std::printf("| think | %g ", ratio);
    sum.print(n_seeds);
  }
}

}  // namespace needle
