// End-to-end equivalence with llama.cpp for the Mamba-1 fixture (../shared/fixtures
// `mamba`, MODELS.md §5): every scenario through context + memory::recurrent with the
// fixtures' harness settings (n_ubatch 512, n_seq_max 4), on the native ISA and on the
// scalar path. Bound (README): 1e-4 * max|logit| (measured: docs/recurrent.md), and the
// arg-max must agree on every row. Also checks the load-time refusals.
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <string>
#include <tuple>
#include <vector>

#include "common/scenario.hpp"
#include <gtest/gtest.h>

#include "mnemo/context.hpp"
#include "mnemo/memory/recurrent.hpp"
#include "mnemo/model/mamba.hpp"

namespace {

using namespace mnemo;

std::string fixture(const std::string& name) {
  return std::string(MNEMO_FIXTURES_DIR) + "/" + name;
}

const model::mamba_model* the_model() {
  static std::unique_ptr<model::mamba_model> m = [] {
    auto r = model::mamba_model::open(fixture("mamba.gguf"));
    if (!r.is_ok()) {
      ADD_FAILURE() << r.error().to_string();
      return std::unique_ptr<model::mamba_model>();
    }
    return std::make_unique<model::mamba_model>(std::move(r).value());
  }();
  return m.get();
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

std::size_t argmax(const float* row, std::size_t n) {
  std::size_t best = 0;
  for (std::size_t i = 1; i < n; ++i)
    if (row[i] > row[best]) best = i;
  return best;
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
  auto sc = mnemo_examples::read_scenario(fixture(stem + ".json"));
  ASSERT_TRUE(sc.is_ok()) << sc.error().to_string();
  auto ref = mnemo_examples::read_logits(fixture(stem + ".bin"));
  ASSERT_TRUE(ref.is_ok()) << ref.error().to_string();
  auto ours = scalar ? replay<simd::scalar>(*m, *sc) : replay<simd::native>(*m, *sc);
  ASSERT_TRUE(ours.is_ok()) << ours.error().to_string();
  const std::size_t nv = m->n_vocab();
  ASSERT_EQ(ours->size(), sc->n_rows() * nv);
  ASSERT_EQ(ref->size(), ours->size()) << stem << ".bin has the wrong size";

  float max_logit = 0, worst = 0;
  std::size_t worst_i = 0;
  for (std::size_t i = 0; i < ref->size(); ++i) {
    max_logit = std::max(max_logit, std::fabs((*ref)[i]));
    const float d = std::fabs((*ours)[i] - (*ref)[i]);
    if (!(d <= worst)) {
      worst = std::isnan(d) ? INFINITY : d;
      worst_i = i;
    }
  }
  const float tol = 1e-4f * max_logit;
  std::printf("[ measure ] %s %s: max |diff| %.3g (bound %.3g), max |logit| %.3g\n", stem.c_str(),
              scalar ? "scalar" : "native", worst, tol, max_logit);
  EXPECT_LE(worst, tol) << stem << ": row " << worst_i / nv << ", column " << worst_i % nv
                        << ": ours " << (*ours)[worst_i] << ", llama.cpp " << (*ref)[worst_i];
  for (std::size_t r = 0; r < sc->n_rows(); ++r) {
    const std::size_t a = argmax(ours->data() + r * nv, nv), e = argmax(ref->data() + r * nv, nv);
    EXPECT_EQ(a, e) << stem << ": row " << r << " arg-max differs";
  }
}

INSTANTIATE_TEST_SUITE_P(All, MambaFixtures,
                         ::testing::Combine(::testing::Values("single", "multi", "chunked"),
                                            ::testing::Bool()),
                         [](const ::testing::TestParamInfo<param>& i) {
                           return std::get<0>(i.param) +
                                  (std::get<1>(i.param) ? "Scalar" : "Native");
                         });

TEST(MambaFixtures, BranchIsRefusedNotWrong) {
  // llama.cpp rejects `branch` on a recurrent model (MODELS.md §5); mnemo refuses the
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
