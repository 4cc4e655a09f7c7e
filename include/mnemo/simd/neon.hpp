// simd::ops<neon>: four f32 lanes in a float32x4_t (AArch64 Advanced SIMD, with the
// f16 conversions that AArch64 always has). Same members and meaning as ops<scalar>
// (scalar.hpp); only compiled on AArch64, where NEON is baseline.
#pragma once

#include "mnemo/base/config.hpp"

#if defined(MNEMO_ARCH_AARCH64)

#include <cstddef>
#include <cstdint>
#include <cstring>

#include <arm_neon.h>

#include "mnemo/base/assert.hpp"
#include "mnemo/simd/concepts.hpp"
#include "mnemo/simd/detail/exp_f32.hpp"
#include "mnemo/simd/ops.hpp"
#include "mnemo/simd/target.hpp"

namespace mnemo::simd {

MNEMO_BEGIN_TARGET_NEON
template <>
struct ops<neon> {
  using isa = neon;
  using vf = float32x4_t;
  static constexpr std::size_t lanes = 4;

  static MNEMO_INLINE vf zero() noexcept { return vdupq_n_f32(0.0f); }
  static MNEMO_INLINE vf set1(float x) noexcept { return vdupq_n_f32(x); }
  static MNEMO_INLINE vf load(const float* p) noexcept { return vld1q_f32(p); }
  static MNEMO_INLINE void store(float* p, vf v) noexcept { vst1q_f32(p, v); }
  // NEON has no masked load/store; a copy through 16 bytes of stack is cheaper than
  // lane inserts and never touches memory past p + n.
  static MNEMO_INLINE vf load_partial(const float* p, std::size_t n) noexcept {
    MNEMO_DASSERT(n < lanes);
    float buf[lanes] = {};
    std::memcpy(buf, p, n * sizeof(float));
    return vld1q_f32(buf);
  }
  static MNEMO_INLINE void store_partial(float* p, vf v, std::size_t n) noexcept {
    MNEMO_DASSERT(n < lanes);
    float buf[lanes];
    vst1q_f32(buf, v);
    std::memcpy(p, buf, n * sizeof(float));
  }

  static MNEMO_INLINE vf add(vf a, vf b) noexcept { return vaddq_f32(a, b); }
  static MNEMO_INLINE vf sub(vf a, vf b) noexcept { return vsubq_f32(a, b); }
  static MNEMO_INLINE vf mul(vf a, vf b) noexcept { return vmulq_f32(a, b); }
  static MNEMO_INLINE vf fma(vf a, vf b, vf c) noexcept { return vfmaq_f32(c, a, b); }
  // Compare + select instead of fmax/fmin: those differ from std::max / std::min on
  // NaN and on +-0; this matches them exactly (a < b ? b : a).
  static MNEMO_INLINE vf max(vf a, vf b) noexcept { return vbslq_f32(vcltq_f32(a, b), b, a); }
  static MNEMO_INLINE vf min(vf a, vf b) noexcept { return vbslq_f32(vcltq_f32(b, a), b, a); }
  static MNEMO_INLINE float reduce_add(vf v) noexcept { return vaddvq_f32(v); }
  static MNEMO_INLINE float reduce_max(vf v) noexcept { return vmaxvq_f32(v); }
  /// r[0..4) as the rows of a 4 x 4 matrix, transposed in place.
  static MNEMO_INLINE void transpose(vf* r) noexcept {
    const float32x4x2_t a = vtrnq_f32(r[0], r[1]);  // columns 0 2 / 1 3 of rows 0, 1
    const float32x4x2_t b = vtrnq_f32(r[2], r[3]);
    r[0] = vcombine_f32(vget_low_f32(a.val[0]), vget_low_f32(b.val[0]));
    r[1] = vcombine_f32(vget_low_f32(a.val[1]), vget_low_f32(b.val[1]));
    r[2] = vcombine_f32(vget_high_f32(a.val[0]), vget_high_f32(b.val[0]));
    r[3] = vcombine_f32(vget_high_f32(a.val[1]), vget_high_f32(b.val[1]));
  }

  /// e^x, see detail/exp_f32.hpp. fmax/fmin propagate NaN; +inf and x > ln(FLT_MAX)
  /// overflow to +inf in the last multiply; x < -87.3 and -inf give 0.
  static MNEMO_INLINE vf exp(vf x) noexcept {
    using k = detail::exp_f32;
    const vf xc = vminq_f32(vdupq_n_f32(k::hi), vmaxq_f32(vdupq_n_f32(k::lo), x));
    const vf nf = vrndnq_f32(vmulq_f32(xc, vdupq_n_f32(k::log2e)));
    vf r = vfmsq_f32(xc, nf, vdupq_n_f32(k::ln2_hi));
    r = vfmsq_f32(r, nf, vdupq_n_f32(k::ln2_lo));
    vf q = vfmaq_f32(vdupq_n_f32(k::c5), vdupq_n_f32(k::c6), r);
    q = vfmaq_f32(vdupq_n_f32(k::c4), q, r);
    q = vfmaq_f32(vdupq_n_f32(k::c3), q, r);
    q = vfmaq_f32(vdupq_n_f32(k::c2), q, r);
    vf p = vfmaq_f32(r, q, vmulq_f32(r, r));
    p = vaddq_f32(p, vdupq_n_f32(1.0f));  // e^r in [0.70, 1.42]
    // 2^n = 2^n1 * 2^n2 with n1, n2 in [-63, 64]: n = 128 needs no special case.
    const int32x4_t n = vcvtq_s32_f32(nf);
    const int32x4_t n1 = vshrq_n_s32(n, 1);
    const int32x4_t n2 = vsubq_s32(n, n1);
    const int32x4_t bias = vdupq_n_s32(127);
    const vf s1 = vreinterpretq_f32_s32(vshlq_n_s32(vaddq_s32(n1, bias), 23));
    const vf s2 = vreinterpretq_f32_s32(vshlq_n_s32(vaddq_s32(n2, bias), 23));
    p = vmulq_f32(vmulq_f32(p, s1), s2);
    const uint32x4_t below = vcltq_f32(x, vdupq_n_f32(k::lo));
    return vreinterpretq_f32_u32(vbicq_u32(vreinterpretq_u32_f32(p), below));
  }

  /// fcvtl / fcvtn, round to nearest even (FPCR default); bit-identical to half.hpp.
  static MNEMO_INLINE vf load_f16(const std::uint16_t* p) noexcept {
    return vcvt_f32_f16(vreinterpret_f16_u16(vld1_u16(p)));
  }
  static MNEMO_INLINE void store_f16(std::uint16_t* p, vf v) noexcept {
    vst1_u16(p, vreinterpret_u16_f16(vcvt_f16_f32(v)));
  }
  static MNEMO_INLINE vf load_bf16(const std::uint16_t* p) noexcept {
    return vreinterpretq_f32_u32(vshll_n_u16(vld1_u16(p), 16));
  }
  static MNEMO_INLINE void load_bf16_pairs(const std::uint32_t* p, vf& lo, vf& hi) noexcept {
    const uint32x4_t w = vld1q_u32(p);
    lo = vreinterpretq_f32_u32(vshlq_n_u32(w, 16));
    hi = vreinterpretq_f32_u32(vandq_u32(w, vdupq_n_u32(0xffff0000u)));
  }
  /// Round to nearest even on the bits, NaN kept quiet: f32_to_bf16_bits per lane.
  static MNEMO_INLINE void store_bf16(std::uint16_t* p, vf v) noexcept {
    const uint32x4_t x = vreinterpretq_u32_f32(v);
    const uint32x4_t abs = vandq_u32(x, vdupq_n_u32(0x7fffffffu));
    const uint32x4_t nan = vcgtq_u32(abs, vdupq_n_u32(0x7f800000u));
    const uint32x4_t hi = vshrq_n_u32(x, 16);
    const uint32x4_t odd = vandq_u32(hi, vdupq_n_u32(1u));
    const uint32x4_t rounded = vshrq_n_u32(vaddq_u32(x, vaddq_u32(odd, vdupq_n_u32(0x7fffu))), 16);
    const uint32x4_t quiet = vorrq_u32(hi, vdupq_n_u32(0x40u));
    vst1_u16(p, vmovn_u32(vbslq_u32(nan, quiet, rounded)));
  }
};
MNEMO_END_TARGET_NEON

static_assert(vector_ops<ops<neon>>, "ops<neon> must provide the whole vector operation set");

}  // namespace mnemo::simd

#endif  // MNEMO_ARCH_AARCH64
