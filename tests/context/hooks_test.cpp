// context_params::hooks and the thread counts: an abort at every point a decode checks
// (before each micro-batch, between layers) leaves the memory byte for byte as before
// and the decode then succeeds with the logits of a context never aborted; progress
// reports every micro-batch of a long batch; the log sink hears about failures; the
// thread counts resolve as documented (0: physical cores, batch = generation); a
// micro-batch opens one parallel region.
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "context/tiny_llama.hpp"
#include <gtest/gtest.h>

#include "mnemo/base/parallel.hpp"
#include "mnemo/context.hpp"
#include "mnemo/memory/full/full_cache.hpp"
#include "mnemo/memory/full/full_cache_state.hpp"

namespace {

using namespace mnemo;
using cache_t = memory::full_cache<float>;
using ctx_t = context<model::llama_model, cache_t>;

const model::llama_model& tiny() {
  static auto m = [] {
    mnemo_test::tiny_llama_spec spec;
    spec.n_layer = 3;
    return mnemo_test::make_tiny_llama(spec);
  }();
  EXPECT_TRUE(m.is_ok()) << m.error().to_string();
  return *m;
}

ctx_t make_ctx(const context_params& p) {
  auto cache = cache_t::make(tiny().full_cache_config(256, p.n_seq_max));
  EXPECT_TRUE(cache.is_ok()) << cache.error().to_string();
  auto c = ctx_t::make(tiny(), std::move(cache).value(), p);
  EXPECT_TRUE(c.is_ok()) << c.error().to_string();
  return std::move(c).value();
}

context_params params(std::uint32_t n_ubatch) {
  context_params p;
  p.n_ubatch = n_ubatch;
  p.n_seq_max = 2;
  p.n_threads = 2;
  return p;
}

batch seq_batch(std::size_t n, seq_id s, pos_t p0, std::uint64_t seed) {
  splitmix64 g{seed};
  batch b;
  for (std::size_t i = 0; i < n; ++i)
    b.add(static_cast<token_id>(g.range(0, 63)), p0 + static_cast<pos_t>(i), {s}, true);
  return b;
}

context_hooks abort_hooks(abort_callback a) {
  context_hooks h;
  h.abort = a;
  return h;
}

/// Asks to abort on its n-th call (1-based) and counts every call.
struct countdown {
  int fire_at = 0;
  int calls = 0;
  static bool check(void* user) {
    auto* c = static_cast<countdown*>(user);
    return ++c->calls == c->fire_at;
  }
};

TEST(ContextHooks, AbortAtEveryPointLeavesMemoryAsBefore) {
  // 10 tokens in micro-batches of 4 (3 micro-batches) on a 3-layer model: checks before
  // each micro-batch and before layers 1 and 2 of each: 9 points.
  auto ref = make_ctx(params(4));
  const batch first = seq_batch(6, 0, 0, 1);
  ASSERT_TRUE(ref.decode(first));
  const batch b = seq_batch(10, 1, 0, 2);
  ASSERT_TRUE(ref.decode(b));

  countdown probe;
  {
    auto c = make_ctx(params(4));
    ASSERT_TRUE(c.decode(first));
    c.set_hooks(abort_hooks({countdown::check, &probe}));
    ASSERT_TRUE(c.decode(b));
  }
  ASSERT_EQ(probe.calls, 9) << "abort checks of one decode";

  for (int at = 1; at <= probe.calls; ++at) {
    countdown cd;
    cd.fire_at = at;
    auto c = make_ctx(params(4));
    ASSERT_TRUE(c.decode(first));
    std::vector<std::uint8_t> before, after;
    ASSERT_TRUE(c.state_write(-1, before));
    c.set_hooks(abort_hooks({countdown::check, &cd}));
    const status st = c.decode(b);
    EXPECT_EQ(st.code(), status_code::aborted) << "abort at check " << at << ": " << st.to_string();
    EXPECT_EQ(c.n_outputs(), 0u) << "abort at check " << at;
    ASSERT_TRUE(c.state_write(-1, after));
    EXPECT_EQ(after, before) << "abort at check " << at << " changed the memory";
    EXPECT_EQ(c.seq_pos_max(1), -1) << "abort at check " << at;

    // Decoding again (the countdown has passed) gives the reference's logits exactly.
    ASSERT_TRUE(c.decode(b)) << "abort at check " << at;
    ASSERT_EQ(c.n_outputs(), ref.n_outputs());
    for (std::uint32_t r = 0; r < c.n_outputs(); ++r) {
      const auto x = c.output_row(r), y = ref.output_row(r);
      for (std::size_t i = 0; i < x.size(); ++i)
        ASSERT_EQ(x[i], y[i]) << "abort at check " << at << ", row " << r << ", column " << i;
    }
  }
}

TEST(ContextHooks, ProgressReportsEachMicroBatchOfALongBatch) {
  std::vector<float> seen;
  auto c = make_ctx(params(4));
  context_hooks h;
  h.progress = {[](float f, void* u) { static_cast<std::vector<float>*>(u)->push_back(f); }, &seen};
  c.set_hooks(h);
  ASSERT_TRUE(c.decode(seq_batch(10, 0, 0, 3)));
  ASSERT_EQ(seen.size(), 3u);
  EXPECT_FLOAT_EQ(seen[0], 1.0f / 3);
  EXPECT_FLOAT_EQ(seen[1], 2.0f / 3);
  EXPECT_FLOAT_EQ(seen[2], 1.0f);
  seen.clear();
  ASSERT_TRUE(c.decode(seq_batch(1, 0, 10, 4)));  // one micro-batch: nothing to report
  EXPECT_TRUE(seen.empty());
}

TEST(ContextHooks, LogSinkHearsOfAFailedDecode) {
  struct heard {
    std::vector<std::pair<log_level, std::string>> lines;
  } h;
  auto c = make_ctx(params(4));
  context_hooks with_log;
  with_log.log = {
      [](log_level l, const char* m, void* u) { static_cast<heard*>(u)->lines.emplace_back(l, m); },
      &h};
  c.set_hooks(with_log);
  countdown cd;
  cd.fire_at = 2;
  context_hooks with_abort = c.params().hooks;
  with_abort.abort = {countdown::check, &cd};
  c.set_hooks(with_abort);
  EXPECT_EQ(c.decode(seq_batch(10, 0, 0, 5)).code(), status_code::aborted);
  ASSERT_EQ(h.lines.size(), 1u);
  EXPECT_EQ(h.lines[0].first, log_level::info);
  EXPECT_NE(h.lines[0].second.find("aborted"), std::string::npos) << h.lines[0].second;
}

TEST(ContextThreads, CountsResolveAsDocumented) {
  context_params p = params(4);
  p.n_threads = 0;
  p.n_threads_batch = 0;
  auto c = make_ctx(p);
  EXPECT_EQ(c.params().n_threads, default_thread_count());
  EXPECT_EQ(c.params().n_threads_batch, default_thread_count());
  c.set_threads(1, 3);
  EXPECT_EQ(c.params().n_threads, 1);
  EXPECT_EQ(c.params().n_threads_batch, 3);
  c.set_threads(2, 0);
  EXPECT_EQ(c.params().n_threads_batch, 2);
  EXPECT_GE(default_thread_count(), 1);
}

TEST(ContextThreads, LogitsDoNotDependOnThreadCounts) {
  // Generation (one token) and prompt (many) micro-batches run with their own counts;
  // the products and attention are deterministic in the thread count.
  context_params p1 = params(4), p2 = params(4);
  p1.n_threads = 1;
  p1.n_threads_batch = 1;
  p2.n_threads = 2;
  p2.n_threads_batch = 3;
  auto a = make_ctx(p1), b = make_ctx(p2);
  for (const batch& x : {seq_batch(9, 0, 0, 6), seq_batch(1, 0, 9, 7)}) {
    ASSERT_TRUE(a.decode(x));
    ASSERT_TRUE(b.decode(x));
    ASSERT_EQ(a.n_outputs(), b.n_outputs());
    const auto la = a.logits(), lb = b.logits();
    for (std::size_t i = 0; i < la.size(); ++i)
      ASSERT_NEAR(la[i], lb[i], 1e-5f * (1 + std::fabs(la[i]))) << "element " << i;
  }
}

TEST(ContextThreads, OneParallelRegionPerMicroBatch) {
  // The decoder runs each micro-batch in one team (run_team): its products and
  // attention share that region's threads instead of opening one each.
  context_params p = params(4);
  p.n_threads = p.n_threads_batch = 2;
  auto c = make_ctx(p);
  const parallel_counts before = parallel_stats();
  ASSERT_TRUE(c.decode(seq_batch(9, 0, 0, 6)));  // micro-batches of 4, 4 and 1 tokens
  const parallel_counts after = parallel_stats();
#if MNEMO_HAS_OPENMP
  EXPECT_EQ(after.regions - before.regions, 3u);
  EXPECT_GT(after.team_jobs - before.team_jobs, 0u);  // the GLU of 4 tokens at least
#else
  EXPECT_EQ(after.regions, before.regions);
#endif
}

}  // namespace
