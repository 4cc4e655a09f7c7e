// The per-layer composite (layered.hpp): routing, planning and transactions across
// parts, all-or-nothing sequence operations and state (docs/composite.md), with the
// iSWA and hybrid tests adapted (T37, T38, T60-T62), and the memory of interleaved SWA
// (5 local + 1 global layers, window 1024) against a full cache at 32k context.
#include <gtest/gtest.h>

#include "mnemo/memory/layered/layered.hpp"
#include "mnemo/memory/layered/layered_state.hpp"
//
#include "memory/harness.hpp"

namespace {

using namespace mnemo;
using namespace mnemo::memtest;
using attention::window_kind;
using full = memory::full_cache<float>;
using swa = memory::sliding_window<float>;
using iswa = memory::layered<full, swa>;
using hybrid = memory::layered<memory::recurrent, full>;

memory::kv_shape shape_of(std::size_t layers) { return {layers, 1, 32, 32}; }

full make_full(std::size_t layers, std::size_t size, seq_id n_seq = 2) {
  memory::full_cache_config c;
  c.shape = shape_of(layers);
  c.size = size;
  c.n_seq_max = n_seq;
  c.rope = default_rope();
  return std::move(full::make(c)).value();
}

swa make_swa(std::size_t layers, std::size_t size, pos_t n_swa, seq_id n_seq = 2) {
  memory::sliding_window_config c;
  c.shape = shape_of(layers);
  c.size = size;
  c.n_ctx = 1 << 20;
  c.n_seq_max = n_seq;
  c.n_swa = n_swa;
  c.window = window_kind::standard;
  c.rope = default_rope();
  return std::move(swa::make(c)).value();
}

memory::recurrent make_rec(std::size_t layers, std::size_t checkpoints = 0) {
  memory::recurrent_config c;
  c.n_layer = layers;
  c.conv_floats = 4;
  c.ssm_floats = 4;
  c.n_seq_max = 2;
  c.n_checkpoints = checkpoints;
  return std::move(memory::recurrent::make(c)).value();
}

/// iSWA: layers 0, 2 local (part 1), layer 1 global (part 0).
iswa make_iswa(std::size_t full_size, std::size_t swa_size, pos_t n_swa) {
  auto m = iswa::make({1, 0, 1}, make_full(1, full_size), make_swa(2, swa_size, n_swa));
  EXPECT_TRUE(m.is_ok()) << m.error().to_string();
  return std::move(m).value();
}

/// Decodes one token per position a..b of s through any memory (K/V written for
/// every KV layer), n_ub tokens per micro-batch; returns the first failing status.
template <class M>
status dec_m(M& m, seq_id s, pos_t a, pos_t b, std::size_t n_ub = 0, int fail_after = -1) {
  std::vector<std::vector<pos_t>> pos;
  std::vector<std::vector<seq_set>> sets;
  const std::size_t n = static_cast<std::size_t>(b - a + 1), per = n_ub ? n_ub : n;
  for (std::size_t i = 0; i < n; ++i) {
    if (i % per == 0) pos.emplace_back(), sets.emplace_back();
    pos.back().push_back(a + static_cast<pos_t>(i));
    sets.back().push_back(seq_set::of(s));
  }
  std::vector<memory::ubatch_tokens> ubs;
  for (std::size_t u = 0; u < pos.size(); ++u) ubs.push_back({pos[u], sets[u]});
  MNEMO_RETURN_IF_ERROR(m.update());
  MNEMO_RETURN_IF_ERROR(m.prepare(ubs));
  for (std::size_t u = 0; u < ubs.size(); ++u) {
    MNEMO_RETURN_IF_ERROR(m.apply(u, ubs[u]));
    if constexpr (requires { m.views(0, 0, std::declval<memory::layer_views&>()); })
      for (std::size_t l = 0; l < m.n_layer(); ++l)
        for (std::size_t j = 0; j < ubs[u].size(); ++j) {
          const auto k = raw_k(shape_of(1), l, s, ubs[u].pos[j]);
          const auto v = raw_v(shape_of(1), l, s, ubs[u].pos[j]);
          m.write_kv(l, u, j, k.data(), v.data());
        }
    if (static_cast<int>(u) == fail_after) {
      m.rollback();
      return make_status(status_code::failed_compute, "injected failure");
    }
  }
  m.commit();
  return {};
}

/// Everything observable of the iSWA's two parts.
std::string diff_iswa(const snapshot& f0, const snapshot& s0, iswa& m) {
  std::string d = first_difference(f0, snap(m.part<0>()));
  if (!d.empty()) return "full part: " + d;
  d = first_difference(s0, snap(m.part<1>()));
  return d.empty() ? "" : "window part: " + d;
}

class LayeredSpec : public traced_test {};

TEST_F(LayeredSpec, RoutesLayersAndModelsKvMemory) {
  static_assert(memory::kv_memory<iswa>);
  static_assert(!memory::kv_memory<memory::layered<memory::recurrent>>);
  auto m = make_iswa(64, 16, 4);
  EXPECT_EQ(m.n_layer(), 3u);
  EXPECT_EQ(m.route(2).part, 1);
  EXPECT_EQ(m.route(2).local, 1u);
  EXPECT_EQ(m.window(0).first, window_kind::standard);
  EXPECT_EQ(m.window(1).first, window_kind::none);
  ASSERT_TRUE(dec_m(m, 0, 0, 9).is_ok());
  // Layer 2 is local layer 1 of the window part: its rows are that layer's.
  memory::layer_views lv;
  m.views(2, 0, lv);
  ASSERT_EQ(lv.streams.size(), 1u);
  EXPECT_EQ(lv.segments[0].k, m.part<1>().storage().k(1, 0));
  EXPECT_EQ(cached_k(m.part<1>(), 1, 3), raw_k(shape_of(1), 2, 0, 3));
  EXPECT_EQ(cached_k(m.part<0>(), 0, 3), raw_k(shape_of(1), 1, 0, 3));
  EXPECT_FALSE(iswa::make({0, 0, 1}, make_full(1, 8), make_swa(2, 8, 4)).is_ok());
  EXPECT_FALSE(iswa::make({0, 2, 1}, make_full(1, 8), make_swa(1, 8, 4)).is_ok());
}

// T37: base holds 0..39, the window part forgot below 24; seq_rm(0, 20, -1) would need
// the window of 20. llama.cpp: true, pos_max -1. Here: refused in both parts.
TEST_F(LayeredSpec, T37RemovalBelowTheWindowIsRefusedEverywhere) {
  auto m = make_iswa(64, 16, 4);
  ASSERT_TRUE(dec_m(m, 0, 0, 39, 8).is_ok());
  EXPECT_GE(m.part<1>().horizon(0), 24);
  EXPECT_EQ(m.seq_pos_max(0), 39);
  const auto f0 = snap(m.part<0>()), s0 = snap(m.part<1>());
  const status st = m.seq_rm(0, 20, -1);
  EXPECT_EQ(st.code(), status_code::unsupported) << st.to_string();
  EXPECT_EQ(diff_iswa(f0, s0, m), "");
  EXPECT_EQ(m.seq_pos_max(0), 39);
  EXPECT_GT(m.earliest_restorable_pos(0), 20);
  EXPECT_FALSE(m.can_resume(0, 20));
  EXPECT_TRUE(m.can_resume(0, m.earliest_restorable_pos(0)));
  EXPECT_TRUE(m.seq_rm(0, m.earliest_restorable_pos(0), -1).is_ok());
  EXPECT_EQ(m.part<0>().seq_pos_max(0), m.part<1>().seq_pos_max(0));
}

// T38 (adapted): the composite's per-sequence state holds each part's blob; it
// restores into another sequence and the parts agree.
TEST_F(LayeredSpec, T38PerSequenceStateRoundTrip) {
  auto m = make_iswa(64, 16, 4);
  ASSERT_TRUE(dec_m(m, 0, 0, 11).is_ok());
  const auto blob = state_of(m, 0);
  ASSERT_TRUE(memory::state_read(m, blob, 1).is_ok());
  EXPECT_EQ(m.part<0>().seq_pos_max(1), 11);
  EXPECT_EQ(m.part<0>().seq_pos_min(1), 0);
  EXPECT_EQ(m.part<1>().seq_pos_min(1), 8);  // the window ending at 11
  EXPECT_EQ(m.earliest_restorable_pos(1), 11);
  EXPECT_EQ(m.seq_pos_min(1), 8);
  auto whole = state_of(m);
  auto n = make_iswa(64, 16, 4);
  ASSERT_TRUE(memory::state_read(n, whole).is_ok());
  EXPECT_EQ(first_difference(snap(m.part<0>(), live_rows), snap(n.part<0>(), live_rows)), "");
}

// A damaged second part: nothing changes in the first (llama.cpp restores the first,
// #27530).
TEST_F(LayeredSpec, StateWithADamagedPartChangesNoPart) {
  auto m = make_iswa(64, 16, 4);
  ASSERT_TRUE(dec_m(m, 0, 0, 11).is_ok());
  auto blob = state_of(m, 0);
  ASSERT_TRUE(dec_m(m, 1, 0, 3).is_ok());
  const auto f0 = snap(m.part<0>()), s0 = snap(m.part<1>());
  blob[blob.size() - 3] ^= 0x40;  // inside the window part's rows: its checksum fails
  reseal(blob);                   // the outer checksum is right again
  const status st = memory::state_read(m, blob, 1);
  EXPECT_EQ(st.code(), status_code::corrupt_data) << st.to_string();
  EXPECT_NE(st.to_string().find("part 1"), std::string::npos) << st.to_string();
  EXPECT_EQ(diff_iswa(f0, s0, m), "");
}

// Planning: the second part cannot place the batch, so the first's plan is dropped
// and a later batch goes through normally (T62's shape).
TEST_F(LayeredSpec, T62SecondPartWithoutRoomChangesNothing) {
  auto m = hybrid::make({1, 0}, make_rec(1), make_full(1, 8)).value();
  ASSERT_TRUE(dec_m(m, 0, 0, 5).is_ok());
  EXPECT_EQ(dec_m(m, 0, 6, 8).code(), status_code::no_space);
  EXPECT_EQ(m.part<0>().seq_pos_max(0), 5);
  EXPECT_EQ(m.part<1>().used(), 6u);
  EXPECT_FALSE(m.in_batch());
  EXPECT_TRUE(dec_m(m, 0, 6, 7).is_ok());
  EXPECT_EQ(m.seq_pos_max(0), 7);
}

// T60 / T61: removals the recurrent part cannot represent are refused before the
// attention part changes (llama.cpp T61: true, and pos_min jumps, D-16).
TEST_F(LayeredSpec, T60T61HybridRemovalsAreAllOrNothing) {
  auto m = hybrid::make({0, 1}, make_rec(1), make_full(1, 32)).value();
  ASSERT_TRUE(dec_m(m, 0, 0, 9).is_ok());
  const auto a0 = snap(m.part<1>());
  EXPECT_EQ(m.seq_rm(0, 5, -1).code(), status_code::unsupported);  // T60: no checkpoint
  EXPECT_EQ(m.seq_rm(0, 0, 3).code(), status_code::unsupported);   // T61: a prefix
  EXPECT_EQ(first_difference(a0, snap(m.part<1>())), "");
  EXPECT_EQ(m.seq_pos_min(0), 9);  // the recurrent part holds only its last position
  EXPECT_EQ(m.seq_pos_max(0), 9);
  EXPECT_TRUE(m.seq_rm(0, -1, -1).is_ok());
  EXPECT_EQ(m.part<1>().used(), 0u);
  EXPECT_EQ(m.seq_pos_max(0), -1);
}

TEST_F(LayeredSpec, HybridWithCheckpointsRollsBackBothParts) {
  auto m = hybrid::make({0, 1}, make_rec(1, 4), make_full(1, 32)).value();
  ASSERT_TRUE(dec_m(m, 0, 0, 5).is_ok());
  ASSERT_TRUE(dec_m(m, 0, 6, 9).is_ok());
  EXPECT_TRUE(m.can_resume(0, 6));
  EXPECT_FALSE(m.can_resume(0, 4));
  EXPECT_TRUE(m.seq_rm(0, 6, -1).is_ok());
  EXPECT_EQ(m.part<0>().seq_pos_max(0), 5);
  EXPECT_EQ(m.part<1>().seq_pos_max(0), 5);
  EXPECT_EQ(m.split_strategy(8).kind, split_kind::equal);  // the recurrent part's split
}

// A failure after a micro-batch rolls back every part exactly, reused window cells
// included.
TEST_F(LayeredSpec, InjectedFailureRollsBackEveryPart) {
  auto m = make_iswa(64, 16, 4);
  ASSERT_TRUE(dec_m(m, 0, 0, 15).is_ok());
  // The full part writes to free cells (unreachable after rollback): live rows only.
  const auto f0 = snap(m.part<0>(), live_rows), s0 = snap(m.part<1>());
  EXPECT_EQ(dec_m(m, 0, 16, 27, 4, 2).code(), status_code::failed_compute);
  EXPECT_EQ(first_difference(f0, snap(m.part<0>(), live_rows)), "");
  EXPECT_EQ(first_difference(s0, snap(m.part<1>())), "");
}

// docs/composite.md: 5 local layers (window 1024) + 1 global layer at 32k context and
// one sequence, against 6 full layers. Bytes are deterministic: K and V rows of 64 B
// (1 head x 32 f16) here; the ratio holds for any row size.
TEST(LayeredMemory, InterleavedWindowBytesAt32k) {
  using f16full = memory::full_cache<dtype::f16>;
  using f16swa = memory::sliding_window<dtype::f16>;
  memory::full_cache_config fc;
  fc.shape = {1, 1, 32, 32};
  fc.size = 32768;
  fc.rope = default_rope();
  memory::sliding_window_config wc;
  wc.shape = {5, 1, 32, 32};
  wc.n_ctx = 32768;
  wc.n_swa = 1024;
  wc.n_ubatch = 512;
  wc.rope = default_rope();
  auto m = memory::layered<f16full, f16swa>::make({1, 1, 1, 1, 1, 0}, f16full::make(fc).value(),
                                                  f16swa::make(wc).value())
               .value();
  fc.shape.n_layer = 6;
  const std::size_t full_bytes = f16full::make(fc).value().report().total_bytes;
  const std::size_t comp_bytes = m.report().total_bytes;
  EXPECT_EQ(m.part<1>().size(), 1536u);
  EXPECT_EQ(full_bytes, 6u * 32768u * 128u);                                        // 25 165 824
  EXPECT_EQ(comp_bytes, 1u * 32768u * 128u + 5u * 1536u * 128u);                    // 5 177 344
  EXPECT_NEAR(double(comp_bytes) / double(full_bytes), 40448.0 / 196608.0, 1e-12);  // 0.2057
}

}  // namespace
