// The recurrent memory against docs/recurrent.md and its tests T47-T58 (section F),
// with the LIB deviations of recurrent.hpp: unrepresentable removals are errors that
// change nothing, rollback goes through checkpoints taken at micro-batch boundaries.
#include "memory/recurrent_harness.hpp"

namespace mnemo_test {
namespace {

constexpr pos_t k_end = -1;

std::size_t b_bytes() { return make_memory(1).state_bytes(); }

TEST(RecurrentSpec, T47OneSlotHoldsTheLastPosition) {
  recurrent m = make_memory(2);
  ASSERT_TRUE(decode(m, 0, 0, 4).is_ok());
  EXPECT_EQ(m.seq_pos_min(0), 4);
  EXPECT_EQ(m.seq_pos_max(0), 4);
  EXPECT_EQ(m.report().cells_used, 1u);
}

TEST(RecurrentSpec, T48RemovalsWithoutCheckpoints) {
  recurrent m = make_memory(2);
  ASSERT_TRUE(decode(m, 0, 0, 4).is_ok());
  const auto before = state_of(m, 0);
  // A suffix with no checkpoint: an error naming the sequence, nothing changed.
  const status st = m.seq_rm(0, 3, k_end);
  EXPECT_EQ(st.code(), status_code::unsupported);
  EXPECT_NE(st.to_string().find("sequence 0"), std::string::npos) << st.to_string();
  EXPECT_EQ(m.seq_pos_max(0), 4);
  EXPECT_EQ(state_of(m, 0), before);
  EXPECT_TRUE(m.seq_rm(0, 5, k_end).is_ok());  // the future: nothing held there
  EXPECT_EQ(m.seq_pos_max(0), 4);
  // A prefix: llama.cpp returns true and keeps the tokens; here an error.
  EXPECT_EQ(m.seq_rm(0, 0, 3).code(), status_code::unsupported);
  EXPECT_EQ(m.seq_pos_min(0), 4);
  EXPECT_TRUE(m.seq_rm(0, k_end, k_end).is_ok());
  EXPECT_EQ(m.seq_pos_max(0), -1);
  EXPECT_EQ(m.report().cells_used, 0u);
}

TEST(RecurrentSpec, T49EverySequenceOnlyWhole) {
  recurrent m = make_memory(2);
  ASSERT_TRUE(decode(m, 0, 0, 4).is_ok());
  ASSERT_TRUE(decode(m, 1, 0, 2).is_ok());
  EXPECT_FALSE(m.seq_rm(-1, 0, 5).is_ok());
  EXPECT_EQ(m.seq_pos_max(0), 4);
  EXPECT_TRUE(m.seq_rm(-1, 3, 3).is_ok());  // empty range
  EXPECT_TRUE(m.seq_rm(-1, k_end, k_end).is_ok());
  EXPECT_EQ(m.seq_pos_max(0), -1);
  EXPECT_EQ(m.seq_pos_max(1), -1);
}

TEST(RecurrentSpec, T50IdsBeyondTheSlots) {
  recurrent m = make_memory(2);
  EXPECT_EQ(m.seq_rm(5, k_end, k_end).code(), status_code::out_of_range);
  EXPECT_EQ(m.seq_pos_max(5), -1);
  EXPECT_FALSE(decode(m, 2, 0, 0).is_ok());
  EXPECT_FALSE(m.in_batch());
}

TEST(RecurrentSpec, T51CopyGivesDstTheState) {
  recurrent m = make_memory(2);
  ASSERT_TRUE(decode(m, 0, 0, 4).is_ok());
  ASSERT_TRUE(m.seq_cp(0, 1, k_end, k_end).is_ok());
  EXPECT_EQ(m.seq_pos_max(1), 4);
  EXPECT_EQ(state_of(m, 1), state_of(m, 0));
  ASSERT_TRUE(decode(m, 1, 5, 5).is_ok());
  EXPECT_EQ(m.seq_pos_max(0), 4);
  EXPECT_EQ(m.seq_pos_max(1), 5);
  ASSERT_TRUE(decode(m, 0, 5, 5).is_ok());  // [num] the same token: the same state
  EXPECT_EQ(state_of(m, 0), state_of(m, 1));
  EXPECT_EQ(state_of(m, 0), reference_state(5));
}

TEST(RecurrentSpec, T52CopyFromEmptyEmptiesDst) {
  recurrent m = make_memory(2);
  ASSERT_TRUE(decode(m, 1, 0, 2).is_ok());
  ASSERT_TRUE(m.seq_cp(0, 1, k_end, k_end).is_ok());
  EXPECT_EQ(m.seq_pos_max(1), -1);
  ASSERT_TRUE(decode(m, 1, 0, 1).is_ok());  // and restarts from a zero state
  EXPECT_EQ(state_of(m, 1), reference_state(1));
}

TEST(RecurrentSpec, T53ShiftsMoveOnlyTheLastPosition) {
  recurrent m = make_memory(1);
  ASSERT_TRUE(decode(m, 0, 0, 9).is_ok());
  ASSERT_TRUE(m.seq_add(0, 0, 5, 100).is_ok());
  EXPECT_EQ(m.seq_pos_max(0), 9);
  ASSERT_TRUE(m.seq_add(0, 5, k_end, 100).is_ok());
  EXPECT_EQ(m.seq_pos_max(0), 109);
  ASSERT_TRUE(m.seq_div(0, k_end, k_end, 2).is_ok());
  EXPECT_EQ(m.seq_pos_max(0), 54);
  EXPECT_EQ(m.seq_add(0, k_end, k_end, -100).code(), status_code::out_of_range);
  EXPECT_EQ(m.seq_pos_max(0), 54);
}

TEST(RecurrentSpec, T54CoupledTokenIsRefused) {
  recurrent m = make_memory(2);
  std::vector<pos_t> pos{0};
  seq_set both = seq_set::of(0);
  both.insert(1);
  std::vector<seq_set> sets{both};
  const memory::ubatch_tokens ub{pos, sets};
  EXPECT_EQ(m.prepare({&ub, 1}).code(), status_code::invalid_argument);
  EXPECT_FALSE(m.in_batch());
}

TEST(RecurrentSpec, T55PositionsMustContinue) {
  recurrent m = make_memory(1);
  ASSERT_TRUE(decode(m, 0, 0, 4).is_ok());
  EXPECT_FALSE(decode(m, 0, 7, 7).is_ok());
  EXPECT_EQ(m.seq_pos_max(0), 4);
  EXPECT_TRUE(decode(m, 0, 5, 5).is_ok());
}

// T56 with checkpoints at micro-batch boundaries: rolling back into the middle of a
// micro-batch is refused with the restorable positions; at a boundary it restores the
// exact state, and the continuation matches a reference that never saw the suffix.
TEST(RecurrentSpec, T56BoundedRollback) {
  recurrent m = make_memory(1, 3);
  ASSERT_TRUE(decode(m, 0, 0, 7).is_ok());
  ASSERT_TRUE(decode(m, 0, 8, 9).is_ok());
  ASSERT_TRUE(m.seq_rm(0, 8, k_end).is_ok());
  EXPECT_EQ(m.seq_pos_max(0), 7);
  EXPECT_EQ(state_of(m, 0), reference_state(7));
  ASSERT_TRUE(decode(m, 0, 8, 8).is_ok());
  EXPECT_EQ(state_of(m, 0), reference_state(8));
  const auto before = state_of(m, 0);
  const status st = m.seq_rm(0, 5, k_end);  // no checkpoint at 4
  EXPECT_EQ(st.code(), status_code::unsupported);
  EXPECT_NE(st.to_string().find("oldest"), std::string::npos) << st.to_string();
  EXPECT_EQ(m.seq_pos_max(0), 8);
  EXPECT_EQ(state_of(m, 0), before);
}

// T57 (double rollback, D-13): the second rollback restores its own checkpoint.
TEST(RecurrentSpec, T57DoubleRollback) {
  recurrent m = make_memory(1, 4);
  for (pos_t p = 0; p <= 9; ++p) ASSERT_TRUE(decode(m, 0, p, p).is_ok());
  ASSERT_TRUE(m.seq_rm(0, 9, k_end).is_ok());
  ASSERT_TRUE(m.seq_rm(0, 8, k_end).is_ok());
  EXPECT_EQ(m.seq_pos_max(0), 7);
  EXPECT_EQ(state_of(m, 0), reference_state(7));
  ASSERT_TRUE(decode(m, 0, 8, 8).is_ok());
  EXPECT_EQ(state_of(m, 0), reference_state(8));
}

// T58 (rolling back a whole decode, #26695).
TEST(RecurrentSpec, T58RollbackOfAWholeDecode) {
  recurrent m = make_memory(1, 8);
  ASSERT_TRUE(decode(m, 0, 0, 9).is_ok());
  ASSERT_TRUE(decode(m, 0, 10, 11).is_ok());
  ASSERT_TRUE(m.seq_rm(0, 10, k_end).is_ok());
  ASSERT_TRUE(decode(m, 0, 10, 10).is_ok());
  EXPECT_EQ(state_of(m, 0), reference_state(10));
}

TEST(RecurrentSpec, SeqKeepEmptiesTheOthers) {
  recurrent m = make_memory(3);
  for (seq_id s = 0; s < 3; ++s) ASSERT_TRUE(decode(m, s, 0, 2).is_ok());
  ASSERT_TRUE(m.seq_keep(1).is_ok());
  EXPECT_EQ(m.seq_pos_max(0), -1);
  EXPECT_EQ(m.seq_pos_max(1), 2);
  EXPECT_EQ(m.seq_pos_max(2), -1);
}

// Copying a branch point (llama.cpp ignores the range and the next
// decode fails): with a checkpoint there, dst gets that state; without, an error.
TEST(RecurrentSpec, CopyOfAPrefixUsesACheckpoint) {
  recurrent m = make_memory(2, 4);
  ASSERT_TRUE(decode(m, 0, 0, 31).is_ok());
  ASSERT_TRUE(decode(m, 0, 32, 47).is_ok());
  ASSERT_TRUE(m.seq_cp(0, 1, 0, 32).is_ok());
  EXPECT_EQ(m.seq_pos_max(1), 31);
  EXPECT_EQ(state_of(m, 1), reference_state(31));
  EXPECT_EQ(m.seq_cp(0, 1, 0, 20).code(), status_code::unsupported);
  EXPECT_EQ(m.seq_pos_max(1), 31);
  EXPECT_EQ(m.seq_cp(0, 1, 5, k_end).code(), status_code::unsupported);
}

TEST(RecurrentSpec, CheckpointRingAndBudgetAreBounded) {
  recurrent m = make_memory(2, 2);
  for (pos_t p = 0; p <= 5; ++p) ASSERT_TRUE(decode(m, 0, p, p).is_ok());
  EXPECT_EQ(m.checkpoints(0), (std::vector<pos_t>{3, 4}));
  // A budget of three states over both sequences: the oldest overall goes first.
  recurrent b = make_memory(2, 4, 3 * b_bytes());
  for (pos_t p = 0; p <= 3; ++p) ASSERT_TRUE(decode(b, 0, p, p).is_ok());  // ckpts 0 1 2
  ASSERT_TRUE(decode(b, 1, 0, 1).is_ok());                                 // none (fresh)
  ASSERT_TRUE(decode(b, 1, 2, 2).is_ok());                                 // 1: drops 0's 0
  EXPECT_EQ(b.checkpoints(0), (std::vector<pos_t>{1, 2}));
  EXPECT_EQ(b.checkpoints(1), (std::vector<pos_t>{1}));
  EXPECT_LE(b.checkpoint_bytes(), 3 * b.state_bytes());
  ASSERT_TRUE(b.checkpoint(1).is_ok());  // on demand, at 2
  EXPECT_EQ(b.checkpoints(1), (std::vector<pos_t>{1, 2}));
  EXPECT_EQ(b.checkpoints(0), (std::vector<pos_t>{2}));
}

}  // namespace
}  // namespace mnemo_test
