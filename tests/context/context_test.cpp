// mnemo::context over llama_model + full_cache: logits rows and output flags, a
// sequence's logits independent of the rest of the batch and of the cache, the
// failure guarantee (state bytes before == after a failing decode, for validation,
// planning and mid-batch failures), and forwarded sequence operations and state I/O.
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "context/tiny_llama.hpp"
#include <gtest/gtest.h>

#include "mnemo/context.hpp"
#include "mnemo/memory/full/full_cache.hpp"
#include "mnemo/memory/full/full_cache_state.hpp"

namespace {

using namespace mnemo;
using cache_t = memory::full_cache<float>;

/// Forwards everything to a full cache, but can fail apply() of one micro-batch or
/// hand the model broken views at one layer: failures after planning, after some K/V
/// rows were written, that the context must roll back.
struct failing_memory {
  using k_element = float;
  using v_element = float;
  cache_t inner;
  int fail_apply_at = -1;   // micro-batch index
  int break_views_at = -1;  // layer index (of micro-batch 1)

  status seq_rm(seq_id s, pos_t a, pos_t b) { return inner.seq_rm(s, a, b); }
  status seq_cp(seq_id s, seq_id d, pos_t a, pos_t b) { return inner.seq_cp(s, d, a, b); }
  status seq_keep(seq_id s) { return inner.seq_keep(s); }
  status seq_add(seq_id s, pos_t a, pos_t b, pos_t d) { return inner.seq_add(s, a, b, d); }
  status seq_div(seq_id s, pos_t a, pos_t b, int d) { return inner.seq_div(s, a, b, d); }
  void clear(bool data) { inner.clear(data); }
  pos_t seq_pos_min(seq_id s) const { return inner.seq_pos_min(s); }
  pos_t seq_pos_max(seq_id s) const { return inner.seq_pos_max(s); }
  bool can_shift() const { return inner.can_shift(); }
  seq_id n_seq_max() const { return inner.n_seq_max(); }
  std::size_t n_layer() const { return inner.n_layer(); }
  status update() { return inner.update(); }
  status prepare(std::span<const memory::ubatch_tokens> ubs) { return inner.prepare(ubs); }
  status apply(std::size_t u, const memory::ubatch_tokens& ub) {
    if (static_cast<int>(u) == fail_apply_at)
      return make_status(status_code::failed_compute, "injected failure at micro-batch %zu", u);
    return inner.apply(u, ub);
  }
  void commit() { inner.commit(); }
  void rollback() { inner.rollback(); }
  memory::memory_report report() const { return inner.report(); }
  auto split_strategy(std::uint32_t n) const { return inner.split_strategy(n); }
  template <class Isa = simd::native>
  void write_kv(std::size_t l, std::size_t u, std::size_t j, const float* k, const float* v) {
    inner.write_kv<Isa>(l, u, j, k, v);
  }
  void views(std::size_t l, std::size_t u, memory::layer_views& out) const {
    inner.views(l, u, out);
    if (u == 1 && static_cast<int>(l) == break_views_at) out.streams.clear();
  }
};
static_assert(memory::kv_memory<failing_memory>);

status state_write(failing_memory& m, seq_id s, std::vector<std::uint8_t>& out) {
  return memory::state_write(m.inner, s, out);
}

template <class Memory = cache_t>
using ctx_t = context<model::llama_model, Memory>;

const model::llama_model& tiny() {
  static auto m = mnemo_test::make_tiny_llama({});
  EXPECT_TRUE(m.is_ok()) << m.error().to_string();
  return *m;
}

context_params params(std::uint32_t n_ubatch = 512) {
  context_params p;
  p.n_ubatch = n_ubatch;
  p.n_seq_max = 4;
  p.n_threads = 2;
  return p;
}

ctx_t<> make_ctx(std::size_t cells = 256, std::uint32_t n_ubatch = 512) {
  auto cache = cache_t::make(tiny().full_cache_config(cells, 4));
  EXPECT_TRUE(cache.is_ok()) << cache.error().to_string();
  auto c = ctx_t<>::make(tiny(), std::move(cache).value(), params(n_ubatch));
  EXPECT_TRUE(c.is_ok()) << c.error().to_string();
  return std::move(c).value();
}

std::vector<token_id> tokens(std::size_t n, std::uint64_t seed) {
  splitmix64 g{seed};
  std::vector<token_id> t(n);
  for (auto& x : t) x = static_cast<token_id>(g.range(0, 63));
  return t;
}

/// Batch of `t` in sequence s from position p0, every token asking for logits.
void add_seq(batch& b, const std::vector<token_id>& t, seq_id s, pos_t p0 = 0) {
  for (std::size_t i = 0; i < t.size(); ++i) b.add(t[i], p0 + static_cast<pos_t>(i), {s}, true);
}

/// Largest |a - b| over two rows; prints the first element beyond `tol`.
float max_diff(std::span<const float> a, std::span<const float> b, float tol, const char* what) {
  EXPECT_EQ(a.size(), b.size()) << what;
  float worst = 0;
  for (std::size_t i = 0; i < std::min(a.size(), b.size()); ++i) {
    const float d = std::fabs(a[i] - b[i]);
    if (d > tol && worst <= tol)
      ADD_FAILURE() << what << ": column " << i << ": " << a[i] << " vs " << b[i];
    worst = std::max(worst, d);
  }
  return worst;
}

std::vector<std::uint8_t> state_of(cache_t& c) {
  auto s = memory::state_write(c);
  EXPECT_TRUE(s.is_ok()) << s.error().to_string();
  return s.is_ok() ? std::move(s).value() : std::vector<std::uint8_t>{};
}

TEST(ContextDecode, SequenceLogitsIndependentOfBatchAndCache) {
  const auto t0 = tokens(24, 1), t1 = tokens(10, 2), t2 = tokens(7, 3), t3 = tokens(40, 4);
  // Alone.
  auto alone = make_ctx();
  batch b;
  add_seq(b, t0, 0);
  ASSERT_TRUE(alone.decode(b));
  // Interleaved with two other sequences in one batch.
  auto mixed = make_ctx();
  b.clear();
  for (std::size_t i = 0; i < 24; ++i) {
    if (i < t1.size()) b.add(t1[i], static_cast<pos_t>(i), {1}, true);
    b.add(t0[i], static_cast<pos_t>(i), {0}, true);
    if (i < t2.size()) b.add(t2[i], static_cast<pos_t>(i), {2}, true);
  }
  ASSERT_TRUE(mixed.decode(b));
  // After another sequence filled the cache.
  auto after = make_ctx();
  b.clear();
  add_seq(b, t3, 3);
  ASSERT_TRUE(after.decode(b));
  b.clear();
  add_seq(b, t0, 0);
  ASSERT_TRUE(after.decode(b));
  // Split into micro-batches of 5 tokens.
  auto split = make_ctx(256, 5);
  b.clear();
  add_seq(b, t0, 0);
  ASSERT_TRUE(split.decode(b));

  // Sequence 0's cells sit elsewhere in the mixed (or pre-filled) cache, so the
  // attention kernel's online softmax rescales at other cell blocks: a few ulp
  // (measured up to 1.3e-6 on logits of 2.3), hence 1e-6 relative to the row's
  // largest |logit|.
  std::uint32_t row_mixed = 0;
  for (std::uint32_t i = 0; i < 24; ++i) {
    row_mixed += i < t1.size() ? 1 : 0;
    const auto ref = alone.output_row(i);
    float top = 0;
    for (float v : ref) top = std::max(top, std::fabs(v));
    EXPECT_LE(max_diff(ref, mixed.output_row(row_mixed), 1e-6f * top, "mixed batch"), 1e-6f * top)
        << "token " << i;
    EXPECT_LE(max_diff(ref, after.output_row(i), 1e-6f * top, "after seq 3"), 1e-6f * top)
        << "token " << i;
    EXPECT_LE(max_diff(ref, split.output_row(i), 1e-5f, "n_ubatch 5"), 1e-5f) << "token " << i;
    row_mixed += 1 + (i < t2.size() ? 1 : 0);
  }
}

TEST(ContextDecode, OutputFlagsSelectRows) {
  const auto t = tokens(10, 5);
  auto all = make_ctx();
  batch b;
  add_seq(b, t, 0);
  ASSERT_TRUE(all.decode(b));
  ASSERT_EQ(all.n_outputs(), 10u);

  auto some = make_ctx();
  b.clear();
  for (std::size_t i = 0; i < t.size(); ++i)
    b.add(t[i], static_cast<pos_t>(i), {0}, i == 2 || i == 5 || i == 9);
  ASSERT_TRUE(some.decode(b));
  ASSERT_EQ(some.n_outputs(), 3u);
  EXPECT_EQ(some.logits().size(), 3u * 64);
  EXPECT_TRUE(some.logits_ith(3).empty());
  EXPECT_TRUE(some.logits_ith(10).empty());
  EXPECT_TRUE(some.logits_ith(-4).empty());
  EXPECT_EQ(some.logits_ith(-1).data(), some.logits_ith(9).data());
  EXPECT_EQ(some.logits_ith(2).data(), some.output_row(0).data());
  // The output product runs over 10, 3 or 1 rows here; mul_mat may take another
  // kernel path per row count (GEMV vs GEMM), so rounding may differ slightly.
  for (int i : {2, 5, 9})
    EXPECT_LE(max_diff(all.logits_ith(i), some.logits_ith(i), 1e-6f, "output subset"), 1e-6f);

  // Omitted flags: only the last token outputs.
  auto last = make_ctx();
  ASSERT_TRUE(last.decode(batch::one(t)));
  EXPECT_EQ(last.n_outputs(), 1u);
  EXPECT_LE(max_diff(all.logits_ith(9), last.logits_ith(-1), 1e-6f, "batch::one"), 1e-6f);
}

TEST(ContextFailure, InvalidBatchLeavesMemoryUnchanged) {
  auto c = make_ctx();
  batch b;
  add_seq(b, tokens(12, 6), 0);
  ASSERT_TRUE(c.decode(b));
  const auto before = state_of(c.memory());
  b.clear();
  b.add(3, 12, {0}, true).add(64, 13, {0}, true);  // token 64 is outside the vocabulary
  EXPECT_FALSE(c.decode(b));
  EXPECT_EQ(c.n_outputs(), 0u);
  b.clear();
  b.add(3, 12, {5}, true);  // sequence 5 >= n_seq_max
  EXPECT_FALSE(c.decode(b));
  EXPECT_EQ(state_of(c.memory()), before);
  EXPECT_EQ(c.seq_pos_max(0), 11);
}

// More sequence ids than the memory was built for are refused when the context is
// made, naming both counts, not later as a position error of some decode.
TEST(ContextFailure, MoreSequencesThanTheMemoryHoldsAreRefusedAtMake) {
  for (seq_id built : {1, 2, 3}) {
    auto cache = cache_t::make(tiny().full_cache_config(64, built));
    ASSERT_TRUE(cache.is_ok()) << cache.error().to_string();
    const auto c = ctx_t<>::make(tiny(), std::move(cache).value(), params());  // n_seq_max 4
    ASSERT_FALSE(c.is_ok()) << "memory built for " << built;
    EXPECT_EQ(c.error().code(), status_code::invalid_argument);
    const std::string want =
        "n_seq_max 4 is more than the memory was built for (" + std::to_string(built) + ")";
    EXPECT_NE(c.error().message().find(want), std::string::npos) << c.error().message();
  }
  context_params fewer = params();
  fewer.n_seq_max = 2;  // fewer than the memory's 4: fine
  EXPECT_TRUE(ctx_t<>::make(tiny(), cache_t::make(tiny().full_cache_config(64, 4)).value(), fewer));
}

TEST(ContextFailure, NoSpaceLeavesMemoryUnchanged) {
  auto c = make_ctx(32);
  batch b;
  add_seq(b, tokens(24, 7), 0);
  ASSERT_TRUE(c.decode(b));
  const auto before = state_of(c.memory());
  b.clear();
  add_seq(b, tokens(16, 8), 1);
  EXPECT_EQ(c.decode(b).code(), status_code::no_space);
  EXPECT_EQ(state_of(c.memory()), before);
  b.clear();
  add_seq(b, tokens(8, 8), 1);
  EXPECT_TRUE(c.decode(b));
}

TEST(ContextFailure, FailureAfterPlanningRollsBack) {
  const auto t0 = tokens(8, 9), t1 = tokens(10, 10);
  auto ref = make_ctx(256, 4);
  batch b;
  add_seq(b, t0, 0);
  ASSERT_TRUE(ref.decode(b));

  for (int mode = 0; mode < 2; ++mode) {
    auto cache = cache_t::make(tiny().full_cache_config(256, 4));
    ASSERT_TRUE(cache.is_ok());
    auto made =
        ctx_t<failing_memory>::make(tiny(), failing_memory{std::move(cache).value()}, params(4));
    ASSERT_TRUE(made.is_ok()) << made.error().to_string();
    auto& c = *made;
    b.clear();
    add_seq(b, t0, 0);
    ASSERT_TRUE(c.decode(b));
    std::vector<std::uint8_t> before, after;  // through the context's state_write
    ASSERT_TRUE(c.state_write(-1, before));
    const std::size_t used = c.memory().inner.used();

    // 10 tokens in micro-batches of 4: micro-batch 0 is applied and computed (its K/V
    // written into every layer) before micro-batch 1 fails.
    if (mode == 0) c.memory().fail_apply_at = 1;
    if (mode == 1) c.memory().break_views_at = 1;
    b.clear();
    add_seq(b, t1, 1);
    add_seq(b, {t0.begin(), t0.begin() + 2}, 0, 8);
    EXPECT_FALSE(c.decode(b)) << "mode " << mode;
    EXPECT_EQ(c.n_outputs(), 0u);
    EXPECT_EQ(c.memory().inner.used(), used) << "mode " << mode;
    EXPECT_EQ(c.seq_pos_max(1), -1) << "mode " << mode;
    ASSERT_TRUE(c.state_write(-1, after));
    EXPECT_EQ(after, before) << "mode " << mode;
    EXPECT_FALSE(c.memory().inner.in_batch());

    // The same batch then succeeds and matches a context that never failed.
    c.memory().fail_apply_at = c.memory().break_views_at = -1;
    ASSERT_TRUE(c.decode(b));
    ASSERT_TRUE(ref.decode(b)) << "reference";
    for (std::uint32_t r = 0; r < 12; ++r)
      EXPECT_LE(max_diff(ref.output_row(r), c.output_row(r), 1e-6f, "after rollback"), 1e-6f);
    ASSERT_TRUE(ref.seq_rm(-1, 8, -1));
    ASSERT_TRUE(ref.seq_rm(1, -1, -1));
  }
}

TEST(ContextState, SaveLoadRoundTrip) {
  auto c = make_ctx();
  batch b;
  add_seq(b, tokens(16, 11), 0);
  ASSERT_TRUE(c.decode(b));
  std::vector<std::uint8_t> saved;
  ASSERT_TRUE(c.state_write(-1, saved));
  const auto more = tokens(8, 12);
  b.clear();
  add_seq(b, more, 0, 16);
  ASSERT_TRUE(c.decode(b));
  const std::vector<float> first(c.logits().begin(), c.logits().end());
  ASSERT_TRUE(c.state_read(saved));
  EXPECT_EQ(c.seq_pos_max(0), 15);
  ASSERT_TRUE(c.decode(b));
  EXPECT_EQ(max_diff(first, c.logits(), 0.0f, "after state_read"), 0.0f);
}

TEST(ContextSeqOps, RemoveThenRedecodeGivesSameRows) {
  const auto t = tokens(20, 13);
  auto c = make_ctx();
  batch b;
  add_seq(b, t, 0);
  ASSERT_TRUE(c.decode(b));
  const std::vector<float> full(c.logits().begin(), c.logits().end());
  ASSERT_TRUE(c.seq_rm(0, 12, -1));
  EXPECT_EQ(c.seq_pos_max(0), 11);
  b.clear();
  add_seq(b, {t.begin() + 12, t.end()}, 0, 12);
  ASSERT_TRUE(c.decode(b));
  for (std::uint32_t i = 0; i < 8; ++i)
    EXPECT_LE(max_diff({full.data() + (12 + i) * 64, 64}, c.output_row(i), 1e-5f, "redecode"),
              1e-5f);
}

TEST(ContextSeqOps, CopiedPrefixActsLikeOwnHistory) {
  const auto t = tokens(17, 14);
  auto c = make_ctx();
  batch b;
  add_seq(b, {t.begin(), t.begin() + 16}, 0);
  ASSERT_TRUE(c.decode(b));
  ASSERT_TRUE(c.seq_cp(0, 1, 0, 16));
  b.clear();
  b.add(t[16], 16, {0}, true).add(t[16], 16, {1}, true);
  ASSERT_TRUE(c.decode(b));
  EXPECT_LE(max_diff(c.output_row(0), c.output_row(1), 1e-6f, "seq 0 vs copy"), 1e-6f);
}

}  // namespace
