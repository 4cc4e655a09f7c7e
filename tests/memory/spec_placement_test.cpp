// Behavioural tests, group B: slot finding, placement and atomicity of the unified cache
// (T17-T20), exact rollback of a batch whose caller fails midway (T21/T22 at the
// memory level), and refusal of tokens the memory could not represent (T69, D-8).
#include "memory/harness.hpp"
#include <gtest/gtest.h>

namespace mnemo::memtest {
namespace {

using FullCacheSpec = traced_test;

TEST_F(FullCacheSpec, T17FragmentedCacheAllocatesHoles) {
  auto c = make_cache<float>(8, 3);
  ASSERT_EQ(
      decode(c, {at(0, 0), at(1, 0), at(0, 1), at(1, 1), at(0, 2), at(1, 2), at(0, 3), at(1, 3)}),
      k_ok);
  EXPECT_EQ(cells_of(c, 0), (std::vector<std::size_t>{0, 2, 4, 6}));
  EXPECT_EQ(cells_of(c, 1), (std::vector<std::size_t>{1, 3, 5, 7}));
  ASSERT_TRUE(c.seq_rm(1, -1, -1).is_ok());
  ASSERT_EQ(dec(c, 2, 0, 3), k_ok);
  EXPECT_EQ(cells_of(c, 2), (std::vector<std::size_t>{1, 3, 5, 7}));
  EXPECT_EQ(positions(c, 2), range(0, 3));
  EXPECT_EQ(check_invariants(c), "");
}

TEST_F(FullCacheSpec, T18NoSpaceChangesNothing) {
  auto c = make_cache<float>(8, 1);
  ASSERT_EQ(dec(c, 0, 0, 5), k_ok);
  const auto blob = state_of(c, 0);
  const auto before = snap(c);
  EXPECT_EQ(dec(c, 0, 6, 8), k_no_space);
  EXPECT_EQ(c.used(), 6u);
  EXPECT_EQ(c.seq_pos_max(0), 5);
  EXPECT_TRUE(state_of(c, 0) == blob) << "the per-seq state changed";
  EXPECT_EQ(first_difference(before, snap(c)), "");
  EXPECT_EQ(dec(c, 0, 6, 7), k_ok);  // what fits still fits
}

TEST_F(FullCacheSpec, T18MicroBatchLargerThanCacheIsNoSpace) {
  auto c = make_cache<float>(8, 1);
  status why;
  EXPECT_EQ(decode(c, run(0, 0, 8), {}, &why), k_no_space);
  EXPECT_EQ(why.code(), status_code::no_space);
  EXPECT_FALSE(why.message().empty());
  EXPECT_EQ(c.used(), 0u);
}

TEST_F(FullCacheSpec, T19MultiUbatchPlanIsAtomic) {
  auto c = make_cache<float>(8, 1);
  decode_options o;
  o.n_ubatch = 2;
  ASSERT_EQ(dec(c, 0, 0, 1, o), k_ok);
  const auto before = snap(c);
  EXPECT_EQ(dec(c, 0, 2, 8, o), k_no_space);  // 7 tokens in 4 micro-batches; only 3 would fit
  EXPECT_EQ(c.used(), 2u);
  EXPECT_EQ(c.seq_pos_max(0), 1);
  EXPECT_EQ(first_difference(before, snap(c)), "");
  EXPECT_EQ(dec(c, 0, 2, 7, o), k_ok);
  EXPECT_EQ(c.used(), 8u);
  EXPECT_EQ(positions(c, 0), range(0, 7));
}

TEST_F(FullCacheSpec, T20HeadMovesToFirstFreedCell) {
  auto c = make_cache<float>(8, 1);
  ASSERT_EQ(dec(c, 0, 0, 3), k_ok);
  ASSERT_TRUE(c.seq_rm(0, 1, 3).is_ok());
  ASSERT_EQ(dec(c, 0, 4, 5), k_ok);
  EXPECT_EQ(c.cells().pos(1), 4);
  EXPECT_EQ(c.cells().pos(2), 5);
  EXPECT_EQ(cells_of(c, 0), (std::vector<std::size_t>{0, 1, 2, 3}));
}

// Builds the same non-trivial history every time: shared cells, holes, two seqs.
template <class C>
void build_history(C& c) {
  ASSERT_EQ(dec(c, 0, 0, 5), k_ok);
  ASSERT_TRUE(c.seq_cp(0, 1, 0, 3).is_ok());
  ASSERT_EQ(dec(c, 1, 3, 4), k_ok);
  ASSERT_TRUE(c.seq_rm(0, 1, 2).is_ok());
  ASSERT_EQ(dec(c, 2, 0, 1), k_ok);
}

// T21/T22 at the memory level: a batch of 3 micro-batches whose caller fails after
// applying the 2nd (abort callback, compute error) is rolled back entirely
// (llama.cpp keeps the earlier micro-batches, D-15): metadata, per-seq states and
// the next placement are exactly as if the batch had never been tried.
TEST_F(FullCacheSpec, T21FailedBatchRollsBackEveryMicroBatch) {
  auto c = make_cache<dtype::f16>(32, 3);
  auto ref = make_cache<dtype::f16>(32, 3);
  build_history(c);
  build_history(ref);
  const auto before = snap(c, live_rows);
  std::vector<std::vector<std::uint8_t>> states;
  for (seq_id s : {-1, 0, 1, 2}) states.push_back(state_of(c, s));

  decode_options o;
  o.n_ubatch = 4;
  o.fail_after = 1;
  // 12 tokens: seq 0 continues, seq 1 continues with coupled tokens, seq 2 continues.
  std::vector<token> batch;
  for (pos_t p = 6; p < 10; ++p) batch.push_back(at(0, p));
  for (pos_t p = 5; p < 9; ++p) batch.push_back(at(1, p));
  for (pos_t p = 2; p < 6; ++p) batch.push_back(at(2, p));
  EXPECT_EQ(decode(c, batch, o), k_aborted);

  // The rolled-back rows went to cells that were free and stay free: compare the
  // bytes of live cells only, and the states.
  EXPECT_EQ(first_difference(before, snap(c, live_rows)), "");
  const seq_id ids[] = {-1, 0, 1, 2};
  for (std::size_t k = 0; k < states.size(); ++k)
    EXPECT_TRUE(state_of(c, ids[k]) == states[k]) << "state of seq " << ids[k] << " changed";
  EXPECT_EQ(check_invariants(c), "");
  // The head was restored too: the same batch now lands where it lands in `ref`.
  o.fail_after = -1;
  ASSERT_EQ(decode(c, batch, o), k_ok);
  ASSERT_EQ(decode(ref, batch, o), k_ok);
  EXPECT_EQ(cell_metas(c), cell_metas(ref));
  EXPECT_TRUE(state_of(c) == state_of(ref));
}

// A failure while shifts are pending (the caller skipped update()): rollback keeps
// the pending shifts exactly.
TEST_F(FullCacheSpec, T22RollbackKeepsPendingShifts) {
  auto c = make_cache<float>(16, 2);
  ASSERT_EQ(dec(c, 0, 0, 5), k_ok);
  ASSERT_TRUE(c.seq_add(0, 3, -1, 2).is_ok());
  const auto before = snap(c);
  const std::vector<pos_t> pos = {0, 1, 2, 3};
  const std::vector<seq_set> seqs(4, seq_set::of(1));
  const memory::ubatch_tokens ubs[] = {{std::span(pos).first(2), std::span(seqs).first(2)},
                                       {std::span(pos).last(2), std::span(seqs).last(2)}};
  ASSERT_TRUE(c.prepare(ubs).is_ok());
  ASSERT_TRUE(c.apply(0, ubs[0]).is_ok());
  ASSERT_TRUE(c.apply(1, ubs[1]).is_ok());
  EXPECT_EQ(c.used(), 10u);
  c.rollback();
  EXPECT_EQ(first_difference(before, snap(c)), "");  // no rows written: bytes equal too
  EXPECT_TRUE(c.has_pending_shift());
}

TEST_F(FullCacheSpec, T22SequenceOpsWaitForTheOpenBatch) {
  auto c = make_cache<float>(16, 2);
  ASSERT_EQ(dec(c, 0, 0, 5), k_ok);
  ASSERT_TRUE(c.seq_cp(0, 1, -1, -1).is_ok());
  const std::vector<pos_t> pos = {6};
  const std::vector<seq_set> seqs = {seq_set::of(0)};
  const memory::ubatch_tokens ub{pos, seqs};
  const auto blob = state_of(c, 0);
  ASSERT_TRUE(c.prepare(std::span(&ub, 1)).is_ok());
  // Between prepare() and commit()/rollback(), nothing may take the planned cells.
  EXPECT_EQ(c.seq_add(0, -1, -1, 1).code(), status_code::invalid_argument);
  EXPECT_EQ(c.defragment().code(), status_code::invalid_argument);
  EXPECT_EQ(memory::state_read(c, blob, 1).code(), status_code::invalid_argument);
  EXPECT_EQ(memory::state_write(c, 0).error().code(), status_code::invalid_argument);
  EXPECT_EQ(c.update().code(), status_code::ok);  // nothing to rotate, no transaction yet
  ASSERT_TRUE(c.apply(0, ub).is_ok());
  EXPECT_EQ(c.seq_rm(0, -1, -1).code(), status_code::invalid_argument);
  c.commit();
  EXPECT_TRUE(c.seq_add(0, -1, -1, 1).is_ok());
  EXPECT_EQ(check_invariants(c), "");
}

// D-8 / T69: a token of sequence 5 in a cache of 2 sequences would leave cells that
// no state can restore; the memory refuses it at prepare() (the batch validator
// refuses it earlier). Empty owner sets and negative positions likewise.
TEST_F(FullCacheSpec, T69UnrepresentableTokensAreRefused) {
  auto c = make_cache<float>(16, 2);
  ASSERT_EQ(dec(c, 0, 0, 3), k_ok);
  const auto before = snap(c);
  status why;
  EXPECT_EQ(decode(c, run(5, 0, 3), {}, &why), k_invalid);
  EXPECT_NE(why.code(), status_code::ok);
  EXPECT_EQ(decode(c, {at({1, 2}, 0)}, {}, &why), k_invalid);
  EXPECT_EQ(decode(c, {token{0, seq_set{}}}, {}, &why), k_invalid);
  const std::vector<pos_t> pos = {-1};
  const std::vector<seq_set> seqs = {seq_set::of(1)};
  const memory::ubatch_tokens bad_pos{pos, seqs};
  EXPECT_FALSE(c.prepare(std::span(&bad_pos, 1)).is_ok());
  const std::vector<pos_t> two = {0, 1};
  const memory::ubatch_tokens mismatched{two, seqs};
  EXPECT_FALSE(c.prepare(std::span(&mismatched, 1)).is_ok());
  EXPECT_EQ(first_difference(before, snap(c)), "");
  EXPECT_FALSE(c.in_batch());
  EXPECT_EQ(dec(c, 1, 0, 3), k_ok);
}

}  // namespace
}  // namespace mnemo::memtest
