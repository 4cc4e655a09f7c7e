// The batch value type: builders, structure-of-arrays layout, one(), clear().
#include <vector>

#include <gtest/gtest.h>

#include "mnemo/batch/batch.hpp"

namespace {

using namespace mnemo;

TEST(Batch, AddStoresStructureOfArrays) {
  batch b;
  b.add(11, 0, {0}, false).add(12, 1, {0, 2}, true).add(13, 5, {1}, false);
  ASSERT_EQ(b.size(), 3u);
  EXPECT_EQ(b.input(), batch_input::tokens);
  EXPECT_EQ(std::vector<token_id>(b.tokens().begin(), b.tokens().end()),
            (std::vector<token_id>{11, 12, 13}));
  EXPECT_EQ(std::vector<pos_t>(b.positions().begin(), b.positions().end()),
            (std::vector<pos_t>{0, 1, 5}));
  EXPECT_EQ(std::vector<std::uint32_t>(b.seq_offsets().begin(), b.seq_offsets().end()),
            (std::vector<std::uint32_t>{0, 1, 3, 4}));
  EXPECT_EQ(std::vector<seq_id>(b.seq_ids().begin(), b.seq_ids().end()),
            (std::vector<seq_id>{0, 0, 2, 1}));
  ASSERT_EQ(b.seqs(1).size(), 2u);
  EXPECT_EQ(b.seqs(1)[1], 2);
  EXPECT_EQ(b.primary(1), 0);
  EXPECT_EQ(b.primary(2), 1);
  EXPECT_EQ(b.outputs()[0], output_flag::no);
  EXPECT_EQ(b.outputs()[1], output_flag::yes);
  EXPECT_EQ(b.mixed_at(), batch::k_none);
}

TEST(Batch, PrimaryIsTheFirstIdGivenNotTheSmallest) {
  batch b;
  b.add(1, 0, {3, 1, 2}, true);
  EXPECT_EQ(b.primary(0), 3);
}

TEST(Batch, AutoAddLeavesPositionAndOutputUnset) {
  batch b;
  b.add(7).add(8, {2});
  EXPECT_EQ(b.positions()[0], batch::k_auto_pos);
  EXPECT_EQ(b.outputs()[1], output_flag::unset);
  EXPECT_EQ(b.primary(0), 0);
  EXPECT_EQ(b.primary(1), 2);
}

TEST(Batch, OneIsLikeLlamaBatchGetOne) {
  const std::vector<token_id> toks{5, 6, 7};
  const batch b = batch::one(toks, 4);
  ASSERT_EQ(b.size(), 3u);
  for (std::uint32_t i = 0; i < 3; ++i) {
    EXPECT_EQ(b.tokens()[i], toks[i]);
    EXPECT_EQ(b.positions()[i], batch::k_auto_pos);
    EXPECT_EQ(b.outputs()[i], output_flag::unset);
    ASSERT_EQ(b.seqs(i).size(), 1u);
    EXPECT_EQ(b.primary(i), 4);
  }
  EXPECT_EQ(batch::one(toks).primary(0), 0);
}

TEST(Batch, EmbeddingRowsAreContiguous) {
  const std::vector<float> rows{1, 2, 3, 4, 5, 6};
  const batch b = batch::one_embd(rows, 3, 1);
  ASSERT_EQ(b.size(), 2u);
  EXPECT_TRUE(b.has_embeddings());
  EXPECT_EQ(b.n_embd(), 3u);
  EXPECT_TRUE(b.tokens().empty());
  EXPECT_EQ(b.embd(1)[0], 4.0f);
  EXPECT_EQ(b.embeddings().size(), 6u);
  EXPECT_EQ(b.primary(1), 1);
}

TEST(Batch, MixingIsRecordedNotRefused) {
  const std::vector<float> row{1, 2};
  batch b;
  b.add(1, 0, {0}, false).add_embd(row, 1, {0}, true);
  EXPECT_EQ(b.mixed_at(), 1u);
  batch e;
  e.add_embd(row, 0, {0}, false).add(3, 1, {0}, false);
  EXPECT_EQ(e.mixed_at(), 1u);
}

TEST(Batch, RowLengthMismatchIsRecordedAndLayoutKept) {
  const std::vector<float> a{1, 2, 3}, c{4, 5};
  batch b;
  b.add_embd(a).add_embd(c).add_embd(a);
  EXPECT_EQ(b.bad_row_at(), 1u);
  EXPECT_EQ(b.embeddings().size(), 9u);
  EXPECT_EQ(b.embd(2)[2], 3.0f);
  batch z;  // an empty first row fixes n_embd = 0; a later real row is the mismatch
  z.add_embd(std::span<const float>{}).add_embd(a);
  EXPECT_EQ(z.bad_row_at(), 1u);
}

TEST(Batch, ClearKeepsNothingButCapacity) {
  batch b;
  const std::vector<float> row{1, 2};
  b.add(1, 0, {0}, false).add_embd(row);
  b.clear();
  EXPECT_TRUE(b.empty());
  EXPECT_EQ(b.input(), batch_input::none);
  EXPECT_EQ(b.mixed_at(), batch::k_none);
  EXPECT_EQ(b.seq_offsets().size(), 1u);
  b.add_embd(row).add_embd(row);
  EXPECT_EQ(b.mixed_at(), batch::k_none);
  EXPECT_EQ(b.n_embd(), 2u);
}

}  // namespace
