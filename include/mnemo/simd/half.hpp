// Scalar IEEE binary16 and bfloat16 conversions (round to nearest even), bit-exact
// with F16C / NEON hardware conversion. The scalar ISA and the tests use these.
#pragma once

#include <bit>
#include <cstdint>

namespace mnemo::simd {

constexpr float f16_bits_to_f32(std::uint16_t h) noexcept {
  const std::uint32_t sign = static_cast<std::uint32_t>(h & 0x8000u) << 16;
  std::uint32_t exp = (h >> 10) & 0x1fu;
  std::uint32_t mant = h & 0x3ffu;
  std::uint32_t bits;
  if (exp == 0x1f) {  // inf or NaN (NaN payload kept, quiet bit set)
    bits = sign | 0x7f800000u | (mant << 13) | (mant ? 0x00400000u : 0u);
  } else if (exp == 0) {
    if (mant == 0) {
      bits = sign;
    } else {  // subnormal: normalise
      int e = -1;
      do {
        ++e;
        mant <<= 1;
      } while ((mant & 0x400u) == 0);
      bits = sign | (static_cast<std::uint32_t>(127 - 15 - e) << 23) | ((mant & 0x3ffu) << 13);
    }
  } else {
    bits = sign | ((exp + (127 - 15)) << 23) | (mant << 13);
  }
  return std::bit_cast<float>(bits);
}

constexpr std::uint16_t f32_to_f16_bits(float f) noexcept {
  const std::uint32_t x = std::bit_cast<std::uint32_t>(f);
  const std::uint16_t sign = static_cast<std::uint16_t>((x >> 16) & 0x8000u);
  const std::uint32_t absx = x & 0x7fffffffu;
  if (absx >= 0x7f800000u) {  // inf or NaN
    const bool nan = absx > 0x7f800000u;
    return static_cast<std::uint16_t>(sign | 0x7c00u |
                                      (nan ? (0x200u | ((absx >> 13) & 0x3ffu)) : 0u));
  }
  if (absx >= 0x477ff000u) return static_cast<std::uint16_t>(sign | 0x7c00u);  // rounds to inf
  if (absx < 0x38800000u) {               // result is subnormal or zero
    if (absx < 0x33000000u) return sign;  // below half the smallest subnormal
    const std::uint32_t exp = absx >> 23;
    const std::uint32_t mant = (absx & 0x7fffffu) | 0x800000u;
    const std::uint32_t shift = 126 - exp;  // 14..24
    std::uint32_t h = mant >> shift;
    const std::uint32_t rem = mant & ((1u << shift) - 1);
    const std::uint32_t half = 1u << (shift - 1);
    if (rem > half || (rem == half && (h & 1u))) ++h;
    return static_cast<std::uint16_t>(sign | h);
  }
  std::uint32_t h = ((absx >> 13) - ((127 - 15) << 10));
  const std::uint32_t rem = absx & 0x1fffu;
  if (rem > 0x1000u || (rem == 0x1000u && (h & 1u))) ++h;  // may carry into the exponent
  return static_cast<std::uint16_t>(sign | h);
}

constexpr float bf16_bits_to_f32(std::uint16_t b) noexcept {
  return std::bit_cast<float>(static_cast<std::uint32_t>(b) << 16);
}

constexpr std::uint16_t f32_to_bf16_bits(float f) noexcept {
  const std::uint32_t x = std::bit_cast<std::uint32_t>(f);
  if ((x & 0x7fffffffu) > 0x7f800000u)
    return static_cast<std::uint16_t>((x >> 16) | 0x40u);  // quiet NaN
  const std::uint32_t rounding = 0x7fffu + ((x >> 16) & 1u);
  return static_cast<std::uint16_t>((x + rounding) >> 16);
}

/// The bf16 nearest to f in one direction: the largest bf16 <= f (floor) or the smallest
/// >= f (ceil); past the largest finite bf16 that is the infinity. NaN stays a quiet NaN.
constexpr std::uint16_t f32_to_bf16_bits_directed(float f, bool ceil) noexcept {
  const std::uint32_t x = std::bit_cast<std::uint32_t>(f);
  if ((x & 0x7fffffffu) > 0x7f800000u) return static_cast<std::uint16_t>((x >> 16) | 0x40u);
  const auto toward_zero = static_cast<std::uint16_t>(x >> 16);
  const bool negative = x >> 31, exact = (x & 0xffffu) == 0;
  // Away from zero (one more unit of magnitude) when that is the asked direction.
  return exact || negative == ceil ? toward_zero : static_cast<std::uint16_t>(toward_zero + 1);
}
constexpr std::uint16_t f32_to_bf16_bits_floor(float f) noexcept {
  return f32_to_bf16_bits_directed(f, false);
}
constexpr std::uint16_t f32_to_bf16_bits_ceil(float f) noexcept {
  return f32_to_bf16_bits_directed(f, true);
}

}  // namespace mnemo::simd
