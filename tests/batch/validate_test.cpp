// Batch validation: tests T78..T84 and T86, then the rules of docs/batch.md one by one.
#include <string>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "mnemo/batch/split.hpp"
#include "mnemo/batch/validate.hpp"

namespace {

using namespace mnemo;

batch_limits limits(std::uint32_t n_seq_max = 4) {
  batch_limits l;
  l.n_vocab = 100;
  l.n_seq_max = n_seq_max;
  return l;
}

/// Passes when `r` failed with `code` and a message containing every fragment.
::testing::AssertionResult fails_with(const result<validated_batch>& r, status_code code,
                                      std::initializer_list<const char*> fragments) {
  if (r.is_ok()) return ::testing::AssertionFailure() << "validation succeeded";
  const std::string msg = r.error().to_string();
  if (r.error().code() != code) return ::testing::AssertionFailure() << "wrong code: " << msg;
  for (const char* f : fragments)
    if (msg.find(f) == std::string::npos)
      return ::testing::AssertionFailure() << "message lacks \"" << f << "\": " << msg;
  return ::testing::AssertionSuccess() << msg;
}

std::vector<pos_t> positions_of(const validated_batch& v) {
  return {v.positions().begin(), v.positions().end()};
}
std::vector<std::uint8_t> outputs_of(const validated_batch& v) {
  return {v.outputs().begin(), v.outputs().end()};
}

// ---- T78..T86 --------------------------------------------------------------------

TEST(BatchValidation, T78InvalidTokenSeqIdOrEmptyBatch) {
  batch neg;
  neg.add(1, 0, {0}, false).add(-1, 1, {0}, true);
  EXPECT_TRUE(fails_with(validate(neg, limits()), status_code::invalid_argument,
                         {"token 1", "invalid token id -1"}));
  batch big;
  big.add(100, 0, {0}, true);
  EXPECT_TRUE(fails_with(validate(big, limits()), status_code::invalid_argument,
                         {"token 0", "invalid token id 100", "[0, 100)"}));
  batch seq_neg;
  seq_neg.add(1, 0, {0}, false).add(2, 0, {-1}, true);
  EXPECT_TRUE(fails_with(validate(seq_neg, limits()), status_code::invalid_argument,
                         {"token 1", "invalid sequence id -1"}));
  batch seq_big;
  seq_big.add(1, 0, {0, 4}, true);
  EXPECT_TRUE(fails_with(validate(seq_big, limits(4)), status_code::invalid_argument,
                         {"token 0", "invalid sequence id 4", "n_seq_max = 4"}));
  const batch empty;
  EXPECT_TRUE(fails_with(validate(empty, limits()), status_code::invalid_argument, {"empty"}));
}

TEST(BatchValidation, T79AutoFillOnEmptyAndNonEmptyMemory) {
  const std::vector<token_id> toks{1, 2, 3, 4};
  const batch b = batch::one(toks);
  auto v = validate(b, limits());
  ASSERT_TRUE(v.is_ok()) << v.error().to_string();
  EXPECT_EQ(positions_of(*v), (std::vector<pos_t>{0, 1, 2, 3}));
  EXPECT_EQ(outputs_of(*v), (std::vector<std::uint8_t>{0, 0, 0, 1}));
  EXPECT_EQ(v->n_outputs(), 1u);
  for (std::uint32_t i = 0; i < 4; ++i) EXPECT_EQ(v->primary(i), 0);

  auto w = validate(b, limits(), position_table{}.set(0, 0, 9));
  ASSERT_TRUE(w.is_ok()) << w.error().to_string();
  EXPECT_EQ(positions_of(*w), (std::vector<pos_t>{10, 11, 12, 13}));
}

TEST(BatchValidation, T80AutoPositionsWithCoupling) {
  batch b;
  b.add(1, {0, 1}).add(2, {0}).add(3, {1});
  auto v = validate(b, limits(2));
  ASSERT_TRUE(v.is_ok()) << v.error().to_string();
  EXPECT_EQ(positions_of(*v), (std::vector<pos_t>{0, 1, 1}));
  EXPECT_TRUE(v->has_coupled());
  // Accepted by the splits a unified memory uses.
  batch_splitter sp(*v);
  EXPECT_TRUE(sp.split_all(simple_split{8}).is_ok());
  EXPECT_TRUE(sp.split_all(equal_split{8, false, 0}).is_ok());
}

TEST(BatchValidation, T81GapsAndDecreasingPositions) {
  batch gap;
  gap.add(1, 0, {0}, false).add(2, 2, {0}, true);
  EXPECT_TRUE(fails_with(validate(gap, limits()), status_code::invalid_argument,
                         {"token 1", "sequence 0", "position 1 is missing"}));
  batch dup;
  dup.add(1, 0, {0}, false).add(2, 0, {0}, false).add(3, 1, {0}, true);
  EXPECT_TRUE(validate(dup, limits()).is_ok());
  batch dec;
  dec.add(1, 0, {0}, false).add(2, 2, {0}, false).add(3, 1, {0}, true);
  EXPECT_TRUE(fails_with(validate(dec, limits()), status_code::invalid_argument,
                         {"token 2", "sequence 0", "from position 2", "to 1", "decrease"}));
}

TEST(BatchValidation, T82CoupledSequencesThatDiverged) {
  batch b;
  b.add(1, 6, {0, 1}, true);
  EXPECT_TRUE(fails_with(validate(b, limits(), position_table{}.set(0, 0, 5).set(1, 2, 5)),
                         status_code::invalid_argument,
                         {"token 0", "sequences 0 and 1", "diverged", "[0, 5]", "[2, 5]"}));
  EXPECT_TRUE(validate(b, limits(), position_table{}.set(0, 0, 5).set(1, 0, 5)).is_ok());
}

TEST(BatchValidation, T83OversizedBatchIsAStatusNotAnAbort) {
  const std::vector<token_id> toks(9, 1);
  const batch b = batch::one(toks);
  batch_limits l = limits();
  l.n_batch_max = 8;
  EXPECT_TRUE(fails_with(validate(b, l), status_code::out_of_range, {"9 tokens", "n_batch is 8"}));
  l.n_batch_max = 9;
  EXPECT_TRUE(validate(b, l).is_ok());
}

TEST(BatchValidation, T84EmbeddingsContextForcesEveryOutput) {
  batch b;
  b.add(1, 0, {0}, false).add(2, 1, {0}, true).add(3, 2, {0}, false);
  batch_limits l = limits();
  l.embeddings_all = true;
  auto v = validate(b, l);
  ASSERT_TRUE(v.is_ok()) << v.error().to_string();
  EXPECT_EQ(v->n_outputs(), 3u);
  EXPECT_TRUE(v->outputs_forced());
  EXPECT_EQ(outputs_of(*v), (std::vector<std::uint8_t>{1, 1, 1}));
}

TEST(BatchValidation, T86SequencesThatMergeAreRejected) {
  // D-7: llama.cpp's intersection test accepts this batch; the subset test does not.
  batch b;
  b.add(1, 0, {0, 1, 2}, false)
      .add(2, 1, {0, 1}, false)
      .add(3, 1, {2}, false)
      .add(4, 2, {1, 2}, true);
  EXPECT_TRUE(fails_with(validate(b, limits()), status_code::invalid_argument,
                         {"token 3", "sequence 1", "{1, 2}", "token 1", "{0, 1}", "merge"}));
}

// ---- the rules one by one -----------------------------------------------------------

TEST(BatchValidation, NSeqMaxMustBeWithinOneTo256) {
  const batch b = batch::one(std::vector<token_id>{1});
  EXPECT_TRUE(fails_with(validate(b, limits(0)), status_code::invalid_argument, {"n_seq_max"}));
  EXPECT_TRUE(
      fails_with(validate(b, limits(257)), status_code::invalid_argument, {"n_seq_max = 257"}));
  EXPECT_TRUE(validate(b, limits(256)).is_ok());
}

TEST(BatchValidation, VocabularyZeroLeavesIdsUncheckedButNotNegative) {
  batch b;
  b.add(1 << 30, 0, {0}, true);
  batch_limits l = limits();
  l.n_vocab = 0;
  EXPECT_TRUE(validate(b, l).is_ok());
  b.add(-3, 1, {0}, true);
  EXPECT_TRUE(fails_with(validate(b, l), status_code::invalid_argument, {"token 1"}));
}

TEST(BatchValidation, TokensAndEmbeddingsMixed) {
  const std::vector<float> row(4, 0.5f);
  batch b;
  b.add(1, 0, {0}, false).add(2, 1, {0}, false).add_embd(row, 2, {0}, true);
  EXPECT_TRUE(fails_with(validate(b, limits()), status_code::invalid_argument,
                         {"token 2", "mixed", "token id"}));
}

TEST(BatchValidation, EmbeddingRowLengths) {
  const std::vector<float> row4(4, 0.5f), row3(3, 0.5f);
  batch b;
  b.add_embd(row4).add_embd(row3);
  EXPECT_TRUE(fails_with(validate(b, limits()), status_code::invalid_argument,
                         {"token 1", "differ in length"}));
  batch c;
  c.add_embd(row4).add_embd(row4);
  batch_limits l = limits();
  l.n_embd = 8;
  EXPECT_TRUE(fails_with(validate(c, l), status_code::invalid_argument, {"n_embd = 8"}));
  l.n_embd = 4;
  auto v = validate(c, l);
  ASSERT_TRUE(v.is_ok()) << v.error().to_string();
  EXPECT_TRUE(v->has_embeddings());
  EXPECT_EQ(v->embd(1).size(), 4u);
}

TEST(BatchValidation, EverySetNeedsOneToManyDistinctIds) {
  batch none;
  none.add(1, 0, std::span<const seq_id>{}, true);
  EXPECT_TRUE(fails_with(validate(none, limits()), status_code::invalid_argument,
                         {"token 0", "no sequence id"}));
  batch twice;
  twice.add(1, 0, {0}, false).add(2, 1, {0, 2, 0}, true);
  EXPECT_TRUE(fails_with(validate(twice, limits()), status_code::invalid_argument,
                         {"token 1", "sequence 0 is listed twice"}));
}

TEST(BatchValidation, PositionsForAllTokensOrNone) {
  batch b;
  b.add(1, 0, {0}, false).add(2, {0});
  EXPECT_TRUE(fails_with(validate(b, limits()), status_code::invalid_argument,
                         {"token 1", "every token or for none"}));
  batch c;
  c.add(1, {0}).add(2, 1, {0}, true);
  EXPECT_TRUE(fails_with(validate(c, limits()), status_code::invalid_argument, {"token 1"}));
  batch neg;
  neg.add(1, -2, {0}, true);
  EXPECT_TRUE(fails_with(validate(neg, limits()), status_code::out_of_range,
                         {"token 0", "negative position -2"}));
}

TEST(BatchValidation, ContinuityWithTheMemoryNamesSequenceAndExpectedPosition) {
  batch b;
  b.add(1, 0, {0}, false).add(2, 12, {3}, false).add(3, 13, {3}, true);
  EXPECT_TRUE(fails_with(validate(b, limits(), position_table{}.set(3, 0, 7)),
                         status_code::invalid_argument,
                         {"token 1: sequence 3 continues at position 12 but the memory holds up "
                          "to 7 (expected 8)"}));
  // Restarting below the memory is the same error.
  EXPECT_TRUE(fails_with(validate(b, limits(), position_table{}.set(3, 0, 20)),
                         status_code::invalid_argument, {"expected 21"}));
  EXPECT_TRUE(validate(b, limits(), position_table{}.set(3, 0, 11)).is_ok());
  // An empty sequence in the memory accepts any start.
  EXPECT_TRUE(validate(b, limits()).is_ok());
}

TEST(BatchValidation, SecondaryIdsMustContinueTheirOwnSequence) {
  batch b;
  b.add(1, 6, {0, 1}, true);
  EXPECT_TRUE(fails_with(validate(b, limits(), position_table{}.set(0, 0, 5).set(1, 0, 3)),
                         status_code::invalid_argument, {"sequence 1 continues at position 6"}));
}

TEST(BatchValidation, AutoPositionsFirstIdDecidesAndAllIdsAdvance) {
  batch b;
  b.add(1, {0}).add(2, {1}).add(3, {0}).add(4, {2, 3});
  const position_table mem = position_table{}.set(0, 0, 4).set(1, 0, 9).set(2, 3, 6).set(3, 3, 6);
  auto v = validate(b, limits(), mem);
  ASSERT_TRUE(v.is_ok()) << v.error().to_string();
  EXPECT_EQ(positions_of(*v), (std::vector<pos_t>{5, 10, 6, 7}));
  // Advancing all ids: seq 1 continues where the coupled token left it.
  batch c;
  c.add(1, {0, 1}).add(2, {1}).add(3, {0});
  auto w = validate(c, limits(), position_table{}.set(0, 0, 2).set(1, 0, 2));
  ASSERT_TRUE(w.is_ok()) << w.error().to_string();
  EXPECT_EQ(positions_of(*w), (std::vector<pos_t>{3, 4, 4}));
}

TEST(BatchValidation, AutoPositionsThatOverflowAreAStatus) {
  batch b;
  b.add(1, {0}).add(2, {0});
  const pos_t top = std::numeric_limits<pos_t>::max();
  EXPECT_TRUE(fails_with(validate(b, limits(), position_table{}.set(0, 0, top - 1)),
                         status_code::out_of_range, {"token 1", "sequence 0"}));
}

TEST(BatchValidation, OutputRules) {
  batch some;  // all omitted: the last token
  some.add(1, {0}).add(2, {0}).add(3, {0});
  auto a = validate(some, limits());
  ASSERT_TRUE(a.is_ok());
  EXPECT_EQ(outputs_of(*a), (std::vector<std::uint8_t>{0, 0, 1}));

  batch mixed;  // explicit flags win; omitted ones then count as "no"
  mixed.add(1, {0}).add(2, {0}, true).add(3, {0});
  auto m = validate(mixed, limits());
  ASSERT_TRUE(m.is_ok());
  EXPECT_EQ(outputs_of(*m), (std::vector<std::uint8_t>{0, 1, 0}));

  batch exp;
  exp.add(1, 0, {0}, true).add(2, 1, {0}, false).add(3, 2, {0}, false);
  auto b = validate(exp, limits());
  ASSERT_TRUE(b.is_ok());
  EXPECT_EQ(outputs_of(*b), (std::vector<std::uint8_t>{1, 0, 0}));
  EXPECT_EQ(b->n_outputs(), 1u);
  EXPECT_FALSE(b->outputs_forced());

  batch_limits all = limits();
  all.embeddings_all = true;
  auto c = validate(some, all);  // omitted flags + embeddings: every token, not "forced"
  ASSERT_TRUE(c.is_ok());
  EXPECT_EQ(c->n_outputs(), 3u);
  EXPECT_FALSE(c->outputs_forced());

  batch none;
  none.add(1, 0, {0}, false);
  auto d = validate(none, limits());
  ASSERT_TRUE(d.is_ok());
  EXPECT_EQ(d->n_outputs(), 0u);
}

TEST(BatchValidation, SequenceSetsMayShrink) {
  batch b;  // a shared prompt, then three branches, one of which splits again
  b.add(1, 0, {0, 1, 2, 3}, false)
      .add(2, 1, {0, 1, 2, 3}, false)
      .add(3, 2, {0}, true)
      .add(4, 2, {1, 2}, false)
      .add(5, 3, {1}, true)
      .add(6, 3, {2}, true)
      .add(7, 2, {3}, true);
  auto v = validate(b, limits());
  ASSERT_TRUE(v.is_ok()) << v.error().to_string();
  // A sequence joining another one's set later is a merge.
  batch c;
  c.add(1, 0, {0}, false).add(2, 1, {0, 1}, true);
  EXPECT_TRUE(fails_with(validate(c, limits()), status_code::invalid_argument,
                         {"token 1", "sequence 0", "merge"}));
}

TEST(BatchValidation, DerivedData) {
  batch b;
  b.add(1, 4, {2, 0}, false)
      .add(2, 5, {2}, true)
      .add(3, 5, {0}, true)
      .add(4, 0, {3}, false)
      .add(5, 1, {3}, true);
  auto v = validate(b, limits());
  ASSERT_TRUE(v.is_ok()) << v.error().to_string();
  EXPECT_EQ(std::vector<seq_id>(v->seq_id_unq().begin(), v->seq_id_unq().end()),
            (std::vector<seq_id>{0, 2, 3}));
  EXPECT_EQ(v->seq_idx(0), 0);
  EXPECT_EQ(v->seq_idx(1), -1);
  EXPECT_EQ(v->seq_idx(3), 2);
  EXPECT_EQ(v->seq_idx(99), -1);
  EXPECT_EQ(v->seq_pos_min(2), 4);
  EXPECT_EQ(v->seq_pos_max(2), 5);
  EXPECT_EQ(v->seq_pos_min(1), -1);
  EXPECT_EQ(v->n_outputs(), 3u);
  EXPECT_TRUE(v->has_coupled());
  EXPECT_TRUE(v->coupled(0).contains(2));
  EXPECT_TRUE(v->coupled(2).contains(0));
  EXPECT_TRUE(v->coupled(3).empty());
  EXPECT_EQ(v->primary(0), 2);
  EXPECT_TRUE(v->set_of(0).contains(0));
  // Groups by exact set, numbered by first appearance.
  ASSERT_EQ(v->n_groups(), 4u);
  EXPECT_EQ(v->group_of(0), 0u);
  EXPECT_EQ(v->group_of(4), 3u);
  ASSERT_EQ(v->group_tokens(3).size(), 2u);
  EXPECT_EQ(v->group_tokens(3)[1], 4u);
  EXPECT_EQ(v->group_set(1), seq_set::of(2));
}

/// Counts memory queries: validation reads each sequence of the batch once.
struct counting_memory {
  mutable int calls = 0;
  pos_t pos_min(seq_id) const {
    ++calls;
    return -1;
  }
  pos_t pos_max(seq_id) const {
    ++calls;
    return -1;
  }
};
static_assert(position_source<counting_memory>);

TEST(BatchValidation, TheMemoryIsQueriedOncePerSequence) {
  const std::vector<token_id> toks(50, 1);
  batch b = batch::one(toks, 1);
  b.add(2, {3});
  b.add(3, {99});  // invalid: never queried, reported by validation
  counting_memory mem;
  EXPECT_FALSE(validate(b, limits(), mem).is_ok());
  EXPECT_EQ(mem.calls, 4);
}

TEST(BatchValidation, NothingChangesOnFailureOrSuccess) {
  batch b;
  b.add(1, {0}).add(2, {0});
  auto ok = validate(b, limits());
  ASSERT_TRUE(ok.is_ok());
  batch c = b;
  c.add(3, {7});
  EXPECT_FALSE(validate(c, limits()).is_ok());
  for (std::uint32_t i = 0; i < b.size(); ++i) {
    EXPECT_EQ(b.positions()[i], batch::k_auto_pos);
    EXPECT_EQ(b.outputs()[i], output_flag::unset);
  }
}

template <class B>
concept can_validate = requires(B&& b) {
  validate(std::forward<B>(b), batch_limits{});
};
static_assert(can_validate<batch&> && can_validate<const batch&>);
static_assert(!can_validate<batch>, "validating a temporary batch would dangle");

}  // namespace
