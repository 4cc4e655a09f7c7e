// simd::ops<avx2>: eight f32 lanes in a __m256, with FMA and F16C. Same members and
// meaning as ops<scalar> (scalar.hpp); only compiled on x86-64, inside an AVX2
// target region so no global -mavx2 is needed.
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

MNEMO_BEGIN_TARGET_AVX2
template <>
struct ops<avx2> {
  using isa = avx2;
  using vf = __m256;
  static constexpr std::size_t lanes = 8;

  static MNEMO_INLINE vf zero() noexcept { return _mm256_setzero_ps(); }
  static MNEMO_INLINE vf set1(float x) noexcept { return _mm256_set1_ps(x); }
  static MNEMO_INLINE vf load(const float* p) noexcept { return _mm256_loadu_ps(p); }
  static MNEMO_INLINE void store(float* p, vf v) noexcept { _mm256_storeu_ps(p, v); }

  /// Lane i is active when i < n. vmaskmov neither reads nor faults on inactive lanes,
  /// so a tail at the end of a page is safe.
  static MNEMO_INLINE __m256i tail_mask(std::size_t n) noexcept {
    return _mm256_cmpgt_epi32(_mm256_set1_epi32(static_cast<int>(n)),
                              _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
  }
  static MNEMO_INLINE vf load_partial(const float* p, std::size_t n) noexcept {
    MNEMO_DASSERT(n < lanes);
    return _mm256_maskload_ps(p, tail_mask(n));
  }
  static MNEMO_INLINE void store_partial(float* p, vf v, std::size_t n) noexcept {
    MNEMO_DASSERT(n < lanes);
    _mm256_maskstore_ps(p, tail_mask(n), v);
  }

  static MNEMO_INLINE vf add(vf a, vf b) noexcept { return _mm256_add_ps(a, b); }
  static MNEMO_INLINE vf sub(vf a, vf b) noexcept { return _mm256_sub_ps(a, b); }
  static MNEMO_INLINE vf mul(vf a, vf b) noexcept { return _mm256_mul_ps(a, b); }
  static MNEMO_INLINE vf fma(vf a, vf b, vf c) noexcept { return _mm256_fmadd_ps(a, b, c); }
  // vmaxps(x, y) = x > y ? x : y; with the operands swapped this is std::max(a, b)
  // exactly, including NaN and signed-zero cases (likewise for min).
  static MNEMO_INLINE vf max(vf a, vf b) noexcept { return _mm256_max_ps(b, a); }
  static MNEMO_INLINE vf min(vf a, vf b) noexcept { return _mm256_min_ps(b, a); }

  static MNEMO_INLINE float reduce_add(vf v) noexcept {
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
  }
  /// r[0..8) as the rows of an 8 x 8 matrix, transposed in place: pairs of rows
  /// interleaved, then pairs of pairs, then the 128-bit halves (24 shuffles).
  static MNEMO_INLINE void transpose(vf* r) noexcept {
    vf t[8], s[8];
    for (int i = 0; i < 8; i += 2) {
      t[i] = _mm256_unpacklo_ps(r[i], r[i + 1]);      // columns 0 1 | 4 5 of rows i, i + 1
      t[i + 1] = _mm256_unpackhi_ps(r[i], r[i + 1]);  // columns 2 3 | 6 7
    }
    for (int i = 0; i < 8; i += 4) {
      s[i] = _mm256_shuffle_ps(t[i], t[i + 2], _MM_SHUFFLE(1, 0, 1, 0));          // column 0 | 4
      s[i + 1] = _mm256_shuffle_ps(t[i], t[i + 2], _MM_SHUFFLE(3, 2, 3, 2));      // 1 | 5
      s[i + 2] = _mm256_shuffle_ps(t[i + 1], t[i + 3], _MM_SHUFFLE(1, 0, 1, 0));  // 2 | 6
      s[i + 3] = _mm256_shuffle_ps(t[i + 1], t[i + 3], _MM_SHUFFLE(3, 2, 3, 2));  // 3 | 7
    }
    for (int i = 0; i < 4; ++i) {
      r[i] = _mm256_permute2f128_ps(s[i], s[i + 4], 0x20);
      r[i + 4] = _mm256_permute2f128_ps(s[i], s[i + 4], 0x31);
    }
  }
  static MNEMO_INLINE float reduce_max(vf v) noexcept {
    __m128 s = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_max_ps(s, _mm_movehl_ps(s, s));
    s = _mm_max_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
  }

  /// e^x, see detail/exp_f32.hpp. NaN propagates through every step (max/min return
  /// their second operand on NaN); +inf and x > ln(FLT_MAX) overflow to +inf in the
  /// last multiply; x < -87.3 and -inf give 0.
  static MNEMO_INLINE vf exp(vf x) noexcept {
    using k = detail::exp_f32;
    const vf xc = _mm256_min_ps(_mm256_set1_ps(k::hi), _mm256_max_ps(_mm256_set1_ps(k::lo), x));
    const vf nf = _mm256_round_ps(_mm256_mul_ps(xc, _mm256_set1_ps(k::log2e)),
                                  _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    vf r = _mm256_fnmadd_ps(nf, _mm256_set1_ps(k::ln2_hi), xc);
    r = _mm256_fnmadd_ps(nf, _mm256_set1_ps(k::ln2_lo), r);
    vf q = _mm256_fmadd_ps(_mm256_set1_ps(k::c6), r, _mm256_set1_ps(k::c5));
    q = _mm256_fmadd_ps(q, r, _mm256_set1_ps(k::c4));
    q = _mm256_fmadd_ps(q, r, _mm256_set1_ps(k::c3));
    q = _mm256_fmadd_ps(q, r, _mm256_set1_ps(k::c2));
    vf p = _mm256_fmadd_ps(q, _mm256_mul_ps(r, r), r);
    p = _mm256_add_ps(p, _mm256_set1_ps(1.0f));  // e^r in [0.70, 1.42]
    // 2^n as two factors 2^n1 * 2^n2 (n in [-126, 128], each half in [-63, 64]) so
    // n = 128 needs no special case; p * 2^n1 is exact, the second product rounds once.
    const __m256i n = _mm256_cvtps_epi32(nf);
    const __m256i n1 = _mm256_srai_epi32(n, 1);
    const __m256i n2 = _mm256_sub_epi32(n, n1);
    const __m256i bias = _mm256_set1_epi32(127);
    const vf s1 = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(n1, bias), 23));
    const vf s2 = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(n2, bias), 23));
    p = _mm256_mul_ps(_mm256_mul_ps(p, s1), s2);
    return _mm256_andnot_ps(_mm256_cmp_ps(x, _mm256_set1_ps(k::lo), _CMP_LT_OQ), p);
  }

  /// F16C conversions, round to nearest even; bit-identical to half.hpp.
  static MNEMO_INLINE vf load_f16(const std::uint16_t* p) noexcept {
    return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
  }
  static MNEMO_INLINE void store_f16(std::uint16_t* p, vf v) noexcept {
    _mm_storeu_si128(reinterpret_cast<__m128i*>(p),
                     _mm256_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
  }
  static MNEMO_INLINE vf load_bf16(const std::uint16_t* p) noexcept {
    const __m256i w = _mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
    return _mm256_castsi256_ps(_mm256_slli_epi32(w, 16));
  }
  static MNEMO_INLINE void load_bf16_pairs(const std::uint32_t* p, vf& lo, vf& hi) noexcept {
    const __m256i w = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p));
    lo = _mm256_castsi256_ps(_mm256_slli_epi32(w, 16));
    hi = _mm256_castsi256_ps(_mm256_and_si256(w, _mm256_set1_epi32(int(0xffff0000u))));
  }
  /// Round to nearest even on the bits, NaN kept quiet: f32_to_bf16_bits per lane.
  static MNEMO_INLINE void store_bf16(std::uint16_t* p, vf v) noexcept {
    const __m256i x = _mm256_castps_si256(v);
    const __m256i abs = _mm256_and_si256(x, _mm256_set1_epi32(0x7fffffff));
    const __m256i nan = _mm256_cmpgt_epi32(abs, _mm256_set1_epi32(0x7f800000));
    const __m256i odd = _mm256_and_si256(_mm256_srli_epi32(x, 16), _mm256_set1_epi32(1));
    const __m256i rounded = _mm256_srli_epi32(
        _mm256_add_epi32(x, _mm256_add_epi32(odd, _mm256_set1_epi32(0x7fff))), 16);
    const __m256i quiet = _mm256_or_si256(_mm256_srli_epi32(x, 16), _mm256_set1_epi32(0x40));
    const __m256i h = _mm256_blendv_epi8(rounded, quiet, nan);  // [8] u32, each <= 0xffff
    const __m128i packed =
        _mm_packus_epi32(_mm256_castsi256_si128(h), _mm256_extracti128_si256(h, 1));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(p), packed);
  }
};
MNEMO_END_TARGET

static_assert(vector_ops<ops<avx2>>, "ops<avx2> must provide the whole vector operation set");

}  // namespace mnemo::simd

#endif  // MNEMO_ARCH_X86_64
