// The splitters on hand-made batches: tests T45, T46, T59, T85 (docs/batch.md), the sequential
// split of coupled tokens, split_seq's subsets, output order, split_all and reset.
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "mnemo/batch/split.hpp"
#include "mnemo/batch/validate.hpp"

namespace {

using namespace mnemo;

batch_limits limits(std::uint32_t n_seq_max = 8) {
  batch_limits l;
  l.n_seq_max = n_seq_max;
  return l;
}

/// n tokens of each listed sequence, interleaved round-robin, positions 0.., output on
/// the last token of each sequence.
batch interleaved(const std::vector<std::pair<seq_id, int>>& seqs) {
  batch b;
  int max_n = 0;
  for (auto [s, n] : seqs) max_n = std::max(max_n, n);
  for (int p = 0; p < max_n; ++p)
    for (auto [s, n] : seqs)
      if (p < n) b.add(100 + s, p, {s}, p == n - 1);
  return b;
}

std::vector<std::uint32_t> sizes(const std::vector<ubatch>& us) {
  std::vector<std::uint32_t> r;
  for (const auto& u : us) r.push_back(u.n_tokens());
  return r;
}

std::vector<seq_id> primaries(const ubatch& u) { return {u.seq.begin(), u.seq.end()}; }

TEST(BatchSplit, SimpleTakesTokensInBatchOrder) {
  const batch b = interleaved({{0, 3}, {1, 2}});
  auto v = validate(b, limits());
  ASSERT_TRUE(v.is_ok());
  batch_splitter sp(*v);
  auto u = sp.split_simple(3);
  ASSERT_TRUE(u.is_ok());
  EXPECT_EQ(std::vector<std::uint32_t>(u->idx.begin(), u->idx.end()),
            (std::vector<std::uint32_t>{0, 1, 2}));
  EXPECT_FALSE(u->equal_seqs);
  EXPECT_EQ(u->n_seqs, 3u);
  EXPECT_EQ(u->n_seq_tokens, 1u);
  ASSERT_EQ(u->seq_sets.size(), 3u);
  EXPECT_EQ(u->seq_sets[1], seq_set::of(1));
  EXPECT_EQ(primaries(*u), (std::vector<seq_id>{0, 1, 0}));
  EXPECT_EQ(std::vector<pos_t>(u->pos.begin(), u->pos.end()), (std::vector<pos_t>{0, 0, 1}));
  EXPECT_EQ(std::vector<seq_id>(u->seq_id_unq.begin(), u->seq_id_unq.end()),
            (std::vector<seq_id>{0, 1}));
  auto w = sp.split_simple(3);
  ASSERT_TRUE(w.is_ok());
  EXPECT_EQ(w->n_tokens(), 2u);
  EXPECT_TRUE(sp.done());
  auto end = sp.split_simple(3);
  ASSERT_TRUE(end.is_ok());
  EXPECT_TRUE(end->empty());
}

TEST(BatchSplit, T45SplitStreamComposition) {
  const batch b = interleaved({{0, 4}, {1, 2}, {2, 4}});
  auto v = validate(b, limits(3));
  ASSERT_TRUE(v.is_ok());
  batch_splitter sp(*v);
  auto us = sp.split_all(equal_split{512, true, 0});
  ASSERT_TRUE(us.is_ok()) << us.error().to_string();
  EXPECT_EQ(sizes(*us), (std::vector<std::uint32_t>{6, 2, 2}));
  EXPECT_EQ(primaries((*us)[0]), (std::vector<seq_id>{0, 0, 1, 1, 2, 2}));
  EXPECT_EQ((*us)[0].n_seqs, 3u);
  EXPECT_EQ((*us)[0].n_seq_tokens, 2u);
  EXPECT_EQ(primaries((*us)[1]), (std::vector<seq_id>{0, 0}));
  EXPECT_EQ(primaries((*us)[2]), (std::vector<seq_id>{2, 2}));
  EXPECT_EQ(std::vector<pos_t>((*us)[2].pos.begin(), (*us)[2].pos.end()),
            (std::vector<pos_t>{2, 3}));
  // A unified memory's simple split makes one ubatch.
  auto one = sp.split_all(simple_split{512});
  ASSERT_TRUE(one.is_ok());
  EXPECT_EQ(sizes(*one), (std::vector<std::uint32_t>{10}));
}

TEST(BatchSplit, T46UnequalLengthsShortestCommonLengthFirst) {
  const batch b = interleaved({{0, 4}, {1, 2}});
  auto v = validate(b, limits(2));
  ASSERT_TRUE(v.is_ok());
  batch_splitter sp(*v);
  auto us = sp.split_all(equal_split{4, true, 0});
  ASSERT_TRUE(us.is_ok());
  EXPECT_EQ(sizes(*us), (std::vector<std::uint32_t>{4, 2}));
  EXPECT_EQ(primaries((*us)[0]), (std::vector<seq_id>{0, 0, 1, 1}));
  EXPECT_EQ(primaries((*us)[1]), (std::vector<seq_id>{0, 0}));
}

TEST(BatchSplit, SequentialSkipsANonConsecutiveSequence) {
  const batch b = interleaved({{0, 1}, {2, 1}});  // seqs {0, 2}: one ubatch each (split streams)
  auto v = validate(b, limits(3));
  ASSERT_TRUE(v.is_ok());
  batch_splitter sp(*v);
  auto seq = sp.split_all(equal_split{8, true, 0});
  ASSERT_TRUE(seq.is_ok());
  EXPECT_EQ(sizes(*seq), (std::vector<std::uint32_t>{1, 1}));
  auto any = sp.split_all(equal_split{8, false, 0});
  ASSERT_TRUE(any.is_ok());
  EXPECT_EQ(sizes(*any), (std::vector<std::uint32_t>{2}));
}

TEST(BatchSplit, T85EqualSplitIsCappedAtNUbatch) {
  // D-10: llama.cpp emits one ubatch of 3 tokens here.
  const batch b = interleaved({{0, 1}, {1, 1}, {2, 1}});
  auto v = validate(b, limits(3));
  ASSERT_TRUE(v.is_ok());
  batch_splitter sp(*v);
  for (bool sequential : {false, true}) {
    auto us = sp.split_all(equal_split{2, sequential, 0});
    ASSERT_TRUE(us.is_ok());
    EXPECT_EQ(sizes(*us), (std::vector<std::uint32_t>{2, 1})) << "sequential " << sequential;
  }
}

TEST(BatchSplit, T59KeepTailSplitsFiveTokensIntoThreeAndTwo) {
  const batch b = interleaved({{0, 5}});
  auto v = validate(b, limits(1));
  ASSERT_TRUE(v.is_ok());
  batch_splitter sp(*v);
  auto us = sp.split_all(equal_split{4, true, 2});  // n_rs_seq = 1 -> n_keep_tail = 2
  ASSERT_TRUE(us.is_ok());
  EXPECT_EQ(sizes(*us), (std::vector<std::uint32_t>{3, 2}));
}

TEST(BatchSplit, KeepTailDefersSetsThatWouldLeaveAShortTail) {
  // s0 has 3 tokens, s1 has 5: a round of 2 each leaves s0 one token (< 2) -> no set
  // qualifies; s0 alone fits whole (3 <= 4) and is finished first.
  const batch b = interleaved({{0, 3}, {1, 5}});
  auto v = validate(b, limits(2));
  ASSERT_TRUE(v.is_ok());
  batch_splitter sp(*v);
  auto us = sp.split_all(equal_split{4, true, 2});
  ASSERT_TRUE(us.is_ok());
  ASSERT_EQ(sizes(*us), (std::vector<std::uint32_t>{3, 3, 2}));
  EXPECT_EQ(primaries((*us)[0]), (std::vector<seq_id>{0, 0, 0}));
  EXPECT_EQ(primaries((*us)[1]), (std::vector<seq_id>{1, 1, 1}));
}

TEST(BatchSplit, SequentialSplitRefusesCoupledTokensAndConsumesNothing) {
  batch b;
  b.add(1, 0, {0, 1}, false).add(2, 1, {0}, true).add(3, 1, {1}, true);
  auto v = validate(b, limits(2));
  ASSERT_TRUE(v.is_ok());
  batch_splitter sp(*v);
  auto u = sp.split_equal(8, true, 0);
  ASSERT_FALSE(u.is_ok());
  EXPECT_EQ(u.error().code(), status_code::unsupported);
  EXPECT_NE(u.error().message().find("token 0 belongs to sequences {0, 1}"), std::string::npos)
      << u.error().message();
  EXPECT_EQ(sp.n_used(), 0u);
  auto all = sp.split_all(equal_split{8, true, 0});
  ASSERT_FALSE(all.is_ok());
  EXPECT_EQ(sp.n_used(), 0u);
  EXPECT_TRUE(sp.out_ids().empty());
}

TEST(BatchSplit, NonSequentialEqualSplitPutsTheSharedPrefixFirst) {
  batch b;
  b.add(1, 0, {0, 1}, false).add(2, 1, {0, 1}, false).add(3, 2, {0}, true).add(4, 2, {1}, true);
  auto v = validate(b, limits(2));
  ASSERT_TRUE(v.is_ok());
  batch_splitter sp(*v);
  auto us = sp.split_all(equal_split{8, false, 0});
  ASSERT_TRUE(us.is_ok());
  ASSERT_EQ(sizes(*us), (std::vector<std::uint32_t>{2, 2}));
  EXPECT_EQ((*us)[0].n_seqs, 1u);
  EXPECT_EQ((*us)[0].seq_sets[0].count(), 2);
  EXPECT_EQ((*us)[1].n_seqs, 2u);
  EXPECT_EQ((*us)[1].n_seq_tokens, 1u);
  EXPECT_EQ(std::vector<seq_id>((*us)[0].seq_id_unq.begin(), (*us)[0].seq_id_unq.end()),
            (std::vector<seq_id>{0, 1}));
}

TEST(BatchSplit, SeqSplitFollowsShrinkingSubsets) {
  batch b;
  b.add(1, {0, 1}).add(2, {0}).add(3, {1});
  auto v = validate(b, limits(2));
  ASSERT_TRUE(v.is_ok());
  batch_splitter sp(*v);
  auto us = sp.split_all(seq_split{8});
  ASSERT_TRUE(us.is_ok());
  ASSERT_EQ(sizes(*us), (std::vector<std::uint32_t>{2, 1}));
  EXPECT_TRUE((*us)[0].equal_seqs);
  EXPECT_EQ((*us)[0].n_seqs, 1u);
  EXPECT_EQ((*us)[0].n_seq_tokens, 2u);
  EXPECT_EQ((*us)[0].seq_sets[0].count(), 2);
  EXPECT_EQ(std::vector<std::uint32_t>((*us)[1].idx.begin(), (*us)[1].idx.end()),
            (std::vector<std::uint32_t>{2}));
}

TEST(BatchSplit, BadArgumentsAreStatuses) {
  const batch b = interleaved({{0, 3}});
  auto v = validate(b, limits(1));
  ASSERT_TRUE(v.is_ok());
  batch_splitter sp(*v);
  EXPECT_EQ(sp.split_simple(0).error().code(), status_code::invalid_argument);
  EXPECT_EQ(sp.split_seq(0).error().code(), status_code::invalid_argument);
  EXPECT_EQ(sp.split_equal(0, false, 0).error().code(), status_code::invalid_argument);
  EXPECT_EQ(sp.split_equal(2, true, 2).error().code(), status_code::invalid_argument);
  EXPECT_EQ(sp.n_used(), 0u);
}

TEST(BatchSplit, OutIdsMapOutputRowsBackToBatchIndices) {
  // s0@0 s1@0 s0@1 s1@1, outputs on tokens 2 and 3; the sequential split emits s0's
  // tokens first, so output rows are [2, 3]; with n_ubatch 2, [2] then [3].
  batch b;
  b.add(1, 0, {0}, true).add(2, 0, {1}, false).add(3, 1, {0}, true).add(4, 1, {1}, true);
  auto v = validate(b, limits(2));
  ASSERT_TRUE(v.is_ok());
  batch_splitter sp(*v);
  auto us = sp.split_all(equal_split{4, true, 0});
  ASSERT_TRUE(us.is_ok());
  EXPECT_EQ(std::vector<std::uint32_t>(sp.out_ids().begin(), sp.out_ids().end()),
            (std::vector<std::uint32_t>{0, 2, 3}));
  EXPECT_EQ(sp.output_rows(), (std::vector<std::int32_t>{0, -1, 1, 2}));
  EXPECT_EQ((*us)[0].n_outputs, 3u);
  EXPECT_EQ(std::vector<std::uint8_t>((*us)[0].output.begin(), (*us)[0].output.end()),
            (std::vector<std::uint8_t>{1, 1, 0, 1}));
  sp.split_reset();
  EXPECT_TRUE(sp.out_ids().empty());
  EXPECT_EQ(sp.n_used(), 0u);
}

TEST(BatchSplit, UbatchAccessors) {
  batch b;
  b.add(7, 0, {2}, false).add(8, 0, {1}, false).add(9, 1, {2}, true).add(10, 1, {1}, true);
  auto v = validate(b, limits(3));
  ASSERT_TRUE(v.is_ok());
  batch_splitter sp(*v);
  auto u = sp.split_equal(4, false, 0);
  ASSERT_TRUE(u.is_ok());
  ASSERT_EQ(u->n_seqs, 2u);
  EXPECT_EQ(u->group(0)[1], 2u);  // group 0 is seq 2 (first in batch order)
  EXPECT_EQ(u->token(1), 9);
  EXPECT_EQ(u->seqs(2)[0], 1);
  EXPECT_EQ(u->set_of(3), seq_set::of(1));
  EXPECT_EQ(u->unq_index(1), 0);
  EXPECT_EQ(u->unq_index(2), 1);
  EXPECT_EQ(u->unq_index(0), -1);
  EXPECT_EQ(u->source, &*v);
}

TEST(BatchSplit, AnySplitMatchesTheTypedStrategies) {
  const batch b = interleaved({{0, 5}, {1, 3}, {2, 4}});
  auto v = validate(b, limits(3));
  ASSERT_TRUE(v.is_ok());
  batch_splitter sp(*v);
  const auto same = [&](const auto& typed) {
    auto a = sp.split_all(typed);
    auto c = sp.split_all(any_split(typed));
    ASSERT_TRUE(a.is_ok() && c.is_ok());
    ASSERT_EQ(a->size(), c->size());
    for (std::size_t k = 0; k < a->size(); ++k) EXPECT_EQ((*a)[k].idx, (*c)[k].idx);
  };
  same(simple_split{5});
  same(equal_split{5, true, 2});
  same(seq_split{3});
}

TEST(BatchSplit, InterleavedSplitsAfterResetStartOver) {
  const batch b = interleaved({{0, 2}, {1, 2}});
  auto v = validate(b, limits(2));
  ASSERT_TRUE(v.is_ok());
  batch_splitter sp(*v);
  ASSERT_TRUE(sp.split_simple(3).is_ok());
  EXPECT_EQ(sp.n_used(), 3u);
  auto rest = sp.split_equal(4, true, 0);  // the remaining token of s1
  ASSERT_TRUE(rest.is_ok());
  EXPECT_EQ(std::vector<std::uint32_t>(rest->idx.begin(), rest->idx.end()),
            (std::vector<std::uint32_t>{3}));
  sp.split_reset();
  auto u = sp.split_equal(4, true, 0);
  ASSERT_TRUE(u.is_ok());
  EXPECT_EQ(u->n_tokens(), 4u);
}

}  // namespace
