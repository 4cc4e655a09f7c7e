// Edge cases of the per-stream sliding window (split_window.hpp): sizing per stream,
// forgetting per stream, lost-context statuses naming the caller's sequence, exact
// rollback, coupled tokens refused, state round trips with damaged states refused,
// and the composite layered<split_stream, split_window> (all-or-nothing sequence
// operations and state across both parts).
#include <gtest/gtest.h>

#include "mnemo/memory/layered/layered.hpp"
#include "mnemo/memory/layered/layered_state.hpp"
#include "mnemo/memory/window/split_window.hpp"
#include "mnemo/memory/window/split_window_state.hpp"
//
#include "memory/harness.hpp"

namespace {

using namespace mnemo;
using namespace mnemo::memtest;
using attention::window_kind;
using sw = memory::split_window<float>;
using ss = memory::split_stream<float>;
using composite = memory::layered<ss, sw>;

memory::split_window_config window_cfg(std::size_t layers, std::size_t size, pos_t n_swa,
                                       seq_id n_seq) {
  memory::split_window_config c;
  c.n_seq_max = n_seq;
  c.stream.shape = {layers, 1, 32, 32};
  c.stream.size = size;
  c.stream.n_ctx = 1 << 20;
  c.stream.n_swa = n_swa;
  c.stream.window = window_kind::standard;
  c.stream.rope = default_rope();
  return c;
}
sw make_sw(std::size_t size = 8, pos_t n_swa = 4, seq_id n_seq = 3) {
  return std::move(sw::make(window_cfg(2, size, n_swa, n_seq))).value();
}

/// Decodes positions a..b of s (n_ub tokens per micro-batch), K/V written for every
/// KV layer of m; fail_after >= 0: rollback after that micro-batch.
template <class M>
status dec_m(M& m, std::size_t n_layer, seq_id s, pos_t a, pos_t b, std::size_t n_ub = 0,
             int fail_after = -1) {
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
  const memory::kv_shape sh{1, 1, 32, 32};
  for (std::size_t u = 0; u < ubs.size(); ++u) {
    MNEMO_RETURN_IF_ERROR(m.apply(u, ubs[u]));
    for (std::size_t j = 0; j < ubs[u].size(); ++j)
      for (std::size_t l = 0; l < n_layer; ++l) {
        const auto k = raw_k(sh, l, s, pos[u][j]), v = raw_v(sh, l, s, pos[u][j]);
        m.write_kv(l, u, j, k.data(), v.data());
      }
    if (static_cast<int>(u) == fail_after) {
      m.rollback();
      return make_status(status_code::internal, "injected");
    }
  }
  m.commit();
  return {};
}

std::vector<snapshot> snaps(const sw& w) {
  std::vector<snapshot> v;
  for (seq_id s = 0; s < static_cast<seq_id>(w.n_streams()); ++s) v.push_back(snap(w.stream(s)));
  return v;
}
void expect_same(const std::vector<snapshot>& a, const std::vector<snapshot>& b) {
  ASSERT_EQ(a.size(), b.size());
  for (std::size_t s = 0; s < a.size(); ++s)
    EXPECT_EQ(first_difference(a[s], b[s]), "") << "stream " << s;
}

TEST(SplitWindowSpec, SizingIsPerStream) {
  memory::split_window_config c = window_cfg(1, 0, 1024, 4);
  c.stream.n_ctx = 32768;
  c.stream.n_ubatch = 512;
  EXPECT_EQ(c.cells_per_stream(), 1536u);  // pad(1024 + 512, 256), not n_swa * 4
  auto m = sw::make(c);
  ASSERT_TRUE(m.is_ok()) << m.error().to_string();
  EXPECT_EQ(m.value().size_per_stream(), 1536u);
  EXPECT_EQ(m.value().size(), 4u * 1536u);
  EXPECT_EQ(m.value().report().cells, 4u * 1536u);
  c.stream.n_ctx = 1000;  // min n_ctx
  EXPECT_EQ(c.cells_per_stream(), 1000u);
  c.stream.swa_full = true;
  EXPECT_EQ(c.cells_per_stream(), 1000u);
  c.stream.n_ctx = 32768;
  EXPECT_EQ(c.cells_per_stream(), 32768u);
  c.n_seq_max = 0;
  EXPECT_FALSE(sw::make(c).is_ok());
}

TEST(SplitWindowSpec, ForgettingIsPerStream) {
  sw m = make_sw(8, 4, 3);
  ASSERT_TRUE(dec_m(m, 2, 0, 0, 29, 1).is_ok());
  ASSERT_TRUE(dec_m(m, 2, 1, 0, 2).is_ok());
  EXPECT_GT(m.horizon(0), 0);
  EXPECT_EQ(m.horizon(1), 0);  // the other stream's traffic never evicts sequence 1
  EXPECT_EQ(m.seq_pos_min(1), 0);
  EXPECT_EQ(m.seq_pos_max(0), 29);
  EXPECT_LE(m.stream(0).used(), 8u);
  EXPECT_EQ(m.seq_pos_max(2), -1);
  EXPECT_TRUE(m.can_resume(0, 30));
  EXPECT_FALSE(m.can_resume(0, 10));
  EXPECT_GE(m.earliest_restorable_pos(0), 20);
  EXPECT_EQ(m.earliest_restorable_pos(1), 0);
}

TEST(SplitWindowSpec, LostContextNamesTheSequence) {
  sw m = make_sw(8, 4, 3);
  ASSERT_TRUE(dec_m(m, 2, 2, 0, 29, 2).is_ok());
  const auto before = snaps(m);
  const status st = m.seq_rm(2, 10, -1);
  EXPECT_EQ(st.code(), status_code::unsupported);
  EXPECT_NE(st.message().find("sequence 2"), std::string::npos) << st.to_string();
  EXPECT_EQ(st.message().find("sequence 0"), std::string::npos) << st.to_string();
  expect_same(before, snaps(m));
  const status cp = m.seq_cp(2, 1, 0, 12);  // a branch inside the forgotten part
  EXPECT_EQ(cp.code(), status_code::unsupported);
  EXPECT_NE(cp.message().find("sequence 1"), std::string::npos) << cp.to_string();
  expect_same(before, snaps(m));
  ASSERT_TRUE(m.seq_cp(2, 1, -1, -1).is_ok());  // a whole copy keeps the window
  EXPECT_EQ(m.horizon(1), m.horizon(2));
  EXPECT_EQ(m.seq_pos_max(1), 29);
  EXPECT_TRUE(dec_m(m, 2, 1, 30, 31).is_ok());
}

TEST(SplitWindowSpec, RollbackRestoresEveryStream) {
  sw m = make_sw(8, 4, 3);
  ASSERT_TRUE(dec_m(m, 2, 0, 0, 9, 2).is_ok());
  ASSERT_TRUE(dec_m(m, 2, 1, 0, 9, 2).is_ok());
  const auto before = snaps(m);
  std::vector<pos_t> pos{10, 11, 12, 10, 11, 12};
  std::vector<seq_set> sets{seq_set::of(0), seq_set::of(0), seq_set::of(0),
                            seq_set::of(1), seq_set::of(1), seq_set::of(1)};
  std::vector<memory::ubatch_tokens> ubs{{std::span(pos).first(3), std::span(sets).first(3)},
                                         {std::span(pos).last(3), std::span(sets).last(3)}};
  ASSERT_TRUE(m.prepare(ubs).is_ok());
  for (std::size_t u = 0; u < 2; ++u) {
    ASSERT_TRUE(m.apply(u, ubs[u]).is_ok());
    std::vector<float> k(32, 7.0f), v(32, 7.0f);
    for (std::size_t j = 0; j < 3; ++j)
      for (std::size_t l = 0; l < 2; ++l) m.write_kv(l, u, j, k.data(), v.data());
  }
  EXPECT_TRUE(m.in_batch());
  EXPECT_FALSE(m.seq_rm(0, -1, -1).is_ok());  // no sequence operation inside a batch
  m.rollback();
  EXPECT_FALSE(m.in_batch());
  expect_same(before, snaps(m));
}

TEST(SplitWindowSpec, CoupledTokensAreRefused) {
  sw m = make_sw(8, 4, 3);
  std::vector<pos_t> pos{0};
  seq_set both = seq_set::of(0);
  both.insert(2);
  std::vector<seq_set> sets{both};
  std::vector<memory::ubatch_tokens> ubs{{pos, sets}};
  const status st = m.prepare(ubs);
  EXPECT_EQ(st.code(), status_code::unsupported);
  EXPECT_NE(st.message().find("sequence 0"), std::string::npos) << st.to_string();
  EXPECT_FALSE(m.in_batch());
  sets[0] = seq_set::of(3);
  EXPECT_EQ(m.prepare(ubs).code(), status_code::out_of_range);
}

TEST(SplitWindowSpec, StateRoundTripsAndRefusesDamage) {
  sw a = make_sw(8, 4, 3);
  ASSERT_TRUE(dec_m(a, 2, 0, 0, 20, 3).is_ok());
  ASSERT_TRUE(dec_m(a, 2, 2, 0, 5).is_ok());
  const auto whole = state_of(a);
  sw b = make_sw(8, 4, 3);
  ASSERT_TRUE(memory::state_read(b, whole).is_ok());
  expect_same(snaps(a), snaps(b));
  EXPECT_EQ(b.horizon(0), a.horizon(0));
  // One sequence into another id.
  const auto one = state_of(a, 0);
  sw c = make_sw(8, 4, 3);
  ASSERT_TRUE(memory::state_read(c, one, 1).is_ok());
  EXPECT_EQ(c.seq_pos_max(1), 20);
  EXPECT_EQ(c.seq_pos_max(0), -1);
  EXPECT_TRUE(dec_m(c, 2, 1, 21, 22).is_ok());
  EXPECT_FALSE(memory::state_read(c, one, -1).is_ok());  // per-sequence into whole
  // Truncated, damaged, or from another configuration: refused, nothing changed.
  const auto before = snaps(b);
  for (std::size_t cut : {std::size_t{10}, whole.size() / 2, whole.size() - 1}) {
    std::vector<std::uint8_t> t(whole.begin(), whole.begin() + static_cast<long>(cut));
    EXPECT_FALSE(memory::state_read(b, t).is_ok()) << "cut at " << cut;
  }
  for (std::size_t at : {std::size_t{4}, std::size_t{80}, whole.size() / 3, whole.size() - 3}) {
    auto d = whole;
    d[at] ^= 0x10;
    EXPECT_FALSE(memory::state_read(b, d).is_ok()) << "byte " << at;
  }
  auto resealed = whole;  // a damaged inner stream behind a valid outer checksum
  resealed[resealed.size() - 5] ^= 0x01;
  reseal(resealed);
  const status st = memory::state_read(b, resealed);
  EXPECT_EQ(st.code(), status_code::corrupt_data) << st.to_string();
  expect_same(before, snaps(b));
  sw other = make_sw(8, 4, 2);  // another stream count
  EXPECT_FALSE(memory::state_read(other, whole).is_ok());
}

// ---- the composite: split_stream global layers + split_window local layers ---------

composite make_composite(seq_id n_seq = 2) {
  memory::split_stream_config g;
  g.shape = {1, 1, 32, 32};
  g.size_per_stream = 64;
  g.n_seq_max = n_seq;
  g.block_cells = 16;
  g.rope = default_rope();
  auto m = composite::make({1, 0, 1}, std::move(ss::make(g)).value(),
                           std::move(sw::make(window_cfg(2, 8, 4, n_seq))).value());
  EXPECT_TRUE(m.is_ok()) << m.error().to_string();
  return std::move(m).value();
}

TEST(SplitWindowComposite, PlansOneSequentialSplitAndRoutesLayers) {
  composite m = make_composite();
  static_assert(memory::kv_memory<composite>);
  const auto s = m.split_strategy(64);
  EXPECT_EQ(s.kind, split_kind::equal);
  EXPECT_TRUE(s.sequential);
  EXPECT_EQ(m.window(0).first, window_kind::standard);
  EXPECT_EQ(m.window(1).first, window_kind::none);
  ASSERT_TRUE(dec_m(m, 3, 0, 0, 30, 4).is_ok());
  ASSERT_TRUE(dec_m(m, 3, 1, 0, 3).is_ok());
  EXPECT_EQ(m.seq_pos_max(0), 30);
  EXPECT_LE(m.part<1>().stream(0).used(), 8u);
  EXPECT_EQ(m.part<0>().stream_of(0).cells.used(), 31u);
  EXPECT_GT(m.earliest_restorable_pos(0), 0);
}

TEST(SplitWindowComposite, RemovalBelowTheWindowIsRefusedInBothParts) {
  composite m = make_composite();
  ASSERT_TRUE(dec_m(m, 3, 1, 0, 30, 4).is_ok());
  const auto w_before = snaps(m.part<1>());
  const std::size_t g_before = m.part<0>().stream_of(1).cells.used();
  const status st = m.seq_rm(1, 10, -1);
  EXPECT_EQ(st.code(), status_code::unsupported);
  EXPECT_NE(st.message().find("sequence 1"), std::string::npos) << st.to_string();
  EXPECT_EQ(m.part<0>().stream_of(1).cells.used(), g_before);
  expect_same(w_before, snaps(m.part<1>()));
  EXPECT_TRUE(m.seq_rm(1, 29, -1).is_ok());  // inside the window: both parts change
  EXPECT_EQ(m.seq_pos_max(1), 28);
  EXPECT_EQ(m.part<0>().seq_pos_max(1), 28);
}

TEST(SplitWindowComposite, StateRoundTripAndDamagedPartChangesNoPart) {
  composite a = make_composite();
  ASSERT_TRUE(dec_m(a, 3, 0, 0, 20, 5).is_ok());
  ASSERT_TRUE(dec_m(a, 3, 1, 0, 6).is_ok());
  const auto whole = state_of(a);
  composite b = make_composite();
  ASSERT_TRUE(memory::state_read(b, whole).is_ok());
  EXPECT_EQ(b.seq_pos_max(0), 20);
  expect_same(snaps(a.part<1>()), snaps(b.part<1>()));
  const auto one = state_of(a, 0);
  composite c = make_composite();
  ASSERT_TRUE(dec_m(c, 3, 1, 0, 2).is_ok());
  ASSERT_TRUE(memory::state_read(c, one, 1).is_ok());
  EXPECT_EQ(c.seq_pos_max(1), 20);
  EXPECT_TRUE(dec_m(c, 3, 1, 21, 23).is_ok());
  // Damage the window part's bytes only (the last bytes of the file) and reseal.
  auto d = whole;
  d[d.size() - 9] ^= 0x40;
  reseal(d);
  const auto g_before = b.part<0>().stream_of(0).cells.used();
  ASSERT_TRUE(dec_m(b, 3, 0, 21, 22).is_ok());
  const auto w_before = snaps(b.part<1>());
  EXPECT_FALSE(memory::state_read(b, d).is_ok());
  EXPECT_EQ(b.part<0>().stream_of(0).cells.used(), g_before + 2);
  expect_same(w_before, snaps(b.part<1>()));
}

}  // namespace
