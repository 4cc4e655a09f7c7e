// bf16 products (attention::product_precision) end to end: the GQA 4 llama fixture with
// an f16 cache, every scenario in micro-batches of four tokens, against llama.cpp's
// logits. Where the CPU has AVX512_BF16, the prompts' decode items (four tokens x four
// query heads = 16 rows per KV head) round their products to bf16; the logits must stay
// within the bound below, and differ from the f32 run's (the bf16 path ran). Elsewhere
// the request changes nothing.
#include <filesystem>
#include <string>
#include <vector>

#include "common/scenario.hpp"
#include "common/scoped_setting.hpp"
#include "fixture_harness.hpp"
#include <gtest/gtest.h>

#include "mnemo/attention/product_precision.hpp"
#include "mnemo/context.hpp"
#include "mnemo/memory/full/full_cache.hpp"
#include "mnemo/model/llama.hpp"

namespace {

using namespace mnemo;
using fixture_harness::fixture;
using model::llama_model;

/// The scenario's logits with `precision` requested, prompts in micro-batches of four
/// tokens (16 rows per KV head: decode items).
result<std::vector<float>> replay(const llama_model& m, const mnemo_examples::scenario& sc,
                                  attention::product_precision precision) {
  const mnemo_test::scoped_setting set(&attention::current_product_precision,
                                       &attention::set_product_precision, precision);
  return fixture_harness::replay_full_cache<dtype::f16>(m, sc, 4);
}

// About twice the worst case measured over the four scenarios on a Zen 4 core
// (docs/attention.md, "bf16 products"); f32 products: llama_fixtures_test's bound.
constexpr float k_bf16_bound = 2e-2f;
constexpr float k_f32_bound = 6e-3f;

TEST(Bf16ProductsFixtures, LogitsStayNearLlamaCpp) {
  const std::string model = "llama-gqa4-f16";
  if (!std::filesystem::exists(fixture(model + ".gguf")))
    GTEST_SKIP() << "fixtures not found in " << MNEMO_FIXTURES_DIR;
  const llama_model* m = fixture_harness::load_model<llama_model>(model + ".gguf");
  ASSERT_NE(m, nullptr);
  std::size_t differ = 0;
  for (const std::string scenario : {"single", "multi", "chunked", "branch"}) {
    fixture_harness::fixture_case fc;
    ASSERT_NO_FATAL_FAILURE(fixture_harness::load_case(model + "." + scenario, fc));
    auto bf16 = replay(*m, fc.sc, attention::product_precision::bf16);
    auto f32 = replay(*m, fc.sc, attention::product_precision::f32);
    ASSERT_TRUE(bf16.is_ok()) << bf16.error().to_string();
    ASSERT_TRUE(f32.is_ok()) << f32.error().to_string();
    fixture_harness::compare_logits(model + "." + scenario + " kv f16, bf16 products", *bf16, fc,
                                    m->n_vocab(), {k_bf16_bound, false, false});
    fixture_harness::compare_logits(model + "." + scenario + " kv f16, f32 products", *f32, fc,
                                    m->n_vocab(), {k_f32_bound, false, false});
    differ += *bf16 != *f32;
  }
  if (attention::bf16_products_supported()) {
    EXPECT_EQ(differ, 4u) << "a scenario did not take the bf16 products";
  } else {
    EXPECT_EQ(differ, 0u) << "bf16 products requested on a CPU without them changed the logits";
  }
}

}  // namespace
