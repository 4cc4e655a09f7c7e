// End-to-end equivalence with llama.cpp for the Mamba-1 fixture (the fixtures'
// `mamba`): every scenario through context + memory::recurrent with the
// fixtures' harness settings (n_ubatch 512, n_seq_max 4), on the native ISA and on the
// scalar path. Bound (README): 1e-4 * max|logit| (measured: docs/recurrent.md), and the
// arg-max must agree on every row. Also checks the load-time refusals.
#include <filesystem>
#include <string>
#include <tuple>
#include <vector>

#include "common/scenario.hpp"
#include "fixture_harness.hpp"
#include <gtest/gtest.h>

#include "mnemo/context.hpp"
#include "mnemo/memory/recurrent/recurrent.hpp"
#include "mnemo/model/mamba.hpp"

namespace {

using namespace mnemo;

using fixture_harness::fixture;

const model::mamba_model* the_model() {
  return fixture_harness::load_model<model::mamba_model>("mamba.gguf");
}

template <class Isa>
result<std::vector<float>> replay(const model::mamba_model& m, const mnemo_examples::scenario& sc) {
  MNEMO_ASSIGN_OR_RETURN(auto mem, memory::recurrent::make(m.recurrent_config(4)));
  context_params p;
  p.n_ubatch = 512;
  p.n_seq_max = 4;
  p.n_threads = 2;
  MNEMO_ASSIGN_OR_RETURN(
      auto ctx, (context<model::mamba_model, memory::recurrent, Isa>::make(m, std::move(mem), p)));
  std::vector<float> out;
  MNEMO_RETURN_IF_ERROR(mnemo_examples::run_scenario(ctx, sc, out));
  return out;
}

using param = std::tuple<std::string, bool>;  // scenario, scalar ISA

class MambaFixtures : public ::testing::TestWithParam<param> {};

TEST_P(MambaFixtures, LogitsMatchLlamaCpp) {
  const auto& [name, scalar] = GetParam();
  const std::string stem = "mamba." + name;
  if (!std::filesystem::exists(fixture(stem + ".json")))
    GTEST_SKIP() << "fixtures not found in " << MNEMO_FIXTURES_DIR;
  const model::mamba_model* m = the_model();
  ASSERT_NE(m, nullptr);
  fixture_harness::fixture_case fc;
  ASSERT_NO_FATAL_FAILURE(fixture_harness::load_case(stem, fc));
  auto ours = scalar ? replay<simd::scalar>(*m, fc.sc) : replay<simd::native>(*m, fc.sc);
  ASSERT_TRUE(ours.is_ok()) << ours.error().to_string();
  fixture_harness::compare_logits(stem + (scalar ? " scalar" : " native"), *ours, fc, m->n_vocab(),
                                  {1e-4f, true, true});
}

INSTANTIATE_TEST_SUITE_P(All, MambaFixtures,
                         ::testing::Combine(::testing::Values("single", "multi", "chunked"),
                                            ::testing::Bool()),
                         [](const ::testing::TestParamInfo<param>& i) {
                           return std::get<0>(i.param) +
                                  (std::get<1>(i.param) ? "Scalar" : "Native");
                         });

TEST(MambaFixtures, BranchIsRefusedNotWrong) {
  // llama.cpp rejects `branch` on a recurrent model; mnemo refuses the
  // seq_cp of a range its state cannot represent instead of decoding wrong logits.
  if (!std::filesystem::exists(fixture("mamba.gguf"))) GTEST_SKIP() << "no fixtures";
  const model::mamba_model* m = the_model();
  ASSERT_NE(m, nullptr);
  auto mem = memory::recurrent::make(m->recurrent_config(4));
  ASSERT_TRUE(mem.is_ok());
  auto ctx = context<model::mamba_model, memory::recurrent>::make(*m, std::move(*mem), {});
  ASSERT_TRUE(ctx.is_ok());
  batch b;
  for (pos_t p = 0; p < 48; ++p) b.add(3 + p, p, {0}, p == 47);
  ASSERT_TRUE(ctx->decode(b).is_ok());
  const status st = ctx->seq_cp(0, 1, 0, 32);
  EXPECT_EQ(st.code(), status_code::unsupported) << st.to_string();
  EXPECT_EQ(ctx->seq_pos_max(1), -1);
}

TEST(MambaLoad, RefusesOtherArchitectures) {
  if (!std::filesystem::exists(fixture("jamba.gguf"))) GTEST_SKIP() << "no fixtures";
  auto r = model::mamba_model::open(fixture("jamba.gguf"));
  ASSERT_FALSE(r.is_ok());
  EXPECT_NE(r.error().to_string().find("general.architecture"), std::string::npos)
      << r.error().to_string();
  auto l = model::mamba_model::open(fixture("llama-tiny.gguf"));
  EXPECT_FALSE(l.is_ok());
}

}  // namespace
