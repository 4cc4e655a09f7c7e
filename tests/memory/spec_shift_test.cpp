// Behavioural tests, group A, part 2: position shifts (seq_add, seq_div), the pending
// K-shift bookkeeping, shift-less models (T10-T15, T89/T90 at the memory level)
// and copy-on-write of shared cells (T91).
#include "memory/harness.hpp"
#include <gtest/gtest.h>

namespace mnemo::memtest {
namespace {

using FullCacheSpec = traced_test;

std::vector<pos_t> shifts_of(const memory::full_cache<float>& c,
                             const std::vector<std::size_t>& cells) {
  std::vector<pos_t> r;
  for (std::size_t i : cells) r.push_back(c.cells().shift(i));
  return r;
}

TEST_F(FullCacheSpec, T10ShiftAfterRemoveThenDecode) {
  auto c = make_cache<float>(16, 1);
  ASSERT_EQ(dec(c, 0, 0, 9), k_ok);
  ASSERT_TRUE(c.seq_rm(0, 2, 5).is_ok());
  ASSERT_TRUE(c.seq_add(0, 5, -1, -3).is_ok());
  EXPECT_EQ(c.seq_pos_min(0), 0);
  EXPECT_EQ(c.seq_pos_max(0), 6);
  EXPECT_EQ(c.used(), 7u);
  EXPECT_EQ(positions(c, 0), range(0, 6));
  EXPECT_TRUE(c.has_pending_shift());  // init_update would report SUCCESS
  // Cells 0, 1 kept their positions; cells 5..9 (old pos 5..9) carry -3.
  EXPECT_EQ(shifts_of(c, cells_of(c, 0)), (std::vector<pos_t>{0, 0, -3, -3, -3, -3, -3}));
  const auto k_before = raw_bytes(c, 0);
  EXPECT_EQ(dec(c, 0, 7, 7), k_ok);  // the decode applies the K-shift first
  EXPECT_FALSE(c.has_pending_shift());
  for (std::size_t i = 0; i < c.size(); ++i) EXPECT_EQ(c.cells().shift(i), 0) << "cell " << i;
  // The shifted cells' keys were re-rotated, the others were not touched.
  const auto k_after = raw_bytes(c, 0);
  const std::size_t row = c.storage().k_row_bytes();
  for (std::size_t i : {0u, 1u, 5u, 9u}) {
    const bool same = std::equal(k_before.begin() + i * row, k_before.begin() + (i + 1) * row,
                                 k_after.begin() + i * row);
    EXPECT_EQ(same, i < 2) << "layer 0 cell " << i;
  }
  EXPECT_EQ(check_invariants(c), "");
}

TEST_F(FullCacheSpec, T11ShiftBelowZeroFreesCells) {
  auto c = make_cache<float>(16, 1);
  ASSERT_EQ(dec(c, 0, 0, 9), k_ok);
  ASSERT_TRUE(c.seq_add(0, 0, 3, -2).is_ok());
  EXPECT_EQ(c.used(), 8u);
  EXPECT_EQ(c.seq_pos_min(0), 0);
  EXPECT_EQ(c.seq_pos_max(0), 9);
  EXPECT_EQ(positions(c, 0), (std::vector<pos_t>{0, 3, 4, 5, 6, 7, 8, 9}));
  EXPECT_TRUE(c.cells().empty(0));
  EXPECT_TRUE(c.cells().empty(1));
  EXPECT_EQ(c.cells().pos(2), 0);
  EXPECT_EQ(c.cells().shift(2), -2);
  // The freed cells are found first by the next decode (head lowered).
  ASSERT_EQ(dec(c, 0, 10, 10), k_ok);
  EXPECT_EQ(c.cells().pos(0), 10);
  EXPECT_EQ(check_invariants(c), "");
}

TEST_F(FullCacheSpec, T12ZeroShiftOrEmptyRangeChangesNothing) {
  auto c = make_cache<float>(16, 1);
  ASSERT_EQ(dec(c, 0, 0, 9), k_ok);
  const auto before = snap(c);
  EXPECT_TRUE(c.seq_add(0, -1, -1, 0).is_ok());
  EXPECT_TRUE(c.seq_add(0, 4, 4, 5).is_ok());
  EXPECT_TRUE(c.seq_add(0, 6, 2, 5).is_ok());  // p0 > p1: empty range
  EXPECT_TRUE(c.seq_div(0, 3, 3, 2).is_ok());
  EXPECT_FALSE(c.has_pending_shift());  // init_update would report NO_UPDATE
  EXPECT_EQ(first_difference(before, snap(c)), "");
  EXPECT_TRUE(c.update().is_ok());
  EXPECT_EQ(first_difference(before, snap(c)), "");
}

// D-1 fixed: the pending shift of seq_div is new - old.
TEST_F(FullCacheSpec, T13DivideRecordsNewMinusOld) {
  auto c = make_cache<float>(16, 1);
  ASSERT_EQ(dec(c, 0, 0, 7), k_ok);
  ASSERT_TRUE(c.seq_div(0, 0, 8, 2).is_ok());
  std::vector<pos_t> pos, shift;
  for (std::size_t i = 0; i < 8; ++i) {
    pos.push_back(c.cells().pos(i));
    shift.push_back(c.cells().shift(i));
  }
  EXPECT_EQ(pos, (std::vector<pos_t>{0, 0, 1, 1, 2, 2, 3, 3}));
  EXPECT_EQ(shift, (std::vector<pos_t>{0, -1, -1, -2, -2, -3, -3, -4}));
  EXPECT_EQ(c.seq_pos_min(0), 0);
  EXPECT_EQ(c.seq_pos_max(0), 3);
  EXPECT_EQ(c.used(), 8u);
  EXPECT_TRUE(c.has_pending_shift());
  EXPECT_EQ(check_invariants(c), "");
}

TEST_F(FullCacheSpec, T13ShiftsAccumulateUntilUpdate) {
  auto c = make_cache<float>(16, 1);
  ASSERT_EQ(dec(c, 0, 0, 7), k_ok);
  ASSERT_TRUE(c.seq_add(0, 4, -1, 10).is_ok());  // 4..7 -> 14..17
  ASSERT_TRUE(c.seq_div(0, 14, -1, 2).is_ok());  // 14..17 -> 7, 7, 8, 8
  EXPECT_EQ(shifts_of(c, {4, 5, 6, 7}), (std::vector<pos_t>{3, 2, 2, 1}));
  ASSERT_TRUE(c.update().is_ok());
  EXPECT_FALSE(c.has_pending_shift());
  EXPECT_EQ(shifts_of(c, {4, 5, 6, 7}), (std::vector<pos_t>{0, 0, 0, 0}));
}

TEST_F(FullCacheSpec, T14DivideByOneIsNoOpAndByZeroIsRefused) {
  auto c = make_cache<float>(16, 1);
  ASSERT_EQ(dec(c, 0, 0, 9), k_ok);
  const auto before = snap(c);
  EXPECT_TRUE(c.seq_div(0, -1, -1, 1).is_ok());
  EXPECT_FALSE(c.has_pending_shift());
  EXPECT_EQ(c.seq_div(0, -1, -1, 0).code(), status_code::invalid_argument);
  EXPECT_EQ(c.seq_div(0, -1, -1, -2).code(), status_code::invalid_argument);
  EXPECT_EQ(first_difference(before, snap(c)), "");
}

// M-RoPE-like models (and T90's Step35-like case): seq_add / seq_div are refused
// at once with a status, nothing changes (llama.cpp aborts, sooner or later).
TEST_F(FullCacheSpec, T15NoShiftModelRefusesShifts) {
  cache_options o;
  o.shift_supported = false;
  auto c = make_cache<float>(16, 1, o);
  EXPECT_FALSE(c.can_shift());
  ASSERT_EQ(dec(c, 0, 0, 9), k_ok);
  const auto before = snap(c);
  EXPECT_EQ(c.seq_add(0, 5, -1, 3).code(), status_code::unsupported);
  EXPECT_EQ(c.seq_div(0, -1, -1, 2).code(), status_code::unsupported);
  EXPECT_EQ(first_difference(before, snap(c)), "");
  EXPECT_TRUE(c.seq_rm(0, 5, -1).is_ok());  // removal is still fine
  EXPECT_EQ(c.seq_pos_max(0), 4);
}

// T89 at the memory level: with rope_layout::none (ALiBi) a shift moves positions
// and rotates nothing.
TEST_F(FullCacheSpec, T89NoRopeShiftRotatesNothing) {
  cache_options o;
  o.rope.layout = attention::rope_layout::none;
  auto c = make_cache<float>(16, 1, o);
  ASSERT_EQ(dec(c, 0, 0, 9), k_ok);
  const auto k_before = raw_bytes(c, 0);
  ASSERT_TRUE(c.seq_add(0, 5, -1, 7).is_ok());
  EXPECT_TRUE(c.has_pending_shift());
  ASSERT_TRUE(c.update().is_ok());
  EXPECT_FALSE(c.has_pending_shift());
  EXPECT_TRUE(raw_bytes(c, 0) == k_before);
  EXPECT_EQ(c.seq_pos_max(0), 16);
}

// D-18: seq 1 shares every cell with seq 0; shifting seq 0 copies the shared cells
// in range first, so seq 1 keeps 0..9 (llama.cpp moves both to 19).
TEST_F(FullCacheSpec, T91ShiftOfSharedCellsCopiesOnWrite) {
  auto c = make_cache<float>(16, 2);
  ASSERT_EQ(dec(c, 0, 0, 9), k_ok);
  ASSERT_TRUE(c.seq_cp(0, 1, -1, -1).is_ok());
  const auto k_before = raw_bytes(c, 0), v_before = raw_bytes(c, 1);
  ASSERT_TRUE(c.seq_add(0, 5, -1, 10).is_ok());
  EXPECT_EQ(c.seq_pos_max(0), 19);
  EXPECT_EQ(c.seq_pos_max(1), 9);
  EXPECT_EQ(positions(c, 1), range(0, 9));
  std::vector<pos_t> want0 = range(0, 4), tail = range(15, 19);
  want0.insert(want0.end(), tail.begin(), tail.end());
  EXPECT_EQ(positions(c, 0), want0);
  EXPECT_EQ(c.used(), 15u);
  // Cells 0..4 stay shared; seq 1 alone keeps cells 5..9 unshifted.
  for (std::size_t i = 0; i < 10; ++i) {
    seq_set want = seq_set::of(1);
    if (i < 5) want.insert(0);
    EXPECT_EQ(c.cells().owners(i), want) << "cell " << i;
    EXPECT_EQ(c.cells().shift(i), 0) << "cell " << i;
  }
  // The private copies carry seq 0's rows and the pending shift.
  const std::size_t krow = c.storage().k_row_bytes(), vrow = c.storage().v_row_bytes();
  for (std::size_t i = 10; i < 15; ++i) {
    ASSERT_EQ(c.cells().owners(i), seq_set::of(0)) << "cell " << i;
    EXPECT_EQ(c.cells().shift(i), 10) << "cell " << i;
    const std::size_t from = static_cast<std::size_t>(c.cells().pos(i) - 10);
    EXPECT_EQ(std::memcmp(c.storage().k(0, i), k_before.data() + from * krow, krow), 0)
        << "K of cell " << i << " should be a copy of cell " << from;
    EXPECT_EQ(std::memcmp(c.storage().v(1, i), v_before.data() + (c.size() + from) * vrow, vrow), 0)
        << "layer 1 V of cell " << i << " should be a copy of cell " << from;
  }
  // The K-shift rotates only the copies; seq 1's keys keep their bytes.
  ASSERT_TRUE(c.update().is_ok());
  EXPECT_EQ(std::memcmp(c.storage().k(0, 0), k_before.data(), 10 * krow), 0);
  EXPECT_EQ(check_invariants(c), "");
}

TEST_F(FullCacheSpec, T91DivideOfSharedCellsCopiesOnWrite) {
  auto c = make_cache<float>(16, 2);
  ASSERT_EQ(dec(c, 0, 0, 5), k_ok);
  ASSERT_TRUE(c.seq_cp(0, 1, 2, -1).is_ok());
  ASSERT_TRUE(c.seq_div(1, -1, -1, 2).is_ok());
  EXPECT_EQ(positions(c, 0), range(0, 5));
  EXPECT_EQ(positions(c, 1), (std::vector<pos_t>{1, 1, 2, 2}));
  EXPECT_EQ(c.used(), 10u);
  EXPECT_EQ(check_invariants(c), "");
}

TEST_F(FullCacheSpec, T91CopyOnWriteWithoutRoomChangesNothing) {
  auto c = make_cache<float>(12, 2);
  ASSERT_EQ(dec(c, 0, 0, 9), k_ok);
  ASSERT_TRUE(c.seq_cp(0, 1, -1, -1).is_ok());
  const auto before = snap(c);
  // 5 shared cells to move apart, 2 free cells.
  EXPECT_EQ(c.seq_add(0, 5, -1, 10).code(), status_code::no_space);
  EXPECT_EQ(first_difference(before, snap(c)), "");
  // A range needing exactly the free cells works.
  EXPECT_TRUE(c.seq_add(0, 8, -1, 10).is_ok());
  EXPECT_EQ(c.used(), 12u);
  EXPECT_EQ(c.seq_pos_max(0), 19);
  EXPECT_EQ(c.seq_pos_max(1), 9);
}

// A coupled decode ({0,1}@p) creates shared cells too.
TEST_F(FullCacheSpec, T91ShiftAfterCoupledDecode) {
  auto c = make_cache<float>(16, 2);
  ASSERT_EQ(decode(c, {at({0, 1}, 0), at({0, 1}, 1), at({0, 1}, 2)}), k_ok);
  ASSERT_TRUE(c.seq_add(1, -1, -1, 4).is_ok());
  EXPECT_EQ(positions(c, 0), range(0, 2));
  EXPECT_EQ(positions(c, 1), range(4, 6));
  EXPECT_EQ(c.used(), 6u);
  EXPECT_EQ(check_invariants(c), "");
}

}  // namespace
}  // namespace mnemo::memtest
