// Batch -> validation against the memory -> split -> planning -> apply/commit, on the
// unified cache: the planning guarantee (docs/memory.md) and position continuity through
// the real batch layer (T02, T06, T18, T19, T79).
#include <limits>
#include <vector>

#include <gtest/gtest.h>

#include "mnemo/memory/memory.hpp"

namespace {

using namespace mnemo;
using cache_t = memory::full_cache<float>;

cache_t make_cache(std::size_t size, seq_id n_seq_max) {
  memory::full_cache_config cfg;
  cfg.shape = {1, 1, 4, 4};
  cfg.size = size;
  cfg.n_seq_max = n_seq_max;
  cfg.rope.n_rot = 4;
  auto c = cache_t::make(cfg);
  EXPECT_TRUE(c.is_ok()) << c.error().to_string();
  return std::move(c).value();
}

/// Decodes tokens at positions [a, b] of sequence s (b < a: auto positions for
/// a count of -b tokens) in micro-batches of n_ubatch; returns the status.
status dec(cache_t& c, seq_id s, pos_t a, pos_t b, std::uint32_t n_ubatch = 512) {
  batch bt;
  for (pos_t p = a; p <= b; ++p) bt.add(1, p, {s}, p == b);
  batch_limits lim;
  lim.n_seq_max = static_cast<std::uint32_t>(c.config().n_seq_max);
  auto vb = validate(bt, lim, memory::positions_of<cache_t>{c});
  if (!vb.is_ok()) return vb.error();
  MNEMO_ASSIGN_OR_RETURN(auto plan, memory::plan_batch(c, *vb, n_ubatch));
  const std::vector<float> kv = {1, 2, 3, 4};  // a vector: GCC 12 -Warray-bounds misfires on arrays
  for (std::size_t u = 0; u < plan.tokens.size(); ++u) {
    MNEMO_RETURN_IF_ERROR(c.apply(u, plan.tokens[u]));
    for (std::size_t j = 0; j < plan.tokens[u].size(); ++j)
      c.write_kv(0, u, j, kv.data(), kv.data());
  }
  c.commit();
  return {};
}

TEST(BatchPlan, T02RemovedSuffixMustContinueWhereTheSequenceEnds) {
  auto c = make_cache(16, 1);
  ASSERT_TRUE(dec(c, 0, 0, 9).is_ok());
  ASSERT_TRUE(c.seq_rm(0, 5, -1).is_ok());
  EXPECT_EQ(c.seq_pos_max(0), 4);
  EXPECT_EQ(c.used(), 5u);
  const status s = dec(c, 0, 10, 10);
  EXPECT_EQ(s.code(), status_code::invalid_argument) << s.to_string();
  EXPECT_EQ(c.used(), 5u);
  EXPECT_TRUE(dec(c, 0, 5, 5).is_ok());
}

TEST(BatchPlan, T06PartialCopyContinuesAfterItsEnd) {
  auto c = make_cache(16, 2);
  ASSERT_TRUE(dec(c, 0, 0, 9).is_ok());
  ASSERT_TRUE(c.seq_cp(0, 1, 3, 6).is_ok());
  EXPECT_EQ(c.seq_pos_min(1), 3);
  EXPECT_EQ(c.seq_pos_max(1), 5);
  EXPECT_FALSE(dec(c, 1, 7, 7).is_ok());
  EXPECT_TRUE(dec(c, 1, 6, 6).is_ok());
}

TEST(BatchPlan, T18FullCacheRefusesAndKeepsTheState) {
  auto c = make_cache(8, 1);
  ASSERT_TRUE(dec(c, 0, 0, 5).is_ok());
  auto before = memory::state_write(c, 0);
  ASSERT_TRUE(before.is_ok());
  const status s = dec(c, 0, 6, 8);
  EXPECT_EQ(s.code(), status_code::no_space) << s.to_string();
  EXPECT_EQ(c.used(), 6u);
  EXPECT_EQ(c.seq_pos_max(0), 5);
  auto after = memory::state_write(c, 0);
  ASSERT_TRUE(after.is_ok());
  EXPECT_EQ(*before, *after);
}

TEST(BatchPlan, T19EveryMicroBatchIsPlacedOrNone) {
  auto c = make_cache(8, 1);
  ASSERT_TRUE(dec(c, 0, 0, 1).is_ok());
  EXPECT_EQ(dec(c, 0, 2, 8, 2).code(), status_code::no_space);  // 7 tokens, 4 micro-batches
  EXPECT_EQ(c.used(), 2u);
  EXPECT_EQ(c.seq_pos_max(0), 1);
  EXPECT_TRUE(dec(c, 0, 2, 7, 2).is_ok());
  EXPECT_EQ(c.used(), 8u);
}

TEST(BatchPlan, T79AutoPositionsContinueTheMemory) {
  auto c = make_cache(32, 1);
  ASSERT_TRUE(dec(c, 0, 0, 9).is_ok());
  batch bt;
  for (int i = 0; i < 4; ++i) bt.add(1);
  auto vb = validate(bt, batch_limits{}, memory::positions_of<cache_t>{c});
  ASSERT_TRUE(vb.is_ok()) << vb.error().to_string();
  EXPECT_EQ(vb->pos(0), 10);
  EXPECT_EQ(vb->pos(3), 13);
  EXPECT_EQ(vb->n_outputs(), 1u);
  EXPECT_TRUE(vb->output(3));
}

TEST(BatchPlan, RollbackAfterALaterMicroBatchFails) {
  auto c = make_cache(16, 1);
  ASSERT_TRUE(dec(c, 0, 0, 3).is_ok());
  batch bt;
  for (pos_t p = 4; p < 10; ++p) bt.add(1, p, {0}, p == 9);
  auto vb = validate(bt, batch_limits{}, memory::positions_of<cache_t>{c});
  ASSERT_TRUE(vb.is_ok());
  auto plan = memory::plan_batch(c, *vb, 2);
  ASSERT_TRUE(plan.is_ok());
  ASSERT_EQ(plan->tokens.size(), 3u);
  ASSERT_TRUE(c.apply(0, plan->tokens[0]).is_ok());
  ASSERT_TRUE(c.apply(1, plan->tokens[1]).is_ok());
  EXPECT_EQ(c.seq_pos_max(0), 7);
  c.rollback();  // the model failed while computing micro-batch 1
  EXPECT_EQ(c.seq_pos_max(0), 3);
  EXPECT_EQ(c.used(), 4u);
  EXPECT_TRUE(dec(c, 0, 4, 9, 2).is_ok());
  EXPECT_EQ(c.seq_pos_max(0), 9);
}

}  // namespace

namespace {

TEST(BatchPlan, SeqAddThatWouldOverflowPositionsIsRefused) {
  auto c = make_cache(16, 1);
  ASSERT_TRUE(dec(c, 0, 0, 3).is_ok());
  const mnemo::status s = c.seq_add(0, 0, -1, std::numeric_limits<mnemo::pos_t>::max() - 1);
  EXPECT_EQ(s.code(), mnemo::status_code::out_of_range) << s.to_string();
  EXPECT_EQ(c.seq_pos_max(0), 3);
  EXPECT_TRUE(c.seq_add(0, 0, -1, -2).is_ok());  // negative: cells 0 and 1 freed
  EXPECT_EQ(c.seq_pos_min(0), 0);
  EXPECT_EQ(c.seq_pos_max(0), 1);
}

}  // namespace
