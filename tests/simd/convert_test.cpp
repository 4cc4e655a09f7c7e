// f16 / bf16 loads and stores of every ISA, bit for bit against half.hpp: all 65536
// 16-bit patterns in, and ties, subnormals, infinities, NaNs and random floats out.
#include <cfloat>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <random>
#include <vector>

#include "simd/fixture.hpp"
#include <gtest/gtest.h>

namespace mnemo_test {
namespace {

template <class Isa>
using SimdConvert = SimdIsaTest<Isa>;
TYPED_TEST_SUITE(SimdConvert, all_isa_types, isa_type_names);

std::vector<std::uint16_t> all_16bit_patterns() {
  std::vector<std::uint16_t> h(65536);
  for (std::size_t i = 0; i < h.size(); ++i) h[i] = static_cast<std::uint16_t>(i);
  return h;
}

float from_bits(std::uint32_t b) { return std::bit_cast<float>(b); }

/// Floats that stress f32 -> f16 rounding. [n] padded to a multiple of 16.
std::vector<float> f16_store_inputs(std::uint64_t seed) {
  std::vector<float> x;
  for (std::uint32_t h = 0; h < 0x7c00u; ++h) {  // every finite positive f16 ...
    const float v = simd::f16_bits_to_f32(static_cast<std::uint16_t>(h));
    const float next = simd::f16_bits_to_f32(static_cast<std::uint16_t>(h + 1));
    const float mid = (v + next) * 0.5f;  // ... the tie above it (exact in f32) ...
    for (float f : {v, mid, std::nextafter(mid, 0.0f), std::nextafter(mid, 1e9f)}) {
      x.push_back(f);
      x.push_back(-f);
    }
  }
  // ... f32 subnormals, the overflow edge, infinities and NaNs with payloads ...
  for (std::uint32_t b :
       {0x00000001u, 0x00400000u, 0x007fffffu, 0x00800000u, 0x33000000u, 0x33000001u,
        0x337fffffu, 0x387fc000u, 0x387fe000u, 0x477fe000u, 0x477fefffu, 0x477ff000u,
        0x477ff001u, 0x7f7fffffu, 0x7f800000u, 0x7f800001u, 0x7fbfffffu, 0x7fc00000u,
        0x7fc02000u, 0x7fffe000u, 0x7fffffffu, 0x7f801fffu, 0x7f802000u}) {
    x.push_back(from_bits(b));
    x.push_back(from_bits(b | 0x80000000u));
  }
  // ... and random bit patterns (every exponent) and random values in f16 range.
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> dist(-70000.0f, 70000.0f);
  for (int i = 0; i < (1 << 18); ++i) {
    x.push_back(from_bits(static_cast<std::uint32_t>(rng())));
    x.push_back(dist(rng));
  }
  x.resize((x.size() + 15) / 16 * 16, 0.0f);
  return x;
}

/// Floats that stress f32 -> bf16 rounding. [n] padded to a multiple of 16.
std::vector<float> bf16_store_inputs(std::uint64_t seed) {
  std::vector<float> x;
  std::mt19937_64 rng(seed);
  for (int i = 0; i < (1 << 18); ++i) {
    const auto r = static_cast<std::uint32_t>(rng());
    const std::uint32_t hi = r & 0xffff0000u;
    // Random bits, exact ties with an odd and an even upper half, one off a tie.
    for (std::uint32_t lo : {r & 0xffffu, 0x8000u, 0x7fffu, 0x8001u, 0x0000u, 0xffffu})
      x.push_back(from_bits(hi | lo));
  }
  for (std::uint32_t b : {0x00000001u, 0x00008000u, 0x00018000u, 0x007fffffu, 0x3f808000u,
                          0x3f818000u, 0x7f7f7fffu, 0x7f7f8000u, 0x7f7fffffu, 0x7f800000u,
                          0x7f800001u, 0x7f808000u, 0x7fbfffffu, 0x7fc00000u, 0x7fffffffu}) {
    x.push_back(from_bits(b));
    x.push_back(from_bits(b | 0x80000000u));
  }
  x.resize((x.size() + 15) / 16 * 16, 0.0f);
  return x;
}

TYPED_TEST(SimdConvert, F16LoadEveryPattern) {
  using H = typename TestFixture::H;
  const std::vector<std::uint16_t> h = all_16bit_patterns();
  std::vector<float> got(h.size()), want(h.size());
  H::load_f16(h.data(), got.data(), h.size());
  for (std::size_t i = 0; i < h.size(); ++i) want[i] = simd::f16_bits_to_f32(h[i]);
  expect_bits_equal(h, got, want, 0);
}

TYPED_TEST(SimdConvert, F16StoreMatchesHalfHpp) {
  using H = typename TestFixture::H;
  const std::uint64_t seed = k_seed + 10;
  const std::vector<float> x = f16_store_inputs(seed);
  std::vector<std::uint16_t> got(x.size()), want(x.size());
  H::store_f16(x.data(), got.data(), x.size());
  for (std::size_t i = 0; i < x.size(); ++i) want[i] = simd::f32_to_f16_bits(x[i]);
  expect_bits_equal(x, got, want, seed);
}

// f16 -> f32 -> f16 is the identity except that signalling NaNs come back quiet.
TYPED_TEST(SimdConvert, F16RoundTripEveryPattern) {
  using H = typename TestFixture::H;
  const std::vector<std::uint16_t> h = all_16bit_patterns();
  std::vector<float> f(h.size());
  std::vector<std::uint16_t> got(h.size()), want(h.size());
  H::load_f16(h.data(), f.data(), h.size());
  H::store_f16(f.data(), got.data(), h.size());
  for (std::size_t i = 0; i < h.size(); ++i) {
    const bool nan = (h[i] & 0x7c00u) == 0x7c00u && (h[i] & 0x3ffu) != 0;
    want[i] = static_cast<std::uint16_t>(nan ? h[i] | 0x200u : h[i]);
  }
  expect_bits_equal(h, got, want, 0);
}

TYPED_TEST(SimdConvert, Bf16LoadEveryPattern) {
  using H = typename TestFixture::H;
  const std::vector<std::uint16_t> h = all_16bit_patterns();
  std::vector<float> got(h.size()), want(h.size());
  H::load_bf16(h.data(), got.data(), h.size());
  for (std::size_t i = 0; i < h.size(); ++i) want[i] = simd::bf16_bits_to_f32(h[i]);
  expect_bits_equal(h, got, want, 0);
}

// Words of two bf16 patterns each: every pattern in the low half, and the high.
TYPED_TEST(SimdConvert, Bf16PairsLoadEveryPattern) {
  using H = typename TestFixture::H;
  const std::vector<std::uint16_t> h = all_16bit_patterns();
  std::vector<std::uint32_t> w(h.size());
  for (std::size_t i = 0; i < h.size(); ++i)
    w[i] = std::uint32_t{h[i]} << 16 | h[(i * 40503u + 7u) % h.size()];
  std::vector<float> lo(h.size()), hi(h.size()), want_lo(h.size()), want_hi(h.size());
  H::load_bf16_pairs(w.data(), lo.data(), hi.data(), w.size());
  for (std::size_t i = 0; i < h.size(); ++i) {
    want_lo[i] = simd::bf16_bits_to_f32(static_cast<std::uint16_t>(w[i]));
    want_hi[i] = simd::bf16_bits_to_f32(static_cast<std::uint16_t>(w[i] >> 16));
  }
  expect_bits_equal(w, lo, want_lo, 0);
  expect_bits_equal(w, hi, want_hi, 0);
}

TYPED_TEST(SimdConvert, Bf16StoreMatchesHalfHpp) {
  using H = typename TestFixture::H;
  const std::uint64_t seed = k_seed + 11;
  const std::vector<float> x = bf16_store_inputs(seed);
  std::vector<std::uint16_t> got(x.size()), want(x.size());
  H::store_bf16(x.data(), got.data(), x.size());
  for (std::size_t i = 0; i < x.size(); ++i) want[i] = simd::f32_to_bf16_bits(x[i]);
  expect_bits_equal(x, got, want, seed);
}

}  // namespace
}  // namespace mnemo_test
