// State files of AdaKV's pooled cache (memory/bounded/bounded_state.hpp): a saved pool
// loads into a fresh memory (whole, or one sequence into another) and continues
// exactly as the saved one (every output and the next file byte for byte); the file
// records the pool's budget, rule and alpha, and another layout is refused naming
// both; truncated or hostile files (a slot outside its head's slots, a pool page
// held by two heads, slots beyond the page map) get a status and change nothing.
#include <cstring>
#include <string>
#include <vector>

#include "evict/harness.hpp"
#include <gtest/gtest.h>

#include "mnemo/evict/adakv.hpp"
#include "mnemo/evict/h2o.hpp"
#include "mnemo/memory/bounded/bounded_state.hpp"

namespace {

using namespace evict_test;
namespace ev = mnemo::evict;

constexpr std::size_t k_layers = 2, k_kv = 4, k_group = 2, k_d = 16;

/// A score per (KV head, position) from a hash, higher for later heads: the heads'
/// budgets come out ragged.
struct hashed_score : ev::policy_defaults {
  static constexpr std::size_t state_floats = 1;
  void on_insert(const ev::step_info& s, ev::slot_view v, std::size_t slot, const float*,
                 const float*) const noexcept {
    std::uint64_t z =
        static_cast<std::uint64_t>(v.pos[slot]) * 0x9e3779b97f4a7c15ull ^ (s.kv_head + 1) << 40;
    z = (z ^ (z >> 31)) * 0xbf58476d1ce4e5b9ull;
    v.state[slot] = static_cast<float>(z >> 40) / 16777216.0f + 0.4f * float(s.kv_head);
  }
  float score(const ev::step_info&, ev::slot_view v, std::size_t slot) const noexcept {
    return v.state[slot];
  }
};
using pool_t = memory::bounded<ev::adakv<hashed_score>, float>;

memory::bounded_config config(std::size_t budget = 6, seq_id n_seq = 2) {
  memory::bounded_config c;
  c.shape = {k_layers, k_kv, k_d, k_d};
  c.budget = budget;
  c.max_ubatch = 4;
  c.n_seq_max = n_seq;
  c.rope.layout = attention::rope_layout::none;
  c.granularity = memory::kv_granularity::per_kv_head;
  return c;
}

pool_t make_pool(const memory::bounded_config& c, double alpha = 0.25) {
  ev::adakv<hashed_score> p;
  p.alpha = alpha;
  return pool_t::make(c, p).value();
}

synthetic rows(std::uint64_t seed) {
  synthetic s;
  s.n_head = k_kv * k_group;
  s.n_head_kv = k_kv;
  s.d = k_d;
  s.n_tokens = 48;
  mnemo_test::splitmix64 g{seed};
  for (auto* a : {&s.q, &s.k, &s.v}) {
    a->resize(s.n_tokens * (a == &s.q ? s.n_head : k_kv) * k_d);
    for (float& x : *a) x = static_cast<float>(g.normal());
  }
  return s;
}

/// Tokens [t, t + n) of s as one micro-batch of sequence `seq` through every layer;
/// appends each layer's attention output to `out`.
void call(pool_t& m, const synthetic& s, seq_id seq, std::size_t t, std::size_t n,
          std::vector<float>& out) {
  std::vector<pos_t> pos(n);
  std::vector<seq_id> seqs(n, seq);
  std::vector<seq_set> sets(n, seq_set::of(seq));
  for (std::size_t j = 0; j < n; ++j) pos[j] = static_cast<pos_t>(t + j);
  const memory::ubatch_tokens ub{pos, sets};
  ASSERT_TRUE(m.prepare(std::span(&ub, 1)).is_ok());
  ASSERT_TRUE(m.apply(0, ub).is_ok());
  const attention::shape sh{s.n_head, k_kv, k_d, k_d};
  attention::params ap;
  ap.scale = 0.25f;
  attention::workspace ws;
  memory::layer_views lv;
  const std::size_t kv_row = k_kv * k_d, q_row = s.n_head * k_d;
  for (std::size_t l = 0; l < k_layers; ++l) {
    for (std::size_t j = 0; j < n; ++j)
      m.write_kv(l, 0, j, &s.k[(t + j) * kv_row], &s.v[(t + j) * kv_row]);
    m.views(l, 0, lv);
    std::vector<float> o(n * q_row);
    const attention::query_batch qb{&s.q[t * q_row], n, pos.data(), seqs.data(), nullptr};
    ASSERT_TRUE((model::attend_observed<simd::native, float, float>(m, l, 0, sh, ap, qb, lv,
                                                                    o.data(), ws, {1})
                     .is_ok()));
    out.insert(out.end(), o.begin(), o.end());
  }
  m.commit();
}

/// A prefill of 24 tokens in chunks of 4 (the heads' budgets end up ragged).
void prefill(pool_t& m, const synthetic& s, seq_id seq) {
  std::vector<float> out;
  for (std::size_t t = 0; t < 24; t += 4) ASSERT_NO_FATAL_FAILURE(call(m, s, seq, t, 4, out));
}

std::vector<std::uint8_t> save(pool_t& m, seq_id s = -1) {
  std::vector<std::uint8_t> f;
  const status st = memory::state_write(m, s, f);
  EXPECT_TRUE(st.is_ok()) << st.message();
  return f;
}

TEST(EvictAdakvState, RoundTripContinuesExactly) {
  const synthetic s = rows(7);
  auto a = make_pool(config());
  ASSERT_NO_FATAL_FAILURE(prefill(a, s, 0));
  std::size_t lo = 100, hi = 0;  // the budgets are ragged: the test is not trivial
  for (std::size_t h = 0; h < k_kv; ++h) {
    lo = std::min(lo, a.lane_of(0, 0, h).live);
    hi = std::max(hi, a.lane_of(0, 0, h).live);
  }
  ASSERT_LT(lo, hi);
  const auto whole = save(a), one = save(a, 0);
  auto b = make_pool(config());
  ASSERT_TRUE(memory::state_read(b, whole).is_ok());
  EXPECT_EQ(save(b), whole);
  auto c = make_pool(config());  // sequence 0's file into sequence 1
  ASSERT_TRUE(memory::state_read(c, one, 1).is_ok());
  EXPECT_EQ(c.seq_pos_max(1), 23);
  for (std::size_t t = 24; t < s.n_tokens; ++t) {  // decode: evictions in every call
    std::vector<float> oa, ob, oc;
    ASSERT_NO_FATAL_FAILURE(call(a, s, 0, t, 1, oa));
    ASSERT_NO_FATAL_FAILURE(call(b, s, 0, t, 1, ob));
    ASSERT_NO_FATAL_FAILURE(call(c, s, 1, t, 1, oc));
    ASSERT_EQ(oa, ob) << "the loaded pool diverged at position " << t;
    ASSERT_EQ(oa, oc) << "the pool loaded into sequence 1 diverged at position " << t;
  }
  EXPECT_EQ(save(b), save(a));
  auto d = make_pool(config());  // sequence 1's file back into sequence 0
  ASSERT_TRUE(memory::state_read(d, save(c, 1), 0).is_ok());
  EXPECT_EQ(save(d, 0), save(a, 0));
}

/// `file` is refused by memory m (status `code`, naming `words`), which keeps its state.
void expect_refused(pool_t& m, const std::vector<std::uint8_t>& file, status_code code,
                    const std::vector<std::string>& words, const char* what) {
  const auto before = save(m);
  const status st = memory::state_read(m, file);
  ASSERT_FALSE(st.is_ok()) << what;
  EXPECT_EQ(st.code(), code) << what << ": " << st.message();
  for (const std::string& w : words)
    EXPECT_NE(st.message().find(w), std::string::npos) << what << ": " << st.message();
  EXPECT_EQ(save(m), before) << what << ": a refused file changed the memory";
}

TEST(EvictAdakvState, OtherLayoutsAreRefusedNamingBoth) {
  const synthetic s = rows(8);
  auto a = make_pool(config());
  ASSERT_NO_FATAL_FAILURE(prefill(a, s, 0));
  const auto file = save(a);
  auto other_budget = make_pool(config(8));
  ASSERT_NO_FATAL_FAILURE(prefill(other_budget, rows(9), 0));
  expect_refused(
      other_budget, file, status_code::invalid_argument,
      {"AdaKV pool, budget 6 per head, alpha 0.25", "AdaKV pool, budget 8 per head, alpha 0.25"},
      "budget 8");
  auto other_alpha = make_pool(config(), 0.5);
  ASSERT_NO_FATAL_FAILURE(prefill(other_alpha, rows(9), 0));
  expect_refused(other_alpha, file, status_code::invalid_argument, {"alpha 0.25", "alpha 0.5"},
                 "alpha 0.5");
  // Per-KV-head lanes without a pool (the same budget and state size) refuse it, and
  // the pool refuses theirs.
  using lanes_t = memory::bounded<hashed_score, float>;
  auto lanes = lanes_t::make(config()).value();
  std::vector<std::uint8_t> before, lanes_file;
  ASSERT_TRUE(memory::state_write(lanes, -1, before).is_ok());
  const status st = memory::state_read(lanes, file);
  EXPECT_EQ(st.code(), status_code::invalid_argument) << st.message();
  EXPECT_NE(st.message().find("rule kept, budget 6"), std::string::npos) << st.message();
  ASSERT_TRUE(memory::state_write(lanes, -1, lanes_file).is_ok());
  EXPECT_EQ(lanes_file, before);
  expect_refused(a, lanes_file, status_code::invalid_argument,
                 {"rule kept, budget 6", "AdaKV pool"}, "per-head lanes' file");
}

/// The file with its payload changed by `edit` and sealed again (a hostile file
/// that passes the checksum).
template <class Edit>
std::vector<std::uint8_t> resealed(const pool_t& m, const std::vector<std::uint8_t>& file,
                                   Edit edit) {
  auto opened = memory::open_state_into(file, memory::detail::bounded_header(m, -1), -1,
                                        m.config().n_seq_max, false)
                    .value();
  std::vector<std::uint8_t> p(opened.payload.begin(), opened.payload.end());
  edit(p);
  std::vector<std::uint8_t> out;
  memory::state_builder b(out, memory::detail::bounded_header(m, -1), 0);
  b.payload().put_bytes(p.data(), p.size());
  b.seal();
  return out;
}

TEST(EvictAdakvState, TruncatedAndHostileFilesGetAStatus) {
  auto a = make_pool(config());
  ASSERT_NO_FATAL_FAILURE(prefill(a, rows(10), 0));
  const auto file = save(a);
  auto m = make_pool(config());
  ASSERT_NO_FATAL_FAILURE(prefill(m, rows(11), 0));
  for (std::size_t n = 0; n < file.size(); n += 13) {
    const std::vector<std::uint8_t> cut(file.begin(),
                                        file.begin() + static_cast<std::ptrdiff_t>(n));
    expect_refused(m, cut, status_code::corrupt_data, {}, "truncated");
    if (::testing::Test::HasFailure()) return;
  }
  // Payload: layout word, budget layout (rule, kind, n_lanes, n_lanes budgets, alpha),
  // n_seq, then sequence 0 (id, pos_max) and its first lane: count, then per cell
  // (pos, slot, score), K rows, V rows, page map; the second lane follows.
  const std::size_t lanes0 = 4 + 12 + 4 * k_layers * k_kv + 4 + 4 + 8;
  std::uint32_t n0 = 0;
  std::memcpy(&n0, file.data() + memory::state_header::bytes + lanes0, 4);
  ASSERT_GT(n0, 0u);
  const std::size_t first_slot = lanes0 + 4 + 4;
  auto outside = resealed(a, file, [&](std::vector<std::uint8_t>& p) {
    const std::uint32_t bad = static_cast<std::uint32_t>(a.lane_slots(0, 0));
    std::memcpy(p.data() + first_slot, &bad, 4);
  });
  expect_refused(m, outside, status_code::corrupt_data, {"pool slot"}, "slot outside the pool");
  // Lane 0's page map (u32 n, pages) follows its V rows; lane 1 follows it.
  const std::size_t cell_bytes = 12 + 2 * 4 * k_d, pages0 = lanes0 + 4 + n0 * cell_bytes;
  std::uint32_t np0 = 0;
  std::memcpy(&np0, file.data() + memory::state_header::bytes + pages0, 4);
  ASSERT_GT(np0, 0u);
  const std::size_t lane1 = pages0 + 4 + 4 * np0;
  auto twice = resealed(a, file, [&](std::vector<std::uint8_t>& p) {
    std::uint32_t n1 = 0;
    std::memcpy(&n1, p.data() + lane1, 4);
    ASSERT_GT(n1, 0u);  // head 1 maps head 0's first page
    std::memcpy(p.data() + lane1 + 4 + n1 * cell_bytes + 4, p.data() + pages0 + 4, 4);
  });
  expect_refused(m, twice, status_code::corrupt_data, {"held twice"}, "page held by two heads");
  // Head 0's last cell moved to the top of its slots: its page map no longer covers it.
  auto over = resealed(a, file, [&](std::vector<std::uint8_t>& p) {
    const std::uint32_t last = static_cast<std::uint32_t>(a.lane_slots(0, 0) - 1);
    std::memcpy(p.data() + first_slot + (n0 - 1) * 12, &last, 4);
  });
  expect_refused(m, over, status_code::corrupt_data, {"pages"}, "slots beyond the page map");
}

}  // namespace
