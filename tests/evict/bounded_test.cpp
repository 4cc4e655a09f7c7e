// bounded<Policy> under the Llama decoder: budget >= context gives the full cache's
// logits exactly, rollback restores evictions, state files and sequence operations.
#include <algorithm>
#include <cstring>
#include <vector>

#include "context/tiny_llama.hpp"
#include <gtest/gtest.h>

#include "mnemo/context.hpp"
#include "mnemo/evict/h2o.hpp"
#include "mnemo/evict/key_norm.hpp"
#include "mnemo/evict/last_recent.hpp"
#include "mnemo/evict/snapkv.hpp"
#include "mnemo/evict/streaming_llm.hpp"
#include "mnemo/evict/tova.hpp"
#include "mnemo/memory/bounded/bounded_state.hpp"
#include "mnemo/memory/full/full_cache.hpp"
#include "mnemo/memory/full/full_cache_state.hpp"

namespace {

using namespace mnemo;

const model::llama_model& tiny() {
  static auto m = mnemo_test::make_tiny_llama({}).value();
  return m;
}

template <class Policy>
memory::bounded<Policy, float> make_bounded(
    std::size_t budget, Policy p = {}, memory::position_mode mode = memory::position_mode::original,
    seq_id n_seq = 2) {
  memory::bounded_config c;
  c.shape = tiny().kv_shape();
  c.budget = budget;
  c.max_ubatch = 8;
  c.n_seq_max = n_seq;
  c.rope = tiny().hparams().rope();
  c.positions = mode;
  return memory::bounded<Policy, float>::make(c, p).value();
}

template <class Memory>
auto make_ctx(Memory m) {
  return context<model::llama_model, Memory>::make(tiny(), std::move(m),
                                                   {.n_ubatch = 8, .n_seq_max = 2, .n_threads = 1})
      .value();
}

std::vector<token_id> tokens(std::size_t n, std::uint64_t seed) {
  splitmix64 g{seed};
  std::vector<token_id> t(n);
  for (auto& x : t) x = static_cast<token_id>(g.next() % 64);
  return t;
}

/// Feeds `t` to sequence s (chunks of `chunk`), returning the last row's logits of
/// every call.
template <class Ctx>
std::vector<std::vector<float>> feed(Ctx& ctx, const std::vector<token_id>& t, std::size_t chunk,
                                     seq_id s = 0) {
  std::vector<std::vector<float>> rows;
  for (std::size_t i = 0; i < t.size();) {
    const std::size_t n = std::min(chunk, t.size() - i);
    batch b;
    const pos_t p0 = ctx.memory().seq_pos_max(s) + 1;
    for (std::size_t j = 0; j < n; ++j)
      b.add(t[i + j], p0 + static_cast<pos_t>(j), {s}, j + 1 == n);
    const status st = ctx.decode(b);
    EXPECT_TRUE(st.is_ok()) << st.message();
    const auto row = ctx.logits_ith(-1);
    rows.emplace_back(row.begin(), row.end());
    i += n;
  }
  return rows;
}

template <class Policy>
void expect_full_cache_logits(Policy p) {
  auto full = make_ctx(memory::full_cache<float>::make(tiny().full_cache_config(64, 2)).value());
  auto bnd = make_ctx(make_bounded<Policy>(40, p));
  const auto t = tokens(36, 5);
  const auto a = feed(full, t, 4), b = feed(bnd, t, 4);
  ASSERT_EQ(a.size(), b.size());
  for (std::size_t i = 0; i < a.size(); ++i)
    for (std::size_t j = 0; j < a[i].size(); ++j)
      ASSERT_EQ(a[i][j], b[i][j]) << "call " << i << " logit " << j;
}

TEST(BoundedModel, BudgetAtLeastContextGivesFullCacheLogits) {
  expect_full_cache_logits(evict::h2o{});
  expect_full_cache_logits(evict::streaming_llm{});
  expect_full_cache_logits(evict::tova{});
  expect_full_cache_logits(evict::snapkv{});
  expect_full_cache_logits(evict::key_norm{});
}

TEST(BoundedModel, EvictionChangesLogitsAndKeepsBudget) {
  auto full = make_ctx(memory::full_cache<float>::make(tiny().full_cache_config(64, 2)).value());
  auto bnd = make_ctx(make_bounded<evict::h2o>(6));
  const auto t = tokens(30, 6);
  const auto a = feed(full, t, 1), b = feed(bnd, t, 1);
  EXPECT_NE(a.back(), b.back());
  for (std::size_t l = 0; l < tiny().n_layer(); ++l) EXPECT_EQ(bnd.memory().lane_of(0, l).live, 6u);
  EXPECT_EQ(bnd.memory().seq_pos_max(0), 29);
  EXPECT_LE(bnd.memory().view_stats().max_cells, 7u);  // budget + the decoded token
}

/// Logits after a reload or a fork: the same cells, maybe in other slots, so the
/// attention sums run in another order (slot-order independence).
void expect_close(const std::vector<std::vector<float>>& a,
                  const std::vector<std::vector<float>>& b, const char* what) {
  ASSERT_EQ(a.size(), b.size()) << what;
  for (std::size_t i = 0; i < a.size(); ++i)
    for (std::size_t j = 0; j < a[i].size(); ++j)
      ASSERT_NEAR(a[i][j], b[i][j], 1e-5f) << what << ": call " << i << " logit " << j;
}

template <class M>
std::vector<std::uint8_t> save(M& m, seq_id s = -1) {
  std::vector<std::uint8_t> out;
  EXPECT_TRUE(state_write(m, s, out).is_ok());
  return out;
}

TEST(BoundedModel, RollbackRestoresEvictionsExactly) {
  auto ctx = make_ctx(make_bounded<evict::h2o>(5));
  feed(ctx, tokens(12, 7), 3);
  auto& mem = ctx.memory();
  const auto before = save(mem);
  batch b;
  const auto t = tokens(16, 8);
  for (std::size_t j = 0; j < t.size(); ++j) b.add(t[j], 12 + static_cast<pos_t>(j), {0}, false);
  batch_limits lim;
  lim.n_vocab = tiny().n_vocab();
  lim.n_embd = tiny().n_embd();
  lim.n_seq_max = 2;
  auto vb =
      validate(b, lim, memory::positions_of<std::remove_reference_t<decltype(mem)>>{mem}).value();
  auto pb = memory::plan_batch(mem, vb, 4).value();
  auto ws = tiny().make_workspace(8).value();
  for (std::size_t u = 0; u < pb.ubatches.size(); ++u) {
    ASSERT_TRUE(mem.apply(u, pb.tokens[u]).is_ok());
    ASSERT_TRUE(tiny().forward(mem, u, pb.ubatches[u], ws, 1).is_ok());
  }
  EXPECT_LE(mem.lane_of(0, 0).live, 5u);  // evicted inside the batch
  mem.rollback();
  EXPECT_EQ(save(mem), before);
}

TEST(BoundedModel, StateRoundTripContinuesIdentically) {
  auto a = make_ctx(make_bounded<evict::h2o>(7));
  feed(a, tokens(20, 9), 4);
  auto whole = save(a.memory()), one = save(a.memory(), 0);
  auto b = make_ctx(make_bounded<evict::h2o>(7));
  ASSERT_TRUE(b.state_read(whole).is_ok());
  auto c = make_ctx(make_bounded<evict::h2o>(7));
  ASSERT_TRUE(c.state_read(one, 1).is_ok());
  const auto next = tokens(5, 10);
  const auto ra = feed(a, next, 1), rb = feed(b, next, 1), rc = feed(c, next, 1, 1);
  expect_close(ra, rb, "whole state");
  expect_close(ra, rc, "sequence state");
  // A damaged file changes nothing.
  whole[whole.size() / 2] ^= 1;
  const auto keep = save(b.memory());
  EXPECT_FALSE(b.state_read(whole).is_ok());
  EXPECT_EQ(save(b.memory()), keep);
  // Another policy's state layout is refused.
  auto d = make_ctx(make_bounded<evict::streaming_llm>(7));
  EXPECT_FALSE(d.state_read(one, 0).is_ok());
}

TEST(BoundedModel, ForkRemoveAndBudgetEdges) {
  auto ctx = make_ctx(make_bounded<evict::tova>(6));
  feed(ctx, tokens(15, 11), 5);
  ASSERT_TRUE(ctx.seq_cp(0, 1, -1, -1).is_ok());
  EXPECT_EQ(ctx.seq_pos_max(1), 14);
  const auto next = tokens(3, 12);
  expect_close(feed(ctx, next, 1, 0), feed(ctx, next, 1, 1), "fork");
  ASSERT_TRUE(ctx.seq_rm(1, 10, -1).is_ok());
  EXPECT_EQ(ctx.seq_pos_max(1), 9);
  for (std::size_t l = 0; l < tiny().n_layer(); ++l)
    for (pos_t p : ctx.memory().lane_of(1, l).pos) EXPECT_LT(p, 10);
  feed(ctx, next, 2, 1);  // continues at 10
  EXPECT_EQ(ctx.seq_pos_max(1), 12);
  ASSERT_TRUE(ctx.seq_keep(1).is_ok());
  EXPECT_EQ(ctx.seq_pos_max(0), -1);
  // Budget 0 keeps nothing but decodes; budget 1 keeps one cell.
  for (std::size_t budget : {0u, 1u}) {
    auto z = make_ctx(make_bounded<evict::streaming_llm>(budget));
    feed(z, tokens(10, 13), 3);
    EXPECT_EQ(z.memory().lane_of(0, 0).live, budget);
    EXPECT_EQ(z.seq_pos_max(0), 9);
  }
  // A micro-batch larger than the slack is refused up front, nothing changed.
  auto small = make_ctx(make_bounded<evict::streaming_llm>(2));
  batch b;
  for (pos_t j = 0; j < 8; ++j) b.add(1, j, {0}, false);
  EXPECT_TRUE(small.decode(b).is_ok());  // 8 tokens fit budget 2 + slack 8
}

TEST(BoundedModel, CompactModeMatchesFullCacheWithKShift) {
  // StreamingLLM with positions within the cache equals a full cache where the
  // oldest non-sink is removed and the later positions shifted down by one (K-shift).
  evict::streaming_llm p;
  p.n_sink = 2;
  auto bnd = make_ctx(make_bounded<evict::streaming_llm>(6, p, memory::position_mode::compact));
  auto full = make_ctx(memory::full_cache<float>::make(tiny().full_cache_config(64, 2)).value());
  const auto t = tokens(20, 14);
  for (std::size_t i = 0; i < t.size(); ++i) {
    const auto a = feed(bnd, {t[i]}, 1), b = feed(full, {t[i]}, 1);
    if (full.seq_pos_max(0) + 1 > 6) {
      ASSERT_TRUE(full.seq_rm(0, 2, 3).is_ok());
      ASSERT_TRUE(full.seq_add(0, 3, -1, -1).is_ok());
    }
    for (std::size_t j = 0; j < a[0].size(); ++j)
      ASSERT_NEAR(a[0][j], b[0][j], 2e-4f) << "token " << i << " logit " << j;
  }
  EXPECT_EQ(bnd.seq_pos_max(0), 5);
}

// A bounded sequence branched at p1 continues at p1: the copy keeps src's logical end
// within the range (p1 - 1), evicted or not, as seq_rm keeps it. Its logits equal
// those of the unbranched sequence cut at p1 (the same kept cells and policy state).
template <class Policy>
void expect_branch_continues_at(Policy p, std::size_t budget, pos_t p1) {
  const auto t = tokens(20, 21), next = tokens(4, 22);
  auto br = make_ctx(make_bounded<Policy>(budget, p));
  feed(br, t, 4);
  ASSERT_TRUE(br.seq_cp(0, 1, 0, p1).is_ok());
  EXPECT_EQ(br.seq_pos_max(1), p1 - 1);
  EXPECT_EQ(br.seq_pos_max(0), 19);
  auto un = make_ctx(make_bounded<Policy>(budget, p));
  feed(un, t, 4);
  ASSERT_TRUE(un.seq_rm(0, p1, -1).is_ok());
  ASSERT_EQ(un.seq_pos_max(0), p1 - 1);
  for (std::size_t l = 0; l < tiny().n_layer(); ++l) {
    auto kept = [](const auto& lane) {
      std::vector<pos_t> v;
      for (pos_t q : lane.pos)
        if (q >= 0) v.push_back(q);
      std::sort(v.begin(), v.end());
      return v;
    };
    EXPECT_EQ(kept(br.memory().lane_of(1, l)), kept(un.memory().lane_of(0, l))) << "layer " << l;
  }
  expect_close(feed(br, next, 1, 1), feed(un, next, 1, 0), "branch at p1 vs cut at p1");
}

TEST(BoundedModel, BranchAtAPositionContinuesThere) {
  // StreamingLLM keeps 0..3 and the newest: position p1 - 1 = 11 was evicted.
  expect_branch_continues_at(evict::streaming_llm{}, 8, 12);
  expect_branch_continues_at(evict::h2o{}, 8, 12);
  expect_branch_continues_at(evict::tova{}, 6, 17);
}

// A sliding-window model on a bounded cache keeps its window: the layers' windows go
// with the views, so the logits equal a full cache's with the window (budget above the
// context: the same cells; last_recent keeping the window: every evicted cell was
// outside it anyway).
TEST(BoundedModel, SlidingWindowModelKeepsItsWindow) {
  constexpr std::uint32_t n_swa = 6;
  static const auto win = [] {
    mnemo_test::tiny_llama_spec spec;
    spec.n_swa = n_swa;
    return mnemo_test::make_tiny_llama(spec).value();
  }();
  auto ctx_of = [](auto m) {
    return context<model::llama_model, decltype(m)>::make(
               win, std::move(m), {.n_ubatch = 4, .n_seq_max = 2, .n_threads = 1})
        .value();
  };
  auto bounded_of = [&](std::size_t budget) {
    memory::bounded_config c;
    c.shape = win.kv_shape();
    c.budget = budget;
    c.max_ubatch = 4;
    c.n_seq_max = 2;
    c.rope = win.hparams().rope();
    c.windows = win.hparams().windows();
    return memory::bounded<evict::last_recent, float>::make(c).value();
  };
  ASSERT_FALSE(win.hparams().windows().empty());
  auto full = ctx_of(memory::full_cache<float>::make(win.full_cache_config(64, 2)).value());
  auto all = ctx_of(bounded_of(40));
  auto recent = ctx_of(bounded_of(n_swa));
  memory::full_cache_config no_window = win.full_cache_config(64, 2);
  no_window.windows.clear();
  auto unmasked = ctx_of(memory::full_cache<float>::make(no_window).value());
  const auto t = tokens(30, 23);
  const auto want = feed(full, t, 4);
  expect_close(want, feed(all, t, 4), "bounded, budget above the context");
  expect_close(want, feed(recent, t, 4), "bounded, last_recent keeping the window");
  EXPECT_EQ(recent.memory().lane_of(0, 0).live, n_swa);
  EXPECT_NE(want.back(), feed(unmasked, t, 4).back()) << "the window must matter here";
}

}  // namespace
