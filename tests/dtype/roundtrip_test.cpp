// Encode -> decode error bounds against the f32 input (tolerances.hpp), on the scalar
// path (every ISA encodes bit-identically, see kernel_suite.hpp), and how mnemo's q4_0
// codes relate to ggml's C reference.
#include <cmath>
#include <cstddef>
#include <cstring>
#include <vector>

#include "dtype/reference.hpp"
#include "dtype/tolerances.hpp"
#include <gtest/gtest.h>

#include "mnemo/dtype/dtype.hpp"

namespace {

namespace dt = mnemo::dtype;
namespace simd = mnemo::simd;
namespace tol = mnemo_test::tol;
using mnemo_test::make_values;

constexpr std::uint64_t k_seed = 0x726f756e64ull;
constexpr std::size_t k_n = 32 * 4096;

template <class E>
std::vector<float> round_trip(const std::vector<float>& x) {
  std::vector<E> enc(dt::blocks_in_row<E>(x.size()));
  std::vector<float> y(x.size());
  dt::encode_row<simd::scalar>(x.data(), enc.data(), x.size());
  dt::decode_row<simd::scalar>(enc.data(), y.data(), x.size());
  return y;
}

TEST(DtypeRoundTrip, F16RelativeError) {
  const std::vector<float> x = make_values(k_n, k_seed);
  const std::vector<float> y = round_trip<dt::f16>(x);
  for (std::size_t i = 0; i < k_n; ++i) {
    if (std::fabs(x[i]) < 0x1p-14f) {  // f16 subnormal range: absolute half ulp
      ASSERT_LE(std::fabs(x[i] - y[i]), 0x1p-25f) << "seed " << k_seed << ", index " << i;
    } else {
      ASSERT_LE(std::fabs(x[i] - y[i]), tol::f16.roundtrip_rel * std::fabs(x[i]))
          << "seed " << k_seed << ", first failing index " << i << ": x " << x[i] << " y " << y[i];
    }
  }
}

TEST(DtypeRoundTrip, Bf16RelativeError) {
  const std::vector<float> x = make_values(k_n, k_seed + 1);
  const std::vector<float> y = round_trip<dt::bf16>(x);
  for (std::size_t i = 0; i < k_n; ++i)
    ASSERT_LE(std::fabs(x[i] - y[i]), tol::bf16.roundtrip_rel * std::fabs(x[i]))
        << "seed " << k_seed + 1 << ", first failing index " << i << ": x " << x[i] << " y "
        << y[i];
}

TEST(DtypeRoundTrip, Q80WithinHalfStep) {
  const std::vector<float> x = make_values(k_n, k_seed + 2);
  std::vector<dt::block_q8_0> enc(k_n / 32);
  dt::encode_row<simd::scalar>(x.data(), enc.data(), k_n);
  std::vector<float> y(k_n);
  dt::decode_row<simd::scalar>(enc.data(), y.data(), k_n);
  for (std::size_t b = 0; b < k_n / 32; ++b) {
    double amax = 0;
    for (std::size_t j = 0; j < 32; ++j) amax = std::max(amax, std::fabs(double(x[32 * b + j])));
    const double d = amax / 127.0;  // the step the codes were chosen with
    const double d16 = enc[b].d.to_float();
    for (std::size_t j = 0; j < 32; ++j) {
      const std::size_t i = 32 * b + j;
      const double bound =
          (0.5 + tol::q8_0.roundtrip_step_slack) * d + std::abs(enc[b].qs[j]) * std::fabs(d - d16);
      ASSERT_LE(std::fabs(double(x[i]) - y[i]), bound)
          << "seed " << k_seed + 2 << ", first failing index " << i << " (block " << b << ", d "
          << d << ", d16 " << d16 << "): x " << x[i] << " y " << y[i];
    }
  }
}

TEST(DtypeRoundTrip, Q40WithinHalfStepOrClamp) {
  const std::vector<float> x = make_values(k_n, k_seed + 3);
  std::vector<dt::block_q4_0> enc(k_n / 32);
  dt::encode_row<simd::scalar>(x.data(), enc.data(), k_n);
  std::vector<float> y(k_n);
  dt::decode_row<simd::scalar>(enc.data(), y.data(), k_n);
  std::size_t clamped = 0;
  for (std::size_t b = 0; b < k_n / 32; ++b) {
    double m = 0;  // the first value of largest magnitude
    for (std::size_t j = 0; j < 32; ++j)
      if (std::fabs(double(x[32 * b + j])) > std::fabs(m)) m = x[32 * b + j];
    const double d = std::fabs(m / 8.0);
    const double d16 = std::fabs(double(enc[b].d.to_float()));
    for (std::size_t j = 0; j < 32; ++j) {
      const std::size_t i = 32 * b + j;
      const int code = mnemo_test::ref_code(enc.data(), i);
      const bool at_clamp = code == 7 && std::fabs(x[i]) > 7.5 * d;
      clamped += at_clamp;
      const double steps =
          at_clamp ? tol::q4_0.roundtrip_clamp_steps : 0.5 + tol::q4_0.roundtrip_step_slack;
      const double bound = steps * d + std::abs(code) * std::fabs(d - d16);
      ASSERT_LE(std::fabs(double(x[i]) - y[i]), bound)
          << "seed " << k_seed + 3 << ", first failing index " << i << " (block " << b << ", m "
          << m << "): x " << x[i] << " y " << y[i] << " code " << code;
    }
  }
  EXPECT_GT(clamped, 0u) << "the data should exercise the clamped code";
}

// mnemo computes x * (1/d) + 8.5 with one rounding, ggml's C code with two. The codes
// may only differ where that sum is within an ulp of an integer (the truncation point).
TEST(DtypeRoundTrip, Q40CodesMatchGgmlExceptAtTies) {
  const std::vector<float> x = make_values(k_n, k_seed + 4);
  std::size_t differ = 0;
  for (std::size_t b = 0; b < k_n / 32; ++b) {
    const float* xb = x.data() + 32 * b;
    const dt::block_q4_0 fused = mnemo_test::ref_block_q4_0(xb, true);
    const dt::block_q4_0 ggml = mnemo_test::ref_block_q4_0(xb, false);
    ASSERT_EQ(fused.d.bits, ggml.d.bits);
    for (std::size_t j = 0; j < 32; ++j) {
      const int a = mnemo_test::ref_code(&fused, j), g = mnemo_test::ref_code(&ggml, j);
      if (a == g) continue;
      ++differ;
      // recompute the sum exactly in double from the f32 1/d
      float amax = 0, m = 0;
      for (std::size_t k = 0; k < 32; ++k)
        if (amax < std::fabs(xb[k])) amax = std::fabs(xb[k]), m = xb[k];
      const float id = 1.0f / (m / -8.0f);
      const double s = double(xb[j]) * double(id) + 8.5;
      EXPECT_LT(std::fabs(s - std::round(s)), 1e-5)
          << "seed " << k_seed + 4 << ", block " << b << ", element " << j << ": codes " << a
          << " (fused) vs " << g << " (ggml) away from a tie";
    }
  }
  RecordProperty("differing_codes", static_cast<int>(differ));
  EXPECT_LT(differ, k_n / 1000) << "differences should be rare";
}

// The scalar encoder agrees with the independent transcription of ggml's quantisers.
TEST(DtypeRoundTrip, ScalarEncodeMatchesReference) {
  const std::vector<float> x = make_values(k_n, k_seed + 5);
  std::vector<dt::block_q8_0> q8(k_n / 32), r8(k_n / 32);
  std::vector<dt::block_q4_0> q4(k_n / 32), r4(k_n / 32);
  dt::encode_row<simd::scalar>(x.data(), q8.data(), k_n);
  dt::encode_row<simd::scalar>(x.data(), q4.data(), k_n);
  mnemo_test::ref_encode(x.data(), r8.data(), k_n);
  mnemo_test::ref_encode(x.data(), r4.data(), k_n);
  for (std::size_t b = 0; b < k_n / 32; ++b) {
    ASSERT_EQ(std::memcmp(&q8[b], &r8[b], sizeof q8[b]), 0)
        << "seed " << k_seed + 5 << ", q8_0 block " << b;
    ASSERT_EQ(std::memcmp(&q4[b], &r4[b], sizeof q4[b]), 0)
        << "seed " << k_seed + 5 << ", q4_0 block " << b;
  }
}

}  // namespace
