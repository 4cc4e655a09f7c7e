// llama_model without the fixtures: load-time statuses for defective files (missing
// tensor or key, wrong shape, unsupported type), tied output, and the Mistral sliding
// window (with one layer, a token's logits depend only on the last n_swa tokens).
#include <cmath>
#include <string>
#include <vector>

#include "context/tiny_llama.hpp"
#include <gtest/gtest.h>

#include "mnemo/context.hpp"
#include "mnemo/memory/full/full_cache.hpp"

namespace {

using namespace mnemo;
using mnemo_test::tiny_llama_spec;

TEST(LlamaLoad, GoodFileLoads) {
  auto m = mnemo_test::make_tiny_llama({});
  ASSERT_TRUE(m.is_ok()) << m.error().to_string();
  EXPECT_EQ(m->n_vocab(), 64u);
  EXPECT_EQ(m->hparams().d_k, 16u);
  EXPECT_EQ(m->hparams().n_rot, 16u);
  EXPECT_FALSE(m->tied_output());
}

TEST(LlamaLoad, DefectsGiveStatusesNamingThem) {
  struct defect {
    tiny_llama_spec spec;
    status_code code;
    std::string needle;
  };
  std::vector<defect> cases;
  auto add = [&](auto edit, status_code code, std::string needle) {
    tiny_llama_spec s;
    edit(s);
    cases.push_back({s, code, needle});
  };
  add([](auto& s) { s.drop_tensor = "blk.1.ffn_up.weight"; }, status_code::not_found,
      "blk.1.ffn_up.weight");
  add([](auto& s) { s.drop_tensor = "output_norm.weight"; }, status_code::not_found,
      "output_norm.weight");
  add([](auto& s) { s.bad_shape = "blk.0.attn_k.weight"; }, status_code::invalid_argument,
      "blk.0.attn_k.weight");
  add([](auto& s) { s.bad_type = "blk.0.attn_q.weight"; }, status_code::unsupported,
      "blk.0.attn_q.weight");
  add([](auto& s) { s.drop_key = "llama.block_count"; }, status_code::not_found,
      "llama.block_count");
  add([](auto& s) { s.drop_key = "llama.attention.layer_norm_rms_epsilon"; },
      status_code::not_found, "layer_norm_rms_epsilon");
  add([](auto& s) { s.n_head_kv = 3; }, status_code::invalid_argument, "head_count_kv");
  for (const defect& d : cases) {
    auto m = mnemo_test::make_tiny_llama(d.spec);
    ASSERT_FALSE(m.is_ok()) << d.needle;
    EXPECT_EQ(m.error().code(), d.code) << m.error().to_string();
    EXPECT_NE(m.error().message().find(d.needle), std::string::npos) << m.error().to_string();
  }
}

std::vector<float> run(const model::llama_model& m, const std::vector<token_id>& t) {
  using cache_t = memory::full_cache<float>;
  auto cache = cache_t::make(m.full_cache_config(128, 1));
  EXPECT_TRUE(cache.is_ok());
  auto c = context<model::llama_model, cache_t>::make(m, std::move(cache).value(), {});
  EXPECT_TRUE(c.is_ok()) << c.error().to_string();
  batch b;
  for (std::size_t i = 0; i < t.size(); ++i) b.add(t[i], static_cast<pos_t>(i), {0}, true);
  EXPECT_TRUE(c->decode(b));
  return {c->logits().begin(), c->logits().end()};
}

TEST(LlamaModel, TiedOutputUsesTokenEmbedding) {
  tiny_llama_spec s;
  s.tied = true;
  auto m = mnemo_test::make_tiny_llama(s);
  ASSERT_TRUE(m.is_ok()) << m.error().to_string();
  EXPECT_TRUE(m->tied_output());
  const auto l = run(*m, {5, 9, 1});
  ASSERT_EQ(l.size(), 3u * 64);
  for (float v : l) ASSERT_TRUE(std::isfinite(v));
}

// One layer, window 4: position p attends positions p-3..p, whose K/V depend only on
// their own tokens, so changing tokens 0..3 changes rows 0..6 and nothing after.
// Without the window every later row changes (the control, so the test can fail).
TEST(LlamaModel, SlidingWindowLimitsWhatATokenSees) {
  for (std::uint32_t window : {4u, 0u}) {
    tiny_llama_spec s;
    s.n_layer = 1;
    s.n_swa = window;
    auto m = mnemo_test::make_tiny_llama(s);
    ASSERT_TRUE(m.is_ok()) << m.error().to_string();
    EXPECT_EQ(m->hparams().n_swa, window);
    std::vector<token_id> a = {1, 2, 3, 4, 10, 11, 12, 13, 14, 15, 16, 17};
    std::vector<token_id> b = a;
    for (int i = 0; i < 4; ++i) b[i] = 40 + i;
    const auto la = run(*m, a), lb = run(*m, b);
    for (std::size_t r = 0; r < a.size(); ++r) {
      float d = 0;
      for (std::size_t c = 0; c < 64; ++c)
        d = std::max(d, std::fabs(la[r * 64 + c] - lb[r * 64 + c]));
      if (window > 0 && r >= 7)
        EXPECT_EQ(d, 0.0f) << "window " << window << ", row " << r;
      else
        EXPECT_GT(d, 1e-4f) << "window " << window << ", row " << r;
    }
  }
}

}  // namespace
