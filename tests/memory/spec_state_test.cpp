// Behavioural tests, group H: state files of the unified cache (T66-T73, T76, T77). mnemo
// writes its own versioned format (state_format.hpp), so T64/T65/T74/T75's llama.cpp
// byte layouts are replaced by the format's own size formula and header fields.
#include "memory/harness.hpp"
#include <gtest/gtest.h>

namespace mnemo::memtest {
namespace {

using FullCacheState = traced_test;
using u8vec = std::vector<std::uint8_t>;

/// Per position of s: the K and V bytes of every layer (positions of s are unique here).
template <class C>
std::map<pos_t, u8vec> rows_by_pos(const C& c, seq_id s) {
  std::map<pos_t, u8vec> r;
  const auto& kv = c.storage();
  for (std::size_t i : cells_of(c, s)) {
    u8vec& b = r[c.cells().pos(i)];
    for (std::size_t l = 0; l < kv.shape().n_layer; ++l) {
      const auto* k = reinterpret_cast<const std::uint8_t*>(kv.k(l, i));
      const auto* v = reinterpret_cast<const std::uint8_t*>(kv.v(l, i));
      b.insert(b.end(), k, k + kv.k_row_bytes());
      b.insert(b.end(), v, v + kv.v_row_bytes());
    }
  }
  return r;
}

/// Non-empty cells in index order: (pos, owners) and their rows.
template <class C>
std::vector<std::pair<cell_meta, u8vec>> live_cells(const C& c) {
  std::vector<std::pair<cell_meta, u8vec>> r;
  const auto& kv = c.storage();
  for (std::size_t i = 0; i < c.size(); ++i) {
    if (c.cells().empty(i)) continue;
    u8vec b;
    for (std::size_t l = 0; l < kv.shape().n_layer; ++l) {
      const auto* k = reinterpret_cast<const std::uint8_t*>(kv.k(l, i));
      const auto* v = reinterpret_cast<const std::uint8_t*>(kv.v(l, i));
      b.insert(b.end(), k, k + kv.k_row_bytes());
      b.insert(b.end(), v, v + kv.v_row_bytes());
    }
    r.push_back({{c.cells().pos(i), c.cells().owners(i), c.cells().shift(i)}, std::move(b)});
  }
  return r;
}

// T64/T65 equivalents: the exact size and every header field of our format.
TEST_F(FullCacheState, SizeFormulaAndHeaderFields) {
  auto c = make_cache<dtype::f16, dtype::block_q8_0>(16, 3);
  EXPECT_EQ(state_of(c).size(), k_header_bytes + 4);     // empty cache
  EXPECT_EQ(state_of(c, 2).size(), k_header_bytes + 4);  // empty sequence
  ASSERT_EQ(dec(c, 0, 0, 4), k_ok);
  ASSERT_TRUE(c.seq_cp(0, 1, 2, -1).is_ok());
  ASSERT_EQ(dec(c, 2, 0, 1), k_ok);
  const auto& sh = c.config().shape;
  const std::size_t k_row = sh.n_head_kv * sh.d_k * 2, v_row = sh.n_head_kv * sh.d_v / 32 * 34;
  EXPECT_EQ(c.storage().k_row_bytes(), k_row);
  EXPECT_EQ(c.storage().v_row_bytes(), v_row);
  const std::size_t rows = sh.n_layer * (k_row + v_row);
  // Whole: 7 cells, owners 1,1,2,2,2,1,1.
  const auto whole = state_of(c);
  EXPECT_EQ(whole.size(), k_header_bytes + 4 + 7 * 8 + 10 * 4 + 7 * rows);
  // Per sequence: one owner per cell.
  const auto seq1 = state_of(c, 1);
  EXPECT_EQ(seq1.size(), k_header_bytes + 4 + 3 * 12 + 3 * rows);

  const raw_header h = read_header(seq1);
  EXPECT_EQ(h.magic, 0x534d4e4du);
  EXPECT_EQ(std::memcmp(seq1.data(), "MNMS", 4), 0);
  EXPECT_EQ(h.version, 2);
  EXPECT_EQ(h.strategy, 1);  // strategy_id::full
  EXPECT_EQ(h.seq, 1);
  EXPECT_EQ(read_header(whole).seq, -1);
  EXPECT_EQ(h.n_layer, sh.n_layer);
  EXPECT_EQ(h.n_head_kv, sh.n_head_kv);
  EXPECT_EQ(h.d_k, sh.d_k);
  EXPECT_EQ(h.d_v, sh.d_v);
  EXPECT_EQ(h.k_type, 1u);  // ggml f16
  EXPECT_EQ(h.v_type, 8u);  // ggml q8_0
  EXPECT_EQ(h.rope_layout, static_cast<std::uint8_t>(attention::rope_layout::normal));
  EXPECT_EQ(h.pad8, 0);
  EXPECT_EQ(h.pad16, 0);
  EXPECT_EQ(h.n_rot, 32u);
  EXPECT_EQ(h.freq_base, 10000.0f);
  EXPECT_EQ(h.freq_scale, 1.0f);
  EXPECT_EQ(h.n_stream, 1u);
  EXPECT_EQ(h.rope_detail, 0u);  // plain RoPE: no factors, no YaRN
  EXPECT_EQ(h.payload_bytes, seq1.size() - k_header_bytes);
  EXPECT_EQ(h.checksum, expected_checksum(seq1));
  EXPECT_EQ(read_header(whole).checksum, expected_checksum(whole));
  // Payload: cell_count, then (pos, 1, seq) per cell in index order.
  EXPECT_EQ(read_at<std::uint32_t>(seq1, k_header_bytes), 3u);
  for (std::size_t i = 0; i < 3; ++i) {
    const std::size_t off = k_header_bytes + 4 + 12 * i;
    EXPECT_EQ(read_at<std::int32_t>(seq1, off), static_cast<pos_t>(2 + i)) << "cell " << i;
    EXPECT_EQ(read_at<std::uint32_t>(seq1, off + 4), 1u) << "cell " << i;
    EXPECT_EQ(read_at<std::int32_t>(seq1, off + 8), 1) << "cell " << i;
  }
  // Then layer 0's K rows of the three cells, straight from the cache.
  EXPECT_EQ(std::memcmp(seq1.data() + k_header_bytes + 4 + 36, c.storage().k(0, 2), 3 * k_row), 0);
}

TEST_F(FullCacheState, T66RoundTripInFragmentedCache) {
  auto c = make_cache<dtype::f16>(12, 3);
  ASSERT_EQ(
      decode(c, {at(0, 0), at(1, 0), at(0, 1), at(1, 1), at(0, 2), at(1, 2), at(0, 3), at(1, 3)}),
      k_ok);
  ASSERT_EQ(cells_of(c, 1), (std::vector<std::size_t>{1, 3, 5, 7}));
  const auto blob = state_of(c, 1);
  const auto rows = rows_by_pos(c, 1);
  ASSERT_TRUE(c.seq_rm(1, -1, -1).is_ok());
  ASSERT_EQ(dec(c, 2, 0, 1), k_ok);  // takes cells 1 and 3: seq 1 comes back elsewhere
  const auto st = memory::state_read(c, blob, 1);
  ASSERT_TRUE(st.is_ok()) << st.to_string();
  EXPECT_EQ(c.seq_pos_min(1), 0);
  EXPECT_EQ(c.seq_pos_max(1), 3);
  EXPECT_TRUE(state_of(c, 1) == blob);
  EXPECT_EQ(rows_by_pos(c, 1), rows);
  EXPECT_EQ(cells_of(c, 1), (std::vector<std::size_t>{5, 7, 8, 9}));
  EXPECT_EQ(c.used(), 10u);
  EXPECT_EQ(check_invariants(c), "");
}

TEST_F(FullCacheState, T67RestoreIntoAnotherSequence) {
  auto c = make_cache<dtype::f16>(16, 2);
  ASSERT_EQ(dec(c, 0, 0, 9), k_ok);
  const auto blob = state_of(c, 0);
  const auto rows = rows_by_pos(c, 0);
  c.clear(true);
  ASSERT_TRUE(memory::state_read(c, blob, 1).is_ok());
  EXPECT_EQ(c.seq_pos_max(1), 9);
  EXPECT_EQ(c.seq_pos_max(0), -1);
  EXPECT_EQ(rows_by_pos(c, 1), rows);  // the continuation sees the same keys and values
  // A restored sequence continues like the original.
  EXPECT_EQ(dec(c, 1, 10, 10), k_ok);
}

// D-2 fixed: restoring an empty per-seq state clears the destination.
TEST_F(FullCacheState, T68EmptyStateClearsDestination) {
  auto c = make_cache<float>(16, 4);
  const auto empty = state_of(c, 3);
  EXPECT_EQ(empty.size(), k_header_bytes + 4);
  ASSERT_EQ(dec(c, 2, 0, 4), k_ok);
  ASSERT_EQ(dec(c, 1, 0, 1), k_ok);
  ASSERT_TRUE(memory::state_read(c, empty, 2).is_ok());
  EXPECT_EQ(c.seq_pos_max(2), -1);
  EXPECT_EQ(c.seq_pos_max(1), 1);
  EXPECT_EQ(c.used(), 2u);
}

// T69's other half: every id the cache accepts is persisted and restored.
TEST_F(FullCacheState, T69EveryAcceptedSequenceIsPersisted) {
  auto c = make_cache<float>(16, 3);
  ASSERT_EQ(dec(c, 2, 0, 3), k_ok);
  ASSERT_EQ(decode(c, {at({0, 1}, 0), at({0, 1}, 1)}), k_ok);
  const auto blob = state_of(c);
  auto d = make_cache<float>(16, 3);
  ASSERT_TRUE(memory::state_read(d, blob).is_ok());
  EXPECT_EQ(d.used(), 6u);
  for (seq_id s : {0, 1, 2}) EXPECT_EQ(positions(d, s), positions(c, s)) << "seq " << s;
}

// T70 is split-stream only. T71: a whole restore writes cells densely from 0.
TEST_F(FullCacheState, T71WholeRestoreIsDense) {
  auto c = make_cache<float>(8, 2);
  ASSERT_EQ(
      decode(c, {at(0, 0), at(1, 0), at(0, 1), at(1, 1), at(0, 2), at(1, 2), at(0, 3), at(1, 3)}),
      k_ok);
  ASSERT_TRUE(c.seq_rm(1, -1, -1).is_ok());  // cells 0, 2, 4, 6 remain
  const auto blob = state_of(c);
  auto d = make_cache<float>(8, 2);
  ASSERT_EQ(dec(d, 1, 0, 6), k_ok);  // whatever was there goes
  ASSERT_TRUE(memory::state_read(d, blob).is_ok());
  EXPECT_EQ(d.used(), 4u);
  EXPECT_EQ(d.seq_pos_max(1), -1);
  for (std::size_t i = 0; i < 4; ++i) {
    EXPECT_EQ(d.cells().pos(i), static_cast<pos_t>(i)) << "cell " << i;
    EXPECT_EQ(d.cells().owners(i), seq_set::of(0)) << "cell " << i;
    EXPECT_EQ(std::memcmp(d.storage().k(1, i), c.storage().k(1, 2 * i), c.storage().k_row_bytes()),
              0)
        << "layer 1 K of cell " << i;
  }
  EXPECT_EQ(d.cells().used_max_p1(), 4u);
  EXPECT_EQ(dec(d, 0, 4, 7), k_ok);  // the head was reset: cells 4..7 follow
  EXPECT_EQ(cells_of(d, 0), (std::vector<std::size_t>{0, 1, 2, 3, 4, 5, 6, 7}));
}

// T72 a/b/d/e/f/g (c, v_trans, has no equivalent: V is never transposed). mnemo
// checks everything before changing anything, so dest is unchanged every time
// (llama.cpp leaves it empty in b..g).
TEST_F(FullCacheState, T72PerSequenceLoadErrorsChangeNothing) {
  auto src = make_cache<dtype::f16>(16, 2);
  ASSERT_EQ(dec(src, 0, 0, 4), k_ok);
  const auto good = state_of(src, 0);
  auto c = make_cache<dtype::block_q8_0, dtype::f16>(16, 2);
  ASSERT_EQ(dec(c, 0, 0, 2), k_ok);
  ASSERT_EQ(dec(c, 1, 0, 5), k_ok);
  const auto before = snap(c);

  struct bad_case {
    const char* name;
    u8vec blob;
    status_code code;
  };
  std::vector<bad_case> cases;
  auto q8 = make_cache<dtype::block_q8_0, dtype::f16>(16, 2);
  ASSERT_EQ(dec(q8, 0, 0, 4), k_ok);
  const auto good_q8 = state_of(q8, 0);
  // a. another stream count (a split-stream writer)
  auto streams = good_q8;
  write_at<std::uint32_t>(streams, 52, 2);
  reseal(streams);
  cases.push_back({"n_stream 2", streams, status_code::invalid_argument});
  // b. K type: an f16 state into a q8_0-K cache
  cases.push_back({"f16 K into q8_0 K", good, status_code::invalid_argument});
  // d. layer count
  cache_options three;
  three.shape.n_layer = 3;
  auto src3 = make_cache<dtype::block_q8_0, dtype::f16>(16, 2, three);
  ASSERT_EQ(dec(src3, 0, 0, 4), k_ok);
  cases.push_back({"3 layers into 2", state_of(src3, 0), status_code::invalid_argument});
  // e. one byte short
  cases.push_back({"truncated by one byte", u8vec(good_q8.begin(), good_q8.end() - 1),
                   status_code::corrupt_data});
  // f. magic
  auto magic = good_q8;
  magic[0] ^= 0x20;
  cases.push_back({"wrong magic", magic, status_code::corrupt_data});
  // g. a cell with two sequences in a per-seq state
  auto two = good_q8;
  const std::size_t cell0 = k_header_bytes + 4;
  write_at<std::uint32_t>(two, cell0 + 4, 2);
  two.insert(two.begin() + static_cast<std::ptrdiff_t>(cell0 + 12), {1, 0, 0, 0});
  reseal(two);
  cases.push_back({"cell with 2 sequences", two, status_code::corrupt_data});
  // a whole-cache state into a sequence
  cases.push_back({"whole state into seq 0", state_of(q8), status_code::invalid_argument});

  for (const auto& k : cases) {
    const status st = memory::state_read(c, k.blob, 0);
    EXPECT_EQ(st.code(), k.code) << k.name << ": " << st.to_string();
    EXPECT_FALSE(st.message().empty()) << k.name;
    EXPECT_EQ(first_difference(before, snap(c)), "") << k.name;
  }
  // The genuine state of the right type loads (so the cases above can fail).
  EXPECT_TRUE(memory::state_read(c, good_q8, 0).is_ok());
  EXPECT_EQ(c.seq_pos_max(0), 4);
}

// T73: whole-load errors leave the memory unchanged (llama.cpp clears it for the
// last two).
TEST_F(FullCacheState, T73WholeLoadErrorsChangeNothing) {
  auto c = make_cache<float>(16, 2);
  ASSERT_EQ(dec(c, 0, 0, 5), k_ok);
  ASSERT_TRUE(c.seq_add(0, 2, -1, 1).is_ok());  // a pending shift is state too
  const auto before = snap(c);
  // Another strategy (llama.cpp: another architecture). (state_write flushes pending
  // shifts, so the files come from other caches.)
  auto same = make_cache<float>(16, 2);
  ASSERT_EQ(dec(same, 0, 0, 5), k_ok);
  auto other = state_of(same);
  write_at<std::uint16_t>(other, 6, 2);
  reseal(other);
  EXPECT_EQ(memory::state_read(c, other).code(), status_code::invalid_argument);
  // More cells than this cache has.
  auto big = make_cache<float>(32, 2);
  ASSERT_EQ(dec(big, 0, 0, 19), k_ok);
  EXPECT_EQ(memory::state_read(c, state_of(big)).code(), status_code::corrupt_data);
  // A sequence id this cache does not have.
  auto wide = make_cache<float>(16, 4);
  ASSERT_EQ(dec(wide, 3, 0, 2), k_ok);
  EXPECT_EQ(memory::state_read(c, state_of(wide)).code(), status_code::corrupt_data);
  // A per-sequence state where a whole one is expected.
  EXPECT_EQ(memory::state_read(c, state_of(wide, 3)).code(), status_code::invalid_argument);
  // A destination outside [-1, n_seq_max).
  EXPECT_EQ(memory::state_read(c, state_of(wide, 3), 2).code(), status_code::out_of_range);
  EXPECT_EQ(first_difference(before, snap(c)), "");
}

// A per-sequence state names its source id, which the reader ignores: seq 3 of a
// 4-sequence cache restores into seq 1 of a 2-sequence cache.
TEST_F(FullCacheState, PerSequenceStateFromWiderCache) {
  auto wide = make_cache<float>(16, 4);
  ASSERT_EQ(dec(wide, 3, 0, 5), k_ok);
  auto c = make_cache<float>(16, 2);
  const status st = memory::state_read(c, state_of(wide, 3), 1);
  ASSERT_TRUE(st.is_ok()) << st.to_string();
  EXPECT_EQ(positions(c, 1), range(0, 5));
  EXPECT_EQ(rows_by_pos(c, 1), rows_by_pos(wide, 3));
}

TEST_F(FullCacheState, PerSequenceRestoreUnsharesDestination) {
  auto c = make_cache<float>(16, 2);
  ASSERT_EQ(dec(c, 0, 0, 4), k_ok);
  ASSERT_TRUE(c.seq_cp(0, 1, -1, -1).is_ok());
  const auto blob = state_of(c, 0);
  ASSERT_TRUE(memory::state_read(c, blob, 1).is_ok());
  EXPECT_EQ(c.used(), 10u);  // seq 1 got cells of its own
  EXPECT_EQ(positions(c, 0), range(0, 4));
  EXPECT_EQ(positions(c, 1), range(0, 4));
  for (std::size_t i : cells_of(c, 1))
    EXPECT_EQ(c.cells().owners(i), seq_set::of(1)) << "cell " << i;
  EXPECT_EQ(check_invariants(c), "");
}

TEST_F(FullCacheState, PerSequenceRestoreWithoutRoomChangesNothing) {
  auto src = make_cache<float>(16, 2);
  ASSERT_EQ(dec(src, 0, 0, 7), k_ok);
  auto c = make_cache<float>(16, 2);
  ASSERT_EQ(dec(c, 0, 0, 9), k_ok);
  ASSERT_EQ(dec(c, 1, 0, 0), k_ok);  // 5 free cells + 1 of seq 1's own < 8
  const auto before = snap(c);
  EXPECT_EQ(memory::state_read(c, state_of(src, 0), 1).code(), status_code::no_space);
  EXPECT_EQ(first_difference(before, snap(c)), "");
}

// D-6 fixed: state_write applies pending shifts first, so a state saved between
// seq_add and the next decode carries keys rotated for the new positions.
TEST_F(FullCacheState, T76PendingShiftIsFlushedBeforeWriting) {
  auto c = make_cache<float>(16, 1);
  decode_options o;
  o.rope_keys = true;
  ASSERT_EQ(dec(c, 0, 0, 9, o), k_ok);
  ASSERT_TRUE(c.seq_rm(0, 0, 2).is_ok());
  ASSERT_TRUE(c.seq_add(0, 2, -1, -2).is_ok());
  const auto blob = state_of(c, 0);
  EXPECT_FALSE(c.has_pending_shift());
  auto d = make_cache<float>(16, 1);
  ASSERT_TRUE(memory::state_read(d, blob, 0).is_ok());
  EXPECT_FALSE(d.has_pending_shift());
  ASSERT_EQ(positions(d, 0), range(0, 7));
  for (std::size_t i : cells_of(d, 0)) {
    const pos_t p = d.cells().pos(i);
    for (std::size_t l = 0; l < 2; ++l) {
      const auto want = rotated_k(d.config(), l, 0, p + 2, p);  // raw key of old pos p + 2
      const auto got = cached_k(d, l, i);
      for (std::size_t e = 0; e < want.size(); ++e)
        ASSERT_NEAR(got[e], want[e], 1e-5f) << "layer " << l << " pos " << p << " element " << e;
    }
  }
}

// T77 (get_size == bytes written is trivial with one write): reading what was
// written reproduces metadata and K/V bytes, whole and per sequence.
TEST_F(FullCacheState, T77WriteReadReproducesEverything) {
  auto c = make_cache<dtype::f16, dtype::block_q8_0>(24, 3);
  ASSERT_EQ(dec(c, 0, 0, 7), k_ok);
  ASSERT_TRUE(c.seq_cp(0, 1, 0, 4).is_ok());
  ASSERT_EQ(dec(c, 1, 4, 6), k_ok);
  ASSERT_TRUE(c.seq_rm(0, 2, 3).is_ok());
  ASSERT_EQ(decode(c, {at({0, 2}, 8), at({0, 2}, 9)}), k_ok);
  const auto whole = state_of(c);
  auto d = make_cache<dtype::f16, dtype::block_q8_0>(24, 3);
  ASSERT_TRUE(memory::state_read(d, whole).is_ok());
  EXPECT_EQ(live_cells(d), live_cells(c));
  EXPECT_TRUE(state_of(d) == whole);
  EXPECT_EQ(check_invariants(d), "");
  for (seq_id s : {0, 1, 2}) {
    const auto blob = state_of(c, s);
    auto e = make_cache<dtype::f16, dtype::block_q8_0>(24, 3);
    ASSERT_TRUE(memory::state_read(e, blob, s).is_ok()) << "seq " << s;
    EXPECT_TRUE(state_of(e, s) == blob) << "seq " << s;
    EXPECT_EQ(positions(e, s), positions(c, s)) << "seq " << s;
    ASSERT_TRUE(memory::state_read(c, blob, s).is_ok()) << "seq " << s;  // in place
    EXPECT_TRUE(state_of(c, s) == blob) << "seq " << s;
  }
}

}  // namespace
}  // namespace mnemo::memtest
