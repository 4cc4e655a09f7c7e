// memory::split_stream against docs/split-stream.md and behavioural tests, group E (T09, T39-T46,
// T70) and the block-sharing design of docs/split-stream.md: copies share blocks, a write into a
// shared block copies it inside the transaction, every refusal names the sequence and changes
// nothing.
#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "memory/harness.hpp"
#include <gtest/gtest.h>

#include "mnemo/attention/attention.hpp"
#include "mnemo/memory/memory.hpp"

namespace {

using namespace mnemo;
using namespace mnemo::memtest;
using split_t = memory::split_stream<float>;

split_t make_split(std::size_t size, seq_id n_seq, std::size_t block_cells = 4,
                   std::size_t pool_blocks = 0) {
  memory::split_stream_config cfg;
  cfg.shape = default_shape();
  cfg.rope = default_rope();
  cfg.size_per_stream = size;
  cfg.n_seq_max = n_seq;
  cfg.block_cells = block_cells;
  cfg.pool_blocks = pool_blocks;
  auto c = split_t::make(cfg);
  if (!c.is_ok()) {
    ADD_FAILURE() << c.error().to_string();
    std::abort();
  }
  return std::move(c).value();
}

/// The cached K (kind 0) or V (kind 1) row of s at position p, decoded; empty if absent.
std::vector<float> row_of(const split_t& c, std::size_t layer, seq_id s, pos_t p, int kind) {
  const auto& cells = c.stream_of(s).cells;
  const auto& kv = c.pool().kv();
  const auto& sh = c.config().shape;
  for (std::size_t i = 0; i < cells.size(); ++i) {
    if (cells.empty(i) || cells.pos(i) != p) continue;
    const std::size_t n = sh.n_head_kv * (kind == 0 ? sh.d_k : sh.d_v);
    std::vector<float> r(n);
    const std::size_t sc = c.storage_cell(s, i);
    std::memcpy(r.data(), kind == 0 ? kv.k(layer, sc) : kv.v(layer, sc), n * sizeof(float));
    return r;
  }
  return {};
}

/// The positions s holds, sorted.
std::vector<pos_t> stream_positions(const split_t& c, seq_id s) {
  std::vector<pos_t> r;
  const auto& cells = c.stream_of(s).cells;
  for (std::size_t i = 0; i < cells.size(); ++i)
    if (!cells.empty(i)) r.push_back(cells.pos(i));
  std::sort(r.begin(), r.end());
  return r;
}

/// Everything observable, block tables and reference counts included.
struct split_snapshot {
  std::vector<std::vector<cell_meta>> cells;
  std::vector<std::vector<memory::block_id>> blocks;
  std::vector<std::uint32_t> refs;
  std::vector<std::uint8_t> live_rows;  // K/V bytes of every used cell, stream by stream
  bool has_shift = false;
  friend bool operator==(const split_snapshot&, const split_snapshot&) = default;
};

split_snapshot snap_split(const split_t& c) {
  split_snapshot s;
  const auto& kv = c.pool().kv();
  for (seq_id q = 0; q < c.config().n_seq_max; ++q) {
    const auto& st = c.stream_of(q);
    s.blocks.push_back(st.blocks);
    s.cells.emplace_back();
    for (std::size_t i = 0; i < st.cells.size(); ++i) {
      s.cells.back().push_back({st.cells.pos(i), st.cells.owners(i), st.cells.shift(i)});
      if (st.cells.empty(i)) continue;
      for (std::size_t l = 0; l < c.config().shape.n_layer; ++l) {
        const auto* k = reinterpret_cast<const std::uint8_t*>(kv.k(l, c.storage_cell(q, i)));
        const auto* v = reinterpret_cast<const std::uint8_t*>(kv.v(l, c.storage_cell(q, i)));
        s.live_rows.insert(s.live_rows.end(), k, k + kv.k_row_bytes());
        s.live_rows.insert(s.live_rows.end(), v, v + kv.v_row_bytes());
      }
    }
  }
  for (std::size_t b = 0; b < c.pool().n_blocks(); ++b)
    s.refs.push_back(c.pool().refs(static_cast<memory::block_id>(b)));
  s.has_shift = c.has_pending_shift();
  return s;
}

/// One query per entry of `seqs` at position `at`, attended over the stream of its
/// sequence by the reference kernel: [tokens, n_head, d_v].
std::vector<float> attend_streams(const split_t& c, std::size_t layer, std::vector<seq_id> seqs,
                                  pos_t at, const std::vector<float>& q) {
  const auto& sh = c.config().shape;
  std::vector<attention::kv_segment> segs;
  std::vector<std::size_t> first;
  for (seq_id s : seqs) {
    first.push_back(segs.size());
    c.stream_segments(layer, s, segs);
  }
  first.push_back(segs.size());
  std::vector<attention::kv_view> views;
  std::vector<std::uint32_t> stream;
  std::vector<pos_t> pos(seqs.size(), at);
  for (std::size_t k = 0; k < seqs.size(); ++k) {
    views.push_back(
        {std::span<const attention::kv_segment>(segs).subspan(first[k], first[k + 1] - first[k])});
    stream.push_back(static_cast<std::uint32_t>(k));
  }
  attention::query_batch qb{q.data(), seqs.size(), pos.data(), seqs.data(), stream.data()};
  attention::shape ash{sh.n_head_kv, sh.n_head_kv, sh.d_k, sh.d_v};
  std::vector<float> out(seqs.size() * sh.n_head_kv * sh.d_v);
  const status st = attention::reference_attend<float, float>(ash, {}, qb, views, out.data());
  EXPECT_TRUE(st.is_ok()) << st.to_string();
  return out;
}

/// Queries [n_tokens, n_head, d_k] (n_head = n_head_kv * group).
std::vector<float> query(std::size_t n_tokens, const memory::kv_shape& sh, std::size_t group = 1) {
  std::vector<float> q(n_tokens * group * sh.n_head_kv * sh.d_k);
  const std::size_t per_token = q.size() / n_tokens;  // every token asks the same query
  for (std::size_t i = 0; i < q.size(); ++i) q[i] = kv_value(k_seed, 99, 0, 0, 0, i % per_token);
  return q;
}

class SplitStream : public traced_test {};

TEST_F(SplitStream, T39StreamsHaveTheirOwnCapacity) {
  auto c = make_split(8, 2);
  EXPECT_EQ(c.size(), 16u);
  EXPECT_EQ(dec(c, 0, 0, 7), k_ok);
  EXPECT_EQ(dec(c, 1, 0, 7), k_ok);  // no borrowing, but no starving either
  status why;
  EXPECT_EQ(decode(c, run(0, 8, 8), {}, &why), k_no_space);
  EXPECT_NE(why.message().find("sequence 0"), std::string::npos) << why.to_string();
  EXPECT_EQ(c.seq_pos_max(0), 7);
}

TEST_F(SplitStream, T40SequenceOutsideTheStreamsIsRefused) {
  auto c = make_split(8, 2);
  ASSERT_EQ(dec(c, 0, 0, 2), k_ok);
  const auto before = snap_split(c);
  status why;
  EXPECT_EQ(decode(c, run(2, 0, 0), {}, &why), k_invalid);
  EXPECT_EQ(why.code(), status_code::out_of_range);
  EXPECT_NE(why.message().find("sequence 2"), std::string::npos) << why.to_string();
  EXPECT_EQ(c.seq_pos_max(2), -1);  // llama.cpp aborts here (#14847)
  EXPECT_EQ(c.seq_rm(2, -1, -1).code(), status_code::out_of_range);
  EXPECT_EQ(c.seq_cp(0, 2, -1, -1).code(), status_code::out_of_range);
  EXPECT_EQ(c.seq_keep(5).code(), status_code::out_of_range);
  EXPECT_EQ(c.seq_add(-1, 0, 1, 1).code(), status_code::out_of_range);
  EXPECT_TRUE(snap_split(c) == before);
}

TEST_F(SplitStream, T41CoupledTokenIsRefusedWithItsOwnStatus) {
  auto c = make_split(8, 2);
  status why;
  EXPECT_EQ(decode(c, {at({0, 1}, 0)}, {}, &why), k_invalid);
  EXPECT_EQ(why.code(), status_code::unsupported) << why.to_string();  // not "no slot"
  EXPECT_NE(why.message().find("sequence 0"), std::string::npos) << why.to_string();
  EXPECT_EQ(c.used(), 0u);
}

TEST_F(SplitStream, T42CrossStreamCopySharesBlocksAtTheSameIndices) {
  auto c = make_split(16, 2);
  ASSERT_EQ(dec(c, 0, 0, 9), k_ok);
  ASSERT_EQ(dec(c, 1, 0, 2), k_ok);
  const std::size_t free_before = c.pool().n_free();
  ASSERT_TRUE(c.seq_cp(0, 1, -1, -1).is_ok());
  EXPECT_EQ(c.seq_pos_min(1), 0);
  EXPECT_EQ(c.seq_pos_max(1), 9);
  EXPECT_EQ(c.stream_of(1).cells.used(), 10u);
  for (std::size_t i = 0; i < 16; ++i)
    EXPECT_EQ(c.stream_of(1).cells.pos(i), c.stream_of(0).cells.pos(i)) << i;
  // Stream 1's own block went back; the three blocks of seq 0 are shared, none copied.
  EXPECT_EQ(c.pool().n_free(), free_before + 1);
  EXPECT_EQ(c.blocks().shared, 3u);
  // [num]: the same query at pos 10 on both sequences gives identical outputs.
  const auto q = query(2, c.config().shape);
  const auto out = attend_streams(c, 1, {0, 1}, 10, q);
  const std::size_t half = out.size() / 2;
  for (std::size_t i = 0; i < half; ++i) ASSERT_EQ(out[i], out[half + i]) << "element " << i;
}

TEST_F(SplitStream, T43StateAfterACopyHoldsTheCopiedData) {
  auto c = make_split(16, 2);
  ASSERT_EQ(dec(c, 0, 0, 9), k_ok);
  ASSERT_EQ(dec(c, 1, 0, 2), k_ok);
  ASSERT_TRUE(c.seq_cp(0, 1, -1, -1).is_ok());
  const auto b0 = state_of(c, 0), b1 = state_of(c, 1);
  ASSERT_EQ(b0.size(), b1.size());
  EXPECT_TRUE(std::equal(b0.begin() + k_header_bytes, b0.end(), b1.begin() + k_header_bytes));
}

TEST_F(SplitStream, T44PartialCrossStreamCopyIntoAnEmptyStreamShares) {
  auto c = make_split(16, 2);
  ASSERT_EQ(dec(c, 0, 0, 9), k_ok);
  const std::size_t free_before = c.pool().n_free();
  ASSERT_TRUE(c.seq_cp(0, 1, 2, 6).is_ok());  // llama.cpp aborts
  EXPECT_EQ(stream_positions(c, 1), range(2, 5));
  EXPECT_EQ(c.pool().n_free(), free_before);  // blocks 0 and 1 shared
  for (pos_t p = 2; p <= 5; ++p) EXPECT_EQ(row_of(c, 0, 1, p, 0), row_of(c, 0, 0, p, 0)) << p;
  EXPECT_EQ(dec(c, 1, 6, 6), k_ok);  // continues after the copied range; copies one block
  EXPECT_EQ(stream_positions(c, 0), range(0, 9));
  EXPECT_EQ(row_of(c, 1, 0, 6, 1), raw_v(c.config().shape, 1, 0, 6));
  EXPECT_EQ(row_of(c, 1, 1, 6, 1), raw_v(c.config().shape, 1, 1, 6));
}

TEST_F(SplitStream, T44PartialCopyNextToDestinationCellsCopiesRows) {
  auto c = make_split(16, 2);
  ASSERT_EQ(dec(c, 0, 0, 9), k_ok);
  ASSERT_EQ(dec(c, 1, 0, 3), k_ok);
  ASSERT_TRUE(c.seq_cp(0, 1, 2, 6).is_ok());
  EXPECT_EQ(stream_positions(c, 1), range(0, 5));
  EXPECT_EQ(row_of(c, 0, 1, 1, 1), raw_v(c.config().shape, 0, 1, 1));  // its own
  EXPECT_EQ(row_of(c, 0, 1, 3, 1), raw_v(c.config().shape, 0, 0, 3));  // copied
}

TEST_F(SplitStream, CopyIntoAFullStreamIsRefusedNamingTheSequence) {
  auto c = make_split(4, 2, 2);
  ASSERT_EQ(dec(c, 0, 0, 3), k_ok);
  ASSERT_EQ(dec(c, 1, 0, 1), k_ok);
  ASSERT_TRUE(c.seq_rm(0, 0, 2).is_ok());         // seq 0 holds 2, 3
  ASSERT_TRUE(c.seq_add(1, -1, -1, 10).is_ok());  // seq 1 holds 10, 11
  ASSERT_TRUE(c.update().is_ok());
  ASSERT_EQ(dec(c, 0, 4, 5), k_ok);  // seq 0 holds 2..5
  const auto before = snap_split(c);
  const status st = c.seq_cp(0, 1, 0, 6);  // 4 cells next to seq 1's two: 6 > 4
  EXPECT_EQ(st.code(), status_code::no_space) << st.to_string();
  EXPECT_NE(st.message().find("sequence 1"), std::string::npos) << st.to_string();
  EXPECT_TRUE(snap_split(c) == before);
}

/// Plans a batch of (seq, count) runs through validation and the split strategy.
std::vector<std::size_t> plan_sizes(split_t& c, std::vector<std::pair<seq_id, int>> runs,
                                    std::uint32_t n_ubatch) {
  batch bt;
  for (auto [s, n] : runs)
    for (int p = 0; p < n; ++p) bt.add(1, c.seq_pos_max(s) + 1 + p, {s}, false);
  batch_limits lim;
  lim.n_seq_max = static_cast<std::uint32_t>(c.config().n_seq_max);
  auto vb = validate(bt, lim, memory::positions_of<split_t>{c});
  EXPECT_TRUE(vb.is_ok()) << vb.error().to_string();
  auto plan = memory::plan_batch(c, *vb, n_ubatch);
  EXPECT_TRUE(plan.is_ok()) << plan.error().to_string();
  std::vector<std::size_t> sizes;
  for (const auto& u : plan->tokens) sizes.push_back(u.size());
  c.rollback();
  return sizes;
}

TEST_F(SplitStream, T45MicroBatchesGroupTokensByStream) {
  auto c = make_split(16, 3);
  EXPECT_EQ(plan_sizes(c, {{0, 4}, {1, 2}, {2, 4}}, 512), (std::vector<std::size_t>{6, 2, 2}));
}

TEST_F(SplitStream, T46EqualSequentialSplit) {
  auto c = make_split(16, 2);
  EXPECT_EQ(plan_sizes(c, {{0, 4}, {1, 2}}, 4), (std::vector<std::size_t>{4, 2}));
}

TEST_F(SplitStream, T09SeqKeepEmptiesEveryOtherStream) {
  auto c = make_split(16, 2);
  ASSERT_EQ(dec(c, 0, 0, 4), k_ok);
  ASSERT_EQ(dec(c, 1, 0, 4), k_ok);
  ASSERT_TRUE(c.seq_keep(0).is_ok());
  EXPECT_EQ(c.seq_pos_max(0), 4);
  EXPECT_EQ(c.seq_pos_max(1), -1);  // llama.cpp: 4
  EXPECT_EQ(c.pool().n_free(), c.pool().n_blocks() - 2);
}

TEST_F(SplitStream, WritingIntoASharedBlockCopiesItFirst) {
  auto c = make_split(16, 2);
  ASSERT_EQ(dec(c, 0, 0, 5), k_ok);  // blocks 0 (cells 0-3) and 1 (4-5)
  ASSERT_TRUE(c.seq_cp(0, 1, -1, -1).is_ok());
  const std::size_t free_before = c.pool().n_free();
  const auto k0 = row_of(c, 0, 0, 5, 0);
  ASSERT_EQ(dec(c, 1, 6, 6), k_ok);  // lands in the shared block 1
  EXPECT_EQ(c.pool().n_free(), free_before - 1);
  EXPECT_EQ(c.blocks().shared, 1u);  // block 0 still shared
  EXPECT_EQ(row_of(c, 0, 0, 5, 0), k0);
  EXPECT_EQ(row_of(c, 0, 1, 5, 0), k0);  // the copy carries the old rows
  EXPECT_TRUE(row_of(c, 0, 0, 6, 0).empty());
  EXPECT_EQ(row_of(c, 0, 1, 6, 1), raw_v(c.config().shape, 0, 1, 6));
}

TEST_F(SplitStream, RollbackUndoesCopyOnWriteExactly) {
  auto c = make_split(16, 3);
  ASSERT_EQ(dec(c, 0, 0, 5), k_ok);
  ASSERT_TRUE(c.seq_cp(0, 1, -1, -1).is_ok());
  ASSERT_TRUE(c.seq_cp(0, 2, -1, -1).is_ok());
  const auto before = snap_split(c);
  decode_options o;
  o.n_ubatch = 1;
  o.fail_after = 2;
  EXPECT_EQ(decode(c, {at(1, 6), at(2, 6), at(0, 6)}, o), k_aborted);
  EXPECT_TRUE(snap_split(c) == before);
  EXPECT_EQ(decode(c, {at(1, 6), at(2, 6), at(0, 6)}, {}), k_ok);
  EXPECT_EQ(c.blocks().shared, 1u);  // block 1: three copies made, the last holder kept it
}

TEST_F(SplitStream, StateFileIgnoresRowsOfARolledBackBatch) {
  // A rolled-back batch leaves its rows in cells no stream holds; the whole state file
  // must not carry them (found by the context's model-based test: an aborted decode
  // changed the state bytes).
  auto c = make_split(16, 2);
  ASSERT_EQ(dec(c, 0, 0, 5), k_ok);
  const auto before = memory::state_write(c);
  ASSERT_TRUE(before.is_ok()) << before.error().to_string();
  decode_options o;
  o.n_ubatch = 2;
  o.fail_after = 1;
  EXPECT_EQ(decode(c, {at(0, 6), at(0, 7), at(0, 8), at(0, 9)}, o), k_aborted);
  const auto after = memory::state_write(c);
  ASSERT_TRUE(after.is_ok()) << after.error().to_string();
  const auto d = std::mismatch(before->begin(), before->end(), after->begin(), after->end());
  EXPECT_TRUE(d.first == before->end() && d.second == after->end())
      << "state byte " << (d.first - before->begin()) << " differs";
}

TEST_F(SplitStream, ExhaustedPoolIsRefusedNamingTheSequence) {
  auto c = make_split(8, 2, 4, 3);  // 3 blocks for 2 streams of 2 blocks
  ASSERT_EQ(dec(c, 0, 0, 7), k_ok);
  ASSERT_EQ(dec(c, 1, 0, 0), k_ok);
  ASSERT_EQ(dec(c, 1, 1, 3), k_ok);
  const auto before = snap_split(c);
  status why;
  EXPECT_EQ(decode(c, run(1, 4, 4), {}, &why), k_no_space);
  EXPECT_NE(why.message().find("sequence 1"), std::string::npos) << why.to_string();
  EXPECT_TRUE(snap_split(c) == before);
  ASSERT_TRUE(c.seq_cp(0, 1, -1, -1).is_ok());  // sharing needs no block
  const status st = c.seq_add(1, 0, -1, 2);     // moving apart needs two
  EXPECT_EQ(st.code(), status_code::no_space) << st.to_string();
  EXPECT_NE(st.message().find("sequence 1"), std::string::npos) << st.to_string();
}

TEST_F(SplitStream, ShiftOfASharedBlockRotatesOnlyTheMover) {
  auto c = make_split(16, 2);
  decode_options o;
  o.rope_keys = true;
  ASSERT_EQ(decode(c, run(0, 0, 5), o), k_ok);
  ASSERT_TRUE(c.seq_cp(0, 1, -1, -1).is_ok());
  ASSERT_TRUE(c.seq_add(1, 0, -1, 3).is_ok());
  EXPECT_EQ(c.seq_pos_min(1), 3);
  ASSERT_TRUE(c.update().is_ok());
  memory::full_cache_config fc;
  fc.shape = c.config().shape;
  fc.rope = c.config().rope;
  for (pos_t p = 0; p <= 5; ++p) {
    const auto want0 = rotated_k(fc, 0, 0, p, p), want1 = rotated_k(fc, 0, 0, p, p + 3);
    const auto got0 = row_of(c, 0, 0, p, 0), got1 = row_of(c, 0, 1, p + 3, 0);
    ASSERT_EQ(got0, want0) << "seq 0 pos " << p;
    for (std::size_t e = 0; e < want1.size(); ++e)
      ASSERT_NEAR(got1[e], want1[e], 1e-5f) << "seq 1 pos " << p + 3 << " element " << e;
  }
}

TEST_F(SplitStream, SharedCopiesWithAPendingShiftRotateOnce) {
  auto c = make_split(16, 2);
  decode_options o;
  o.rope_keys = true;
  ASSERT_EQ(decode(c, run(0, 0, 5), o), k_ok);
  ASSERT_TRUE(c.seq_add(0, 0, -1, 2).is_ok());
  ASSERT_TRUE(c.seq_cp(0, 1, -1, -1).is_ok());  // shares blocks with pending shifts
  ASSERT_TRUE(c.update().is_ok());
  memory::full_cache_config fc;
  fc.shape = c.config().shape;
  fc.rope = c.config().rope;
  for (pos_t p = 0; p <= 5; ++p) {
    const auto want = rotated_k(fc, 0, 0, p, p + 2);
    for (seq_id s : {0, 1}) {
      const auto got = row_of(c, 0, s, p + 2, 0);
      for (std::size_t e = 0; e < want.size(); ++e)
        ASSERT_NEAR(got[e], want[e], 1e-5f) << "seq " << s << " pos " << p + 2 << " el " << e;
    }
  }
}

TEST_F(SplitStream, DefragmentKeepsResultsAndSharedBlocks) {
  auto c = make_split(16, 3);
  ASSERT_EQ(dec(c, 0, 0, 11), k_ok);
  ASSERT_TRUE(c.seq_cp(0, 2, 0, 4).is_ok());  // shares block 0
  ASSERT_TRUE(c.seq_rm(0, 1, 3).is_ok());
  ASSERT_TRUE(c.seq_rm(0, 5, 10).is_ok());  // block 1 (cells 4-7) now empty
  ASSERT_EQ(dec(c, 1, 0, 9), k_ok);
  ASSERT_TRUE(c.seq_rm(1, 0, 6).is_ok());
  const auto q = query(3, c.config().shape);
  const auto before = attend_streams(c, 0, {0, 1, 2}, 20, q);
  const auto shared_before = c.blocks().shared;
  ASSERT_TRUE(c.defragment().is_ok());
  EXPECT_EQ(c.blocks().shared, shared_before);
  EXPECT_EQ(c.stream_of(1).cells.used_max_p1(), 4u);  // 6..9 moved to cells 0..3
  EXPECT_EQ(c.stream_of(0).cells.used_max_p1(), 7u);  // shared block 0 keeps its holes
  const auto after = attend_streams(c, 0, {0, 1, 2}, 20, q);
  for (std::size_t i = 0; i < before.size(); ++i)
    ASSERT_NEAR(after[i], before[i], 1e-6f) << "element " << i;
}

TEST_F(SplitStream, T70WholeRestoreKeepsEveryStreamAndTheSharing) {
  auto c = make_split(16, 3);
  ASSERT_EQ(dec(c, 0, 0, 6), k_ok);
  ASSERT_EQ(dec(c, 1, 0, 4), k_ok);
  ASSERT_TRUE(c.seq_cp(0, 2, -1, -1).is_ok());
  const auto blob = state_of(c);
  auto d = make_split(16, 3);
  ASSERT_EQ(dec(d, 1, 0, 0), k_ok);
  const status st = memory::state_read(d, blob);
  ASSERT_TRUE(st.is_ok()) << st.to_string();
  EXPECT_TRUE(snap_split(d) == snap_split(c));
  EXPECT_EQ(d.seq_pos_max(0), 6);  // llama.cpp: -1
  EXPECT_EQ(d.blocks().shared, 2u);
  // Per-sequence round trip (T66/T67 style): into another sequence.
  const auto b0 = state_of(c, 0);
  ASSERT_TRUE(memory::state_read(d, b0, 1).is_ok());
  EXPECT_EQ(stream_positions(d, 1), range(0, 6));
  EXPECT_EQ(row_of(d, 1, 1, 3, 1), row_of(c, 1, 0, 3, 1));
}

TEST_F(SplitStream, DamagedOrForeignStateChangesNothing) {
  auto c = make_split(16, 2);
  ASSERT_EQ(dec(c, 0, 0, 6), k_ok);
  auto blob = state_of(c);
  ASSERT_EQ(dec(c, 1, 0, 2), k_ok);
  const auto before = snap_split(c);
  for (std::size_t at : {std::size_t{3}, std::size_t{80}, blob.size() - 1}) {
    auto bad = blob;
    bad[at] ^= 0x10;
    EXPECT_FALSE(memory::state_read(c, bad).is_ok()) << "byte " << at;
  }
  auto cut = blob;
  cut.pop_back();
  EXPECT_FALSE(memory::state_read(c, cut).is_ok());
  auto other = make_split(16, 3);  // another stream count
  EXPECT_FALSE(memory::state_read(other, blob).is_ok());
  auto f = make_cache<float>(32, 2);  // a unified state is refused
  ASSERT_EQ(dec(f, 0, 0, 3), k_ok);
  EXPECT_FALSE(memory::state_read(c, state_of(f)).is_ok());
  auto small = make_split(4, 2);  // a per-sequence state larger than the stream
  EXPECT_EQ(memory::state_read(small, state_of(c, 0), 1).code(), status_code::no_space);
  EXPECT_TRUE(snap_split(c) == before);
}

TEST_F(SplitStream, OneAttentionCallCoversEveryStreamOfAMicroBatch) {
  auto c = make_split(16, 3);
  auto f = make_cache<float>(48, 3);
  for (seq_id s = 0; s < 3; ++s) {
    ASSERT_EQ(dec(c, s, 0, 3 + 2 * s), k_ok);
    ASSERT_EQ(dec(f, s, 0, 3 + 2 * s), k_ok);
  }
  // A micro-batch with one token per sequence, applied to both.
  const std::vector<pos_t> pos = {6, 4, 8};
  const std::vector<seq_set> sets = {seq_set::of(1), seq_set::of(0), seq_set::of(2)};
  const memory::ubatch_tokens ub{pos, sets};
  ASSERT_TRUE(c.prepare({&ub, 1}).is_ok());
  ASSERT_TRUE(f.prepare({&ub, 1}).is_ok());
  ASSERT_TRUE(c.apply(0, ub).is_ok());
  ASSERT_TRUE(f.apply(0, ub).is_ok());
  const auto& sh = c.config().shape;
  for (std::size_t j = 0; j < 3; ++j)
    for (std::size_t l = 0; l < sh.n_layer; ++l) {
      const seq_id s = first_seq(sets[j]);
      const auto k = raw_k(sh, l, s, pos[j]), v = raw_v(sh, l, s, pos[j]);
      c.write_kv(l, 0, j, k.data(), v.data());
      f.write_kv(l, 0, j, k.data(), v.data());
    }
  const auto q = query(3, sh, 2);
  const std::vector<seq_id> seqs = {1, 0, 2};
  attention::shape ash{2 * sh.n_head_kv, sh.n_head_kv, sh.d_k, sh.d_v};
  for (std::size_t l = 0; l < sh.n_layer; ++l) {
    memory::layer_views lv;
    c.views(l, 0, lv);
    const attention::kv_segment fseg = f.segment(l);
    const attention::kv_view fview{{&fseg, 1}};
    ASSERT_EQ(lv.streams.size(), 3u);
    attention::query_batch qs{q.data(), 3, pos.data(), seqs.data(), lv.token_stream.data()};
    attention::query_batch qf{q.data(), 3, pos.data(), seqs.data(), nullptr};
    std::vector<float> got(3 * ash.n_head * sh.d_v), want(got.size());
    ASSERT_TRUE((attention::attend<simd::native, float, float>(ash, {}, qs, lv.streams, got.data())
                     .is_ok()));
    ASSERT_TRUE(
        (attention::reference_attend<float, float>(ash, {}, qf, {&fview, 1}, want.data()).is_ok()));
    for (std::size_t i = 0; i < got.size(); ++i)
      ASSERT_NEAR(got[i], want[i], 1e-5f) << "layer " << l << " element " << i;
  }
  c.commit();
  f.commit();
}

}  // namespace
