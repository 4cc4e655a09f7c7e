// End-to-end equivalence with llama.cpp for the Gemma-3-style model: every scenario of
// the gemma3-iswa fixture (MNEMO_FIXTURES_DIR; docs/gemma3.md) through context and
//  - full:       one full cache of 4096 cells for every layer (the window is a mask);
//  - iswa:       the composite with the harness's sizes (n_ubatch 512, n_seq_max 4: the
//                window part has pad(16 * 4 + 512, 256) = 768 cells, never full here);
//  - iswa-small: the composite with n_ubatch 32 and a window part of exactly
//                n_swa * n_seq_max + n_ubatch = 96 cells, so that `chunked` (300 tokens)
//                reuses cells and forgets positions, and still matches.
// Bound: the fixtures' tolerance, about 5e-3 with exact GELU (llama.cpp's GELU goes through an
// f16 table); arg-max as in llama_fixtures_test.cpp: a row may differ only when
// llama.cpp's top-2 gap is within 2 * bound.
// Also: the branch scenario with forgetting (resumable at 32), the model's hyper-parameter
// checks, that the mask takes each layer's window from the memory, and the GeGLU kernel
// of every ISA against a double reference.
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <string>
#include <tuple>
#include <vector>

#include "common/scenario.hpp"
#include "fixture_harness.hpp"
#include <gtest/gtest.h>

#include "mnemo/base/rng.hpp"
#include "mnemo/context.hpp"
#include "mnemo/memory/full/full_cache.hpp"
#include "mnemo/memory/layered/layered.hpp"
#include "mnemo/memory/window/sliding_window.hpp"
#include "mnemo/model/gemma3.hpp"
#include "mnemo/simd/cpu.hpp"

namespace {

using namespace mnemo;
using mnemo_examples::scenario;
using model::gemma3_model;

using fixture_harness::fixture;

const gemma3_model* load_model() {
  return fixture_harness::load_model<gemma3_model>("gemma3-iswa.gguf");
}

template <class Memory>
result<std::vector<float>> run(const gemma3_model& m, Memory mem, const scenario& sc,
                               std::uint32_t n_ubatch) {
  context_params p;
  p.n_ubatch = n_ubatch;
  p.n_seq_max = 4;
  p.n_threads = 2;
  MNEMO_ASSIGN_OR_RETURN(auto ctx, (context<gemma3_model, Memory>::make(m, std::move(mem), p)));
  std::vector<float> out;
  MNEMO_RETURN_IF_ERROR(mnemo_examples::run_scenario(ctx, sc, out));
  // The small window part must really have forgotten something in `chunked`.
  if constexpr (requires { ctx.memory().template part<1>().horizon(0); })
    std::printf("[ measure ] seq 0 horizon %d, earliest restorable %d, window cells %zu\n",
                ctx.memory().template part<1>().horizon(0), ctx.earliest_restorable_pos(0),
                ctx.memory().template part<1>().size());
  return out;
}

template <class KE>
result<std::vector<float>> replay(const std::string& mode, const gemma3_model& m,
                                  const scenario& sc) {
  if (mode == "full") {
    MNEMO_ASSIGN_OR_RETURN(auto c, memory::full_cache<KE>::make(m.full_cache_config(4096, 4)));
    return run(m, std::move(c), sc, 512);
  }
  if (mode == "iswa") {
    MNEMO_ASSIGN_OR_RETURN(auto c, m.make_iswa<KE>(4096, 4, 512));
    return run(m, std::move(c), sc, 512);
  }
  MNEMO_ASSIGN_OR_RETURN(auto c, m.make_iswa<KE>(4096, 4, 32, 16 * 4 + 32));
  return run(m, std::move(c), sc, 32);
}

using param = std::tuple<std::string, std::string, std::string>;  // scenario, memory, kv

class Gemma3Fixtures : public ::testing::TestWithParam<param> {};

TEST_P(Gemma3Fixtures, LogitsMatchLlamaCpp) {
  const auto& [scenario_name, mode, kv] = GetParam();
  const std::string stem = "gemma3-iswa." + scenario_name;
  if (!std::filesystem::exists(fixture(stem + ".json")))
    GTEST_SKIP() << "fixtures not found in " << MNEMO_FIXTURES_DIR;
  const gemma3_model* m = load_model();
  ASSERT_NE(m, nullptr);
  fixture_harness::fixture_case fc;
  ASSERT_NO_FATAL_FAILURE(fixture_harness::load_case(stem, fc));
  auto ours = kv == "f16" ? replay<dtype::f16>(mode, *m, fc.sc) : replay<float>(mode, *m, fc.sc);
  ASSERT_TRUE(ours.is_ok()) << ours.error().to_string();
  // f32: the fixtures' 5e-3 (measured worst 2.1e-3, docs/gemma3.md); an f16 K/V cache
  // adds its rounding of keys and values (measured in docs/gemma3.md). A row's arg-max
  // may differ only within 2 * bound of llama.cpp's top-2 gap.
  fixture_harness::compare_logits(stem + " " + mode + " kv " + kv, *ours, fc, m->n_vocab(),
                                  {kv == "f16" ? 8e-3f : 5e-3f, false, false});
}

std::string param_name(const ::testing::TestParamInfo<param>& info) {
  return fixture_harness::camel_name(std::get<0>(info.param) + "-" + std::get<1>(info.param) + "-" +
                                     std::get<2>(info.param));
}

INSTANTIATE_TEST_SUITE_P(
    F32, Gemma3Fixtures,
    ::testing::Combine(::testing::Values("single", "multi", "chunked", "branch"),
                       ::testing::Values("full", "iswa", "iswa-small"), ::testing::Values("f32")),
    param_name);
INSTANTIATE_TEST_SUITE_P(F16, Gemma3Fixtures,
                         ::testing::Combine(::testing::Values("chunked", "branch"),
                                            ::testing::Values("iswa-small"),
                                            ::testing::Values("f16")),
                         param_name);

// ---- branch: resumable at 32 although sequence 0 forgot positions --------------------

// The branch scenario copies [0, 32) of sequence 0 (which holds 0..47) to sequence 1,
// which continues at 32. With window 16 that needs positions 17..31 (32 - 16 < p <= 31).
// n_ubatch 8 and a window part of n_swa * 2 + n_ubatch = 40 cells make sequence 0 forget
// positions 0..7 while its 48 tokens are decoded (horizon 8): the copy is still
// resumable, and the logits still match llama.cpp's.
TEST(Gemma3Branch, ResumableAfterForgettingAndMatches) {
  const std::string stem = "gemma3-iswa.branch";
  if (!std::filesystem::exists(fixture(stem + ".json"))) GTEST_SKIP() << "no fixtures";
  const gemma3_model* m = load_model();
  ASSERT_NE(m, nullptr);
  auto sc = mnemo_examples::read_scenario(fixture(stem + ".json"));
  ASSERT_TRUE(sc.is_ok()) << sc.error().to_string();
  auto ref = mnemo_examples::read_logits(fixture(stem + ".bin"));
  ASSERT_TRUE(ref.is_ok());
  auto mem = m->make_iswa<float>(4096, 4, 8, 40);
  ASSERT_TRUE(mem.is_ok()) << mem.error().to_string();
  context_params p;
  p.n_ubatch = 8;
  p.n_seq_max = 4;
  p.n_threads = 1;  // many small micro-batches: thread hand-offs would dominate
  using mem_t = gemma3_model::iswa_memory<float>;
  auto ctx = context<gemma3_model, mem_t>::make(*m, std::move(mem).value(), p);
  ASSERT_TRUE(ctx.is_ok());
  std::vector<float> out;
  batch b;
  for (std::size_t i = 0; i < sc->calls.size(); ++i) {
    const auto& c = sc->calls[i];
    if (!c.before.name.empty()) {
      ASSERT_EQ(c.before.name, "seq_cp");
      const auto& a = c.before.args;  // 0 1 0 32
      const auto& window = ctx->memory().part<1>();
      EXPECT_EQ(window.horizon(0), 8) << "sequence 0 should have forgotten 0..7";
      EXPECT_EQ(ctx->earliest_restorable_pos(0), 8 + 16 - 1);
      EXPECT_TRUE(ctx->can_resume(0, a[3])) << "positions 17..31 are held";
      EXPECT_FALSE(ctx->can_resume(0, 8 + 16 - 2));
      const status st = mnemo_examples::apply_op(*ctx, c.before);
      ASSERT_TRUE(st.is_ok()) << st.to_string();
      EXPECT_TRUE(ctx->can_resume(1, a[3]));
      EXPECT_EQ(ctx->seq_pos_max(1), a[3] - 1);
    }
    b.clear();
    for (std::size_t j = 0; j < c.tokens.size(); ++j)
      b.add(c.tokens[j], c.pos[j], {c.seq[j]}, true);
    const status st = ctx->decode(b);
    ASSERT_TRUE(st.is_ok()) << "call " << i << ": " << st.to_string();
    out.insert(out.end(), ctx->logits().begin(), ctx->logits().end());
  }
  ASSERT_EQ(out.size(), ref->size());
  float worst = 0;
  for (std::size_t i = 0; i < out.size(); ++i)
    worst = std::max(worst, std::fabs(out[i] - (*ref)[i]));
  std::printf("[ measure ] branch, window part of 40 cells, n_ubatch 8: max |diff| %.3g\n", worst);
  EXPECT_LE(worst, 5e-3f);
}

// ---- the model's checks ------------------------------------------------------------

TEST(Gemma3Model, ReadsTheLayerPatternAndScales) {
  if (!std::filesystem::exists(fixture("gemma3-iswa.gguf"))) GTEST_SKIP() << "no fixtures";
  const gemma3_model* m = load_model();
  ASSERT_NE(m, nullptr);
  const auto& h = m->hparams();
  EXPECT_EQ(h.n_swa, 16u);
  EXPECT_EQ(h.n_local(), 5u);
  EXPECT_EQ(h.n_global(), 1u);
  for (std::size_t l = 0; l < 6; ++l) EXPECT_EQ(h.local(l), l != 5) << "layer " << l;
  EXPECT_EQ(h.attn_scale, 0.125f);
  EXPECT_EQ(h.final_softcap, 10.0f);
  EXPECT_EQ(h.rope(0).freq_base, 10000.0f);
  EXPECT_EQ(h.rope(5).freq_base, 1e6f);
  EXPECT_EQ(h.rope(0).layout, attention::rope_layout::neox);
  // Different bases: one full cache for every layer cannot K-shift them all.
  EXPECT_FALSE(m->full_cache_config(64, 1).shift_supported);
  auto mem = m->make_iswa<float>(4096, 4, 512);
  ASSERT_TRUE(mem.is_ok()) << mem.error().to_string();
  EXPECT_EQ(mem->part<1>().size(), 768u);  // the size llama.cpp uses
  EXPECT_EQ(mem->part<0>().size(), 4096u);
}

// The attention mask takes each layer's window from the memory's views: the composite
// with two parts routed the wrong way round (window layer 0 on the global part, global
// layer 5 on the window part) computes what a full cache with those two windows swapped
// computes, and not what the model's windows give.
TEST(Gemma3Model, TheMaskTakesTheWindowFromTheMemory) {
  if (!std::filesystem::exists(fixture("gemma3-iswa.gguf"))) GTEST_SKIP() << "no fixtures";
  const gemma3_model* m = load_model();
  ASSERT_NE(m, nullptr);
  std::vector<std::uint8_t> parts = m->layer_parts();
  ASSERT_NE(parts[0], parts[5]);
  std::swap(parts[0], parts[5]);
  auto last_logits = [&](auto mem) -> std::vector<float> {
    using mem_t = decltype(mem);
    context_params p;
    p.n_ubatch = 64;
    auto ctx = context<gemma3_model, mem_t>::make(*m, std::move(mem), p);
    EXPECT_TRUE(ctx.is_ok());
    if (!ctx.is_ok()) return {};
    batch b;
    for (int i = 0; i < 40; ++i) b.add(10 + i, i, {0}, i == 39);  // 40 > n_swa: windows mask
    const status st = ctx->decode(b);
    EXPECT_TRUE(st.is_ok()) << st.to_string();
    const auto row = ctx->logits_ith(-1);
    return {row.begin(), row.end()};
  };
  auto g = memory::full_cache<float>::make(m->global_cache_config(256, 1));
  auto w = memory::sliding_window<float>::make(m->window_config(256, 1, 64));  // forgets nothing
  ASSERT_TRUE(g.is_ok() && w.is_ok());
  auto routed =
      gemma3_model::iswa_memory<float>::make(parts, std::move(g).value(), std::move(w).value());
  ASSERT_TRUE(routed.is_ok()) << routed.error().to_string();
  memory::full_cache_config swapped = m->full_cache_config(256, 1);
  ASSERT_EQ(swapped.windows.size(), m->layer_parts().size());
  std::swap(swapped.windows[0], swapped.windows[5]);
  auto full_swapped = memory::full_cache<float>::make(swapped);
  auto full_model = memory::full_cache<float>::make(m->full_cache_config(256, 1));
  ASSERT_TRUE(full_swapped.is_ok() && full_model.is_ok());
  const std::vector<float> a = last_logits(std::move(routed).value());
  const std::vector<float> b = last_logits(std::move(full_swapped).value());
  const std::vector<float> c = last_logits(std::move(full_model).value());
  ASSERT_EQ(a.size(), b.size());
  ASSERT_EQ(a.size(), c.size());
  float same = 0, differ = 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    same = std::max(same, std::fabs(a[i] - b[i]));
    differ = std::max(differ, std::fabs(a[i] - c[i]));
  }
  EXPECT_LE(same, 1e-4f) << "the routed composite and the full cache with its windows differ";
  EXPECT_GT(differ, 1e-3f) << "swapping two layers' windows changed nothing: no window masked";
}

// ---- GeGLU: every ISA against a double-precision reference ------------------------

template <class Isa>
class Gemma3Geglu : public ::testing::Test {};
using all_isas = ::testing::Types<simd::scalar, simd::avx2, simd::avx512, simd::neon>;
struct isa_names {
  template <class Isa>
  static std::string GetName(int) {
    return std::string(Isa::name);
  }
};
TYPED_TEST_SUITE(Gemma3Geglu, all_isas, isa_names);

// gelu_tanh(g) * u against 0.5 g (1 + tanh(sqrt(2/pi) (g + 0.044715 g^3))) * u in double,
// lengths 0..300 (tails of every lane count, and past the 256-value chunk), gates in
// [-12, 12] plus the extremes where e^-2u overflows (-1e4: 0) or vanishes (1e4: g).
TYPED_TEST(Gemma3Geglu, MatchesTheTanhFormula) {
  if constexpr (!simd::is_compiled<TypeParam>) {
    GTEST_SKIP() << TypeParam::name << " is not compiled for this architecture";
  } else {
    if (!simd::supported<TypeParam>()) GTEST_SKIP() << TypeParam::name << " is not supported";
    mnemo::splitmix64 rng{0x6e61};  // seed
    for (std::size_t n = 0; n <= 300; n += n < 40 ? 1 : 37) {
      std::vector<float> g(n + 1), u(n + 1);
      for (std::size_t i = 0; i <= n; ++i) {
        g[i] = 24.0f * rng.uniform() - 12.0f;
        u[i] = 2.0f * rng.uniform() - 1.0f;
      }
      if (n > 2) g[0] = -1e4f, g[1] = 1e4f;
      std::vector<float> out(g.begin() + 1, g.end());  // misaligned by one float
      model::geglu<TypeParam>(out.data(), u.data() + 1, n);
      for (std::size_t i = 0; i < n; ++i) {
        const double x = g[i + 1];
        const double want =
            0.5 * x * (1.0 + std::tanh(0.7978845608028654 * (x + 0.044715 * x * x * x))) * u[i + 1];
        ASSERT_NEAR(out[i], want, 1e-6 + 2e-5 * std::fabs(want))
            << TypeParam::name << " n " << n << " element " << i << " gate " << x << " seed 0x6e61";
      }
    }
  }
}

}  // namespace
