// The decode tiles in bf16 dot products (AVX512_BF16, attention::product_precision):
// Q.K over queries and K rows rounded to bf16 (round to nearest even, vcvtne2ps2bf16),
// P.V over pairs of V rows interleaved in registers and pairs of rounded probabilities;
// pairs of exact products summed into f32 lanes (vdpbf16ps). In a target region of its
// own (AVX-512 + BF16), called from block_kernels<avx512> only when the CPU has BF16.
// Also AVX-512's reduce_add4, which the f32 tiles share.
#pragma once

#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "mnemo/base/config.hpp"
#include "mnemo/dtype/dtype.hpp"
#include "mnemo/simd/target.hpp"

#if defined(MNEMO_ARCH_X86_64)
#include <immintrin.h>
#endif

namespace mnemo::attention::detail {

#if defined(MNEMO_ARCH_X86_64)
MNEMO_BEGIN_ISA_WARNINGS
MNEMO_BEGIN_TARGET_AVX512
/// out[0..3] = the horizontal sums of a, b, c, d: a transpose-and-add tree, about
/// 10 instructions for four sums instead of four separate reductions (decode Q.K
/// spends most of its non-FMA time here).
MNEMO_INLINE void reduce_add4_avx512(__m512 a, __m512 b, __m512 c, __m512 d, float* out) noexcept {
  const __m512 t0 = _mm512_add_ps(_mm512_unpacklo_ps(a, b), _mm512_unpackhi_ps(a, b));
  const __m512 t1 = _mm512_add_ps(_mm512_unpacklo_ps(c, d), _mm512_unpackhi_ps(c, d));
  const __m512 u = _mm512_add_ps(_mm512_shuffle_ps(t0, t1, _MM_SHUFFLE(1, 0, 1, 0)),
                                 _mm512_shuffle_ps(t0, t1, _MM_SHUFFLE(3, 2, 3, 2)));
  const __m256 v = _mm256_add_ps(_mm512_castps512_ps256(u), _mm512_extractf32x8_ps(u, 1));
  _mm_storeu_ps(out, _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1)));
}
MNEMO_END_TARGET

MNEMO_BEGIN_TARGET_(MNEMO_TARGET_FEATURES_AVX512 ",avx512bf16")
struct bf16_dots {
  /// K element types whose rows the tiles read (f16 widened exactly, then rounded).
  template <class KE>
  static constexpr bool reads = std::is_same_v<KE, dtype::f16> || std::is_same_v<KE, dtype::bf16>;

  /// Rounds n rows of d f32 values (d % 16 == 0, rows ld floats apart) to bf16 in place,
  /// in the pair tiles' form: each chunk of 16 values becomes, in its own 64 bytes, its
  /// 16 bf16 values twice (tile_pairs loads it whole; tile reads the low halves).
  static void round_rows(float* q, std::size_t n, std::size_t d, std::size_t ld) noexcept {
    for (std::size_t r = 0; r < n; ++r)
      for (std::size_t i = 0; i < d; i += 16) {
        float* chunk = q + r * ld + i;
        const auto b = (__m256i)_mm512_cvtneps_pbh(_mm512_loadu_ps(chunk));
        _mm512_storeu_si512(chunk, _mm512_inserti64x4(_mm512_castsi256_si512(b), b, 1));
      }
  }

  /// 32 bf16 values of row `row` from element i, zeros past d (d % 16 == 0).
  template <class KE>
  static MNEMO_INLINE __m512bh load_k(const KE* row, std::size_t i, std::size_t d) noexcept {
    if constexpr (std::is_same_v<KE, dtype::bf16>) {
      return load_bf16(&row[i].bits, i + 16 < d);
    } else {
      const auto* p = reinterpret_cast<const __m256i*>(&row[i].bits);
      const __m512 lo = _mm512_cvtph_ps(_mm256_loadu_si256(p));
      const __m512 hi =
          i + 16 < d ? _mm512_cvtph_ps(_mm256_loadu_si256(p + 1)) : _mm512_setzero_ps();
      return _mm512_cvtne2ps_pbh(hi, lo);
    }
  }

  /// 32 bf16 values from p, or 16 and zeros (not reading past them) when !full.
  static MNEMO_INLINE __m512bh load_bf16(const std::uint16_t* p, bool full) noexcept {
    return (__m512bh)(full ? _mm512_loadu_si512(p) : _mm512_maskz_loadu_epi16(0xffffu, p));
  }

  /// 32 bf16 query values of a row rounded by round_rows, from element i (i % 32 == 0):
  /// the low halves of its chunks i and i + 16, zeros past d.
  static MNEMO_INLINE __m512bh load_q(const float* row, std::size_t i, std::size_t d) noexcept {
    const __m256i lo = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(row + i));
    const __m256i hi = i + 16 < d
                           ? _mm256_loadu_si256(reinterpret_cast<const __m256i*>(row + i + 16))
                           : _mm256_setzero_si256();
    return (__m512bh)_mm512_inserti64x4(_mm512_castsi256_si512(lo), hi, 1);
  }

  /// out[h * ldo + c] = q_h . k_c for G rounded query rows (ldq floats apart) and C
  /// key rows, each K vector rounded once for the G rows.
  template <class KE, std::size_t G, std::size_t C>
  static MNEMO_INLINE void tile(const float* q, std::size_t ldq, const KE* const* k, std::size_t d,
                                float* out, std::size_t ldo) noexcept {
    __m512 acc[G][C];
#pragma GCC unroll 4
    for (std::size_t h = 0; h < G; ++h)
#pragma GCC unroll 4
      for (std::size_t c = 0; c < C; ++c) acc[h][c] = _mm512_setzero_ps();
    for (std::size_t i = 0; i < d; i += 32) {
      __m512bh kv[C];
#pragma GCC unroll 4
      for (std::size_t c = 0; c < C; ++c) kv[c] = load_k(k[c], i, d);
#pragma GCC unroll 4
      for (std::size_t h = 0; h < G; ++h) {
        const __m512bh qv = load_q(q + h * ldq, i, d);
#pragma GCC unroll 4
        for (std::size_t c = 0; c < C; ++c) acc[h][c] = _mm512_dpbf16_ps(acc[h][c], qv, kv[c]);
      }
    }
#pragma GCC unroll 4
    for (std::size_t h = 0; h < G; ++h) {
      if constexpr (C == 4) {
        reduce_add4_avx512(acc[h][0], acc[h][1], acc[h][2], acc[h][3], out + h * ldo);
      } else {
#pragma GCC unroll 4
        for (std::size_t c = 0; c < C; ++c) out[h * ldo + c] = _mm512_reduce_add_ps(acc[h][c]);
      }
    }
  }

  template <class KE, std::size_t G>
  static MNEMO_INLINE void tile_c(std::size_t C, const float* q, std::size_t ldq,
                                  const KE* const* k, std::size_t d, float* out,
                                  std::size_t ldo) noexcept {
    switch (C) {
      case 1: tile<KE, G, 1>(q, ldq, k, d, out, ldo); break;
      case 2: tile<KE, G, 2>(q, ldq, k, d, out, ldo); break;
      case 3: tile<KE, G, 3>(q, ldq, k, d, out, ldo); break;
      default: tile<KE, G, 4>(q, ldq, k, d, out, ldo); break;
    }
  }

  /// Two cells' K values i .. i + 15 as one bf16 vector: cell a in the low half, b high.
  template <class KE>
  static MNEMO_INLINE __m512bh load_k_pair(const KE* a, const KE* b, std::size_t i) noexcept {
    const auto* pa = reinterpret_cast<const __m256i*>(&a[i].bits);
    const auto* pb = reinterpret_cast<const __m256i*>(&b[i].bits);
    if constexpr (std::is_same_v<KE, dtype::bf16>) {
      return (__m512bh)_mm512_inserti64x4(_mm512_castsi256_si512(_mm256_loadu_si256(pa)),
                                          _mm256_loadu_si256(pb), 1);
    } else {
      return _mm512_cvtne2ps_pbh(_mm512_cvtph_ps(_mm256_loadu_si256(pb)),
                                 _mm512_cvtph_ps(_mm256_loadu_si256(pa)));
    }
  }

  /// out[h * ldo + c] = q_h . k_c for G = 4 or 8 rounded query rows and four key rows,
  /// 16 values of d at a time: each vector holds two cells (0 and 2, 1 and 3) against
  /// the query's 16 values twice (one chunk of round_rows, loaded whole), so a row's
  /// four sums come out of two accumulators of eight partial sums each, about two
  /// instructions per sum (a full 16-lane reduction per sum costs three and a half).
  /// @pre d % 16 == 0
  template <class KE, std::size_t G>
  static MNEMO_INLINE void tile_pairs(const float* q, std::size_t ldq, const KE* const* k,
                                      std::size_t d, float* out, std::size_t ldo) noexcept {
    static_assert(G == 4 || G == 8);
    __m512 acc[G][2];  // [row][0]: cells 0 | 2, [row][1]: cells 1 | 3
#pragma GCC unroll 8
    for (std::size_t h = 0; h < G; ++h) acc[h][0] = acc[h][1] = _mm512_setzero_ps();
    for (std::size_t i = 0; i < d; i += 16) {
      const __m512bh k02 = load_k_pair(k[0], k[2], i), k13 = load_k_pair(k[1], k[3], i);
#pragma GCC unroll 8
      for (std::size_t h = 0; h < G; ++h) {
        const __m512bh qv = (__m512bh)_mm512_loadu_si512(q + h * ldq + i);
        acc[h][0] = _mm512_dpbf16_ps(acc[h][0], qv, k02);
        acc[h][1] = _mm512_dpbf16_ps(acc[h][1], qv, k13);
      }
    }
    // Rows r, r + 1 and one accumulator: 128-bit blocks (r, c), (r, c'), (r + 1, c),
    // (r + 1, c'), each holding four partial sums.
    __m512 t[G / 2][2];
#pragma GCC unroll 4
    for (std::size_t h = 0; h < G / 2; ++h)
#pragma GCC unroll 2
      for (std::size_t p = 0; p < 2; ++p) {
        const __m512 a = acc[2 * h][p], b = acc[2 * h + 1][p];
        t[h][p] = _mm512_add_ps(_mm512_shuffle_f32x4(a, b, _MM_SHUFFLE(2, 0, 2, 0)),
                                _mm512_shuffle_f32x4(a, b, _MM_SHUFFLE(3, 1, 3, 1)));
      }
    // Blocks [(r, 0) x2, (r, 1) x2], [(r, 2) x2, (r, 3) x2], the same for r + 1: two
    // partial sums each.
    __m512 w[G / 2];
#pragma GCC unroll 4
    for (std::size_t h = 0; h < G / 2; ++h)
      w[h] = _mm512_add_ps(_mm512_shuffle_ps(t[h][0], t[h][1], _MM_SHUFFLE(1, 0, 1, 0)),
                           _mm512_shuffle_ps(t[h][0], t[h][1], _MM_SHUFFLE(3, 2, 3, 2)));
#pragma GCC unroll 2
    for (std::size_t h = 0; h < G / 4; ++h) {
      // Four rows per vector, one 128-bit block per row holding its four sums in order.
      const __m512 e = _mm512_shuffle_f32x4(w[2 * h], w[2 * h + 1], _MM_SHUFFLE(2, 0, 2, 0));
      const __m512 f = _mm512_shuffle_f32x4(w[2 * h], w[2 * h + 1], _MM_SHUFFLE(3, 1, 3, 1));
      const __m512 s = _mm512_add_ps(_mm512_shuffle_ps(e, f, _MM_SHUFFLE(2, 0, 2, 0)),
                                     _mm512_shuffle_ps(e, f, _MM_SHUFFLE(3, 1, 3, 1)));
      float* o = out + 4 * h * ldo;
      _mm_storeu_ps(o, _mm512_castps512_ps128(s));
      _mm_storeu_ps(o + ldo, _mm512_extractf32x4_ps(s, 1));
      _mm_storeu_ps(o + 2 * ldo, _mm512_extractf32x4_ps(s, 2));
      _mm_storeu_ps(o + 3 * ldo, _mm512_extractf32x4_ps(s, 3));
    }
  }

  /// out[h * ldo + c] = q_h . k_c for G <= 4 rows and C <= 4 key rows.
  template <class KE>
  static void tile_any(std::size_t G, std::size_t C, const float* q, std::size_t ldq,
                       const KE* const* k, std::size_t d, float* out, std::size_t ldo) noexcept {
    switch (G) {
      case 1: tile_c<KE, 1>(C, q, ldq, k, d, out, ldo); break;
      case 2: tile_c<KE, 2>(C, q, ldq, k, d, out, ldo); break;
      case 3: tile_c<KE, 3>(C, q, ldq, k, d, out, ldo); break;
      default: tile_c<KE, 4>(C, q, ldq, k, d, out, ldo); break;
    }
  }

  /// out[h * ldo + c] = q_h . k_c for G <= 8 rows and C <= 4 key rows: pair tiles of
  /// eight and four rows where there are four cells, tile_any for the rest.
  template <class KE>
  static void tile_rows(std::size_t G, std::size_t C, const float* q, std::size_t ldq,
                        const KE* const* k, std::size_t d, float* out, std::size_t ldo) noexcept {
    std::size_t r = 0;
    if (C == 4) {
      if (G - r >= 8) {
        tile_pairs<KE, 8>(q, ldq, k, d, out, ldo);
        r += 8;
      }
      if (G - r >= 4) {
        tile_pairs<KE, 4>(q + r * ldq, ldq, k, d, out + r * ldo, ldo);
        r += 4;
      }
    }
    for (; r < G; r += 4)
      tile_any<KE>(G - r < 4 ? G - r : 4, C, q + r * ldq, ldq, k, d, out + r * ldo, ldo);
  }

  /// The probabilities of two cells rounded to bf16 in one 32-bit word (the first cell
  /// in the low half), the broadcast operand of pair_tile.
  static MNEMO_INLINE std::uint32_t pair_word(float p0, float p1) noexcept {
    const __m128 v = _mm_set_ps(0.0f, 0.0f, p1, p0);
    return static_cast<std::uint32_t>(_mm_cvtsi128_si32((__m128i)_mm_cvtneps_pbh(v)));
  }

  /// pw[r * ldw + x] = pair_word(p_r[js[2x]], p_r[js[2x + 1]]) (0 past n_js) for R rows
  /// of probabilities p_r = p + r * ldp. Consecutive cells are rounded 32 at a time.
  /// @pre n_js > 0, js increasing
  static void pair_words(std::size_t R, const float* p, std::size_t ldp, const std::uint32_t* js,
                         std::size_t n_js, std::uint32_t* pw, std::size_t ldw) noexcept {
    if (js[n_js - 1] - js[0] != n_js - 1) {
      for (std::size_t r = 0; r < R; ++r)
        for (std::size_t x = 0; 2 * x < n_js; ++x)
          pw[r * ldw + x] = pair_word(p[r * ldp + js[2 * x]],
                                      2 * x + 1 < n_js ? p[r * ldp + js[2 * x + 1]] : 0.0f);
      return;
    }
    auto lanes = [](std::size_t k) {  // the lowest k <= 16 lanes
      return static_cast<__mmask16>((1u << k) - 1);
    };
    for (std::size_t r = 0; r < R; ++r)
      for (std::size_t c = 0; c < n_js; c += 32) {
        const float* row = p + r * ldp + js[0] + c;
        const std::size_t n = n_js - c < 32 ? n_js - c : 32;
        const __m512 lo = _mm512_maskz_loadu_ps(lanes(n < 16 ? n : 16), row);
        const __m512 hi = _mm512_maskz_loadu_ps(lanes(n > 16 ? n - 16 : 0), row + 16);
        _mm512_mask_storeu_epi32(pw + r * ldw + c / 2, lanes((n + 1) / 2),
                                 (__m512i)_mm512_cvtne2ps_pbh(hi, lo));
      }
  }

  /// o[r, n0 : n0 + 32) (16 columns where n0 + 16 == d) += the sum over pairs x of
  /// pw[r * ldw + x] . (v[2x], v[2x + 1]) for RR rows (v[2x + 1] past n_v: zeros). Each
  /// pair's V values are rounded and interleaved in registers (unpacklo / unpackhi of
  /// 16-bit words), so the accumulators hold the columns in the order 0-3, 8-11, 16-19,
  /// 24-27 (lo) and 4-7, 12-15, ... (hi), permuted from and back to o once per tile.
  /// pf.step() once per pair (a prefetch cursor spreading the caller's prefetches).
  template <class VE, std::size_t RR, class Cursor>
  static MNEMO_INLINE void pair_tile(const std::uint32_t* pw, std::size_t ldw, std::size_t pairs,
                                     const VE* const* v, std::size_t n_v, std::size_t d,
                                     std::size_t n0, float* o, std::size_t ldo,
                                     Cursor& pf) noexcept {
    alignas(64) static constexpr std::int32_t to_lo[16] = {0,  1,  2,  3,  8,  9,  10, 11,
                                                           16, 17, 18, 19, 24, 25, 26, 27};
    alignas(64) static constexpr std::int32_t to_hi[16] = {4,  5,  6,  7,  12, 13, 14, 15,
                                                           20, 21, 22, 23, 28, 29, 30, 31};
    alignas(64) static constexpr std::int32_t back0[16] = {0, 1, 2, 3, 16, 17, 18, 19,
                                                           4, 5, 6, 7, 20, 21, 22, 23};
    alignas(64) static constexpr std::int32_t back1[16] = {8,  9,  10, 11, 24, 25, 26, 27,
                                                           12, 13, 14, 15, 28, 29, 30, 31};
    const bool full = n0 + 16 < d;
    __m512 lo[RR], hi[RR];
#pragma GCC unroll 8
    for (std::size_t r = 0; r < RR; ++r) {
      const __m512 a = _mm512_loadu_ps(o + r * ldo + n0);
      const __m512 b = full ? _mm512_loadu_ps(o + r * ldo + n0 + 16) : _mm512_setzero_ps();
      lo[r] = _mm512_permutex2var_ps(a, _mm512_load_si512(to_lo), b);
      hi[r] = _mm512_permutex2var_ps(a, _mm512_load_si512(to_hi), b);
    }
    for (std::size_t x = 0; x < pairs; ++x) {
      pf.step();
      const auto va = (__m512i)load_k(v[2 * x], n0, d);
      const auto vb =
          2 * x + 1 < n_v ? (__m512i)load_k(v[2 * x + 1], n0, d) : _mm512_setzero_si512();
      const auto pl = (__m512bh)_mm512_unpacklo_epi16(va, vb);
      const auto ph = (__m512bh)_mm512_unpackhi_epi16(va, vb);
#pragma GCC unroll 8
      for (std::size_t r = 0; r < RR; ++r) {
        const auto pr = (__m512bh)_mm512_set1_epi32(static_cast<int>(pw[r * ldw + x]));
        lo[r] = _mm512_dpbf16_ps(lo[r], pl, pr);
        hi[r] = _mm512_dpbf16_ps(hi[r], ph, pr);
      }
    }
#pragma GCC unroll 8
    for (std::size_t r = 0; r < RR; ++r) {
      _mm512_storeu_ps(o + r * ldo + n0,
                       _mm512_permutex2var_ps(lo[r], _mm512_load_si512(back0), hi[r]));
      if (full)
        _mm512_storeu_ps(o + r * ldo + n0 + 16,
                         _mm512_permutex2var_ps(lo[r], _mm512_load_si512(back1), hi[r]));
    }
  }

  template <class VE, std::size_t RR, class Cursor>
  static void pair_rows(const std::uint32_t* pw, std::size_t ldw, std::size_t pairs,
                        const VE* const* v, std::size_t n_v, std::size_t d, float* o,
                        std::size_t ldo, Cursor& pf) noexcept {
    for (std::size_t n0 = 0; n0 < d; n0 += 32)
      pair_tile<VE, RR>(pw, ldw, pairs, v, n_v, d, n0, o, ldo, pf);
  }

  /// o[R, d] += P . V for R rows (d % 16 == 0) over the n_v V rows v in pairs (pw:
  /// pair_words' [R, ldw]), eight rows and 32 columns at a time; pf.step() once per
  /// pair of each tile (pair_value_steps).
  template <class VE, class Cursor>
  static void pair_values(std::size_t R, const std::uint32_t* pw, std::size_t ldw,
                          const VE* const* v, std::size_t n_v, std::size_t d, float* o,
                          std::size_t ldo, Cursor& pf) noexcept {
    const std::size_t pairs = (n_v + 1) / 2;
    for (std::size_t r = 0; r < R; r += 8) {
      const std::uint32_t* p = pw + r * ldw;
      float* out = o + r * ldo;
      switch (R - r < 8 ? R - r : 8) {
        case 1: pair_rows<VE, 1>(p, ldw, pairs, v, n_v, d, out, ldo, pf); break;
        case 2: pair_rows<VE, 2>(p, ldw, pairs, v, n_v, d, out, ldo, pf); break;
        case 3: pair_rows<VE, 3>(p, ldw, pairs, v, n_v, d, out, ldo, pf); break;
        case 4: pair_rows<VE, 4>(p, ldw, pairs, v, n_v, d, out, ldo, pf); break;
        case 5: pair_rows<VE, 5>(p, ldw, pairs, v, n_v, d, out, ldo, pf); break;
        case 6: pair_rows<VE, 6>(p, ldw, pairs, v, n_v, d, out, ldo, pf); break;
        case 7: pair_rows<VE, 7>(p, ldw, pairs, v, n_v, d, out, ldo, pf); break;
        default: pair_rows<VE, 8>(p, ldw, pairs, v, n_v, d, out, ldo, pf); break;
      }
    }
  }
  /// pair_values' calls of pf.step() for R rows, n_v V rows and d columns.
  static constexpr std::size_t pair_value_steps(std::size_t R, std::size_t n_v,
                                                std::size_t d) noexcept {
    return (R + 7) / 8 * ((d + 31) / 32) * ((n_v + 1) / 2);
  }
};
MNEMO_END_TARGET
MNEMO_END_ISA_WARNINGS
#endif

}  // namespace mnemo::attention::detail
