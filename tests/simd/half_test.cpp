// half.hpp against known IEEE binary16 / bfloat16 encodings: the reference the ISA
// conversions are tested against must itself be right.
#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>

#include <gtest/gtest.h>

#include "mnemo/simd/half.hpp"

namespace {

using mnemo::simd::bf16_bits_to_f32;
using mnemo::simd::f16_bits_to_f32;
using mnemo::simd::f32_to_bf16_bits;
using mnemo::simd::f32_to_bf16_bits_ceil;
using mnemo::simd::f32_to_bf16_bits_floor;
using mnemo::simd::f32_to_f16_bits;

constexpr float k_inf = std::numeric_limits<float>::infinity();

TEST(Half, F16KnownEncodings) {
  struct known {
    float x;
    std::uint16_t h;
  };
  const known table[] = {
      {0.0f, 0x0000},       {-0.0f, 0x8000},    {1.0f, 0x3c00},     {-2.0f, 0xc000},
      {0.5f, 0x3800},       {65504.0f, 0x7bff}, {0x1p-14f, 0x0400}, {0x1p-24f, 0x0001},
      {0x3ffp-24f, 0x03ff}, {k_inf, 0x7c00},    {-k_inf, 0xfc00},   {0.333251953125f, 0x3555},
  };
  for (const known& k : table) {
    EXPECT_EQ(f32_to_f16_bits(k.x), k.h) << k.x;
    EXPECT_EQ(std::bit_cast<std::uint32_t>(f16_bits_to_f32(k.h)), std::bit_cast<std::uint32_t>(k.x))
        << std::hex << k.h;
  }
}

TEST(Half, F16RoundsToNearestEven) {
  EXPECT_EQ(f32_to_f16_bits(0.1f), 0x2e66);  // 0.1 = 0x2e66.6...: rounds down
  EXPECT_EQ(f32_to_f16_bits(1.0f / 3.0f), 0x3555);
  EXPECT_EQ(f32_to_f16_bits(2049.0f), 0x6800);   // tie 2048 | 2050: to even 2048
  EXPECT_EQ(f32_to_f16_bits(2051.0f), 0x6802);   // tie 2050 | 2052: to even 2052
  EXPECT_EQ(f32_to_f16_bits(2049.5f), 0x6801);   // above the tie
  EXPECT_EQ(f32_to_f16_bits(65519.0f), 0x7bff);  // below the tie with 65536
  EXPECT_EQ(f32_to_f16_bits(65520.0f), 0x7c00);  // tie 65504 | 65536: even is inf
  EXPECT_EQ(f32_to_f16_bits(1e10f), 0x7c00);
  EXPECT_EQ(f32_to_f16_bits(0x1p-25f), 0x0000);         // tie 0 | 2^-24: to even 0
  EXPECT_EQ(f32_to_f16_bits(0x1.000002p-25f), 0x0001);  // just above the tie
  EXPECT_EQ(f32_to_f16_bits(0x3p-25f), 0x0002);         // tie 1 | 2 (x 2^-24): to even 2
  EXPECT_EQ(f32_to_f16_bits(0x1p-26f), 0x0000);
  EXPECT_EQ(f32_to_f16_bits(0x1.ffcp-15f), 0x0400);  // subnormal rounds up to normal
  EXPECT_EQ(f32_to_f16_bits(-0x1p-30f), 0x8000);     // keeps the sign of zero
}

TEST(Half, F16NanStaysQuietNan) {
  const std::uint16_t q = f32_to_f16_bits(std::numeric_limits<float>::quiet_NaN());
  EXPECT_EQ(q & 0x7e00, 0x7e00);
  const std::uint16_t s = f32_to_f16_bits(std::bit_cast<float>(0x7f800001u));  // signalling
  EXPECT_EQ(s & 0x7e00, 0x7e00) << std::hex << s;
  EXPECT_TRUE(std::isnan(f16_bits_to_f32(0x7c01)));
  EXPECT_EQ(std::bit_cast<std::uint32_t>(f16_bits_to_f32(0x7e00)), 0x7fc00000u);
  EXPECT_EQ(std::bit_cast<std::uint32_t>(f16_bits_to_f32(0xfc01)), 0xffc02000u);
}

TEST(Half, Bf16KnownEncodings) {
  EXPECT_EQ(f32_to_bf16_bits(1.0f), 0x3f80);
  EXPECT_EQ(f32_to_bf16_bits(-2.0f), 0xc000);
  EXPECT_EQ(f32_to_bf16_bits(0.1f), 0x3dcd);                               // 0x3dcccccd: rounds up
  EXPECT_EQ(f32_to_bf16_bits(1.0f + 0x1p-8f), 0x3f80);                     // tie: to even
  EXPECT_EQ(f32_to_bf16_bits(1.0f + 0x3p-8f), 0x3f82);                     // tie: to even
  EXPECT_EQ(f32_to_bf16_bits(1.0f + 0x1.2p-8f), 0x3f81);                   // above the tie
  EXPECT_EQ(f32_to_bf16_bits(std::numeric_limits<float>::max()), 0x7f80);  // to inf
  EXPECT_EQ(f32_to_bf16_bits(k_inf), 0x7f80);
  EXPECT_EQ(f32_to_bf16_bits(std::bit_cast<float>(0x00000001u)), 0x0000);  // subnormal
  EXPECT_EQ(f32_to_bf16_bits(std::bit_cast<float>(0x7f800001u)), 0x7fc0);  // quiet NaN
  EXPECT_EQ(f32_to_bf16_bits(std::bit_cast<float>(0xffffffffu)), 0xffff);
  EXPECT_EQ(bf16_bits_to_f32(0x3f80), 1.0f);
  EXPECT_EQ(bf16_bits_to_f32(0xc049), -3.140625f);
}

// floor / ceil: the bf16 value is on the asked side of x and the next bf16 value in
// that direction's opposite is past x (so no bf16 lies between), over every bf16
// pattern and the f32 values between two neighbours; NaN comes back quiet.
TEST(Half, Bf16DirectedRoundingBracketsTheValue) {
  for (std::uint32_t h = 0; h < 0x10000u; ++h) {
    const float b = bf16_bits_to_f32(static_cast<std::uint16_t>(h));
    if (std::isnan(b)) {
      EXPECT_TRUE(std::isnan(bf16_bits_to_f32(f32_to_bf16_bits_floor(b))));
      EXPECT_EQ(f32_to_bf16_bits_ceil(b) & 0x40u, 0x40u) << std::hex << h;
      continue;
    }
    // b itself, and f32 values just above and below it.
    for (const float x : {b, std::nextafter(b, k_inf), std::nextafter(b, -k_inf),
                          std::bit_cast<float>(std::bit_cast<std::uint32_t>(b) | 0x8000u)}) {
      if (std::isnan(x)) continue;
      const float lo = bf16_bits_to_f32(f32_to_bf16_bits_floor(x));
      const float hi = bf16_bits_to_f32(f32_to_bf16_bits_ceil(x));
      ASSERT_LE(lo, x) << "x " << x;
      ASSERT_GE(hi, x) << "x " << x;
      // Exact values stay; otherwise lo and hi are neighbours (one unit apart).
      if (std::bit_cast<std::uint32_t>(x) % 0x10000u == 0) {
        ASSERT_EQ(lo, x);
        ASSERT_EQ(hi, x);
      } else {
        ASSERT_LT(lo, hi) << "x " << x;
        // hi is the next bf16 value up from lo: nothing lies between them.
        const std::uint16_t lb = f32_to_bf16_bits_floor(x);
        const auto up = static_cast<std::uint16_t>(lb & 0x8000u ? lb - 1 : lb + 1);
        ASSERT_EQ(bf16_bits_to_f32(up), hi) << "x " << x;
        const float mid = bf16_bits_to_f32(f32_to_bf16_bits(x));
        ASSERT_TRUE(mid == lo || mid == hi) << "x " << x;
      }
    }
  }
  EXPECT_EQ(f32_to_bf16_bits_ceil(std::numeric_limits<float>::max()), 0x7f80);  // to inf
  EXPECT_EQ(f32_to_bf16_bits_floor(std::numeric_limits<float>::max()), 0x7f7f);
  EXPECT_EQ(f32_to_bf16_bits_floor(-std::numeric_limits<float>::max()), 0xff80);
  EXPECT_EQ(f32_to_bf16_bits_floor(-0.0f), 0x8000);
  EXPECT_EQ(f32_to_bf16_bits_ceil(std::bit_cast<float>(0x00000001u)), 0x0001);
  EXPECT_EQ(f32_to_bf16_bits_floor(std::bit_cast<float>(0x80000001u)), 0x8001);
}

}  // namespace
