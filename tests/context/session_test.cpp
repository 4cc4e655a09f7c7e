// Session files (mnemo/session.hpp): a state with its model's fingerprint and each
// sequence's tokens. Round trips of the whole memory and of one sequence continue with
// the logits of the context that never stopped; a session of another model (same K/V
// shapes, so the state alone would load) is refused naming both, and so is one of a
// model with another RoPE scaling; a plain state file still loads; every truncation
// and every flipped byte is refused with the memory as it was; session_write refuses
// token lists that do not describe the memory.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <string>
#include <vector>

#include "context/tiny_llama.hpp"
#include <gtest/gtest.h>

#include "mnemo/context.hpp"
#include "mnemo/memory/full/full_cache.hpp"
#include "mnemo/memory/full/full_cache_state.hpp"
#include "mnemo/model/fingerprint.hpp"
#include "mnemo/model/rope_scaling.hpp"
#include "mnemo/session.hpp"

namespace {

using namespace mnemo;
using cache_t = memory::full_cache<float>;
using ctx_t = context<model::llama_model, cache_t>;

mnemo_test::tiny_llama_spec spec(std::uint32_t n_ff, std::uint64_t seed) {
  mnemo_test::tiny_llama_spec s;
  s.n_ff = n_ff;
  s.seed = seed;
  return s;
}

const model::llama_model& tiny(std::uint32_t n_ff = 96) {
  static auto a = mnemo_test::make_tiny_llama(spec(96, 7));
  static auto b = mnemo_test::make_tiny_llama(spec(128, 9));
  auto& m = n_ff == 96 ? a : b;
  EXPECT_TRUE(m.is_ok()) << m.error().to_string();
  return *m;
}

ctx_t make_ctx(const model::llama_model& m = tiny()) {
  auto cache = cache_t::make(m.full_cache_config(128, 4));
  EXPECT_TRUE(cache.is_ok()) << cache.error().to_string();
  context_params p;
  p.n_seq_max = 4;
  p.n_threads = 1;
  auto c = ctx_t::make(m, std::move(cache).value(), p);
  EXPECT_TRUE(c.is_ok()) << c.error().to_string();
  return std::move(c).value();
}

std::vector<token_id> tokens(std::size_t n, std::uint64_t seed) {
  splitmix64 g{seed};
  std::vector<token_id> t(n);
  for (auto& x : t) x = static_cast<token_id>(g.range(0, 63));
  return t;
}

void decode_seq(ctx_t& c, const std::vector<token_id>& t, seq_id s, pos_t p0 = 0) {
  batch b;
  for (std::size_t i = 0; i < t.size(); ++i)
    b.add(t[i], p0 + static_cast<pos_t>(i), {s}, i + 1 == t.size());
  ASSERT_TRUE(c.decode(b));
}

std::vector<std::uint8_t> state_of(ctx_t& c) {
  std::vector<std::uint8_t> out;
  EXPECT_TRUE(c.state_write(-1, out));
  return out;
}

/// The next token's logits after `t` at p in sequence s.
std::vector<float> continue_with(ctx_t& c, token_id t, pos_t p, seq_id s) {
  batch b;
  b.add(t, p, {s}, true);
  EXPECT_TRUE(c.decode(b));
  const auto row = c.logits_ith(-1);
  return {row.begin(), row.end()};
}

TEST(Session, FingerprintCoversShapesNotWeights) {
  const auto a = model::fingerprint(tiny().file());
  EXPECT_EQ(a.architecture, "llama");
  EXPECT_NE(a.fingerprint, model::fingerprint(tiny(128).file()).fingerprint);
  auto same_shapes = mnemo_test::make_tiny_llama(spec(96, 99));
  ASSERT_TRUE(same_shapes) << same_shapes.error().to_string();
  EXPECT_EQ(a.fingerprint, model::fingerprint(same_shapes->file()).fingerprint);
}

TEST(Session, RopeScalingIsPartOfTheModel) {
  // Keys cached under one RoPE scaling are wrong under another: a model that differs
  // only in its scaling keys, or only in the values of its rope_freqs tensor (Llama
  // 3.1 files hold their scaling there alone), is another model to a session.
  const auto scaled = [](std::function<void(gguf::writer&)> extra) {
    mnemo_test::tiny_llama_spec s = spec(96, 7);
    s.extra = std::move(extra);
    auto m = mnemo_test::make_tiny_llama(s);
    EXPECT_TRUE(m.is_ok()) << m.error().to_string();
    return m;
  };
  const auto linear = [](float factor) {
    return [factor](gguf::writer& w) {
      w.add_string("llama.rope.scaling.type", "linear");
      w.add<float>("llama.rope.scaling.factor", factor);
    };
  };
  const auto freqs = [](float factor) {  // rope_freqs [n_rot / 2 = 8]
    return [factor](gguf::writer& w) {
      w.add_tensor_f32("rope_freqs.weight", {8},
                       model::llama3_rope_factors(16, 10000.0f, factor, 1.0f, 4.0f, 64.0f));
    };
  };
  auto lin2 = scaled(linear(2.0f)), lin4 = scaled(linear(4.0f));
  auto f8 = scaled(freqs(8.0f)), f8_again = scaled(freqs(8.0f)), f32 = scaled(freqs(32.0f));
  ASSERT_TRUE(lin2 && lin4 && f8 && f8_again && f32);
  ASSERT_NE(f8->hparams().rope_global.freq_factors, f32->hparams().rope_global.freq_factors);
  const std::uint64_t fps[] = {
      model::fingerprint(tiny().file()).fingerprint, model::fingerprint(lin2->file()).fingerprint,
      model::fingerprint(lin4->file()).fingerprint, model::fingerprint(f8->file()).fingerprint,
      model::fingerprint(f32->file()).fingerprint};
  for (std::size_t i = 0; i < std::size(fps); ++i)
    for (std::size_t j = i + 1; j < std::size(fps); ++j)
      EXPECT_NE(fps[i], fps[j]) << "models " << i << " and " << j << " share a fingerprint";
  EXPECT_EQ(model::fingerprint(f8->file()).fingerprint,
            model::fingerprint(f8_again->file()).fingerprint);

  // A session of the factor-8 model: its twin resumes it, the factor-32 model refuses it
  // (the K/V shapes and the state header's RoPE fields match, so nothing else would).
  auto a = make_ctx(*f8);
  const auto t = tokens(6, 5);
  decode_seq(a, t, 0);
  const auto list = memory::session_tokens::from_start(0, t);
  std::vector<std::uint8_t> bytes;
  ASSERT_TRUE(session_write(a, model::fingerprint(f8->file()), -1, {&list, 1}, bytes));
  auto twin = make_ctx(*f8_again);
  EXPECT_TRUE(session_read(twin, bytes, model::fingerprint(f8_again->file())));
  auto other = make_ctx(*f32);
  const auto before = state_of(other);
  auto r = session_read(other, bytes, model::fingerprint(f32->file()));
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code(), status_code::invalid_argument) << r.error().to_string();
  EXPECT_EQ(state_of(other), before);
}

TEST(Session, WholeMemoryRoundTripContinuesExactly) {
  const auto me = model::fingerprint(tiny().file());
  const auto t0 = tokens(12, 1), t1 = tokens(5, 2);
  auto a = make_ctx();
  decode_seq(a, t0, 0);
  decode_seq(a, t1, 2);
  const std::vector<memory::session_tokens> lists{memory::session_tokens::from_start(0, t0),
                                                  memory::session_tokens::from_start(2, t1)};
  std::vector<std::uint8_t> bytes;
  ASSERT_TRUE(session_write(a, me, -1, lists, bytes));

  auto b = make_ctx();
  auto loaded = session_read(b, bytes, me);
  ASSERT_TRUE(loaded) << loaded.error().to_string();
  EXPECT_TRUE(loaded->has_model);
  EXPECT_EQ(loaded->model.fingerprint, me.fingerprint);
  ASSERT_EQ(loaded->lists.size(), 2u);
  EXPECT_EQ(loaded->lists[0].seq, 0);
  EXPECT_EQ(loaded->lists[0].ids(), t0);
  EXPECT_EQ(loaded->lists[1].seq, 2);
  EXPECT_EQ(loaded->lists[1].ids(), t1);
  EXPECT_EQ(state_of(a), state_of(b));
  EXPECT_EQ(continue_with(a, 7, 12, 0), continue_with(b, 7, 12, 0));
  EXPECT_EQ(continue_with(a, 9, 5, 2), continue_with(b, 9, 5, 2));
}

TEST(Session, SequenceLoadsIntoAnotherSequence) {
  const auto me = model::fingerprint(tiny().file());
  const auto t = tokens(9, 3);
  auto a = make_ctx();
  decode_seq(a, tokens(4, 4), 0);
  decode_seq(a, t, 1);
  const auto list = memory::session_tokens::from_start(1, t);
  std::vector<std::uint8_t> bytes;
  ASSERT_TRUE(session_write(a, me, 1, {&list, 1}, bytes));

  auto b = make_ctx();
  auto loaded = session_read(b, bytes, me, 3);
  ASSERT_TRUE(loaded) << loaded.error().to_string();
  ASSERT_EQ(loaded->lists.size(), 1u);
  EXPECT_EQ(loaded->lists[0].seq, 3);
  EXPECT_EQ(loaded->lists[0].ids(), t);
  EXPECT_EQ(b.seq_pos_max(3), 8);
  // The cells sit at other indices: equal up to the block-wise softmax's rounding.
  const auto la = continue_with(a, 5, 9, 1), lb = continue_with(b, 5, 9, 3);
  ASSERT_EQ(la.size(), lb.size());
  float scale = 0;
  for (float x : la) scale = std::max(scale, std::fabs(x));
  for (std::size_t i = 0; i < la.size(); ++i)
    ASSERT_NEAR(la[i], lb[i], 1e-6f * scale) << "column " << i;
}

TEST(Session, AnotherModelIsRefusedNamingBoth) {
  // Same K/V shapes (n_ff differs): the state alone would load silently.
  auto a = make_ctx(tiny(128));
  decode_seq(a, tokens(6, 5), 0);
  const auto writer = model::fingerprint(tiny(128).file());
  const auto t = tokens(6, 5);
  const auto list = memory::session_tokens::from_start(0, t);
  std::vector<std::uint8_t> bytes;
  ASSERT_TRUE(session_write(a, writer, -1, {&list, 1}, bytes));

  auto b = make_ctx();
  decode_seq(b, tokens(3, 6), 1);
  const auto before = state_of(b);
  const auto me = model::fingerprint(tiny().file());
  auto r = session_read(b, bytes, me);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code(), status_code::invalid_argument);
  const std::string msg = r.error().message();
  char hex[20];
  std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(writer.fingerprint));
  EXPECT_NE(msg.find(hex), std::string::npos) << msg;
  std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(me.fingerprint));
  EXPECT_NE(msg.find(hex), std::string::npos) << msg;
  EXPECT_EQ(state_of(b), before);
}

TEST(Session, PlainStateFileStillLoads) {
  auto a = make_ctx();
  decode_seq(a, tokens(7, 7), 0);
  const auto plain = state_of(a);
  auto b = make_ctx();
  auto loaded = session_read(b, plain, model::fingerprint(tiny().file()));
  ASSERT_TRUE(loaded) << loaded.error().to_string();
  EXPECT_FALSE(loaded->has_model);
  EXPECT_TRUE(loaded->lists.empty());
  EXPECT_EQ(state_of(b), plain);
}

TEST(Session, EveryTruncationAndFlippedByteIsRefused) {
  const auto me = model::fingerprint(tiny().file());
  auto a = make_ctx();
  const auto t = tokens(3, 8);
  decode_seq(a, t, 0);
  const auto list = memory::session_tokens::from_start(0, t);
  std::vector<std::uint8_t> bytes;
  ASSERT_TRUE(session_write(a, me, -1, {&list, 1}, bytes));

  auto b = make_ctx();
  decode_seq(b, tokens(2, 9), 1);
  const auto before = state_of(b);
  for (std::size_t n = 0; n < bytes.size(); ++n) {
    auto r = session_read(b, std::span(bytes).first(n), me);
    ASSERT_FALSE(r) << "truncated to " << n << " bytes";
  }
  for (std::size_t i = 0; i < bytes.size(); ++i) {
    auto bad = bytes;
    bad[i] ^= 0x5a;
    auto r = session_read(b, bad, me);
    ASSERT_FALSE(r) << "byte " << i << " of " << bytes.size() << " flipped";
  }
  EXPECT_EQ(state_of(b), before);
}

TEST(Session, WriteRefusesListsThatDoNotDescribeTheMemory) {
  const auto me = model::fingerprint(tiny().file());
  auto a = make_ctx();
  const auto t = tokens(5, 10);
  decode_seq(a, t, 0);
  std::vector<std::uint8_t> bytes;
  auto short_list = memory::session_tokens::from_start(0, std::span(t).first(4));
  EXPECT_EQ(session_write(a, me, -1, {&short_list, 1}, bytes).code(),
            status_code::invalid_argument);
  auto other = memory::session_tokens::from_start(1, t);
  EXPECT_FALSE(session_write(a, me, 0, {&other, 1}, bytes));
  auto bad_token = memory::session_tokens::from_start(0, t);
  bad_token.tokens[2].token = 64;  // the vocabulary has 64 tokens
  EXPECT_FALSE(session_write(a, me, -1, {&bad_token, 1}, bytes));
  const std::vector<memory::session_tokens> twice{memory::session_tokens::from_start(0, t),
                                                  memory::session_tokens::from_start(0, t)};
  EXPECT_FALSE(session_write(a, me, -1, twice, bytes));
}

}  // namespace
