// Budgets in bounded state files: the rule and every lane's budget (fixed, a
// per-layer schedule, per-KV-head budgets) are recorded; a file loads only into a
// memory with the same layout, else a status naming both layouts and nothing
// changes. Files written before budgets were recorded still load into any layout.
#include <cstring>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "mnemo/evict/last_recent.hpp"
#include "mnemo/memory/bounded/bounded_state.hpp"

namespace {

using namespace mnemo;
using mem_t = memory::bounded<evict::last_recent, float>;

memory::bounded_config config(memory::kv_granularity g = memory::kv_granularity::per_layer) {
  memory::bounded_config c;
  c.shape = {2, 2, 4, 4};  // 2 layers, 2 KV heads, d 4
  c.budget = 6;
  c.max_ubatch = 4;
  c.rope.layout = attention::rope_layout::none;
  c.granularity = g;
  return c;
}

/// Feeds n tokens of sequence 0 in chunks of 4 (no attention: last_recent needs none).
void feed(mem_t& m, std::size_t n) {
  std::vector<float> k(8), v(8);
  for (std::size_t t = 0; t < n;) {
    const std::size_t c = std::min<std::size_t>(4, n - t);
    std::vector<pos_t> pos(c);
    std::vector<seq_set> sets(c, seq_set::of(0));
    for (std::size_t j = 0; j < c; ++j) pos[j] = static_cast<pos_t>(t + j);
    const memory::ubatch_tokens ub{pos, sets};
    ASSERT_TRUE(m.prepare(std::span(&ub, 1)).is_ok());
    ASSERT_TRUE(m.apply(0, ub).is_ok());
    for (std::size_t l = 0; l < 2; ++l) {
      for (std::size_t j = 0; j < c; ++j) {
        for (std::size_t i = 0; i < 8; ++i) k[i] = v[i] = float(t + j) + 0.1f * float(i + l);
        m.write_kv(l, 0, j, k.data(), v.data());
      }
      ASSERT_TRUE(m.after_attention(l, 0, false).is_ok());
    }
    m.commit();
    t += c;
  }
}

std::vector<std::uint8_t> save(mem_t& m) {
  std::vector<std::uint8_t> out;
  EXPECT_TRUE(state_write(m, -1, out).is_ok());
  return out;
}

/// Expects `file` refused by a memory of config `c`, naming both layouts, with
/// nothing changed.
void expect_refused(const std::vector<std::uint8_t>& file, const memory::bounded_config& c,
                    const std::string& written, const std::string& mine) {
  auto m = mem_t::make(c).value();
  feed(m, 5);
  const auto before = save(m);
  const status st = state_read(m, file);
  ASSERT_FALSE(st.is_ok());
  EXPECT_EQ(st.code(), status_code::invalid_argument);
  EXPECT_NE(st.message().find(written), std::string::npos) << st.message();
  EXPECT_NE(st.message().find(mine), std::string::npos) << st.message();
  EXPECT_EQ(save(m), before) << "a refused file changed the memory";
}

TEST(BoundedBudgetState, SameLayoutRoundTrips) {
  auto c = config();
  c.layer_budgets = {6, 3};
  auto a = mem_t::make(c).value();
  feed(a, 13);
  EXPECT_EQ(a.lane_of(0, 1).live, 3u);
  const auto file = save(a);
  auto b = mem_t::make(c).value();
  ASSERT_TRUE(state_read(b, file).is_ok());
  EXPECT_EQ(save(b), file);
}

TEST(BoundedBudgetState, OtherLayoutIsRefusedNamingBoth) {
  auto sched = config();
  sched.layer_budgets = {6, 3};
  auto a = mem_t::make(sched).value();
  feed(a, 13);
  const auto file = save(a);
  // A fixed budget, another schedule, the other rule.
  expect_refused(file, config(), "rule kept, layer budgets 6, 3", "rule kept, budget 6");
  auto other = sched;
  other.layer_budgets = {3, 6};
  expect_refused(file, other, "layer budgets 6, 3", "layer budgets 3, 6");
  auto read = sched;
  read.rule = memory::budget_rule::read;
  expect_refused(file, read, "rule kept, layer budgets 6, 3", "rule read, layer budgets 6, 3");

  // Per-KV-head budgets (DuoAttention's layout): another head's budget differs.
  auto heads = config(memory::kv_granularity::per_kv_head);
  heads.head_budgets = {6, 2, 6, 6};
  auto h = mem_t::make(heads).value();
  feed(h, 13);
  EXPECT_EQ(h.lane_of(0, 0, 1).live, 2u);
  const auto hfile = save(h);
  auto swapped = heads;
  swapped.head_budgets = {6, 6, 6, 2};
  expect_refused(hfile, swapped, "head budgets 6, 2, 6, 6", "head budgets 6, 6, 6, 2");
  expect_refused(hfile, config(memory::kv_granularity::per_kv_head), "head budgets 6, 2, 6, 6",
                 "rule kept, budget 6");
  auto same = mem_t::make(heads).value();
  ASSERT_TRUE(state_read(same, hfile).is_ok());
  EXPECT_EQ(save(same), hfile);
}

/// The file without its budget block and flag, as written before budgets were
/// recorded (same header, resealed).
std::vector<std::uint8_t> without_budgets(const mem_t& m, const std::vector<std::uint8_t>& file) {
  auto opened = memory::open_state_into(file, memory::detail::bounded_header(m, -1), -1,
                                        m.config().n_seq_max, false)
                    .value();
  std::vector<std::uint8_t> p(opened.payload.begin(), opened.payload.end());
  std::uint32_t word = 0, n_lanes = 0;
  std::memcpy(&word, p.data(), 4);
  std::memcpy(&n_lanes, p.data() + 12, 4);
  word &= ~memory::detail::budgets_recorded;
  std::memcpy(p.data(), &word, 4);
  p.erase(p.begin() + 4, p.begin() + 16 + 4 * static_cast<std::ptrdiff_t>(n_lanes));
  std::vector<std::uint8_t> out;
  memory::state_builder b(out, memory::detail::bounded_header(m, -1), 0);
  b.payload().put_bytes(p.data(), p.size());
  b.seal();
  return out;
}

TEST(BoundedBudgetState, FilesWithoutBudgetsLoadIntoAnyLayout) {
  auto sched = config();
  sched.layer_budgets = {6, 3};
  auto a = mem_t::make(sched).value();
  feed(a, 13);
  const auto old = without_budgets(a, save(a));
  auto b = mem_t::make(config()).value();  // budget 6 in both layers
  ASSERT_TRUE(state_read(b, old).is_ok());
  EXPECT_EQ(b.lane_of(0, 1).live, 3u);  // layer 1 evicts to 6 at its next call
  EXPECT_EQ(b.seq_pos_max(0), 12);
}

}  // namespace
