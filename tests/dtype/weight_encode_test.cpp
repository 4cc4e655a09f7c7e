// The reference quantisers of the weight-only types (dtype/weight_encode.hpp): encode
// then decode random normal rows and measure the error against f32, per type, as the
// RMS error over the RMS value. The bounds are the measured figures with some room (a
// quantiser that misplaces codes or scales lands far above them: decoding random
// codes gives about 1.4). Also: an all-zero row stays zero, and a decoded row, which
// the type represents, is re-encoded far more closely than the first time.
#include <cmath>
#include <cstddef>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "mnemo/dtype/weight_decode.hpp"
#include "mnemo/dtype/weight_encode.hpp"

namespace {

namespace dt = mnemo::dtype;

struct bound {
  dt::element_type type;
  double max_relative_rms;
};

// Measured on these rows: q4_1 0.078, q5_0 0.043, q5_1 0.038, q2_K 0.330, q3_K 0.154,
// q4_K 0.078, q5_K 0.038, q6_K 0.019.
const bound k_bounds[] = {
    {dt::element_type::q4_1, 0.09},  {dt::element_type::q5_0, 0.05},
    {dt::element_type::q5_1, 0.045}, {dt::element_type::q2_K, 0.38},
    {dt::element_type::q3_K, 0.18},  {dt::element_type::q4_K, 0.09},
    {dt::element_type::q5_K, 0.045}, {dt::element_type::q6_K, 0.022},
};

constexpr std::uint64_t k_seed = 0x656e636f6465ull;

std::vector<unsigned char> encoded(dt::element_type t, const std::vector<float>& x) {
  std::vector<unsigned char> out(dt::row_bytes(t, x.size()).value() + 2);
  dt::encode_any_row(t, x.data(), out.data(), x.size());
  return out;
}

TEST(WeightEncode, ErrorAgainstF32IsWithinTheTypesBound) {
  const std::size_t n = 256 * 64;
  std::mt19937_64 rng(k_seed);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  std::vector<float> x(n), back(n);
  for (float& v : x) v = nd(rng);
  for (const bound& b : k_bounds) {
    const std::vector<unsigned char> q = encoded(b.type, x);
    dt::decode_any_row(b.type, q.data(), back.data(), n);
    double err = 0, ref = 0;
    for (std::size_t i = 0; i < n; ++i) {
      err += (double(back[i]) - x[i]) * (double(back[i]) - x[i]);
      ref += double(x[i]) * x[i];
    }
    const double rel = std::sqrt(err / ref);
    EXPECT_LE(rel, b.max_relative_rms) << dt::to_string(b.type) << ", seed " << k_seed;
    std::printf("%-5s relative RMS error %.4f\n", std::string(dt::to_string(b.type)).c_str(), rel);
  }
}

TEST(WeightEncode, ZeroRowStaysZero) {
  const std::vector<float> x(512, 0.0f);
  std::vector<float> back(512, 1.0f);
  for (const bound& b : k_bounds) {
    dt::decode_any_row(b.type, encoded(b.type, x).data(), back.data(), 512);
    for (std::size_t i = 0; i < 512; ++i)
      ASSERT_EQ(back[i], 0.0f) << dt::to_string(b.type) << " " << i;
  }
}

TEST(WeightEncode, EncodingDecodedValuesKeepsThemClose) {
  // A decoded row is representable, so re-encoding it moves each value by far less
  // than the first encoding's error (the scales are fitted again, not kept).
  const std::size_t n = 1024;
  std::mt19937_64 rng(k_seed + 1);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  std::vector<float> x(n), once(n), twice(n);
  for (float& v : x) v = nd(rng);
  for (const bound& b : k_bounds) {
    dt::decode_any_row(b.type, encoded(b.type, x).data(), once.data(), n);
    dt::decode_any_row(b.type, encoded(b.type, once).data(), twice.data(), n);
    double first = 0, second = 0;
    for (std::size_t i = 0; i < n; ++i) {
      first += (double(once[i]) - x[i]) * (double(once[i]) - x[i]);
      second += (double(twice[i]) - once[i]) * (double(twice[i]) - once[i]);
    }
    EXPECT_LT(second, 0.5 * first) << dt::to_string(b.type) << ", seed " << k_seed + 1;
  }
}

}  // namespace
