// Lost context made explicit in the context (docs/context.md "Lost context"), on the
// gemma3 fixture model with the interleaved composite and a window part small enough to
// forget (n_ubatch 8, 16 * 2 + 8 = 40 cells):
//  - can_resume / earliest_restorable_pos are the memory's (0 / always for a full cache);
//  - without recompute, a branch or a suffix removal that needs forgotten positions is
//    `unsupported`, names the sequence and its earliest restorable position, and changes
//    nothing;
//  - with recompute, the same operations succeed and the logits that follow equal a full
//    cache's (the independent reference: a cache that never forgets), also when the
//    branch is then continued and the source goes on;
//  - a recompute that cannot finish (the global part has no room) leaves the memory and
//    the history as they were; a sequence decoded from embeddings is not recomputed.
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "common/splitmix64.hpp"
#include <gtest/gtest.h>

#include "mnemo/context.hpp"
#include "mnemo/memory/full/full_cache_state.hpp"
#include "mnemo/memory/layered/layered_state.hpp"
#include "mnemo/model/gemma3.hpp"

namespace {

using namespace mnemo;
using model::gemma3_model;
using iswa_t = gemma3_model::iswa_memory<float>;
using full_t = memory::full_cache<float>;
using iswa_ctx = context<gemma3_model, iswa_t>;
using full_ctx = context<gemma3_model, full_t>;

constexpr std::uint32_t k_ubatch = 8;
constexpr std::size_t k_window_cells = 16 * 2 + k_ubatch;
constexpr float k_tol = 1e-4f;  // the same f32 arithmetic up to the order of attention sums

std::string fixture(const std::string& name) {
  return std::string(MNEMO_FIXTURES_DIR) + "/" + name;
}

const gemma3_model* load_model() {
  static std::unique_ptr<gemma3_model> m;
  if (m) return m.get();
  auto r = gemma3_model::open(fixture("gemma3-iswa.gguf"));
  if (!r.is_ok()) return nullptr;
  m = std::make_unique<gemma3_model>(std::move(r).value());
  return m.get();
}

context_params params(bool recompute) {
  context_params p;
  p.n_ubatch = k_ubatch;
  p.n_seq_max = 2;
  p.n_threads = 1;
  p.recompute = recompute;
  return p;
}

iswa_ctx make_iswa(const gemma3_model& m, bool recompute, std::size_t n_ctx = 512) {
  auto mem = m.make_iswa<float>(n_ctx, 2, k_ubatch, k_window_cells);
  EXPECT_TRUE(mem.is_ok()) << mem.error().to_string();
  auto c = iswa_ctx::make(m, std::move(mem).value(), params(recompute));
  EXPECT_TRUE(c.is_ok()) << c.error().to_string();
  return std::move(c).value();
}

full_ctx make_full(const gemma3_model& m) {
  auto mem = full_t::make(m.full_cache_config(512, 2));
  EXPECT_TRUE(mem.is_ok());
  auto c = full_ctx::make(m, std::move(mem).value(), params(false));
  EXPECT_TRUE(c.is_ok());
  return std::move(c).value();
}

std::vector<token_id> random_tokens(std::uint64_t seed, std::size_t n) {
  mnemo_test::splitmix64 rng{seed};
  std::vector<token_id> t(n);
  for (auto& x : t) x = static_cast<token_id>(rng.range(3, 511));
  return t;
}

/// Decodes tokens[i] at p0 + i into s, every token asking for logits; the logits.
template <class Ctx>
std::vector<float> decode(Ctx& ctx, seq_id s, pos_t p0, const std::vector<token_id>& tokens) {
  batch b;
  for (std::size_t i = 0; i < tokens.size(); ++i)
    b.add(tokens[i], p0 + static_cast<pos_t>(i), {s}, true);
  const status st = ctx.decode(b);
  EXPECT_TRUE(st.is_ok()) << st.to_string();
  return {ctx.logits().begin(), ctx.logits().end()};
}

void expect_near(const std::vector<float>& a, const std::vector<float>& b, const char* what) {
  ASSERT_EQ(a.size(), b.size()) << what;
  float worst = 0;
  std::size_t at = 0;
  for (std::size_t i = 0; i < a.size(); ++i)
    if (const float d = std::fabs(a[i] - b[i]); !(d <= worst)) worst = d, at = i;
  EXPECT_LE(worst, k_tol) << what << ": first worst element " << at << " (row " << at / 512
                          << "): " << a[at] << " vs " << b[at];
}

class LostContext : public ::testing::Test {
 protected:
  void SetUp() override {
    m_ = load_model();
    if (m_ == nullptr) GTEST_SKIP() << "gemma3 fixture not found in " << MNEMO_FIXTURES_DIR;
  }
  const gemma3_model* m_ = nullptr;
  const std::vector<token_id> prompt_ = random_tokens(11, 100);  // seed 11
  const std::vector<token_id> branch_ = random_tokens(12, 20);   // seed 12
};

TEST_F(LostContext, QueriesAreForwarded) {
  iswa_ctx c = make_iswa(*m_, false);
  full_ctx f = make_full(*m_);
  decode(c, 0, 0, prompt_);
  decode(f, 0, 0, prompt_);
  const pos_t h = c.memory().part<1>().horizon(0);
  ASSERT_GT(h, 0) << "the window part should have forgotten positions";
  EXPECT_EQ(c.earliest_restorable_pos(0), h + 16 - 1);
  EXPECT_EQ(c.earliest_restorable_pos(0), c.memory().earliest_restorable_pos(0));
  EXPECT_TRUE(c.can_resume(0, 100));
  EXPECT_TRUE(c.can_resume(0, h + 15));
  EXPECT_FALSE(c.can_resume(0, h + 14));
  EXPECT_FALSE(c.can_resume(0, 101));  // beyond pos_max + 1
  EXPECT_TRUE(c.can_resume(1, 0));     // an empty sequence starts at 0
  // A full cache forgets nothing.
  EXPECT_EQ(f.earliest_restorable_pos(0), 0);
  EXPECT_TRUE(f.can_resume(0, 1));
  EXPECT_FALSE(f.can_resume(0, 101));
}

TEST_F(LostContext, WithoutRecomputeTheStatusNamesSequenceAndPosition) {
  iswa_ctx c = make_iswa(*m_, false);
  decode(c, 0, 0, prompt_);
  const std::string earliest = std::to_string(c.earliest_restorable_pos(0));
  const pos_t min0 = c.seq_pos_min(0), max0 = c.seq_pos_max(0);

  status st = c.seq_cp(0, 1, 0, 40);  // branch from an old position
  EXPECT_EQ(st.code(), status_code::unsupported) << st.to_string();
  EXPECT_NE(st.to_string().find("sequence 0"), std::string::npos) << st.to_string();
  EXPECT_NE(st.to_string().find(earliest), std::string::npos) << st.to_string();
  EXPECT_EQ(c.seq_pos_max(1), -1);

  st = c.seq_rm(0, 40, -1);  // truncate to an old position
  EXPECT_EQ(st.code(), status_code::unsupported) << st.to_string();
  EXPECT_NE(st.to_string().find("sequence 0"), std::string::npos) << st.to_string();
  EXPECT_NE(st.to_string().find(earliest), std::string::npos) << st.to_string();
  EXPECT_EQ(c.seq_pos_min(0), min0);
  EXPECT_EQ(c.seq_pos_max(0), max0);

  // A recompute context needs state functions; a plain one refuses nothing else.
  EXPECT_TRUE(c.seq_rm(0, 95, -1).is_ok());  // within the window: no recompute needed
}

TEST_F(LostContext, RecomputedBranchEqualsFullCache) {
  iswa_ctx c = make_iswa(*m_, true);
  full_ctx f = make_full(*m_);
  decode(c, 0, 0, prompt_);
  decode(f, 0, 0, prompt_);
  ASSERT_FALSE(c.can_resume(0, 40));
  status st = c.seq_cp(0, 1, 0, 40);
  ASSERT_TRUE(st.is_ok()) << st.to_string();
  ASSERT_TRUE(f.seq_cp(0, 1, 0, 40).is_ok());
  EXPECT_EQ(c.seq_pos_max(1), 39);
  EXPECT_TRUE(c.can_resume(1, 40));
  EXPECT_EQ(c.history().entries(1).size(), 40u);
  expect_near(decode(c, 1, 40, branch_), decode(f, 1, 40, branch_), "branch continued");
  // The source is untouched by the branch's recompute.
  const std::vector<token_id> more = random_tokens(13, 10);
  expect_near(decode(c, 0, 100, more), decode(f, 0, 100, more), "source continued");
}

TEST_F(LostContext, RecomputedTruncationEqualsFullCache) {
  iswa_ctx c = make_iswa(*m_, true);
  full_ctx f = make_full(*m_);
  decode(c, 0, 0, prompt_);
  decode(f, 0, 0, prompt_);
  for (pos_t p : {40, 7, 0}) {  // 0: a whole removal, which never needs a recompute
    SCOPED_TRACE(p);
    ASSERT_TRUE(c.seq_rm(0, p, -1).is_ok());
    ASSERT_TRUE(f.seq_rm(0, p, -1).is_ok());
    EXPECT_EQ(c.seq_pos_max(0), p - 1);
    expect_near(decode(c, 0, p, branch_), decode(f, 0, p, branch_), "truncated and continued");
    // Back to 100 tokens: the rest of the prompt after the branch tokens.
    const pos_t next = p + static_cast<pos_t>(branch_.size());
    const std::vector<token_id> rest(prompt_.begin() + next, prompt_.end());
    decode(c, 0, next, rest);
    decode(f, 0, next, rest);
  }
}

TEST_F(LostContext, FailedRecomputeChangesNothing) {
  // The global part holds 112 cells: sequence 0 takes 100, the branch's 40 cannot fit.
  iswa_ctx c = make_iswa(*m_, true, 112);
  full_ctx f = make_full(*m_);
  decode(c, 0, 0, prompt_);
  decode(f, 0, 0, prompt_);
  std::vector<std::uint8_t> before, after;
  ASSERT_TRUE(c.state_write(-1, before).is_ok());
  const status st = c.seq_cp(0, 1, 0, 40);
  EXPECT_EQ(st.code(), status_code::unsupported) << st.to_string();
  EXPECT_NE(st.to_string().find("recomputing failed"), std::string::npos) << st.to_string();
  EXPECT_EQ(c.seq_pos_max(1), -1);
  EXPECT_EQ(c.seq_pos_max(0), 99);
  EXPECT_TRUE(c.history().entries(1).empty());
  ASSERT_TRUE(c.state_write(-1, after).is_ok());
  EXPECT_EQ(before, after) << "the memory changed";
  const std::vector<token_id> more = random_tokens(14, 5);
  expect_near(decode(c, 0, 100, more), decode(f, 0, 100, more), "source after the failure");
}

TEST_F(LostContext, EmbeddingInputIsNotRecomputed) {
  iswa_ctx c = make_iswa(*m_, true);
  // Sequence 0 from embedding rows: the context has no tokens to decode again.
  std::vector<float> rows(100 * m_->n_embd());
  mnemo_test::splitmix64 rng{15};
  for (float& x : rows) x = rng.uniform() - 0.5f;
  const std::size_t E = m_->n_embd();
  batch b;
  for (pos_t i = 0; i < 100; i += 8) {
    b.clear();
    for (pos_t j = i; j < std::min<pos_t>(100, i + 8); ++j)
      b.add_embd({rows.data() + static_cast<std::size_t>(j) * E, E}, j, {0}, false);
    ASSERT_TRUE(c.decode(b).is_ok());
  }
  EXPECT_FALSE(c.history().complete(0));
  const status st = c.seq_cp(0, 1, 0, 40);
  EXPECT_EQ(st.code(), status_code::unsupported) << st.to_string();
  EXPECT_EQ(c.seq_pos_max(1), -1);
  // Removed whole, the sequence is known again.
  ASSERT_TRUE(c.seq_rm(0, -1, -1).is_ok());
  EXPECT_TRUE(c.history().complete(0));
}

}  // namespace
