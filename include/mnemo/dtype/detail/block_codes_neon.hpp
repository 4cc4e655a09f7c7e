// detail::block_codes<neon>; see block_codes.hpp for the contract.
#pragma once

#if !defined(MNEMO_DTYPE_ROW_KERNEL_BODY_)
#error "mnemo/dtype/detail/ headers are internal: include mnemo/dtype/row_kernels.hpp"
#endif

#include "mnemo/base/config.hpp"

#if defined(MNEMO_ARCH_AARCH64)

#include <cstddef>
#include <cstdint>
#include <cstring>

#include <arm_neon.h>

#include "mnemo/dtype/types.hpp"
#include "mnemo/simd/simd.hpp"

namespace mnemo::dtype::detail {

MNEMO_BEGIN_TARGET_NEON
template <>
struct block_codes<simd::neon> {
  using vf = float32x4_t;

  static MNEMO_INLINE float scale(f16 d) noexcept {
    return vgetq_lane_f32(vcvt_f32_f16(vreinterpret_f16_u16(vdup_n_u16(d.bits))), 0);
  }
  static MNEMO_INLINE vf splat_scale(f16 d) noexcept {
    return vcvt_f32_f16(vreinterpret_f16_u16(vdup_n_u16(d.bits)));
  }

  static MNEMO_INLINE float abs_max(const float* x) noexcept {
    float32x4_t m = vabsq_f32(vld1q_f32(x));
    for (int k = 1; k < 8; ++k) m = vmaxq_f32(m, vabsq_f32(vld1q_f32(x + 4 * k)));
    return vmaxvq_f32(m);
  }

  // [16] int8 -> 4 x [4] f32
  static MNEMO_INLINE void widen(int8x16_t b, vf* c) noexcept {
    const int16x8_t lo = vmovl_s8(vget_low_s8(b));
    const int16x8_t hi = vmovl_high_s8(b);
    c[0] = vcvtq_f32_s32(vmovl_s16(vget_low_s16(lo)));
    c[1] = vcvtq_f32_s32(vmovl_high_s16(lo));
    c[2] = vcvtq_f32_s32(vmovl_s16(vget_low_s16(hi)));
    c[3] = vcvtq_f32_s32(vmovl_high_s16(hi));
  }

  static MNEMO_INLINE void q8(const std::int8_t* qs, vf (&c)[8]) noexcept {
    widen(vld1q_s8(qs), c);
    widen(vld1q_s8(qs + 16), c + 4);
  }

  // [16] bytes -> elements 0..15 (low nibbles), 16..31 (high nibbles), minus 8
  static MNEMO_INLINE void q4(const std::uint8_t* qs, vf (&c)[8]) noexcept {
    const uint8x16_t b = vld1q_u8(qs);
    const int8x16_t eight = vdupq_n_s8(8);
    widen(vsubq_s8(vreinterpretq_s8_u8(vandq_u8(b, vdupq_n_u8(0x0f))), eight), c);
    widen(vsubq_s8(vreinterpretq_s8_u8(vshrq_n_u8(b, 4)), eight), c + 4);
  }

  // 4 bytes into the low lanes of a vector (a 4-byte copy: the bytes after them may be
  // past the row)
  static MNEMO_INLINE uint8x8_t four_bytes(const void* p) noexcept {
    std::uint32_t w;
    std::memcpy(&w, p, sizeof w);
    return vreinterpret_u8_u32(vdup_n_u32(w));
  }

  // 4 int8 -> [4] f32
  static MNEMO_INLINE vf q8_lanes(const std::int8_t* qs) noexcept {
    const int16x8_t h = vmovl_s8(vreinterpret_s8_u8(four_bytes(qs)));
    return vcvtq_f32_s32(vmovl_s16(vget_low_s16(h)));
  }

  // elements e..e+3 of a block (see the scalar contract)
  static MNEMO_INLINE vf q4_lanes(const std::uint8_t* qs, std::size_t e) noexcept {
    const uint8x8_t b = four_bytes(qs + e % 16);
    const uint8x8_t c = e < 16 ? vand_u8(b, vdup_n_u8(0x0f)) : vshr_n_u8(b, 4);
    const int16x8_t h = vsubq_s16(vreinterpretq_s16_u16(vmovl_u8(c)), vdupq_n_s16(8));
    return vcvtq_f32_s32(vmovl_s16(vget_low_s16(h)));
  }

  static MNEMO_INLINE void q4_values(const std::uint8_t* qs, vf d, vf (&v)[8]) noexcept {
    q4(qs, v);
    for (vf& x : v) x = vmulq_f32(d, x);
  }
  static constexpr bool q4_dot_by_values = false;

  static MNEMO_INLINE void quantize_q8(const float* x, float id, std::int8_t* qs) noexcept {
    const float32x4_t vid = vdupq_n_f32(id);
    int16x4_t h[8];
    for (int k = 0; k < 8; ++k) {
      float32x4_t v = vmulq_f32(vld1q_f32(x + 4 * k), vid);
      // maxnm returns the number when v is NaN, like x86 maxps(v, lo)
      v = vminnmq_f32(vmaxnmq_f32(v, vdupq_n_f32(-127.0f)), vdupq_n_f32(127.0f));
      h[k] = vqmovn_s32(vcvtaq_s32_f32(v));  // vcvta: nearest, ties away from zero (roundf)
    }
    vst1q_s8(qs, vcombine_s8(vqmovn_s16(vcombine_s16(h[0], h[1])),
                             vqmovn_s16(vcombine_s16(h[2], h[3]))));
    vst1q_s8(qs + 16, vcombine_s8(vqmovn_s16(vcombine_s16(h[4], h[5])),
                                  vqmovn_s16(vcombine_s16(h[6], h[7]))));
  }

  static MNEMO_INLINE void quantize_q4(const float* x, float id, std::uint8_t* qs) noexcept {
    const float32x4_t vid = vdupq_n_f32(id);
    const float32x4_t half = vdupq_n_f32(8.5f);
    uint32x4_t q[8];
    for (int k = 0; k < 8; ++k) {
      float32x4_t v = vfmaq_f32(half, vld1q_f32(x + 4 * k), vid);
      v = vminnmq_f32(vmaxnmq_f32(v, vdupq_n_f32(0.0f)), vdupq_n_f32(15.0f));
      q[k] = vcvtq_u32_f32(v);  // truncates
    }
    uint16x4_t b[4];  // bytes 4k..4k+3 = code | code+16 << 4
    for (int k = 0; k < 4; ++k) b[k] = vmovn_u32(vorrq_u32(q[k], vshlq_n_u32(q[k + 4], 4)));
    vst1q_u8(qs,
             vcombine_u8(vmovn_u16(vcombine_u16(b[0], b[1])), vmovn_u16(vcombine_u16(b[2], b[3]))));
  }
};
MNEMO_END_TARGET_NEON

}  // namespace mnemo::dtype::detail

#endif  // MNEMO_ARCH_AARCH64
