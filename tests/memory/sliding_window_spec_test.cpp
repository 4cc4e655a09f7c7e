// The sliding-window memory against behavioural tests, group D (T31-T36, adapted to the
// memory object: explicit sizes, n_pad 1) and the lost-context rules of docs/sliding-window.md
// (LIB: statuses and earliest_restorable_pos instead of silent success, D-4).
#include <gtest/gtest.h>

// Before the harness: its state_of() names memory::state_write, found at definition.
#include "mnemo/memory/window/sliding_window.hpp"
#include "mnemo/memory/window/sliding_window_state.hpp"
//
#include "memory/harness.hpp"

namespace {

using namespace mnemo;
using namespace mnemo::memtest;
using attention::window_kind;
using swa = memory::sliding_window<float>;

swa make_swa(std::size_t size, seq_id n_seq, window_kind w, pos_t n_swa, bool full = false) {
  memory::sliding_window_config cfg;
  cfg.shape = default_shape();
  cfg.rope = default_rope();
  cfg.size = size;
  cfg.n_ctx = size;
  cfg.n_seq_max = n_seq;
  cfg.window = w;
  cfg.n_swa = n_swa;
  cfg.swa_full = full;
  auto c = swa::make(cfg);
  if (!c.is_ok()) {
    ADD_FAILURE() << c.error().to_string();
    std::abort();
  }
  return std::move(c).value();
}

class SlidingWindowSpec : public traced_test {};

// T31: size formula (n_swa 1024, n_ubatch 512), and can_shift (false when the cache
// holds less than the context).
TEST_F(SlidingWindowSpec, T31SizeFormula) {
  struct row {
    std::size_t n_ctx;
    seq_id n_seq;
    bool full;
    std::size_t cells;
    bool can_shift;
  };
  const row rows[] = {{4096, 1, false, 1536, false}, {4096, 4, false, 4096, true},
                      {4096, 3, true, 4096, true},   {1024, 1, false, 1024, true},
                      {2048, 1, false, 1536, false}, {8192, 2, false, 2560, false},
                      {8192, 1, false, 1536, false}};
  for (const row& r : rows) {
    memory::sliding_window_config cfg;
    cfg.shape = {1, 1, 32, 32};
    cfg.rope = default_rope();
    cfg.n_ctx = r.n_ctx;
    cfg.n_seq_max = r.n_seq;
    cfg.n_ubatch = 512;
    cfg.n_swa = 1024;
    cfg.swa_full = r.full;
    EXPECT_EQ(cfg.cells(), r.cells) << "n_ctx " << r.n_ctx << " n_seq " << r.n_seq;
    auto c = swa::make(cfg);
    ASSERT_TRUE(c.is_ok()) << c.error().to_string();
    EXPECT_EQ(c.value().size(), r.cells);
    EXPECT_EQ(c.value().can_shift(), r.can_shift) << "n_ctx " << r.n_ctx << " n_seq " << r.n_seq;
  }
  // The split-stream row of T31 (1536 per stream) is the same formula with n_seq 1.
  memory::sliding_window_config cfg;
  cfg.shape = {1, 1, 32, 32};
  cfg.n_ctx = 4096;
  cfg.n_swa = 1024;
  cfg.window = window_kind::none;
  EXPECT_FALSE(swa::make(cfg).is_ok()) << "a window of kind none is refused";
}

// T32: lazy reuse; cells 0..4 take positions 8..12 and the older positions are purged.
TEST_F(SlidingWindowSpec, T32LazyPruning) {
  auto c = make_swa(8, 1, window_kind::standard, 4);
  ASSERT_EQ(dec(c, 0, 0, 7), k_ok);
  ASSERT_EQ(dec(c, 0, 8, 12), k_ok);
  EXPECT_EQ(c.seq_pos_min(0), 5);
  EXPECT_EQ(c.seq_pos_max(0), 12);
  EXPECT_EQ(c.used(), 8u);
  for (std::size_t i = 0; i < 5; ++i) EXPECT_EQ(c.cells().pos(i), pos_t(8 + i)) << "cell " << i;
  EXPECT_EQ(c.horizon(0), 5);
  EXPECT_EQ(c.earliest_restorable_pos(0), 8);  // 8's window [5, 8] is held
  EXPECT_EQ(check_invariants(c), "");
}

// T33: one micro-batch of 6 needs 6 reusable cells, only 5 are masked for position 8.
TEST_F(SlidingWindowSpec, T33NoRoomChangesNothing) {
  auto c = make_swa(8, 1, window_kind::standard, 4);
  ASSERT_EQ(dec(c, 0, 0, 7), k_ok);
  const snapshot before = snap(c);
  EXPECT_EQ(dec(c, 0, 8, 13), k_no_space);
  EXPECT_EQ(c.seq_pos_min(0), 0);
  EXPECT_EQ(c.seq_pos_max(0), 7);
  EXPECT_EQ(first_difference(before, snap(c)), "");
}

// T34: with micro-batches of 3 the second reuses cells the first pushed out of the window.
TEST_F(SlidingWindowSpec, T34SmallMicroBatchesFit) {
  auto c = make_swa(8, 1, window_kind::standard, 4);
  ASSERT_EQ(dec(c, 0, 0, 7), k_ok);
  decode_options o;
  o.n_ubatch = 3;
  EXPECT_EQ(dec(c, 0, 8, 13, o), k_ok);
  EXPECT_EQ(c.seq_pos_min(0), 6);
  EXPECT_EQ(c.seq_pos_max(0), 13);
  EXPECT_EQ(check_invariants(c), "");
}

// T34 with a failure after both micro-batches: rollback restores the reused cells,
// rows included (a token is forgotten only when its batch commits).
TEST_F(SlidingWindowSpec, T34RollbackRestoresReusedCells) {
  auto c = make_swa(8, 1, window_kind::standard, 4);
  ASSERT_EQ(dec(c, 0, 0, 7), k_ok);
  const snapshot before = snap(c);
  decode_options o;
  o.n_ubatch = 3;
  o.fail_after = 1;
  EXPECT_EQ(dec(c, 0, 8, 13, o), k_aborted);
  EXPECT_EQ(first_difference(before, snap(c)), "");
  EXPECT_EQ(c.horizon(0), 0);
  EXPECT_TRUE(c.can_resume(0, 1));
}

// T35: whole restore of cells [2, 0, 1, 3] into 4 cells (n_swa 2), then dec(0, 4):
// cell 0 (pos 2) is reused and positions 0, 1 are purged.
TEST_F(SlidingWindowSpec, T35ContiguityPurge) {
  auto c = make_swa(4, 1, window_kind::standard, 2);
  // Build the whole state by hand in the documented payload layout.
  auto src = make_swa(4, 1, window_kind::standard, 2);
  ASSERT_EQ(dec(src, 0, 0, 3), k_ok);
  auto blob = state_of(src);
  ASSERT_FALSE(blob.empty());
  // Payload: kind, n_swa, full, n_h = 0, count 4, then cells (pos, 1, 0).
  const std::size_t cells_at = k_header_bytes + 16 + 4;
  const pos_t order[] = {2, 0, 1, 3};
  for (int i = 0; i < 4; ++i) write_at<pos_t>(blob, cells_at + 12 * i, order[i]);
  reseal(blob);
  ASSERT_TRUE(memory::state_read(c, blob).is_ok());
  ASSERT_EQ(dec(c, 0, 4, 4), k_ok);
  EXPECT_EQ(c.seq_pos_min(0), 3);
  EXPECT_EQ(c.seq_pos_max(0), 4);
  EXPECT_EQ(c.used(), 2u);
  EXPECT_EQ(c.cells().pos(0), 4);
  EXPECT_TRUE(c.cells().empty(1));
  EXPECT_TRUE(c.cells().empty(2));
  EXPECT_EQ(c.cells().pos(3), 3);
}

// T36: the per-sequence state holds the window ending at pos_max (6..9), the whole
// state every cell (10).
TEST_F(SlidingWindowSpec, T36CheckpointContent) {
  auto c = make_swa(16, 1, window_kind::standard, 4);
  ASSERT_EQ(dec(c, 0, 0, 9), k_ok);
  const auto one = state_of(c, 0), all = state_of(c);
  const std::size_t row = 2 * 2 * (2 * 32 * 4);  // 2 layers x (K, V) x 2 heads x 32 f32
  // header + window (12) + horizons (4 + 8 * n) + count (4) + cells (12 each) + rows
  EXPECT_EQ(read_at<std::uint32_t>(one, k_header_bytes + 12), 1u);  // horizon 6 of seq 0
  EXPECT_EQ(read_at<pos_t>(one, k_header_bytes + 20), 6);
  EXPECT_EQ(read_at<std::uint32_t>(one, k_header_bytes + 24), 4u);
  EXPECT_EQ(one.size(), k_header_bytes + 12 + 12 + 4 + 4 * 12 + 4 * row);
  EXPECT_EQ(read_at<std::uint32_t>(all, k_header_bytes + 16), 10u);
  EXPECT_EQ(all.size(), k_header_bytes + 12 + 4 + 4 + 10 * 12 + 10 * row);
  // The checkpoint restores into another sequence, which can resume at 9 or 10 only.
  auto d = make_swa(16, 2, window_kind::standard, 4);
  ASSERT_TRUE(memory::state_read(d, one, 1).is_ok());
  EXPECT_EQ(d.seq_pos_min(1), 6);
  EXPECT_EQ(d.earliest_restorable_pos(1), 9);
  EXPECT_TRUE(d.can_resume(1, 10));
  EXPECT_FALSE(d.can_resume(1, 8));
}

// Rolling back inside the last batch is valid; further back is refused with the
// sequence and the earliest position (llama.cpp: seq_rm returns true, D-4, T37).
TEST_F(SlidingWindowSpec, SuffixRemovalNeedsTheWindow) {
  auto c = make_swa(8, 1, window_kind::standard, 4);
  ASSERT_EQ(dec(c, 0, 0, 7), k_ok);
  ASSERT_EQ(dec(c, 0, 8, 12), k_ok);  // positions 0..4 forgotten; horizon 5
  EXPECT_EQ(c.earliest_restorable_pos(0), 8);
  const snapshot before = snap(c);
  const status st = c.seq_rm(0, 6, -1);
  EXPECT_EQ(st.code(), status_code::unsupported);
  EXPECT_NE(st.to_string().find("sequence 0"), std::string::npos) << st.to_string();
  EXPECT_NE(st.to_string().find("resume from is 8"), std::string::npos) << st.to_string();
  EXPECT_EQ(first_difference(before, snap(c)), "");
  EXPECT_TRUE(c.seq_rm(0, 8, -1).is_ok());  // back to the first token of the last batch
  EXPECT_EQ(c.seq_pos_max(0), 7);
  EXPECT_EQ(dec(c, 0, 8, 9), k_ok);
  EXPECT_TRUE(c.seq_rm(0, -1, -1).is_ok());  // starting over is always possible
  EXPECT_EQ(c.earliest_restorable_pos(0), 0);
  EXPECT_EQ(dec(c, 0, 0, 2), k_ok);
}

TEST_F(SlidingWindowSpec, BranchAndShiftNeedTheWindow) {
  auto c = make_swa(8, 2, window_kind::standard, 4);
  ASSERT_EQ(dec(c, 0, 0, 7), k_ok);
  ASSERT_EQ(dec(c, 0, 8, 12), k_ok);
  EXPECT_EQ(c.seq_cp(0, 1, -1, 6).code(), status_code::unsupported);  // continue at 6
  EXPECT_TRUE(c.seq_cp(0, 1, -1, 9).is_ok());                         // continue at 9
  EXPECT_EQ(c.horizon(1), 5);
  EXPECT_EQ(c.seq_pos_max(1), 8);
  ASSERT_TRUE(c.seq_rm(1, -1, -1).is_ok());
  // Shifting the tail away leaves 0 continuing at 6, whose window was forgotten; a
  // context shift that keeps the window's shape is fine.
  EXPECT_EQ(c.seq_add(0, 6, -1, -100).code(), status_code::unsupported);
  EXPECT_TRUE(c.seq_add(0, 0, -1, -3).is_ok());
  EXPECT_EQ(c.seq_pos_max(0), 9);
  EXPECT_EQ(c.horizon(0), 2);
  EXPECT_EQ(c.earliest_restorable_pos(0), 5);
  EXPECT_EQ(check_invariants(c), "");
}

// A token at an old position without the seq_rm is refused by prepare too.
TEST_F(SlidingWindowSpec, ContinuationFromAForgottenPlaceIsRefused) {
  auto c = make_swa(8, 1, window_kind::standard, 4);
  ASSERT_EQ(dec(c, 0, 0, 7), k_ok);
  ASSERT_EQ(dec(c, 0, 8, 12), k_ok);
  std::vector<pos_t> pos{3};
  std::vector<seq_set> seqs{seq_set::of(0)};
  memory::ubatch_tokens ub{pos, seqs};
  EXPECT_EQ(c.prepare({&ub, 1}).code(), status_code::unsupported);
  EXPECT_FALSE(c.in_batch());
}

// swa_full forgets nothing: every rollback and shift stays possible.
TEST_F(SlidingWindowSpec, SwaFullForgetsNothing) {
  auto c = make_swa(16, 1, window_kind::standard, 4, true);
  ASSERT_EQ(dec(c, 0, 0, 15), k_ok);
  EXPECT_EQ(dec(c, 0, 16, 16), k_no_space);
  EXPECT_EQ(c.earliest_restorable_pos(0), 0);
  EXPECT_TRUE(c.seq_rm(0, 1, -1).is_ok());
  EXPECT_TRUE(c.can_shift());
}

// Chunked and symmetric windows: the earliest position follows their own arithmetic.
TEST_F(SlidingWindowSpec, ChunkedAndSymmetricResumePoints) {
  auto ch = make_swa(8, 1, window_kind::chunked, 4);
  ASSERT_EQ(dec(ch, 0, 0, 7), k_ok);
  ASSERT_EQ(dec(ch, 0, 8, 9), k_ok);  // 8's chunk starts at 8: 0..7 are reusable
  EXPECT_EQ(ch.horizon(0), 2);
  EXPECT_EQ(ch.earliest_restorable_pos(0), 4);  // chunk [4, 8) is held from 4 up
  EXPECT_EQ(ch.seq_rm(0, 3, -1).code(), status_code::unsupported);
  EXPECT_TRUE(ch.seq_rm(0, 4, -1).is_ok());
  auto sy = make_swa(8, 1, window_kind::symmetric, 4);
  ASSERT_EQ(dec(sy, 0, 0, 7), k_ok);
  ASSERT_EQ(dec(sy, 0, 8, 9), k_ok);  // 8 keeps |8 - p| <= 2: 0..5 reusable
  EXPECT_EQ(sy.horizon(0), 2);
  EXPECT_EQ(sy.earliest_restorable_pos(0), 4);
}

// The window arithmetic against is_masked_by_window, by brute force.
TEST(WindowRules, LowestKeptAndFirstResumableMatchTheMask) {
  for (window_kind w : {window_kind::standard, window_kind::chunked, window_kind::symmetric})
    for (pos_t n = 1; n <= 9; ++n)
      for (pos_t q = 0; q < 40; ++q) {
        pos_t lo = -50;  // the first kept key from below; every key up to q is kept from it
        while (attention::is_masked_by_window(w, n, lo, q)) ++lo;
        for (pos_t p = lo; p <= q; ++p) ASSERT_FALSE(attention::is_masked_by_window(w, n, p, q));
        ASSERT_EQ(memory::lowest_kept(w, n, q), lo)
            << attention::to_string(w) << " n " << n << " q " << q;
        for (pos_t h = 1; h < 30; ++h) {
          pos_t first = 0;
          while (memory::lowest_kept(w, n, first) < h) ++first;
          ASSERT_EQ(memory::first_unneeding(w, n, h), first)
              << attention::to_string(w) << " n " << n << " h " << h;
          // Resuming also needs a held position below the query (h or above).
          ASSERT_EQ(memory::first_resumable(w, n, h), std::max<pos_t>(first, h + 1))
              << attention::to_string(w) << " n " << n << " h " << h;
          for (pos_t q = 1; q < 60; ++q)
            ASSERT_EQ(memory::resumable(w, n, h, q), q >= memory::first_resumable(w, n, h))
                << attention::to_string(w) << " n " << n << " h " << h << " q " << q;
        }
      }
}

}  // namespace
