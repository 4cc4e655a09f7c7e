// Transactions of the recurrent memory: a batch of several micro-batches over several
// sequences fails in the middle and rollback() restores every state byte for byte and
// every position; prepare refuses bad batches before anything changes; the
// model's view (groups, layer_state) follows the plan; the batch layer's equal split
// drives it end to end.
#include "memory/recurrent_harness.hpp"

#include "mnemo/batch/batch.hpp"
#include "mnemo/batch/validate.hpp"
#include "mnemo/memory/batch_plan.hpp"

namespace mnemo_test {
namespace {

TEST(RecurrentBatch, FailedMicroBatchRestoresEveryByte) {
  recurrent m = make_memory(3, 2);
  ASSERT_TRUE(decode(m, 0, 0, 3).is_ok());
  ASSERT_TRUE(decode(m, 1, 0, 1).is_ok());
  const auto s0 = state_of(m, 0), s1 = state_of(m, 1), s2 = state_of(m, 2);
  const auto c0 = m.checkpoints(0);
  // Micro-batch 0: seqs 0 and 1 (2 tokens each); micro-batch 1: seqs 0 and 2.
  std::vector<pos_t> p0{4, 5, 2, 3}, p1{6, 7, 0, 1};
  std::vector<seq_set> q0{seq_set::of(0), seq_set::of(0), seq_set::of(1), seq_set::of(1)},
      q1{seq_set::of(0), seq_set::of(0), seq_set::of(2), seq_set::of(2)};
  const memory::ubatch_tokens ubs[2] = {{p0, q0}, {p1, q1}};
  ASSERT_TRUE(m.prepare(ubs).is_ok());
  ASSERT_TRUE(m.apply(0, ubs[0]).is_ok());
  ASSERT_EQ(m.groups(0).size(), 2u);
  EXPECT_EQ(m.groups(0)[1].seq, 1);
  EXPECT_EQ(m.groups(0)[1].first, 2u);
  for (std::size_t k = 0; k < 2; ++k)
    for (std::size_t l = 0; l < 2; ++l) toy_token(m.layer_state(l, 0, k).ssm, 8, 99);
  ASSERT_TRUE(m.apply(1, ubs[1]).is_ok());
  toy_token(m.layer_state(1, 1, 1).conv, 6, 42);  // seq 2 was empty: its slot starts at 0
  EXPECT_EQ(m.seq_pos_max(2), 1);
  EXPECT_FALSE(m.seq_rm(0, -1, -1).is_ok());  // no sequence operation inside a batch
  m.rollback();                               // the model failed in micro-batch 1
  EXPECT_EQ(state_of(m, 0), s0);
  EXPECT_EQ(state_of(m, 1), s1);
  EXPECT_EQ(state_of(m, 2), s2);
  EXPECT_EQ(m.seq_pos_max(0), 3);
  EXPECT_EQ(m.seq_pos_max(1), 1);
  EXPECT_EQ(m.seq_pos_max(2), -1);
  EXPECT_EQ(m.checkpoints(0), c0);
  EXPECT_FALSE(m.in_batch());
  EXPECT_TRUE(decode(m, 0, 4, 4).is_ok());
}

TEST(RecurrentBatch, PrepareRefusesBeforeAnyChange) {
  recurrent m = make_memory(2);
  ASSERT_TRUE(decode(m, 0, 0, 1).is_ok());
  std::vector<pos_t> pos{2, 0, 3};
  std::vector<seq_set> sets{seq_set::of(0), seq_set::of(1), seq_set::of(0)};
  const memory::ubatch_tokens interleaved{pos, sets};
  EXPECT_EQ(m.prepare({&interleaved, 1}).code(), status_code::invalid_argument);
  // The second micro-batch does not continue the first: the whole plan is refused.
  tokens a(0, 2, 3), b(0, 5, 5);
  const memory::ubatch_tokens two[2] = {a.view(), b.view()};
  EXPECT_EQ(m.prepare(two).code(), status_code::invalid_argument);
  EXPECT_EQ(m.seq_pos_max(0), 1);
  EXPECT_FALSE(m.in_batch());
  EXPECT_FALSE(m.apply(0, a.view()).is_ok());  // nothing prepared
}

TEST(RecurrentBatch, EqualSplitThroughTheBatchLayer) {
  recurrent m = make_memory(2);
  batch b;
  for (pos_t p = 0; p < 6; ++p) {
    b.add(1, p, {0}, false);
    b.add(2, p, {1}, p == 5);
  }
  auto v = validate(b, {.n_vocab = 8, .n_seq_max = 2}, memory::positions_of<recurrent>{m});
  ASSERT_TRUE(v.is_ok()) << v.error().to_string();
  auto plan = memory::plan_batch(m, *v, 4);
  ASSERT_TRUE(plan.is_ok()) << plan.error().to_string();
  for (std::size_t u = 0; u < plan->tokens.size(); ++u) {
    ASSERT_TRUE(m.apply(u, plan->tokens[u]).is_ok());
    EXPECT_EQ(m.groups(u).size(), 2u);  // equal split: both sequences in every micro-batch
  }
  m.commit();
  EXPECT_EQ(m.seq_pos_max(0), 5);
  EXPECT_EQ(m.seq_pos_max(1), 5);
}

}  // namespace
}  // namespace mnemo_test
