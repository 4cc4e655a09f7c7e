// detail::block_codes<avx2> and <avx512>; see block_codes.hpp for the contract.
#pragma once

#if !defined(MNEMO_DTYPE_ROW_KERNEL_BODY_)
#error "mnemo/dtype/detail/ headers are internal: include mnemo/dtype/row_kernels.hpp"
#endif

#include "mnemo/base/config.hpp"

#if defined(MNEMO_ARCH_X86_64)

#include <cstddef>
#include <cstdint>

#include <immintrin.h>

#include "mnemo/dtype/types.hpp"
#include "mnemo/simd/simd.hpp"

namespace mnemo::dtype::detail {

// GCC 12.2 warns inside its own AVX-512 intrinsics (PR 105593, see simd/avx512.hpp), as
// -Wmaybe-uninitialized at -O3; the pragmas apply through inlining into this region.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wuninitialized"
#if defined(MNEMO_COMPILER_GCC)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

MNEMO_BEGIN_TARGET_AVX2
template <>
struct block_codes<simd::avx2> {
  using vf = __m256;

  static MNEMO_INLINE float scale(f16 d) noexcept { return _cvtsh_ss(d.bits); }
  // broadcast, then convert: vpbroadcastw from memory + vcvtph2ps, no GPR round trip
  static MNEMO_INLINE vf splat_scale(f16 d) noexcept {
    return _mm256_cvtph_ps(_mm_set1_epi16(static_cast<short>(d.bits)));
  }

  static MNEMO_INLINE float abs_max(const float* x) noexcept {
    const __m256 mask = _mm256_castsi256_ps(_mm256_set1_epi32(0x7fffffff));
    __m256 m = _mm256_max_ps(_mm256_and_ps(_mm256_loadu_ps(x), mask),
                             _mm256_and_ps(_mm256_loadu_ps(x + 8), mask));
    m = _mm256_max_ps(m, _mm256_max_ps(_mm256_and_ps(_mm256_loadu_ps(x + 16), mask),
                                       _mm256_and_ps(_mm256_loadu_ps(x + 24), mask)));
    __m128 s = _mm_max_ps(_mm256_castps256_ps128(m), _mm256_extractf128_ps(m, 1));
    s = _mm_max_ps(s, _mm_movehl_ps(s, s));
    s = _mm_max_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
  }

  // [32] int8 -> 4 x [8] f32
  static MNEMO_INLINE void q8(const std::int8_t* qs, vf (&c)[4]) noexcept {
    for (int k = 0; k < 4; ++k) {
      const __m128i b = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(qs + 8 * k));
      c[k] = _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(b));
    }
  }

  // [16] bytes -> elements 0..7, 8..15 (low nibbles), 16..23, 24..31 (high nibbles)
  static MNEMO_INLINE void q4(const std::uint8_t* qs, vf (&c)[4]) noexcept {
    const __m128i b = _mm_loadu_si128(reinterpret_cast<const __m128i*>(qs));
    const __m256i w0 = _mm256_cvtepu8_epi32(b);
    const __m256i w1 = _mm256_cvtepu8_epi32(_mm_unpackhi_epi64(b, b));
    const __m256i low = _mm256_set1_epi32(0x0f);
    const __m256i eight = _mm256_set1_epi32(8);
    c[0] = _mm256_cvtepi32_ps(_mm256_sub_epi32(_mm256_and_si256(w0, low), eight));
    c[1] = _mm256_cvtepi32_ps(_mm256_sub_epi32(_mm256_and_si256(w1, low), eight));
    c[2] = _mm256_cvtepi32_ps(_mm256_sub_epi32(_mm256_srli_epi32(w0, 4), eight));
    c[3] = _mm256_cvtepi32_ps(_mm256_sub_epi32(_mm256_srli_epi32(w1, 4), eight));
  }

  // 8 int8 -> [8] f32
  static MNEMO_INLINE vf q8_lanes(const std::int8_t* qs) noexcept {
    return _mm256_cvtepi32_ps(
        _mm256_cvtepi8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(qs))));
  }

  // elements e..e+7 of a block (see the scalar contract): 8 bytes, low or high nibbles
  static MNEMO_INLINE vf q4_lanes(const std::uint8_t* qs, std::size_t e) noexcept {
    const __m256i w =
        _mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(qs + e % 16)));
    const __m256i c =
        e < 16 ? _mm256_and_si256(w, _mm256_set1_epi32(0x0f)) : _mm256_srli_epi32(w, 4);
    return _mm256_cvtepi32_ps(_mm256_sub_epi32(c, _mm256_set1_epi32(8)));
  }

  static MNEMO_INLINE void q4_values(const std::uint8_t* qs, vf d, vf (&v)[4]) noexcept {
    q4(qs, v);
    for (vf& x : v) x = _mm256_mul_ps(d, x);
  }
  static constexpr bool q4_dot_by_values = false;

  static MNEMO_INLINE void quantize_q8(const float* x, float id, std::int8_t* qs) noexcept {
    const __m256 vid = _mm256_set1_ps(id);
    const __m256 one = _mm256_set1_ps(1.0f);
    __m256i q[4];
    for (int k = 0; k < 4; ++k) {
      __m256 v = _mm256_mul_ps(_mm256_loadu_ps(x + 8 * k), vid);
      v = _mm256_min_ps(_mm256_max_ps(v, _mm256_set1_ps(-127.0f)), _mm256_set1_ps(127.0f));
      // roundf: truncate, then step away from zero when the dropped fraction is >= 1/2
      // (v - t is exact). _mm256_round_ps has no half-away-from-zero mode.
      __m256 t = _mm256_round_ps(v, _MM_FROUND_TO_ZERO | _MM_FROUND_NO_EXC);
      const __m256 f = _mm256_sub_ps(v, t);
      t = _mm256_add_ps(t, _mm256_and_ps(_mm256_cmp_ps(f, _mm256_set1_ps(0.5f), _CMP_GE_OQ), one));
      t = _mm256_sub_ps(t, _mm256_and_ps(_mm256_cmp_ps(f, _mm256_set1_ps(-0.5f), _CMP_LE_OQ), one));
      q[k] = _mm256_cvttps_epi32(t);
    }
    // The packs work per 128-bit lane; dword d of the result holds 4 codes of
    // q[d % 4], lane d / 4, so gather dwords (0,4,1,5,2,6,3,7) for element order.
    const __m256i b =
        _mm256_packs_epi16(_mm256_packs_epi32(q[0], q[1]), _mm256_packs_epi32(q[2], q[3]));
    const __m256i r = _mm256_permutevar8x32_epi32(b, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(qs), r);
  }

  static MNEMO_INLINE void quantize_q4(const float* x, float id, std::uint8_t* qs) noexcept {
    const __m256 vid = _mm256_set1_ps(id);
    const __m256 half = _mm256_set1_ps(8.5f);
    __m256i q[4];
    for (int k = 0; k < 4; ++k) {
      __m256 v = _mm256_fmadd_ps(_mm256_loadu_ps(x + 8 * k), vid, half);
      v = _mm256_min_ps(_mm256_max_ps(v, _mm256_setzero_ps()), _mm256_set1_ps(15.0f));
      q[k] = _mm256_cvttps_epi32(v);
    }
    // byte j = code j | code j+16 << 4: [8] u32 for bytes 0..7 and 8..15
    const __m256i c0 = _mm256_or_si256(q[0], _mm256_slli_epi32(q[2], 4));
    const __m256i c1 = _mm256_or_si256(q[1], _mm256_slli_epi32(q[3], 4));
    // packus is per lane: qwords are c0[0..3], c1[0..3], c0[4..7], c1[4..7]
    const __m256i w =
        _mm256_permute4x64_epi64(_mm256_packus_epi32(c0, c1), _MM_SHUFFLE(3, 1, 2, 0));
    const __m128i r = _mm_packus_epi16(_mm256_castsi256_si128(w), _mm256_extracti128_si256(w, 1));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(qs), r);
  }
};
MNEMO_END_TARGET

MNEMO_BEGIN_TARGET_AVX512
template <>
struct block_codes<simd::avx512> {
  using vf = __m512;

  static MNEMO_INLINE float scale(f16 d) noexcept { return _cvtsh_ss(d.bits); }
  static MNEMO_INLINE vf splat_scale(f16 d) noexcept {
    return _mm512_cvtph_ps(_mm256_set1_epi16(static_cast<short>(d.bits)));
  }

  static MNEMO_INLINE float abs_max(const float* x) noexcept {
    const __m512 m =
        _mm512_max_ps(_mm512_abs_ps(_mm512_loadu_ps(x)), _mm512_abs_ps(_mm512_loadu_ps(x + 16)));
    const __m256 h = _mm256_max_ps(_mm512_castps512_ps256(m), _mm512_extractf32x8_ps(m, 1));
    __m128 s = _mm_max_ps(_mm256_castps256_ps128(h), _mm256_extractf128_ps(h, 1));
    s = _mm_max_ps(s, _mm_movehl_ps(s, s));
    s = _mm_max_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
  }

  // [32] int8 -> 2 x [16] f32
  static MNEMO_INLINE void q8(const std::int8_t* qs, vf (&c)[2]) noexcept {
    c[0] = _mm512_cvtepi32_ps(
        _mm512_cvtepi8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(qs))));
    c[1] = _mm512_cvtepi32_ps(
        _mm512_cvtepi8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(qs + 16))));
  }

  // [16] bytes -> elements 0..15 (low nibbles), 16..31 (high nibbles)
  static MNEMO_INLINE void q4(const std::uint8_t* qs, vf (&c)[2]) noexcept {
    const __m512i w = _mm512_cvtepu8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(qs)));
    const __m512i eight = _mm512_set1_epi32(8);
    c[0] =
        _mm512_cvtepi32_ps(_mm512_sub_epi32(_mm512_and_si512(w, _mm512_set1_epi32(0x0f)), eight));
    c[1] = _mm512_cvtepi32_ps(_mm512_sub_epi32(_mm512_srli_epi32(w, 4), eight));
  }

  // 16 int8 -> [16] f32
  static MNEMO_INLINE vf q8_lanes(const std::int8_t* qs) noexcept {
    return _mm512_cvtepi32_ps(
        _mm512_cvtepi8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(qs))));
  }

  // elements e..e+15 of a block (e 0 or 16; see the scalar contract): the widened bytes
  // index a table of k - 8 (vpermps reads the low 4 bits of each lane, as in q4_values),
  // so low nibbles need no mask and neither half an int conversion
  static MNEMO_INLINE vf q4_lanes(const std::uint8_t* qs, std::size_t e) noexcept {
    __m512i w = _mm512_cvtepu8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(qs)));
    if (e >= 16) w = _mm512_srli_epi32(w, 4);
    return _mm512_permutexvar_ps(
        w, _mm512_setr_ps(-8, -7, -6, -5, -4, -3, -2, -1, 0, 1, 2, 3, 4, 5, 6, 7));
  }

  // vpermps reads only the low 4 bits of each index lane, so a 16-entry table of
  // d * (k - 8) turns the widened bytes into decoded values with no masking and no int
  // conversion: 2 permutes + 1 table multiply per block instead of 2 x (and/shift, sub,
  // cvtdq2ps) + 2 multiplies. The products are exact, so the values are bit-identical
  // to d * (code - 8) on the other ISAs.
  static MNEMO_INLINE void q4_values(const std::uint8_t* qs, vf d, vf (&v)[2]) noexcept {
    const __m512 table =
        _mm512_mul_ps(d, _mm512_setr_ps(-8, -7, -6, -5, -4, -3, -2, -1, 0, 1, 2, 3, 4, 5, 6, 7));
    const __m512i w = _mm512_cvtepu8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(qs)));
    v[0] = _mm512_permutexvar_ps(w, table);
    v[1] = _mm512_permutexvar_ps(_mm512_srli_epi32(w, 4), table);
  }
  static constexpr bool q4_dot_by_values = true;

  /// q8_0 codes of 16 values: x * id clamped to [-127, 127], rounded half away from zero
  /// (roundf; v - trunc(v) is exact). Also used by model's 8-bit product to pack x.
  static MNEMO_INLINE __m128i q8_codes16(const float* x, __m512 vid) noexcept {
    const __m512 one = _mm512_set1_ps(1.0f);
    __m512 v = _mm512_mul_ps(_mm512_loadu_ps(x), vid);
    v = _mm512_min_ps(_mm512_max_ps(v, _mm512_set1_ps(-127.0f)), _mm512_set1_ps(127.0f));
    __m512 t = _mm512_roundscale_ps(v, _MM_FROUND_TO_ZERO | _MM_FROUND_NO_EXC);
    const __m512 f = _mm512_sub_ps(v, t);
    t = _mm512_mask_add_ps(t, _mm512_cmp_ps_mask(f, _mm512_set1_ps(0.5f), _CMP_GE_OQ), t, one);
    t = _mm512_mask_sub_ps(t, _mm512_cmp_ps_mask(f, _mm512_set1_ps(-0.5f), _CMP_LE_OQ), t, one);
    return _mm512_cvtsepi32_epi8(_mm512_cvttps_epi32(t));
  }

  static MNEMO_INLINE void quantize_q8(const float* x, float id, std::int8_t* qs) noexcept {
    const __m512 vid = _mm512_set1_ps(id);
    for (int h = 0; h < 2; ++h)
      _mm_storeu_si128(reinterpret_cast<__m128i*>(qs + 16 * h), q8_codes16(x + 16 * h, vid));
  }

  static MNEMO_INLINE void quantize_q4(const float* x, float id, std::uint8_t* qs) noexcept {
    const __m512 vid = _mm512_set1_ps(id);
    const __m512 half = _mm512_set1_ps(8.5f);
    __m512i q[2];
    for (int h = 0; h < 2; ++h) {
      __m512 v = _mm512_fmadd_ps(_mm512_loadu_ps(x + 16 * h), vid, half);
      v = _mm512_min_ps(_mm512_max_ps(v, _mm512_setzero_ps()), _mm512_set1_ps(15.0f));
      q[h] = _mm512_cvttps_epi32(v);
    }
    const __m512i c = _mm512_or_si512(q[0], _mm512_slli_epi32(q[1], 4));  // [16] u32 <= 255
    _mm_storeu_si128(reinterpret_cast<__m128i*>(qs), _mm512_cvtepi32_epi8(c));
  }
};
MNEMO_END_TARGET

#pragma GCC diagnostic pop

}  // namespace mnemo::dtype::detail

#endif  // MNEMO_ARCH_X86_64
