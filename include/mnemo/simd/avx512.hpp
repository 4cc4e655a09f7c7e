// simd::ops<avx512>: sixteen f32 lanes in a __m512 (AVX-512 F/BW/DQ/VL). Same members
// and meaning as ops<scalar> (scalar.hpp); only compiled on x86-64, inside an
// AVX-512 target region so no global -mavx512f is needed.
#pragma once

#include "mnemo/base/config.hpp"

#if defined(MNEMO_ARCH_X86_64)

#include <cstddef>
#include <cstdint>

#include <immintrin.h>

#include "mnemo/base/assert.hpp"
#include "mnemo/simd/concepts.hpp"
#include "mnemo/simd/detail/exp_f32.hpp"
#include "mnemo/simd/ops.hpp"
#include "mnemo/simd/target.hpp"

namespace mnemo::simd {

// Compiler false positives inside intrinsics: see MNEMO_BEGIN_ISA_WARNINGS.
MNEMO_BEGIN_ISA_WARNINGS
MNEMO_BEGIN_TARGET_AVX512
template <>
struct ops<avx512> {
  using isa = avx512;
  using vf = __m512;
  static constexpr std::size_t lanes = 16;

  static MNEMO_INLINE vf zero() noexcept { return _mm512_setzero_ps(); }
  static MNEMO_INLINE vf set1(float x) noexcept { return _mm512_set1_ps(x); }
  static MNEMO_INLINE vf load(const float* p) noexcept { return _mm512_loadu_ps(p); }
  static MNEMO_INLINE void store(float* p, vf v) noexcept { _mm512_storeu_ps(p, v); }

  /// Lanes i < n. Masked-off lanes are neither read nor written and cannot fault.
  static MNEMO_INLINE __mmask16 tail_mask(std::size_t n) noexcept {
    return static_cast<__mmask16>((1u << n) - 1u);
  }
  static MNEMO_INLINE vf load_partial(const float* p, std::size_t n) noexcept {
    MNEMO_DASSERT(n < lanes);
    return _mm512_maskz_loadu_ps(tail_mask(n), p);
  }
  static MNEMO_INLINE void store_partial(float* p, vf v, std::size_t n) noexcept {
    MNEMO_DASSERT(n < lanes);
    _mm512_mask_storeu_ps(p, tail_mask(n), v);
  }

  static MNEMO_INLINE vf add(vf a, vf b) noexcept { return _mm512_add_ps(a, b); }
  static MNEMO_INLINE vf sub(vf a, vf b) noexcept { return _mm512_sub_ps(a, b); }
  static MNEMO_INLINE vf mul(vf a, vf b) noexcept { return _mm512_mul_ps(a, b); }
  static MNEMO_INLINE vf fma(vf a, vf b, vf c) noexcept { return _mm512_fmadd_ps(a, b, c); }
  // Operands swapped so NaN and signed zeros behave exactly as std::max / std::min.
  static MNEMO_INLINE vf max(vf a, vf b) noexcept { return _mm512_max_ps(b, a); }
  static MNEMO_INLINE vf min(vf a, vf b) noexcept { return _mm512_min_ps(b, a); }

  static MNEMO_INLINE float reduce_add(vf v) noexcept {
    const __m256 h = _mm256_add_ps(_mm512_castps512_ps256(v), _mm512_extractf32x8_ps(v, 1));
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(h), _mm256_extractf128_ps(h, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
  }
  /// r[0..16) as the rows of a 16 x 16 matrix, transposed in place: 4 x 4 blocks
  /// within each 128-bit lane by unpacks, then the lanes by two 128-bit shuffles
  /// (64 shuffles).
  static MNEMO_INLINE void transpose(vf* r) noexcept {
    vf t[16], u[16];
    for (int i = 0; i < 16; i += 2) {
      t[i] = _mm512_unpacklo_ps(r[i], r[i + 1]);      // per lane: columns 0 1 of rows i, i + 1
      t[i + 1] = _mm512_unpackhi_ps(r[i], r[i + 1]);  // columns 2 3
    }
    for (int i = 0; i < 16; i += 4) {  // per lane: column c of rows i .. i + 3
      const __m512d a = _mm512_castps_pd(t[i]), b = _mm512_castps_pd(t[i + 2]);
      const __m512d c = _mm512_castps_pd(t[i + 1]), d = _mm512_castps_pd(t[i + 3]);
      u[i] = _mm512_castpd_ps(_mm512_unpacklo_pd(a, b));      // columns 0 4 8 12
      u[i + 1] = _mm512_castpd_ps(_mm512_unpackhi_pd(a, b));  // 1 5 9 13
      u[i + 2] = _mm512_castpd_ps(_mm512_unpacklo_pd(c, d));  // 2 6 10 14
      u[i + 3] = _mm512_castpd_ps(_mm512_unpackhi_pd(c, d));  // 3 7 11 15
    }
    for (int c = 0; c < 4; ++c) {  // u[c], u[c + 4], u[c + 8], u[c + 12]: rows 0-3 .. 12-15
      const vf v0 = _mm512_shuffle_f32x4(u[c], u[c + 4], _MM_SHUFFLE(2, 0, 2, 0));
      const vf v1 = _mm512_shuffle_f32x4(u[c], u[c + 4], _MM_SHUFFLE(3, 1, 3, 1));
      const vf w0 = _mm512_shuffle_f32x4(u[c + 8], u[c + 12], _MM_SHUFFLE(2, 0, 2, 0));
      const vf w1 = _mm512_shuffle_f32x4(u[c + 8], u[c + 12], _MM_SHUFFLE(3, 1, 3, 1));
      r[c] = _mm512_shuffle_f32x4(v0, w0, _MM_SHUFFLE(2, 0, 2, 0));
      r[c + 8] = _mm512_shuffle_f32x4(v0, w0, _MM_SHUFFLE(3, 1, 3, 1));
      r[c + 4] = _mm512_shuffle_f32x4(v1, w1, _MM_SHUFFLE(2, 0, 2, 0));
      r[c + 12] = _mm512_shuffle_f32x4(v1, w1, _MM_SHUFFLE(3, 1, 3, 1));
    }
  }
  static MNEMO_INLINE float reduce_max(vf v) noexcept {
    const __m256 h = _mm256_max_ps(_mm512_castps512_ps256(v), _mm512_extractf32x8_ps(v, 1));
    __m128 s = _mm_max_ps(_mm256_castps256_ps128(h), _mm256_extractf128_ps(h, 1));
    s = _mm_max_ps(s, _mm_movehl_ps(s, s));
    s = _mm_max_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
  }

  /// e^x, see detail/exp_f32.hpp; vscalefps applies 2^n with correct overflow to
  /// +inf. NaN propagates; x < -87.3 and -inf give 0.
  static MNEMO_INLINE vf exp(vf x) noexcept {
    using k = detail::exp_f32;
    const vf xc = _mm512_min_ps(_mm512_set1_ps(k::hi), _mm512_max_ps(_mm512_set1_ps(k::lo), x));
    const vf nf = _mm512_roundscale_ps(_mm512_mul_ps(xc, _mm512_set1_ps(k::log2e)),
                                       _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    vf r = _mm512_fnmadd_ps(nf, _mm512_set1_ps(k::ln2_hi), xc);
    r = _mm512_fnmadd_ps(nf, _mm512_set1_ps(k::ln2_lo), r);
    vf q = _mm512_fmadd_ps(_mm512_set1_ps(k::c6), r, _mm512_set1_ps(k::c5));
    q = _mm512_fmadd_ps(q, r, _mm512_set1_ps(k::c4));
    q = _mm512_fmadd_ps(q, r, _mm512_set1_ps(k::c3));
    q = _mm512_fmadd_ps(q, r, _mm512_set1_ps(k::c2));
    vf p = _mm512_fmadd_ps(q, _mm512_mul_ps(r, r), r);
    p = _mm512_add_ps(p, _mm512_set1_ps(1.0f));  // e^r in [0.70, 1.42]
    p = _mm512_scalef_ps(p, nf);
    const __mmask16 below = _mm512_cmp_ps_mask(x, _mm512_set1_ps(k::lo), _CMP_LT_OQ);
    return _mm512_maskz_mov_ps(static_cast<__mmask16>(~below), p);
  }

  /// Hardware conversions, round to nearest even; bit-identical to half.hpp.
  static MNEMO_INLINE vf load_f16(const std::uint16_t* p) noexcept {
    return _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
  }
  static MNEMO_INLINE void store_f16(std::uint16_t* p, vf v) noexcept {
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(p),
                        _mm512_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
  }
  static MNEMO_INLINE vf load_bf16(const std::uint16_t* p) noexcept {
    const __m512i w =
        _mm512_cvtepu16_epi32(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
    return _mm512_castsi512_ps(_mm512_slli_epi32(w, 16));
  }
  static MNEMO_INLINE void load_bf16_pairs(const std::uint32_t* p, vf& lo, vf& hi) noexcept {
    const __m512i w = _mm512_loadu_si512(p);
    lo = _mm512_castsi512_ps(_mm512_slli_epi32(w, 16));
    hi = _mm512_castsi512_ps(_mm512_and_si512(w, _mm512_set1_epi32(int(0xffff0000u))));
  }
  /// Integer rounding rather than vcvtneps2bf16: that instruction flushes subnormal
  /// inputs, which would not match f32_to_bf16_bits.
  static MNEMO_INLINE void store_bf16(std::uint16_t* p, vf v) noexcept {
    const __m512i x = _mm512_castps_si512(v);
    const __m512i abs = _mm512_and_si512(x, _mm512_set1_epi32(0x7fffffff));
    const __mmask16 nan = _mm512_cmpgt_epi32_mask(abs, _mm512_set1_epi32(0x7f800000));
    const __m512i odd = _mm512_and_si512(_mm512_srli_epi32(x, 16), _mm512_set1_epi32(1));
    const __m512i rounded = _mm512_srli_epi32(
        _mm512_add_epi32(x, _mm512_add_epi32(odd, _mm512_set1_epi32(0x7fff))), 16);
    const __m512i quiet = _mm512_or_si512(_mm512_srli_epi32(x, 16), _mm512_set1_epi32(0x40));
    const __m512i h = _mm512_mask_blend_epi32(nan, rounded, quiet);  // [16] u32 <= 0xffff
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(p), _mm512_cvtepi32_epi16(h));
  }
};
MNEMO_END_TARGET
MNEMO_END_ISA_WARNINGS

static_assert(vector_ops<ops<avx512>>, "ops<avx512> must provide the whole vector operation set");

}  // namespace mnemo::simd

#endif  // MNEMO_ARCH_X86_64
