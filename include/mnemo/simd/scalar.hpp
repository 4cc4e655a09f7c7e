// simd::ops<scalar>: the reference of the vector operation set, one lane wide.
// Every ISA specialisation provides exactly these members with the same meaning;
// `vf` is that ISA's f32 vector of `lanes` elements.
#pragma once

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstddef>
#include <cstdint>

#include "mnemo/base/config.hpp"
#include "mnemo/simd/half.hpp"
#include "mnemo/simd/ops.hpp"
#include "mnemo/simd/target.hpp"

namespace mnemo::simd {

MNEMO_BEGIN_TARGET_SCALAR
template <>
struct ops<scalar> {
  using isa = scalar;
  using vf = float;
  static constexpr std::size_t lanes = 1;

  static MNEMO_INLINE vf zero() noexcept { return 0.0f; }
  static MNEMO_INLINE vf set1(float x) noexcept { return x; }
  /// Unaligned load/store of `lanes` floats.
  static MNEMO_INLINE vf load(const float* p) noexcept { return *p; }
  static MNEMO_INLINE void store(float* p, vf v) noexcept { *p = v; }
  /// The first n < lanes elements; the others read as zero / are not written.
  static MNEMO_INLINE vf load_partial(const float* p, std::size_t n) noexcept {
    return n ? *p : 0.0f;
  }
  static MNEMO_INLINE void store_partial(float* p, vf v, std::size_t n) noexcept {
    if (n) *p = v;
  }

  static MNEMO_INLINE vf add(vf a, vf b) noexcept { return a + b; }
  static MNEMO_INLINE vf sub(vf a, vf b) noexcept { return a - b; }
  static MNEMO_INLINE vf mul(vf a, vf b) noexcept { return a * b; }
  /// a * b + c, fused (one rounding).
  static MNEMO_INLINE vf fma(vf a, vf b, vf c) noexcept { return std::fma(a, b, c); }
  static MNEMO_INLINE vf max(vf a, vf b) noexcept { return std::max(a, b); }
  static MNEMO_INLINE vf min(vf a, vf b) noexcept { return std::min(a, b); }
  static MNEMO_INLINE float reduce_add(vf v) noexcept { return v; }
  static MNEMO_INLINE float reduce_max(vf v) noexcept { return v; }
  /// e^x; exp(-inf) = 0 and large negative arguments flush to 0.
  static MNEMO_INLINE vf exp(vf x) noexcept { return std::exp(x); }
  /// r[0..lanes) as the rows of a lanes x lanes matrix, transposed in place.
  static MNEMO_INLINE void transpose(vf*) noexcept {}

  /// `lanes` IEEE half / bfloat16 values to f32 and back (round to nearest even).
  static MNEMO_INLINE vf load_f16(const std::uint16_t* p) noexcept { return f16_bits_to_f32(*p); }
  static MNEMO_INLINE void store_f16(std::uint16_t* p, vf v) noexcept { *p = f32_to_f16_bits(v); }
  static MNEMO_INLINE vf load_bf16(const std::uint16_t* p) noexcept { return bf16_bits_to_f32(*p); }
  /// `lanes` 32-bit words, each a pair of bf16 values: lo = the low halves, hi = the high.
  static MNEMO_INLINE void load_bf16_pairs(const std::uint32_t* p, vf& lo, vf& hi) noexcept {
    lo = std::bit_cast<float>(*p << 16);
    hi = std::bit_cast<float>(*p & 0xffff0000u);
  }
  static MNEMO_INLINE void store_bf16(std::uint16_t* p, vf v) noexcept { *p = f32_to_bf16_bits(v); }
};
MNEMO_END_TARGET_SCALAR

}  // namespace mnemo::simd
