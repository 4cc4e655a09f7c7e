// The Gemma-3-style model on split streams in every layer
// (gemma3_model::make_iswa_split: global layers on split_stream, local layers on the
// per-stream split_window) through context, against llama.cpp's logits for every gemma3-iswa
// fixture scenario (docs/gemma3.md), with
//  - split:       n_ubatch 512, windows of pad(16 + 512, 256) = 768 cells per stream;
//  - split-small: n_ubatch 32 and windows of exactly n_swa + n_ubatch = 48 cells per
//                 stream, so that `chunked` (300 tokens) forgets positions.
// Bound as gemma3_fixtures_test.cpp (5e-3 f32, 8e-3 f16 K/V).
#include <cstdio>
#include <filesystem>
#include <string>
#include <tuple>
#include <vector>

#include "common/scenario.hpp"
#include "fixture_harness.hpp"
#include <gtest/gtest.h>

#include "mnemo/context.hpp"
#include "mnemo/memory/layered/layered.hpp"
#include "mnemo/memory/stream/split_stream.hpp"
#include "mnemo/memory/window/split_window.hpp"
#include "mnemo/model/gemma3.hpp"

namespace {

using namespace mnemo;
using fixture_harness::fixture;
using model::gemma3_model;

template <class KE>
result<std::vector<float>> replay(const std::string& mode, const gemma3_model& m,
                                  const mnemo_examples::scenario& sc, pos_t& horizon) {
  const std::uint32_t n_ubatch = mode == "split" ? 512 : 32;
  MNEMO_ASSIGN_OR_RETURN(auto mem,
                         m.make_iswa_split<KE>(4096, 4, n_ubatch, mode == "split" ? 0 : 16 + 32));
  using mem_t = gemma3_model::iswa_split_memory<KE>;
  context_params p;
  p.n_ubatch = n_ubatch;
  p.n_seq_max = 4;
  p.n_threads = 2;
  MNEMO_ASSIGN_OR_RETURN(auto ctx, (context<gemma3_model, mem_t>::make(m, std::move(mem), p)));
  std::vector<float> out;
  MNEMO_RETURN_IF_ERROR(mnemo_examples::run_scenario(ctx, sc, out));
  horizon = ctx.memory().template part<1>().horizon(0);
  std::printf("[ measure ] %s: seq 0 horizon %d, window cells per stream %zu\n", mode.c_str(),
              horizon, ctx.memory().template part<1>().size_per_stream());
  return out;
}

using param = std::tuple<std::string, std::string, std::string>;  // scenario, memory, kv

class Gemma3SplitFixtures : public ::testing::TestWithParam<param> {};

TEST_P(Gemma3SplitFixtures, LogitsMatchLlamaCpp) {
  const auto& [scenario_name, mode, kv] = GetParam();
  const std::string stem = "gemma3-iswa." + scenario_name;
  if (!std::filesystem::exists(fixture(stem + ".json")))
    GTEST_SKIP() << "fixtures not found in " << MNEMO_FIXTURES_DIR;
  const gemma3_model* m = fixture_harness::load_model<gemma3_model>("gemma3-iswa.gguf");
  ASSERT_NE(m, nullptr);
  fixture_harness::fixture_case fc;
  ASSERT_NO_FATAL_FAILURE(fixture_harness::load_case(stem, fc));
  pos_t horizon = 0;
  auto ours = kv == "f16" ? replay<dtype::f16>(mode, *m, fc.sc, horizon)
                          : replay<float>(mode, *m, fc.sc, horizon);
  ASSERT_TRUE(ours.is_ok()) << ours.error().to_string();
  if (scenario_name == "chunked" && mode == "split-small") {
    EXPECT_GT(horizon, 0) << "the small per-stream window never forgot: the test is too weak";
  }
  fixture_harness::compare_logits(stem + " " + mode + " kv " + kv, *ours, fc, m->n_vocab(),
                                  {kv == "f16" ? 8e-3f : 5e-3f, false, false});
}

std::string param_name(const ::testing::TestParamInfo<param>& info) {
  return fixture_harness::camel_name(std::get<0>(info.param) + "-" + std::get<1>(info.param) + "-" +
                                     std::get<2>(info.param));
}

INSTANTIATE_TEST_SUITE_P(
    F32, Gemma3SplitFixtures,
    ::testing::Combine(::testing::Values("single", "multi", "chunked", "branch"),
                       ::testing::Values("split", "split-small"), ::testing::Values("f32")),
    param_name);
INSTANTIATE_TEST_SUITE_P(F16, Gemma3SplitFixtures,
                         ::testing::Combine(::testing::Values("chunked", "multi"),
                                            ::testing::Values("split-small"),
                                            ::testing::Values("f16")),
                         param_name);

}  // namespace
