// The policy's state of a whole lane (evict::lane_floats_of; Expected Attention's
// window of queries) travels with the lane: a state file written mid-decode loads into
// a fresh memory that then keeps, scores and outputs exactly what the saved one does;
// rollback restores it; seq_cp copies it; a file with another lane-state size (another
// window) is refused with nothing changed.
#include <algorithm>
#include <cmath>
#include <string>
#include <utility>
#include <vector>

#include "evict/rule_model.hpp"
#include <gtest/gtest.h>

#include "mnemo/evict/expected_attention.hpp"
#include "mnemo/memory/bounded/bounded_state.hpp"

namespace {

using namespace evict_test;
using ea_mem = memory::bounded<evict::expected_attention, float>;

evict::expected_attention policy(std::size_t window = 6) {
  evict::expected_attention p;
  p.window = window;
  p.n_sink = 0;
  p.recent = 3;
  p.rescore_every = 5;
  p.n_head_kv = 2;
  p.group = 2;
  p.d_v = 16;
  p.rope.layout = attention::rope_layout::none;
  return p;
}

ea_mem make(std::size_t window = 6) {
  memory::bounded_config c;
  c.shape = {1, 2, 16, 16};
  c.budget = 10;
  c.max_ubatch = 8;
  c.n_seq_max = 2;
  c.rope.layout = attention::rope_layout::none;
  return ea_mem::make(c, policy(window)).value();
}

/// Tokens [t, t + n) of s, sequence 0, through attend_observed; returns the output.
std::vector<float> step(ea_mem& m, const synthetic& s, std::size_t t, std::size_t n,
                        bool commit = true) {
  std::vector<pos_t> pos;
  std::vector<seq_id> seq;
  memory::layer_views lv;
  std::vector<float> out(n * s.n_head * s.d);
  feed_rows(m, s, t, n, pos, seq, lv);
  const attention::shape sh{s.n_head, s.n_head_kv, s.d, s.d};
  attention::params ap;
  ap.scale = 0.25f;
  attention::workspace ws;
  const attention::query_batch qb{&s.q[t * s.n_head * s.d], n, pos.data(), seq.data(), nullptr};
  EXPECT_TRUE((model::attend_observed<simd::native, float, float>(m, 0, 0, sh, ap, qb, lv,
                                                                  out.data(), ws, {1}))
                  .is_ok());
  if (commit) m.commit();
  return out;
}

std::vector<std::uint8_t> save(ea_mem& m, seq_id s = -1) {
  std::vector<std::uint8_t> f;
  EXPECT_TRUE(memory::state_write(m, s, f).is_ok());
  return f;
}

/// (position, score) of every cell lane (0, 0) holds, by position.
std::vector<std::pair<pos_t, float>> kept(const ea_mem& m) {
  std::vector<std::pair<pos_t, float>> k;
  const auto& ln = m.lane_of(0, 0);
  for (std::size_t j = 0; j < ln.pos.size(); ++j)
    if (ln.pos[j] >= 0) k.push_back({ln.pos[j], ln.state[2 * j]});
  std::sort(k.begin(), k.end());
  return k;
}

void prefill_and_decode(ea_mem& m, const synthetic& s, std::size_t until) {
  for (std::size_t t = 0; t < 24; t += 8) step(m, s, t, 8);
  for (std::size_t t = 24; t < until; ++t) step(m, s, t, 1);
}

TEST(EvictLaneState, StateFileCarriesTheQueryWindow) {
  const synthetic s = data(60, 21);
  auto a = make();
  prefill_and_decode(a, s, 31);  // mid-way between two full rescores
  const auto& st = a.lane_of(0, 0).stats;
  ASSERT_EQ(st.size(), a.lane_floats());
  ASSERT_EQ(st[evict::expected_attention::held], 6.0f);  // the window is full
  const auto file = save(a);
  auto b = make();
  ASSERT_TRUE(memory::state_read(b, file).is_ok());
  EXPECT_EQ(b.lane_of(0, 0).stats, st);
  // A loaded lane holds its cells from slot 0 (the saved one may have a hole), so the
  // sums run in another order: outputs and scores agree to float tolerance, kept
  // positions exactly.
  for (std::size_t t = 31; t < s.n_tokens; ++t) {
    const auto oa = step(a, s, t, 1), ob = step(b, s, t, 1);
    for (std::size_t i = 0; i < oa.size(); ++i)
      ASSERT_NEAR(oa[i], ob[i], 1e-5f)
          << "the loaded memory diverged at " << t << ", element " << i;
    const auto ka = kept(a), kb = kept(b);
    ASSERT_EQ(ka.size(), kb.size()) << t;
    for (std::size_t i = 0; i < ka.size(); ++i) {
      ASSERT_EQ(ka[i].first, kb[i].first) << "kept sets differ at " << t;
      ASSERT_NEAR(ka[i].second, kb[i].second, 1e-5f * std::abs(ka[i].second) + 1e-7f)
          << "scores differ at " << t << " for position " << ka[i].first;
    }
  }
  // Without the window the loaded memory would score decoded tokens differently: the
  // same file with the lane state zeroed is not equivalent.
  auto c = make();
  ASSERT_TRUE(memory::state_read(c, file).is_ok());
  std::fill(c.mutable_lane(0, 0).stats.begin(), c.mutable_lane(0, 0).stats.end(), 0.0f);
  auto d = make();
  ASSERT_TRUE(memory::state_read(d, file).is_ok());
  bool differ = false;
  for (std::size_t t = 31; t < s.n_tokens && !differ; ++t) {
    step(c, s, t, 1);
    step(d, s, t, 1);
    differ = kept(c) != kept(d);
  }
  EXPECT_TRUE(differ) << "the lane state made no difference: the test cannot fail";
}

TEST(EvictLaneState, RollbackRestoresAndSeqCpCopiesIt) {
  const synthetic s = data(40, 22);
  auto a = make();
  prefill_and_decode(a, s, 30);
  const auto before = a.lane_of(0, 0).stats;
  step(a, s, 30, 1, false);
  EXPECT_NE(a.lane_of(0, 0).stats, before);
  a.rollback();
  EXPECT_EQ(a.lane_of(0, 0).stats, before);
  ASSERT_TRUE(a.seq_cp(0, 1, -1, -1).is_ok());
  EXPECT_EQ(a.lane_of(1, 0).stats, before);
  ASSERT_TRUE(a.seq_rm(1, -1, -1).is_ok());  // an emptied sequence starts afresh
  for (float x : a.lane_of(1, 0).stats) ASSERT_EQ(x, 0.0f);
}

// Expected Attention journals its writes to the lane state (evict::journals_lane): a
// transaction of several micro-batches overwrites the window's rows more than once
// (three chunks of 8 rows into a ring of 6, then decode rows) and rescores fully, and
// rollback restores the lane state, the cells and their scores exactly.
TEST(EvictLaneState, RollbackOfManyMicroBatchesRestoresTheWindow) {
  const synthetic s = data(80, 24);
  auto a = make();
  prefill_and_decode(a, s, 33);
  const auto stats = a.lane_of(0, 0).stats;
  const auto cells = kept(a);
  const auto file = save(a);
  // Micro-batches of 8, 8, 8, 1, 1 tokens of sequence 0 in one transaction.
  const std::vector<std::size_t> sizes{8, 8, 8, 1, 1};
  std::vector<std::vector<pos_t>> pos;
  std::vector<std::vector<seq_set>> sets;
  std::vector<memory::ubatch_tokens> ubs;
  std::size_t t = 33;
  for (std::size_t n : sizes) {
    pos.emplace_back(n);
    sets.emplace_back(n, seq_set::of(0));
    for (std::size_t j = 0; j < n; ++j) pos.back()[j] = static_cast<pos_t>(t + j);
    t += n;
  }
  for (std::size_t u = 0; u < sizes.size(); ++u) ubs.push_back({pos[u], sets[u]});
  ASSERT_TRUE(a.prepare(ubs).is_ok());
  const attention::shape sh{s.n_head, s.n_head_kv, s.d, s.d};
  attention::params ap;
  ap.scale = 0.25f;
  attention::workspace ws;
  memory::layer_views lv;
  t = 33;
  for (std::size_t u = 0; u < sizes.size(); ++u) {
    ASSERT_TRUE(a.apply(u, ubs[u]).is_ok());
    const std::size_t row = s.n_head_kv * s.d;
    for (std::size_t j = 0; j < sizes[u]; ++j)
      a.write_kv(0, u, j, &s.k[(t + j) * row], &s.v[(t + j) * row]);
    a.views(0, u, lv);
    std::vector<seq_id> seq(sizes[u], 0);
    std::vector<float> out(sizes[u] * s.n_head * s.d);
    const attention::query_batch qb{&s.q[t * s.n_head * s.d], sizes[u], pos[u].data(), seq.data(),
                                    nullptr};
    ASSERT_TRUE((model::attend_observed<simd::native, float, float>(a, 0, u, sh, ap, qb, lv,
                                                                    out.data(), ws, {1}))
                    .is_ok());
    t += sizes[u];
  }
  EXPECT_NE(a.lane_of(0, 0).stats, stats);
  a.rollback();
  EXPECT_EQ(a.lane_of(0, 0).stats, stats);
  EXPECT_EQ(kept(a), cells);
  EXPECT_EQ(save(a), file);
}

TEST(EvictLaneState, AnotherWindowIsRefused) {
  const synthetic s = data(40, 23);
  auto a = make();
  prefill_and_decode(a, s, 28);
  const auto file = save(a);
  auto b = make(4);
  prefill_and_decode(b, s, 26);
  const auto before = save(b);
  const status st = memory::state_read(b, file);
  ASSERT_FALSE(st.is_ok());
  EXPECT_EQ(st.code(), status_code::invalid_argument);
  EXPECT_NE(st.message().find("lane state"), std::string::npos) << st.message();
  EXPECT_EQ(save(b), before);
}

}  // namespace
