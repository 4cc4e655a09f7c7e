// RoPE scaling: the model's float angles (fill_rope_cache, as ggml computes them) and the
// memory's double angles (rope_table, for K-shift) against an fp64 reference written here
// from the YaRN formula (Peng et al. 2023: NTK-by-parts ramp over the pair index between
// the dims where beta_fast and beta_slow rotations fit into the original context, and the
// 0.1 ln(s) + 1 magnitude), Llama 3.1's frequency divisors against the values its
// converter writes, and the scaling types read from GGUF metadata.
#include <cmath>
#include <numbers>
#include <string>
#include <vector>

#include "context/tiny_llama.hpp"
#include <gtest/gtest.h>

#include "mnemo/model/rope_cache.hpp"
#include "mnemo/model/rope_scaling.hpp"

namespace {

using namespace mnemo;

struct angle {
  double theta, magnitude;
};

/// Pair i's angle at position p and the magnitude of cos/sin, in fp64 from the formula.
angle reference(const attention::rope_config& r, double p, std::size_t i) {
  const double n = static_cast<double>(r.n_rot), base = r.freq_base;
  const double theta_i = std::pow(base, -2.0 * static_cast<double>(i) / n) /
                         (r.freq_factors.empty() ? 1.0 : r.freq_factors[i]);
  const double s = 1.0 / r.freq_scale;  // the context extension factor
  if (r.yarn.ext_factor == 0.0f) return {p * theta_i / s, r.yarn.attn_factor};
  // Pair index where `beta` full rotations fit into the original context L:
  // L / (2 pi base^(2d/n)) = beta.
  const double L = r.yarn.n_ctx_orig;
  auto dim = [&](double beta) {
    return n * std::log(L / (2.0 * std::numbers::pi * beta)) / (2.0 * std::log(base));
  };
  const double lo = std::max(0.0, std::floor(dim(r.yarn.beta_fast)));
  const double hi = std::min(n - 1.0, std::ceil(dim(r.yarn.beta_slow)));
  const double ramp =
      std::clamp((static_cast<double>(i) - lo) / std::max(0.001, hi - lo), 0.0, 1.0);
  const double extrapolate = (1.0 - ramp) * r.yarn.ext_factor;  // fast pairs keep their angle
  const double h = theta_i / s * (1.0 - extrapolate) + theta_i * extrapolate;
  return {p * h, r.yarn.attn_factor * (1.0 + 0.1 * std::log(s))};
}

attention::rope_config yarn_config(float scale) {
  attention::rope_config r;
  r.layout = attention::rope_layout::neox;
  r.n_rot = 64;
  r.freq_base = 10000.0f;
  r.freq_scale = 1.0f / scale;
  r.yarn.ext_factor = 1.0f;
  r.yarn.n_ctx_orig = 2048;
  return r;
}

/// Worst |cos, sin difference| / allowance of fill_rope_cache against the reference.
/// The float running product loses about p * 2e-7 rad by pair 32; the allowance is
/// 1e-6 + 4e-7 p, far below what a wrong ramp or magnitude moves (order 1).
double worst_float_error(const attention::rope_config& r, const std::vector<pos_t>& pos) {
  std::vector<float> cs(pos.size() * r.n_rot);
  model::fill_rope_cache(r, pos.data(), pos.size(), cs.data());
  double worst = 0;
  for (std::size_t t = 0; t < pos.size(); ++t)
    for (std::size_t i = 0; i < r.n_rot / 2; ++i) {
      const angle a = reference(r, pos[t], i);
      const double allowance = 1e-6 + 4e-7 * pos[t];
      const double dc = std::fabs(cs[t * r.n_rot + 2 * i] - a.magnitude * std::cos(a.theta));
      const double ds = std::fabs(cs[t * r.n_rot + 2 * i + 1] - a.magnitude * std::sin(a.theta));
      worst = std::max(worst, std::max(dc, ds) / allowance);
    }
  return worst;
}

std::vector<pos_t> positions() {
  std::vector<pos_t> p;
  for (pos_t x = 0; x < 8192; x = x * 3 + 1) p.push_back(x);
  p.push_back(4095);
  return p;
}

TEST(RopeYarn, FloatAnglesMatchTheFormula) {
  for (float scale : {2.0f, 4.0f, 16.0f}) {
    const auto r = yarn_config(scale);
    ASSERT_TRUE(r.validate(64));
    const auto [lo, hi] = r.yarn_corr_dims();
    EXPECT_LT(lo, hi) << "the ramp must span pairs for this test to check it";
    EXPECT_LE(worst_float_error(r, positions()), 1.0) << "scale " << scale;
  }
}

// The negative control: linear interpolation alone (no ramp, no magnitude) is far from
// YaRN, so the comparison above can fail.
TEST(RopeYarn, LinearScalingIsNotYarn) {
  auto yarn = yarn_config(4.0f);
  auto linear = yarn;
  linear.yarn = {};
  std::vector<pos_t> pos = {1000};
  std::vector<float> a(64), b(64);
  model::fill_rope_cache(yarn, pos.data(), 1, a.data());
  model::fill_rope_cache(linear, pos.data(), 1, b.data());
  double d = 0;
  for (std::size_t i = 0; i < 64; ++i) d = std::max(d, static_cast<double>(std::fabs(a[i] - b[i])));
  EXPECT_GT(d, 0.1);
}

// The memory re-rotates cached keys by a position delta with double angles and no
// magnitude (a shift is a rotation): the same angles as the formula.
TEST(RopeYarn, ShiftTableRotatesByTheFormulasAngles) {
  const auto r = yarn_config(8.0f);
  for (double p : {1.0, 37.0, 3000.0, -500.0}) {
    const attention::rope_table t(r, p);
    for (std::size_t i = 0; i < 32; ++i) {
      const angle a = reference(r, p, i);
      ASSERT_NEAR(t.cos[i], std::cos(a.theta), 1e-6) << "p " << p << " pair " << i;
      ASSERT_NEAR(t.sin[i], std::sin(a.theta), 1e-6) << "p " << p << " pair " << i;
    }
  }
}

TEST(RopeLlama3, FactorsMatchTheConvertersValues) {
  // Llama 3.1's parameters with original_max_position_embeddings 100 (fixtures
  // llama3-ropescale: all three regimes among 16 pairs of base 500000).
  const auto f = model::llama3_rope_factors(32, 500000.0f, 8.0f, 1.0f, 4.0f, 100.0f);
  const float expect[16] = {1, 1, 1.3632773f, 4.3525891f, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8};
  ASSERT_EQ(f.size(), 16u);
  for (std::size_t i = 0; i < 16; ++i) EXPECT_NEAR(f[i], expect[i], 1e-6) << "pair " << i;
}

TEST(RopeLlama3, FloatAnglesDivideByTheFactors) {
  attention::rope_config r;
  r.n_rot = 32;
  r.freq_base = 500000.0f;
  r.freq_factors = model::llama3_rope_factors(32, 500000.0f, 8.0f, 1.0f, 4.0f, 100.0f);
  EXPECT_LE(worst_float_error(r, positions()), 1.0);
}

mnemo_test::tiny_llama_spec with_keys(std::function<void(gguf::writer&)> keys) {
  mnemo_test::tiny_llama_spec s;
  s.extra = std::move(keys);
  return s;
}

TEST(RopeScalingKeys, EveryTypeReadsItsParameters) {
  auto yarn = mnemo_test::make_tiny_llama(with_keys([](gguf::writer& w) {
    w.add_string("llama.rope.scaling.type", "yarn");
    w.add<float>("llama.rope.scaling.factor", 4.0f);
    w.add<std::uint32_t>("llama.rope.scaling.original_context_length", 1024);
    w.add<float>("llama.rope.scaling.yarn_beta_fast", 16.0f);
  }));
  ASSERT_TRUE(yarn.is_ok()) << yarn.error().to_string();
  const auto& ry = yarn->hparams().rope();
  EXPECT_EQ(ry.freq_scale, 0.25f);
  EXPECT_EQ(ry.yarn.ext_factor, 1.0f);
  EXPECT_EQ(ry.yarn.n_ctx_orig, 1024u);
  EXPECT_EQ(ry.yarn.beta_fast, 16.0f);
  EXPECT_EQ(ry.yarn.beta_slow, 1.0f);

  auto linear = mnemo_test::make_tiny_llama(with_keys([](gguf::writer& w) {
    w.add_string("llama.rope.scaling.type", "linear");
    w.add<float>("llama.rope.scaling.factor", 2.0f);
  }));
  ASSERT_TRUE(linear.is_ok()) << linear.error().to_string();
  EXPECT_EQ(linear->hparams().rope().freq_scale, 0.5f);
  EXPECT_TRUE(linear->hparams().rope().freq_factors.empty());

  auto llama3 = mnemo_test::make_tiny_llama(with_keys([](gguf::writer& w) {
    w.add_string("llama.rope.scaling.type", "llama3");
    w.add<std::uint32_t>("llama.rope.scaling.original_context_length", 100);
  }));
  ASSERT_TRUE(llama3.is_ok()) << llama3.error().to_string();
  EXPECT_EQ(llama3->hparams().rope().freq_factors.size(), 8u);  // n_rot 16
  EXPECT_EQ(llama3->hparams().rope().freq_scale, 1.0f);

  for (const char* refused : {"longrope", "dynamic"}) {
    auto m = mnemo_test::make_tiny_llama(
        with_keys([&](gguf::writer& w) { w.add_string("llama.rope.scaling.type", refused); }));
    ASSERT_FALSE(m.is_ok()) << refused;
    EXPECT_EQ(m.error().code(), status_code::unsupported);
    EXPECT_NE(m.error().message().find(refused), std::string::npos) << m.error().to_string();
  }
}

TEST(RopeScalingKeys, RopeFreqsTensorOfTheWrongSizeIsRefused) {
  auto m = mnemo_test::make_tiny_llama(with_keys([](gguf::writer& w) {
    w.add_tensor_f32("rope_freqs.weight", {5}, std::vector<float>(5, 2.0f));
  }));
  ASSERT_FALSE(m.is_ok());
  EXPECT_NE(m.error().message().find("rope_freqs.weight"), std::string::npos)
      << m.error().to_string();
  auto good = mnemo_test::make_tiny_llama(with_keys([](gguf::writer& w) {
    w.add_tensor_f32("rope_freqs.weight", {8}, std::vector<float>(8, 2.0f));
  }));
  ASSERT_TRUE(good.is_ok()) << good.error().to_string();
  EXPECT_EQ(good->hparams().rope().freq_factors, std::vector<float>(8, 2.0f));
}

}  // namespace
