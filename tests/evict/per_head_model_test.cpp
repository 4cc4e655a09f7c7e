// bounded<Policy> with per-KV-head lanes and the read-bounded budget under the
// Llama decoder (tiny model, 2 KV heads x group 2): full-cache logits when nothing
// is evicted, rollback, state files (granularity recorded and checked), sequence
// operations, and the cells a decode step reads.
#include <vector>

#include "context/tiny_llama.hpp"
#include <gtest/gtest.h>

#include "mnemo/context.hpp"
#include "mnemo/evict/h2o.hpp"
#include "mnemo/evict/key_norm.hpp"
#include "mnemo/evict/snapkv.hpp"
#include "mnemo/evict/streaming_llm.hpp"
#include "mnemo/evict/tova.hpp"
#include "mnemo/memory/bounded/bounded_state.hpp"
#include "mnemo/memory/full/full_cache.hpp"

namespace {

using namespace mnemo;
using memory::budget_rule;
using memory::kv_granularity;

const model::llama_model& tiny() {
  static auto m = mnemo_test::make_tiny_llama({}).value();
  return m;
}

template <class Policy>
memory::bounded<Policy, float> make_bounded(
    std::size_t budget, Policy p = {}, kv_granularity gr = kv_granularity::per_kv_head,
    budget_rule rule = budget_rule::kept,
    memory::position_mode mode = memory::position_mode::original) {
  memory::bounded_config c;
  c.shape = tiny().kv_shape();
  c.budget = budget;
  c.max_ubatch = 8;
  c.n_seq_max = 2;
  c.rope = tiny().hparams().rope();
  c.positions = mode;
  c.granularity = gr;
  c.rule = rule;
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

void expect_close(const std::vector<std::vector<float>>& a,
                  const std::vector<std::vector<float>>& b, const char* what, float tol = 1e-5f) {
  ASSERT_EQ(a.size(), b.size()) << what;
  for (std::size_t i = 0; i < a.size(); ++i)
    for (std::size_t j = 0; j < a[i].size(); ++j)
      ASSERT_NEAR(a[i][j], b[i][j], tol) << what << ": call " << i << " logit " << j;
}

template <class M>
std::vector<std::uint8_t> save(M& m, seq_id s = -1) {
  std::vector<std::uint8_t> out;
  EXPECT_TRUE(state_write(m, s, out).is_ok());
  return out;
}

template <class Policy>
void expect_full_cache_logits(Policy p, budget_rule rule) {
  auto full = make_ctx(memory::full_cache<float>::make(tiny().full_cache_config(64, 2)).value());
  auto bnd = make_ctx(make_bounded<Policy>(41, p, kv_granularity::per_kv_head, rule));
  const auto t = tokens(36, 5);
  expect_close(feed(full, t, 4), feed(bnd, t, 4), "per-head, budget >= context");
}

TEST(PerHeadModel, BudgetAtLeastContextGivesFullCacheLogits) {
  for (budget_rule r : {budget_rule::kept, budget_rule::read}) {
    expect_full_cache_logits(evict::h2o{}, r);
    expect_full_cache_logits(evict::streaming_llm{}, r);
    expect_full_cache_logits(evict::tova{}, r);
    expect_full_cache_logits(evict::snapkv{}, r);
    expect_full_cache_logits(evict::key_norm{}, r);
  }
}

TEST(PerHeadModel, EvictionKeepsBudgetPerHeadAndBoundsReads) {
  for (budget_rule rule : {budget_rule::kept, budget_rule::read}) {
    auto bnd = make_ctx(make_bounded<evict::h2o>(6, {}, kv_granularity::per_kv_head, rule));
    feed(bnd, tokens(8, 6), 8);  // a prefill chunk, then decode
    bnd.memory().reset_view_stats();
    feed(bnd, tokens(22, 7), 1);
    const std::size_t kept = rule == budget_rule::kept ? 6 : 5;
    for (std::size_t l = 0; l < tiny().n_layer(); ++l)
      for (std::size_t h = 0; h < 2; ++h) EXPECT_EQ(bnd.memory().lane_of(0, l, h).live, kept);
    EXPECT_EQ(bnd.memory().seq_pos_max(0), 29);
    EXPECT_EQ(bnd.memory().view_stats().max_cells, rule == budget_rule::kept ? 7u : 6u);
  }
}

TEST(PerHeadModel, RollbackRestoresEvictionsExactly) {
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
  EXPECT_LE(mem.lane_of(0, 0, 1).live, 5u);
  mem.rollback();
  EXPECT_EQ(save(mem), before);
}

TEST(PerHeadModel, StateRoundTripAndGranularityCheck) {
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
  // A per-head file into a per-layer memory (and back) is refused; nothing changes.
  auto d = make_ctx(make_bounded<evict::h2o>(7, {}, kv_granularity::per_layer));
  feed(d, tokens(6, 11), 3);
  const auto d_before = save(d.memory());
  const status st = d.state_read(whole);
  EXPECT_FALSE(st.is_ok());
  EXPECT_NE(st.message().find("per-KV-head"), std::string::npos) << st.message();
  EXPECT_EQ(save(d.memory()), d_before);
  const auto b_before = save(b.memory());
  EXPECT_FALSE(b.state_read(d_before).is_ok());
  EXPECT_EQ(save(b.memory()), b_before);
}

TEST(PerHeadModel, ForkRemoveAndBudgetEdges) {
  auto ctx = make_ctx(make_bounded<evict::tova>(6));
  feed(ctx, tokens(15, 11), 5);
  ASSERT_TRUE(ctx.seq_cp(0, 1, -1, -1).is_ok());
  EXPECT_EQ(ctx.seq_pos_max(1), 14);
  for (std::size_t h = 0; h < 2; ++h) {
    const auto &x = ctx.memory().lane_of(0, 1, h), &y = ctx.memory().lane_of(1, 1, h);
    EXPECT_EQ(x.live, y.live) << "head " << h;
  }
  const auto next = tokens(3, 12);
  expect_close(feed(ctx, next, 1, 0), feed(ctx, next, 1, 1), "fork");
  ASSERT_TRUE(ctx.seq_rm(1, 10, -1).is_ok());
  EXPECT_EQ(ctx.seq_pos_max(1), 9);
  for (std::size_t l = 0; l < tiny().n_layer(); ++l)
    for (std::size_t h = 0; h < 2; ++h)
      for (pos_t p : ctx.memory().lane_of(1, l, h).pos) EXPECT_LT(p, 10);
  feed(ctx, next, 2, 1);
  EXPECT_EQ(ctx.seq_pos_max(1), 12);
  ASSERT_TRUE(ctx.seq_keep(1).is_ok());
  EXPECT_EQ(ctx.seq_pos_max(0), -1);
  evict::streaming_llm sl;
  sl.n_sink = 2;
  for (budget_rule rule : {budget_rule::kept, budget_rule::read})
    for (std::size_t budget : {0u, 1u, 2u, 100u}) {
      auto z = make_ctx(
          make_bounded<evict::streaming_llm>(budget, sl, kv_granularity::per_kv_head, rule));
      feed(z, tokens(10, 13), 3);
      std::size_t want = rule == budget_rule::kept ? budget : (budget > 0 ? budget - 1 : 0);
      want = std::min<std::size_t>(want, 10);
      for (std::size_t h = 0; h < 2; ++h) EXPECT_EQ(z.memory().lane_of(0, 1, h).live, want);
      EXPECT_EQ(z.seq_pos_max(0), 9);
    }
}

TEST(PerHeadModel, CompactStreamingEqualsPerLayer) {
  // StreamingLLM keeps the same positions in every head: per-head lanes in compact
  // mode (each lane renumbered and re-rotated on its own) give the per-layer logits.
  evict::streaming_llm p;
  p.n_sink = 2;
  auto a = make_ctx(make_bounded<evict::streaming_llm>(
      6, p, kv_granularity::per_layer, budget_rule::kept, memory::position_mode::compact));
  auto b = make_ctx(make_bounded<evict::streaming_llm>(
      6, p, kv_granularity::per_kv_head, budget_rule::kept, memory::position_mode::compact));
  const auto t = tokens(20, 14);
  expect_close(feed(a, t, 1), feed(b, t, 1), "compact", 1e-4f);
  EXPECT_EQ(b.seq_pos_max(0), 5);
}

}  // namespace
