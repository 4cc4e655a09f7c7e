// detail::block_codes<Isa>: the per-ISA primitives of the quantised block types that
// the vector operation set (simd::ops) has no words for: int8 / nibble codes widened to
// f32 lanes, the block scale (scalar and broadcast), decoded q4_0 values, and one
// block's quantisation. The generic row kernels (detail/q8_0_rows.inl, q4_0_rows.inl)
// are written on top of them.
//
// Every ISA computes identical codes for finite inputs (the tests check bit identity):
//   q8_0: v = x * id, clamped to [-127, 127], rounded half away from zero (roundf);
//   q4_0: v = fma(x, id, 8.5) (one rounding), clamped to [0, 15], truncated.
// The clamps are written as max(v, lo) then min(v, hi) with the x86 maxps / NEON maxnm
// meaning (a NaN v gives lo), so even 0 * inf and NaN inputs give the same (meaningless)
// codes everywhere, and no float-to-int conversion is ever out of range (no UB).
#pragma once

#if !defined(MNEMO_DTYPE_ROW_KERNEL_BODY_)
#error "mnemo/dtype/detail/ headers are internal: include mnemo/dtype/row_kernels.hpp"
#endif

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>

#include "mnemo/base/config.hpp"
#include "mnemo/dtype/types.hpp"
#include "mnemo/simd/simd.hpp"

namespace mnemo::dtype::detail {

template <class Isa>
struct block_codes {
  static_assert(simd::isa_tag<Isa> && simd::is_compiled<Isa>,
                "dtype::detail::block_codes<Isa>: no block primitives for this ISA here");
};

/// Scalar clamps with the meaning of x86 maxps(v, lo) / minps(v, hi): NaN gives lo.
constexpr float clamp_nan_low(float v, float lo, float hi) noexcept {
  v = v > lo ? v : lo;
  return v < hi ? v : hi;
}

MNEMO_BEGIN_TARGET_SCALAR
template <>
struct block_codes<simd::scalar> {
  using vf = float;

  static MNEMO_INLINE float scale(f16 d) noexcept { return d.to_float(); }
  static MNEMO_INLINE vf splat_scale(f16 d) noexcept { return d.to_float(); }

  /// max |x[j]| over one block of 32.
  static MNEMO_INLINE float abs_max(const float* x) noexcept {
    float m = 0.0f;
    for (std::size_t j = 0; j < 32; ++j) m = std::max(m, std::fabs(x[j]));
    return m;
  }

  /// The 32 codes of a q8_0 block as f32: c[j] = qs[j].
  static MNEMO_INLINE void q8(const std::int8_t* qs, vf (&c)[32]) noexcept {
    for (std::size_t j = 0; j < 32; ++j) c[j] = static_cast<float>(qs[j]);
  }

  /// The 32 codes of a q4_0 block, minus 8, as f32, in element order.
  static MNEMO_INLINE void q4(const std::uint8_t* qs, vf (&c)[32]) noexcept {
    for (std::size_t j = 0; j < 16; ++j) {
      c[j] = static_cast<float>((qs[j] & 0x0f) - 8);
      c[j + 16] = static_cast<float>((qs[j] >> 4) - 8);
    }
  }

  /// One vector of q8_0 codes as f32: the lanes codes at qs.
  static MNEMO_INLINE vf q8_lanes(const std::int8_t* qs) noexcept {
    return static_cast<float>(qs[0]);
  }

  /// One vector of a q4_0 block's codes minus 8 as f32: elements e .. e + lanes - 1
  /// (e < 16: low nibbles of bytes e.., else high nibbles of bytes e - 16..).
  static MNEMO_INLINE vf q4_lanes(const std::uint8_t* qs, std::size_t e) noexcept {
    return static_cast<float>((e < 16 ? qs[e] & 0x0f : qs[e - 16] >> 4) - 8);
  }

  /// The 32 decoded values d * (code - 8) of a q4_0 block (exact products).
  static MNEMO_INLINE void q4_values(const std::uint8_t* qs, vf d, vf (&v)[32]) noexcept {
    q4(qs, v);
    for (vf& x : v) x *= d;
  }
  /// dot of q4_0 rows: sum x * value per element (true), or d * sum x * code per block.
  static constexpr bool q4_dot_by_values = false;

  static MNEMO_INLINE void quantize_q8(const float* x, float id, std::int8_t* qs) noexcept {
    for (std::size_t j = 0; j < 32; ++j) {
      const float v = clamp_nan_low(x[j] * id, -127.0f, 127.0f);
      qs[j] = static_cast<std::int8_t>(std::round(v));  // half away from zero, as roundf
    }
  }

  static MNEMO_INLINE void quantize_q4(const float* x, float id, std::uint8_t* qs) noexcept {
    for (std::size_t j = 0; j < 16; ++j) {
      const float lo = clamp_nan_low(std::fma(x[j], id, 8.5f), 0.0f, 15.0f);
      const float hi = clamp_nan_low(std::fma(x[j + 16], id, 8.5f), 0.0f, 15.0f);
      qs[j] = static_cast<std::uint8_t>(static_cast<unsigned>(lo) | static_cast<unsigned>(hi) << 4);
    }
  }
};
MNEMO_END_TARGET_SCALAR

}  // namespace mnemo::dtype::detail

#include "mnemo/dtype/detail/block_codes_neon.hpp"
#include "mnemo/dtype/detail/block_codes_x86.hpp"
