// serve::scheduler on the llama-tiny fixture: a request served from the prefix cache
// gives the logits of the same request computed from scratch (split streams and the
// unified cache; also when it waited for a slot reading the same prefix), chunked
// prefill keeps a running reply at one token per step and shares the budget evenly, a
// finished or cancelled request frees its slot, kept prefixes stay within their share
// (least recently used dropped first), and a full queue or a prompt longer than a slot
// is refused without touching anyone else.
#include <cmath>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "mnemo/base/rng.hpp"
#include "mnemo/serve/scheduler.hpp"

namespace {

using namespace mnemo;
using namespace mnemo::serve;

std::string fixture(const char* name) { return std::string(MNEMO_FIXTURES_DIR) + "/" + name; }

struct recorder : request_sink {
  std::string text;
  std::vector<std::vector<float>> rows;
  bool done = false;
  finish_reason why = finish_reason::error;
  usage u;
  status error;
  void on_text(std::string_view piece) override { text.append(piece); }
  void on_logits(std::span<const float> row) override { rows.emplace_back(row.begin(), row.end()); }
  void on_done(finish_reason w, const usage& x, const status& e) override {
    done = true;
    why = w;
    u = x;
    error = e;
  }
};

std::vector<token_id> random_tokens(std::size_t n, std::uint64_t seed, std::uint32_t n_vocab) {
  splitmix64 g{seed};
  std::vector<token_id> t(n);
  for (auto& x : t) x = static_cast<token_id>(g.range(3, n_vocab - 1));
  return t;
}

struct served {
  std::unique_ptr<engine> eng;
  std::unique_ptr<scheduler> sched;
};

// Skips (via the empty result) when the fixture is absent.
served open(const scheduler_options& so, memory_kind kind = memory_kind::split) {
  engine_options eo;
  eo.memory = kind;
  eo.kv = kv_type::f32;
  eo.n_threads = 1;
  auto e = engine::open(fixture("llama-tiny.gguf"), engine_options_for(so, eo));
  if (!e.is_ok()) return {};
  served s;
  s.eng = std::make_unique<engine>(std::move(e).value());
  auto sc = scheduler::make(*s.eng, so);
  EXPECT_TRUE(sc.is_ok()) << sc.error().to_string();
  if (sc.is_ok()) s.sched = std::move(sc).value();
  return s;
}

#define OPEN_OR_SKIP(var, ...)    \
  served var = open(__VA_ARGS__); \
  if (!var.sched) GTEST_SKIP() << "no llama-tiny.gguf at " << MNEMO_FIXTURES_DIR

std::shared_ptr<recorder> submit(scheduler& s, std::vector<token_id> prompt,
                                 std::uint32_t max_tokens, status* st = nullptr) {
  auto rec = std::make_shared<recorder>();
  request r;
  r.prompt = std::move(prompt);
  r.params.max_tokens = max_tokens;
  r.params.temperature = 0.0f;
  r.params.ignore_eos = true;
  r.sink = rec;
  status got = s.submit(std::move(r));
  if (st)
    *st = got;
  else
    EXPECT_TRUE(got.is_ok()) << got.to_string();
  return rec;
}

void run_until_done(scheduler& s, const recorder& r, int max_steps = 1000) {
  for (int i = 0; i < max_steps && !r.done; ++i) s.step();
  ASSERT_TRUE(r.done) << "not finished after " << max_steps << " steps";
}

void expect_same_rows(const recorder& cached, const recorder& fresh) {
  ASSERT_EQ(cached.rows.size(), fresh.rows.size());
  for (std::size_t r = 0; r < cached.rows.size(); ++r) {
    ASSERT_EQ(cached.rows[r].size(), fresh.rows[r].size());
    for (std::size_t i = 0; i < cached.rows[r].size(); ++i)
      ASSERT_NEAR(cached.rows[r][i], fresh.rows[r][i], 1e-5f)
          << "row " << r << " logit " << i << ": first difference";
  }
}

class CachedPrefix : public ::testing::TestWithParam<memory_kind> {};

TEST_P(CachedPrefix, GivesTheLogitsOfAFreshComputation) {
  scheduler_options so{
      .n_slots = 2, .n_cached = 2, .n_ctx_slot = 128, .step_tokens = 16, .block_tokens = 8};
  OPEN_OR_SKIP(warm, so, GetParam());
  const std::uint32_t nv = warm.eng->n_vocab();
  const std::vector<token_id> shared = random_tokens(37, 1, nv);
  std::vector<token_id> first = shared, second = shared;
  for (token_id t : random_tokens(5, 2, nv)) first.push_back(t);
  for (token_id t : random_tokens(9, 3, nv)) second.push_back(t);

  auto a = submit(*warm.sched, first, 4);
  run_until_done(*warm.sched, *a);
  EXPECT_EQ(a->u.cached_tokens, 0u);
  EXPECT_EQ(warm.sched->metrics().cached_prefixes.load(), 1u);
  auto b = submit(*warm.sched, second, 6);
  run_until_done(*warm.sched, *b);
  EXPECT_EQ(b->u.cached_tokens, shared.size()) << "the shared prefix was not reused";
  EXPECT_EQ(b->why, finish_reason::length);

  scheduler_options cold_opts = so;
  cold_opts.n_cached = 0;
  OPEN_OR_SKIP(cold, cold_opts, GetParam());
  auto c = submit(*cold.sched, second, 6);
  run_until_done(*cold.sched, *c);
  EXPECT_EQ(c->u.cached_tokens, 0u);
  expect_same_rows(*b, *c);
  EXPECT_EQ(b->text, c->text);
}

TEST_P(CachedPrefix, ARunningRequestLendsItsPrefix) {
  scheduler_options so{
      .n_slots = 2, .n_cached = 0, .n_ctx_slot = 128, .step_tokens = 64, .block_tokens = 8};
  OPEN_OR_SKIP(s, so, GetParam());
  const std::uint32_t nv = s.eng->n_vocab();
  std::vector<token_id> base = random_tokens(30, 4, nv), other = base;
  other.push_back(7);
  auto a = submit(*s.sched, base, 50);
  s.sched->step();  // a's whole prompt
  auto b = submit(*s.sched, other, 3);
  run_until_done(*s.sched, *b);
  EXPECT_EQ(b->why, finish_reason::length) << b->error.to_string();
  EXPECT_EQ(b->u.cached_tokens, base.size());

  OPEN_OR_SKIP(cold, so, GetParam());
  auto c = submit(*cold.sched, other, 3);
  run_until_done(*cold.sched, *c);
  expect_same_rows(*b, *c);
}

TEST_P(CachedPrefix, ARequestWaitsForASlotReadingItsPrefix) {
  scheduler_options so{
      .n_slots = 3, .n_cached = 0, .n_ctx_slot = 128, .step_tokens = 16, .block_tokens = 8};
  OPEN_OR_SKIP(s, so, GetParam());
  const std::uint32_t nv = s.eng->n_vocab();
  const std::vector<token_id> shared = random_tokens(45, 9, nv);
  std::vector<std::vector<token_id>> prompts(3, shared);
  for (std::size_t i = 0; i < prompts.size(); ++i)
    for (token_id t : random_tokens(4 + i, 10 + i, nv)) prompts[i].push_back(t);
  for (std::size_t i = 0; i < prompts.size(); ++i)  // they part right after it
    prompts[i][shared.size()] = static_cast<token_id>(3 + i);
  std::vector<std::shared_ptr<recorder>> r;
  for (const auto& p : prompts) r.push_back(submit(*s.sched, p, 3));  // arrive together
  std::size_t decoded = 0;
  for (int i = 0; i < 100 && !(r[0]->done && r[1]->done && r[2]->done); ++i) {
    s.sched->step();
    decoded += s.sched->last_step().n_prompt;
  }
  std::size_t own = prompts[0].size();
  for (std::size_t i = 1; i < r.size(); ++i) {
    ASSERT_TRUE(r[i]->done);
    EXPECT_EQ(r[i]->u.cached_tokens, shared.size()) << "request " << i;
    own += prompts[i].size() - shared.size();
  }
  EXPECT_EQ(decoded, own) << "the shared prefix was read more than once";

  OPEN_OR_SKIP(cold, so, GetParam());
  auto c = submit(*cold.sched, prompts[2], 3);
  run_until_done(*cold.sched, *c);
  expect_same_rows(*r[2], *c);
}

INSTANTIATE_TEST_SUITE_P(Memories, CachedPrefix,
                         ::testing::Values(memory_kind::split, memory_kind::full),
                         [](const auto& info) { return std::string(to_string(info.param)); });

TEST(Scheduler, ChunkedPrefillKeepsAReplyAtOneTokenPerStep) {
  scheduler_options so{.n_slots = 2, .n_cached = 0, .n_ctx_slot = 128, .step_tokens = 8};
  OPEN_OR_SKIP(s, so);
  const std::uint32_t nv = s.eng->n_vocab();
  auto fast = submit(*s.sched, random_tokens(3, 5, nv), 30);
  s.sched->step();  // its prompt: now it generates
  auto slow = submit(*s.sched, random_tokens(60, 6, nv), 2);
  int steps = 0;
  while (slow->rows.empty() && steps < 100) {
    ASSERT_TRUE(s.sched->step());
    ++steps;
    EXPECT_EQ(s.sched->last_step().n_generating, 1u) << "step " << steps;
    EXPECT_LE(s.sched->last_step().n_prompt, 7u) << "step " << steps;
  }
  EXPECT_EQ(steps, 9);  // ceil(60 / 7)
  EXPECT_EQ(fast->rows.size(), static_cast<std::size_t>(steps) + 1);
}

TEST(Scheduler, ReadingSlotsShareTheBudgetEvenly) {
  scheduler_options so{.n_slots = 2, .n_cached = 0, .n_ctx_slot = 128, .step_tokens = 16};
  OPEN_OR_SKIP(s, so);
  const std::uint32_t nv = s.eng->n_vocab();
  auto a = submit(*s.sched, random_tokens(40, 7, nv), 1);
  auto b = submit(*s.sched, random_tokens(40, 8, nv), 1);
  for (int i = 0; i < 4; ++i) {
    ASSERT_TRUE(s.sched->step());
    EXPECT_EQ(s.sched->last_step().n_prompt, 16u);
  }
  ASSERT_TRUE(s.sched->step());  // 8 + 8 left
  EXPECT_TRUE(a->done);
  EXPECT_TRUE(b->done);
}

TEST(Scheduler, AFinishedRequestFreesItsSlotForTheNext) {
  scheduler_options so{
      .n_slots = 1, .n_cached = 0, .n_ctx_slot = 64, .step_tokens = 32, .queue_max = 4};
  OPEN_OR_SKIP(s, so);
  const std::uint32_t nv = s.eng->n_vocab();
  std::vector<std::shared_ptr<recorder>> r;
  for (int i = 0; i < 3; ++i) r.push_back(submit(*s.sched, random_tokens(5, 10 + i, nv), 2));
  EXPECT_EQ(s.sched->metrics().queue_depth.load(), 3u);
  run_until_done(*s.sched, *r[0]);
  EXPECT_FALSE(r[1]->done);
  EXPECT_EQ(r[1]->rows.size(), 0u) << "the second request ran beside the first in one slot";
  run_until_done(*s.sched, *r[2]);
  EXPECT_TRUE(r[1]->done);
  for (const auto& x : r) EXPECT_EQ(x->u.completion_tokens, 2u);
  EXPECT_FALSE(s.sched->step());
  EXPECT_EQ(s.sched->metrics().slots_busy.load(), 0u);
}

TEST(Scheduler, ACancelledRequestFreesItsSlotAtOnce) {
  scheduler_options so{.n_slots = 1, .n_cached = 0, .n_ctx_slot = 64, .step_tokens = 32};
  OPEN_OR_SKIP(s, so);
  const std::uint32_t nv = s.eng->n_vocab();
  auto rec = std::make_shared<recorder>();
  request r;
  r.prompt = random_tokens(5, 20, nv);
  r.params.max_tokens = 50;
  r.params.ignore_eos = true;
  r.sink = rec;
  auto flag = r.cancelled;
  ASSERT_TRUE(s.sched->submit(std::move(r)).is_ok());
  auto next = submit(*s.sched, random_tokens(5, 21, nv), 2);
  s.sched->step();
  s.sched->step();
  flag->store(true);
  s.sched->step();
  EXPECT_TRUE(rec->done);
  EXPECT_EQ(rec->why, finish_reason::cancelled);
  run_until_done(*s.sched, *next);
  EXPECT_EQ(next->why, finish_reason::length);
  EXPECT_EQ(s.sched->metrics().requests_cancelled.load(), 1u);
}

TEST(Scheduler, KeptPrefixesStayInTheirShareAndGoLeastRecentFirst) {
  scheduler_options so{.n_slots = 1,
                       .n_cached = 3,
                       .n_ctx_slot = 64,
                       .step_tokens = 32,
                       .block_tokens = 4,
                       .cache_tokens_max = 50};
  OPEN_OR_SKIP(s, so);
  const std::uint32_t nv = s.eng->n_vocab();
  std::vector<std::vector<token_id>> prompts;
  for (int i = 0; i < 3; ++i) prompts.push_back(random_tokens(20, 30 + i, nv));
  for (int i = 0; i < 3; ++i) {
    auto r = submit(*s.sched, prompts[i], 2);
    run_until_done(*s.sched, *r);
  }
  // Each keeps 21 tokens (prompt and the decoded first reply token): two fit in 50.
  EXPECT_EQ(s.sched->metrics().cached_prefixes.load(), 2u);
  EXPECT_EQ(s.sched->metrics().cached_prefix_cells.load(), 42u);
  auto oldest = submit(*s.sched, prompts[0], 1);
  run_until_done(*s.sched, *oldest);
  EXPECT_EQ(oldest->u.cached_tokens, 0u) << "the least recently used prefix was kept";
  auto newest = submit(*s.sched, prompts[2], 1);
  run_until_done(*s.sched, *newest);
  EXPECT_EQ(newest->u.cached_tokens, 19u);
}

TEST(Scheduler, RefusesAFullQueueAndATooLongPromptAndKeepsServing) {
  scheduler_options so{
      .n_slots = 1, .n_cached = 0, .n_ctx_slot = 32, .step_tokens = 16, .queue_max = 2};
  OPEN_OR_SKIP(s, so);
  const std::uint32_t nv = s.eng->n_vocab();
  status st;
  submit(*s.sched, random_tokens(32, 40, nv), 1, &st);
  EXPECT_EQ(st.code(), status_code::out_of_range) << st.to_string();
  submit(*s.sched, {}, 1, &st);
  EXPECT_EQ(st.code(), status_code::invalid_argument);
  submit(*s.sched, random_tokens(4, 41, nv), 0, &st);
  EXPECT_EQ(st.code(), status_code::invalid_argument);
  submit(*s.sched, {static_cast<token_id>(nv)}, 1, &st);
  EXPECT_EQ(st.code(), status_code::out_of_range);
  request hot;
  hot.prompt = random_tokens(4, 46, nv);
  hot.params.temperature = -1.0f;
  hot.sink = std::make_shared<recorder>();
  EXPECT_EQ(s.sched->submit(std::move(hot)).code(), status_code::invalid_argument);
  auto a = submit(*s.sched, random_tokens(4, 42, nv), 3);
  auto b = submit(*s.sched, random_tokens(4, 43, nv), 3);
  auto c = submit(*s.sched, random_tokens(4, 44, nv), 3);  // the free slot's turn
  submit(*s.sched, random_tokens(4, 45, nv), 3, &st);
  EXPECT_EQ(st.code(), status_code::no_space) << st.to_string();
  run_until_done(*s.sched, *c);
  EXPECT_EQ(a->why, finish_reason::length);
  EXPECT_EQ(b->why, finish_reason::length);
  EXPECT_EQ(c->why, finish_reason::length);
  EXPECT_EQ(s.sched->metrics().requests_rejected.load(), 6u);
}

}  // namespace
