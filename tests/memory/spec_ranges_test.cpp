// Behavioural tests, group A, part 1: ranges and the basic sequence operations of the
// unified (full) cache (T01-T09, T16), driven directly at the memory level.
#include "memory/harness.hpp"
#include <gtest/gtest.h>

namespace mnemo::memtest {
namespace {

using FullCacheSpec = traced_test;

TEST_F(FullCacheSpec, T01RemoveHalfOpenPrefix) {
  auto c = make_cache<float>(16, 1);
  ASSERT_EQ(dec(c, 0, 0, 9), k_ok);
  ASSERT_TRUE(c.seq_rm(0, -1, 3).is_ok());
  EXPECT_EQ(c.seq_pos_min(0), 3);  // [0, 3): pos 3 is kept
  EXPECT_EQ(c.seq_pos_max(0), 9);
  EXPECT_EQ(c.used(), 7u);
  EXPECT_EQ(positions(c, 0), range(3, 9));
  EXPECT_EQ(check_invariants(c), "");
}

TEST_F(FullCacheSpec, T02RemoveSuffixThenContinue) {
  auto c = make_cache<float>(16, 1);
  ASSERT_EQ(dec(c, 0, 0, 9), k_ok);
  ASSERT_TRUE(c.seq_rm(0, 5, -1).is_ok());
  EXPECT_EQ(c.seq_pos_max(0), 4);
  EXPECT_EQ(c.used(), 5u);
  EXPECT_EQ(dec(c, 0, 10, 10), k_invalid);  // position continuity (harness check)
  EXPECT_EQ(dec(c, 0, 5, 5), k_ok);
  EXPECT_EQ(positions(c, 0), range(0, 5));
  EXPECT_EQ(check_invariants(c), "");
}

TEST_F(FullCacheSpec, T03RemoveRangeOfEverySequence) {
  auto c = make_cache<float>(16, 2);
  ASSERT_EQ(dec(c, 0, 0, 4), k_ok);
  ASSERT_EQ(dec(c, 1, 0, 4), k_ok);
  ASSERT_TRUE(c.seq_rm(-1, 2, 4).is_ok());
  EXPECT_EQ(c.used(), 6u);
  for (seq_id s : {0, 1}) {
    EXPECT_EQ(c.seq_pos_min(s), 0) << "seq " << s;
    EXPECT_EQ(c.seq_pos_max(s), 4) << "seq " << s;
    EXPECT_EQ(positions(c, s), (std::vector<pos_t>{0, 1, 4})) << "seq " << s << ": holes at 2, 3";
  }
  EXPECT_EQ(dec(c, 0, 5, 5), k_ok);
  EXPECT_EQ(check_invariants(c), "");
}

TEST_F(FullCacheSpec, T04RemoveFromEmptyOrEmptyRange) {
  auto c = make_cache<float>(16, 4);
  EXPECT_TRUE(c.seq_rm(3, -1, -1).is_ok());
  EXPECT_EQ(c.seq_pos_min(3), -1);
  EXPECT_EQ(c.seq_pos_max(3), -1);
  ASSERT_EQ(dec(c, 0, 0, 9), k_ok);
  const auto before = snap(c);
  EXPECT_TRUE(c.seq_rm(0, 7, 7).is_ok());
  EXPECT_EQ(first_difference(before, snap(c)), "");
}

TEST_F(FullCacheSpec, T05CopyWholeSequenceSharesCells) {
  auto c = make_cache<float>(16, 2);
  ASSERT_EQ(dec(c, 0, 0, 9), k_ok);
  ASSERT_TRUE(c.seq_cp(0, 1, -1, -1).is_ok());
  EXPECT_EQ(c.used(), 10u);  // shared, not copied
  EXPECT_EQ(c.seq_pos_min(1), 0);
  EXPECT_EQ(c.seq_pos_max(1), 9);
  ASSERT_TRUE(c.seq_rm(0, 2, -1).is_ok());
  EXPECT_EQ(c.used(), 10u);
  EXPECT_EQ(c.seq_pos_max(0), 1);
  EXPECT_EQ(c.seq_pos_max(1), 9);
  ASSERT_TRUE(c.seq_rm(1, -1, -1).is_ok());
  EXPECT_EQ(c.used(), 2u);
  EXPECT_EQ(check_invariants(c), "");
}

TEST_F(FullCacheSpec, T06CopyPartialRange) {
  auto c = make_cache<float>(16, 2);
  ASSERT_EQ(dec(c, 0, 0, 9), k_ok);
  ASSERT_TRUE(c.seq_cp(0, 1, 3, 6).is_ok());
  EXPECT_EQ(c.seq_pos_min(1), 3);
  EXPECT_EQ(c.seq_pos_max(1), 5);
  EXPECT_EQ(dec(c, 1, 7, 7), k_invalid);
  EXPECT_EQ(dec(c, 1, 6, 6), k_ok);
  EXPECT_EQ(positions(c, 1), range(3, 6));
  EXPECT_EQ(check_invariants(c), "");
}

// Deliberate deviation (full_cache.hpp): seq_cp drops dst's cells in the range
// first, so dst never holds duplicate positions (llama.cpp: used 8, {0,0,1,1,2,2,3,4}).
TEST_F(FullCacheSpec, T07CopyIntoNonEmptyDestinationReplacesIt) {
  auto c = make_cache<float>(16, 2);
  ASSERT_EQ(dec(c, 0, 0, 4), k_ok);
  ASSERT_EQ(dec(c, 1, 0, 2), k_ok);
  ASSERT_TRUE(c.seq_cp(0, 1, -1, -1).is_ok());
  EXPECT_EQ(c.used(), 5u);
  EXPECT_EQ(c.seq_pos_min(1), 0);
  EXPECT_EQ(c.seq_pos_max(1), 4);
  EXPECT_EQ(positions(c, 1), range(0, 4));
  EXPECT_EQ(cells_of(c, 1), cells_of(c, 0));
  EXPECT_EQ(check_invariants(c), "");
}

TEST_F(FullCacheSpec, T07CopyPartialRangeKeepsDestinationOutsideIt) {
  auto c = make_cache<float>(16, 2);
  ASSERT_EQ(dec(c, 0, 0, 4), k_ok);
  ASSERT_EQ(dec(c, 1, 0, 4), k_ok);
  ASSERT_TRUE(c.seq_cp(0, 1, 1, 3).is_ok());
  EXPECT_EQ(positions(c, 1), range(0, 4));  // 1 and 2 now shared with seq 0, no duplicates
  EXPECT_EQ(c.used(), 8u);
  EXPECT_EQ(check_invariants(c), "");
}

TEST_F(FullCacheSpec, T08KeepOneSequence) {
  auto c = make_cache<float>(16, 3);
  ASSERT_EQ(dec(c, 0, 0, 4), k_ok);
  ASSERT_TRUE(c.seq_cp(0, 1, -1, -1).is_ok());
  ASSERT_EQ(dec(c, 2, 0, 2), k_ok);
  ASSERT_TRUE(c.seq_keep(0).is_ok());
  EXPECT_EQ(c.used(), 5u);
  EXPECT_EQ(c.seq_pos_max(0), 4);
  EXPECT_EQ(c.seq_pos_max(1), -1);
  EXPECT_EQ(c.seq_pos_max(2), -1);
  for (std::size_t i : cells_of(c, 0))
    EXPECT_EQ(c.cells().owners(i), seq_set::of(0)) << "cell " << i;
  EXPECT_EQ(check_invariants(c), "");
}

TEST_F(FullCacheSpec, T08KeepFreedCellsAreReused) {
  auto c = make_cache<float>(8, 2);
  ASSERT_EQ(dec(c, 0, 0, 3), k_ok);
  ASSERT_EQ(dec(c, 1, 0, 3), k_ok);
  ASSERT_TRUE(c.seq_keep(1).is_ok());
  EXPECT_EQ(dec(c, 0, 0, 3), k_ok);  // seq 0 is empty again; its 4 cells are free
  EXPECT_EQ(c.used(), 8u);
}

// T09 is a split-stream test (seq_keep on other streams); the unified strategy's
// equivalent is T08.

TEST_F(FullCacheSpec, T16ClearKeepsOrZeroesBytes) {
  auto c = make_cache<float>(16, 1);
  ASSERT_EQ(dec(c, 0, 0, 9), k_ok);
  const auto k_before = raw_bytes(c, 0), v_before = raw_bytes(c, 1);
  c.clear(false);
  EXPECT_EQ(c.used(), 0u);
  EXPECT_EQ(c.seq_pos_max(0), -1);
  EXPECT_EQ(c.cells().used_max_p1(), 0u);
  EXPECT_TRUE(raw_bytes(c, 0) == k_before) << "clear(false) must keep the raw K bytes";
  EXPECT_TRUE(raw_bytes(c, 1) == v_before) << "clear(false) must keep the raw V bytes";
  // The written rows really were non-zero, so the check above can fail.
  EXPECT_NE(std::count(k_before.begin(), k_before.end(), 0), static_cast<long>(k_before.size()));
  ASSERT_EQ(dec(c, 0, 0, 9), k_ok);
  c.clear(true);
  EXPECT_EQ(c.used(), 0u);
  for (int kind = 0; kind < 2; ++kind) {
    const auto b = raw_bytes(c, kind);
    const auto nz = std::find_if(b.begin(), b.end(), [](std::uint8_t x) { return x != 0; });
    EXPECT_TRUE(nz == b.end()) << (kind ? "V" : "K") << " byte " << (nz - b.begin())
                               << " is not zero after clear(true)";
  }
  EXPECT_EQ(check_invariants(c), "");
}

TEST_F(FullCacheSpec, T16ClearEndsPendingShift) {
  auto c = make_cache<float>(16, 1);
  ASSERT_EQ(dec(c, 0, 0, 9), k_ok);
  ASSERT_TRUE(c.seq_add(0, 5, -1, 3).is_ok());
  ASSERT_TRUE(c.has_pending_shift());
  c.clear(false);
  EXPECT_FALSE(c.has_pending_shift());
}

// D-14 / LIB: an id outside [0, n_seq_max) is an error status with no change,
// never an abort (T40, T44 analogues for the unified cache).
TEST_F(FullCacheSpec, SeqIdOutsideRangeIsRefused) {
  auto c = make_cache<float>(16, 4);
  ASSERT_EQ(dec(c, 0, 0, 4), k_ok);
  const auto before = snap(c);
  struct op_case {
    const char* name;
    status st;
  };
  const op_case cases[] = {
      {"seq_rm(4)", c.seq_rm(4, -1, -1)},       {"seq_rm(-2)", c.seq_rm(-2, -1, -1)},
      {"seq_cp(0, 4)", c.seq_cp(0, 4, -1, -1)}, {"seq_cp(-1, 1)", c.seq_cp(-1, 1, -1, -1)},
      {"seq_keep(4)", c.seq_keep(4)},           {"seq_keep(-1)", c.seq_keep(-1)},
      {"seq_add(4)", c.seq_add(4, -1, -1, 1)},  {"seq_div(255)", c.seq_div(255, -1, -1, 2)},
  };
  for (const auto& k : cases) EXPECT_EQ(k.st.code(), status_code::out_of_range) << k.name;
  EXPECT_EQ(first_difference(before, snap(c)), "");
  EXPECT_EQ(c.seq_pos_max(4), -1);
  EXPECT_EQ(c.seq_pos_min(-1), -1);
}

}  // namespace
}  // namespace mnemo::memtest
