// End-to-end equivalence with llama.cpp for the hybrid fixture (the fixtures'
// `jamba`: Mamba layers 0 and 2, attention layers 1 and 3, dense FFN):
// every scenario through context + layered<KV part, recurrent>, with the attention
// layers on the unified cache (full_cache) and on split streams (split_stream), on the
// native ISA and the scalar path. Bound (README): 1e-4 * max|logit|, identical arg-max
// on every row. Also the load-time checks.
#include <filesystem>
#include <string>
#include <tuple>
#include <vector>

#include "common/scenario.hpp"
#include "fixture_harness.hpp"
#include <gtest/gtest.h>

#include "mnemo/context.hpp"
#include "mnemo/memory/full/full_cache.hpp"
#include "mnemo/memory/layered/layered.hpp"
#include "mnemo/memory/recurrent/recurrent.hpp"
#include "mnemo/memory/stream/split_stream.hpp"
#include "mnemo/model/jamba.hpp"
#include "mnemo/model/mamba.hpp"

namespace {

using namespace mnemo;

using fixture_harness::fixture;

const model::jamba_model* the_model() {
  return fixture_harness::load_model<model::jamba_model>("jamba.gguf");
}

/// The KV part of the hybrid memory for the attention layers.
result<memory::full_cache<float>> make_kv(const model::jamba_model& m, memory::full_cache<float>*) {
  return memory::full_cache<float>::make(m.full_cache_config(4096, 4));
}
result<memory::split_stream<float>> make_kv(const model::jamba_model& m,
                                            memory::split_stream<float>*) {
  return memory::split_stream<float>::make(m.split_stream_config(1024, 4));
}

template <class KV, class Isa>
result<std::vector<float>> replay(const model::jamba_model& m, const mnemo_examples::scenario& sc) {
  using mem_t = memory::layered<KV, memory::recurrent>;
  MNEMO_ASSIGN_OR_RETURN(KV kv, make_kv(m, static_cast<KV*>(nullptr)));
  MNEMO_ASSIGN_OR_RETURN(memory::recurrent rec, memory::recurrent::make(m.recurrent_config(4)));
  MNEMO_ASSIGN_OR_RETURN(mem_t mem,
                         mem_t::make(m.layer_parts(0, 1), std::move(kv), std::move(rec)));
  context_params p;
  p.n_ubatch = 512;
  p.n_seq_max = 4;
  p.n_threads = 2;
  MNEMO_ASSIGN_OR_RETURN(auto ctx,
                         (context<model::jamba_model, mem_t, Isa>::make(m, std::move(mem), p)));
  std::vector<float> out;
  MNEMO_RETURN_IF_ERROR(mnemo_examples::run_scenario(ctx, sc, out));
  return out;
}

using param = std::tuple<std::string, std::string, bool>;  // scenario, kv part, scalar ISA

class JambaFixtures : public ::testing::TestWithParam<param> {};

TEST_P(JambaFixtures, LogitsMatchLlamaCpp) {
  const auto& [name, kv, scalar] = GetParam();
  const std::string stem = "jamba." + name;
  if (!std::filesystem::exists(fixture(stem + ".json")))
    GTEST_SKIP() << "fixtures not found in " << MNEMO_FIXTURES_DIR;
  const model::jamba_model* m = the_model();
  ASSERT_NE(m, nullptr);
  fixture_harness::fixture_case fc;
  ASSERT_NO_FATAL_FAILURE(fixture_harness::load_case(stem, fc));
  const mnemo_examples::scenario& sc = fc.sc;
  using full = memory::full_cache<float>;
  using split = memory::split_stream<float>;
  auto ours =
      kv == "full"
          ? (scalar ? replay<full, simd::scalar>(*m, sc) : replay<full, simd::native>(*m, sc))
          : (scalar ? replay<split, simd::scalar>(*m, sc) : replay<split, simd::native>(*m, sc));
  ASSERT_TRUE(ours.is_ok()) << ours.error().to_string();
  fixture_harness::compare_logits(stem + " " + kv + (scalar ? " scalar" : " native"), *ours, fc,
                                  m->n_vocab(), {1e-4f, true, true});
}

INSTANTIATE_TEST_SUITE_P(All, JambaFixtures,
                         ::testing::Combine(::testing::Values("single", "multi", "chunked"),
                                            ::testing::Values("full", "split"), ::testing::Bool()),
                         [](const ::testing::TestParamInfo<param>& i) {
                           std::string s = std::get<0>(i.param);
                           s += std::get<1>(i.param) == "full" ? "Full" : "Split";
                           return s + (std::get<2>(i.param) ? "Scalar" : "Native");
                         });

TEST(JambaLoad, LayerLayoutAndChecks) {
  if (!std::filesystem::exists(fixture("jamba.gguf"))) GTEST_SKIP() << "no fixtures";
  const model::jamba_model* m = the_model();
  ASSERT_NE(m, nullptr);
  const auto& hp = m->hparams();
  EXPECT_EQ(hp.recurrent, (std::vector<std::uint8_t>{1, 0, 1, 0}));
  EXPECT_EQ(hp.n_head, 4u);
  EXPECT_EQ(hp.n_head_kv, 2u);
  EXPECT_EQ(hp.d_k, 32u);
  EXPECT_EQ(m->layer_parts(0, 1), (std::vector<std::uint8_t>{1, 0, 1, 0}));
  EXPECT_EQ(m->kv_shape().n_layer, 2u);
  EXPECT_EQ(m->recurrent_config(4).n_layer, 2u);
  // Other architectures are refused by name, as is a hybrid read as a pure Mamba.
  for (const char* other : {"mamba.gguf", "llama-tiny.gguf"}) {
    auto r = model::jamba_model::open(fixture(other));
    ASSERT_FALSE(r.is_ok()) << other;
    EXPECT_NE(r.error().to_string().find("general.architecture"), std::string::npos)
        << r.error().to_string();
  }
}

TEST(JambaFixtures, SingleRowsEqualMultiRows) {
  // Sequence 0's 17 rows of `multi` equal `single`'s first 17 (split
  // micro-batches must not change a sequence's result).
  if (!std::filesystem::exists(fixture("jamba.multi.json"))) GTEST_SKIP() << "no fixtures";
  const model::jamba_model* m = the_model();
  ASSERT_NE(m, nullptr);
  auto single = mnemo_examples::read_scenario(fixture("jamba.single.json"));
  auto multi = mnemo_examples::read_scenario(fixture("jamba.multi.json"));
  ASSERT_TRUE(single.is_ok() && multi.is_ok());
  auto a = replay<memory::full_cache<float>, simd::native>(*m, *single);
  auto b = replay<memory::full_cache<float>, simd::native>(*m, *multi);
  ASSERT_TRUE(a.is_ok() && b.is_ok());
  const std::size_t nv = m->n_vocab();
  // multi's first call lists sequence 0's 17 tokens first.
  for (std::size_t i = 0; i < 17 * nv; ++i)
    ASSERT_NEAR((*a)[i], (*b)[i], 1e-5f) << "row " << i / nv << " column " << i % nv;
}

}  // namespace
