// model::detail::k_tile_decode: the one-token product of a k-quant weight (q2_K .. q6_K)
// whose rows are also held as tiles of 16 rows (model/q2_K_tiles.hpp .. q6_K_tiles.hpp),
// on CPUs with AVX-512 VNNI and VBMI. The integer sums and the f32 steps are quant_dot's
// (x rounded to q8_K; per super-block isum = sum_g scale_g sum_{i in g} q_i a_i and, for
// q2_K, q4_K and q5_K, msum = sum_g min_g (x's sum over g); then combine_k's products,
// each rounded on its own, added in row order), so the floats are dot()'s bit for bit.
// Only the layout differs: a 32-bit lane holds one row, so
//
//   - one vpdpbusd multiplies 4 codes of 16 rows by 4 codes of x broadcast from memory,
//     into one accumulator per scale group (signed codes, q3_K's and q6_K's, go in plus
//     4 or 32, and 4 or 32 sum_g scale_g (x's sum over g) comes back out);
//   - the scales (and mins) of 16 rows unpack together, a group's scale multiplies its
//     accumulator (vpmulld), and x's group sums meet the mins or scales as 16-bit pairs
//     (vpmaddwd);
//   - the combine runs on 16 rows at once, and each lane ends as one row's sum: no
//     shuffle, no lane reduction.
//
// On the rows, the one-token dot unpacks one row at a time in 256-bit vectors and
// reduces across lanes, and is compute bound at 7-16 GB/s per core on a Zen 4
// (docs/products.md).
#pragma once

#if !defined(MNEMO_MODEL_MATMUL_INTERNAL_)
#error "mnemo/model/detail/matmul_k_tiles.hpp is internal: include mnemo/model/matmul.hpp"
#endif

#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "mnemo/dtype/visit.hpp"
#include "mnemo/dtype/weight_blocks.hpp"
#include "mnemo/model/detail/matmul_kernels.hpp"
#include "mnemo/model/q2_K_tiles.hpp"
#include "mnemo/model/q3_K_tiles.hpp"
#include "mnemo/model/q4_K_tiles.hpp"
#include "mnemo/model/q5_K_tiles.hpp"
#include "mnemo/model/q6_K_tiles.hpp"

namespace mnemo::model::detail {

/// The k-quants with a tile layout.
template <class E>
inline constexpr bool has_k_tiles =
    std::is_same_v<E, dtype::block_q2_K> || std::is_same_v<E, dtype::block_q3_K> ||
    std::is_same_v<E, dtype::block_q4_K> || std::is_same_v<E, dtype::block_q5_K> ||
    std::is_same_v<E, dtype::block_q6_K>;

template <class Isa>
struct k_tile_decode;

/// Whether Isa has the tile kernels (the CPU must also have VNNI and VBMI:
/// simd::detail::cpu().avx512_int8).
template <class Isa>
inline constexpr bool has_k_tile_decode = false;

#if defined(MNEMO_ARCH_X86_64)
template <>
inline constexpr bool has_k_tile_decode<simd::avx512> = true;

MNEMO_BEGIN_ISA_WARNINGS
MNEMO_BEGIN_TARGET_(MNEMO_TARGET_FEATURES_AVX512 ",avx512vnni,avx512vbmi")
template <>
struct k_tile_decode<simd::avx512> {
  using MK = matmul_kernels<simd::avx512>;

  /// Byte J of each 32-bit lane of v as a 32-bit lane, zero- or sign-extended.
  template <int J, bool Signed>
  static MNEMO_INLINE __m512i byte_(__m512i v) noexcept {
    if constexpr (Signed) return _mm512_srai_epi32(_mm512_slli_epi32(v, 24 - 8 * J), 24);
    if constexpr (J == 3) return _mm512_srli_epi32(v, 24);
    return _mm512_and_si512(_mm512_srli_epi32(v, 8 * J), _mm512_set1_epi32(0xff));
  }

  /// sum_j s[4 k + j] * byte j of each lane of `scales` (4 groups' scales per lane).
  template <bool Signed>
  static MNEMO_INLINE __m512i scaled4_(const __m512i* s, __m512i scales, __m512i acc) noexcept {
    acc = _mm512_add_epi32(acc, _mm512_mullo_epi32(s[0], byte_<0, Signed>(scales)));
    acc = _mm512_add_epi32(acc, _mm512_mullo_epi32(s[1], byte_<1, Signed>(scales)));
    acc = _mm512_add_epi32(acc, _mm512_mullo_epi32(s[2], byte_<2, Signed>(scales)));
    return _mm512_add_epi32(acc, _mm512_mullo_epi32(s[3], byte_<3, Signed>(scales)));
  }

  /// The 16-bit pair (lo, hi) broadcast to every 32-bit lane.
  static MNEMO_INLINE __m512i pair_(int lo, int hi) noexcept {
    return _mm512_set1_epi32(
        static_cast<int>(static_cast<std::uint16_t>(lo) | static_cast<std::uint32_t>(hi) << 16));
  }

  /// sum_i byte i of each lane of v times x_i, zero- or sign-extended bytes: two 16-bit
  /// pairs (bytes 0 and 2, then 1 and 3) against x broadcast as pairs.
  template <bool Signed>
  static MNEMO_INLINE __m512i bytes_dot_(__m512i v, int x0, int x1, int x2, int x3) noexcept {
    __m512i even, odd;
    if constexpr (Signed) {
      even = _mm512_srai_epi16(_mm512_slli_epi16(v, 8), 8);
      odd = _mm512_srai_epi16(v, 8);
    } else {
      even = _mm512_and_si512(v, _mm512_set1_epi32(0x00ff00ff));
      odd = _mm512_srli_epi16(v, 8);
    }
    return _mm512_add_epi32(_mm512_madd_epi16(even, pair_(x0, x2)),
                            _mm512_madd_epi16(odd, pair_(x1, x3)));
  }

  /// acc (lane r: row r) += or -= (d da) isum, as combine_k does for one row, d the 16
  /// rows' f16 scales at d16, the product rounded on its own (the asm keeps it out of a
  /// fused multiply-add).
  template <bool Subtract = false>
  static MNEMO_INLINE void add_scaled_(const unsigned char* d16, float da, __m512i isum,
                                       __m512& acc) noexcept {
    const __m512 d = _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(d16)));
    __m512 p = _mm512_mul_ps(_mm512_mul_ps(d, _mm512_set1_ps(da)), _mm512_cvtepi32_ps(isum));
    __asm__("" : "+v"(p));
    acc = Subtract ? _mm512_sub_ps(acc, p) : _mm512_add_ps(acc, p);
  }

  /// acc (lane r: row r) takes one q4_K or q5_K super-block of the tile at p against x
  /// block a: + (d da) isum, then - (dmin da) msum.
  template <class E>
  static MNEMO_INLINE void block_(const unsigned char* p, const dtype::block_q8_K& a, __m512& acc,
                                  dtype::type_tag<E>) noexcept {
    static_assert(std::is_same_v<E, dtype::block_q4_K> || std::is_same_v<E, dtype::block_q5_K>);
    constexpr bool fifth_bit = std::is_same_v<E, dtype::block_q5_K>;
    const __m512i nib = _mm512_set1_epi8(0x0f), sixteen = _mm512_set1_epi8(16);
    const auto* xw = reinterpret_cast<const std::int32_t*>(a.qs);
    const auto* codes = reinterpret_cast<const __m512i*>(
        p + (fifth_bit ? k_q5_K_tile_codes_at : k_q4_K_tile_codes_at));
    const auto* qh = reinterpret_cast<const __m512i*>(p + k_q5_K_tile_qh_at);
    // s[2 c]: sub-block 2 c (low nibbles of vectors 8 c ..), s[2 c + 1]: 2 c + 1 (high)
    __m512i s[8];
    for (auto& v : s) v = _mm512_setzero_si512();
    for (std::size_t k = 0; k < 8; ++k) {
      __m512i h = _mm512_setzero_si512();
      if constexpr (fifth_bit) h = _mm512_loadu_si512(qh + k);
      for (std::size_t c = 0; c < 4; ++c) {
        const __m512i v = _mm512_loadu_si512(codes + 8 * c + k);
        __m512i lo = _mm512_and_si512(v, nib), hi = _mm512_and_si512(_mm512_srli_epi16(v, 4), nib);
        if constexpr (fifth_bit) {  // + 16 where bit 2 c (low) or 2 c + 1 (high) of qh is set
          const __m512i bit_lo = _mm512_set1_epi8(static_cast<char>(1u << (2 * c)));
          lo = _mm512_mask_add_epi8(lo, _mm512_test_epi8_mask(h, bit_lo), lo, sixteen);
          hi = _mm512_mask_add_epi8(hi, _mm512_test_epi8_mask(h, _mm512_add_epi8(bit_lo, bit_lo)),
                                    hi, sixteen);
        }
        s[2 * c] = _mm512_dpbusd_epi32(s[2 * c], lo, _mm512_set1_epi32(xw[16 * c + k]));
        s[2 * c + 1] = _mm512_dpbusd_epi32(s[2 * c + 1], hi, _mm512_set1_epi32(xw[16 * c + 8 + k]));
      }
    }
    // k4_scale_words per lane: scales and mins of sub-blocks 0..3 and 4..7, a byte each
    const auto* packed = reinterpret_cast<const __m512i*>(p + k_q4_K_tile_scales_at);
    const __m512i w0 = _mm512_loadu_si512(packed), w1 = _mm512_loadu_si512(packed + 1),
                  w2 = _mm512_loadu_si512(packed + 2);
    const __m512i low6 = _mm512_set1_epi32(0x3f3f3f3f), low4 = _mm512_set1_epi32(0x0f0f0f0f),
                  top2 = _mm512_set1_epi32(0x30303030);
    const __m512i sc0 = _mm512_and_si512(w0, low6);
    const __m512i sc1 = _mm512_or_si512(_mm512_and_si512(w2, low4),
                                        _mm512_and_si512(_mm512_srli_epi32(w0, 2), top2));
    const __m512i mn0 = _mm512_and_si512(w1, low6);
    const __m512i mn1 = _mm512_or_si512(_mm512_and_si512(_mm512_srli_epi32(w2, 4), low4),
                                        _mm512_and_si512(_mm512_srli_epi32(w1, 2), top2));
    const __m512i isum =
        scaled4_<false>(s + 4, sc1, scaled4_<false>(s, sc0, _mm512_setzero_si512()));
    // the mins against x's sums over the sub-blocks
    int xs[8];
    for (std::size_t j = 0; j < 8; ++j) xs[j] = a.bsums[2 * j] + a.bsums[2 * j + 1];
    const __m512i msum = _mm512_add_epi32(bytes_dot_<false>(mn0, xs[0], xs[1], xs[2], xs[3]),
                                          bytes_dot_<false>(mn1, xs[4], xs[5], xs[6], xs[7]));
    add_scaled_(p, a.d, isum, acc);
    add_scaled_<true>(p + k_q4_K_tile_d_bytes, a.d, msum, acc);  // dmin
  }

  /// s[g] = the codes of scale group g (as unsigned bytes) . x, for the types whose
  /// codes come in groups of 16 and lanes of 4 consecutive values: codes(h, j, u) gives
  /// in u[k] the codes of values 128 h + 32 k + 4 j .. 128 h + 32 k + 4 j + 3 (group
  /// 8 h + 2 k + j / 4) of the 16 rows.
  template <class Codes>
  static MNEMO_INLINE void group16_sums_(const Codes& codes, const dtype::block_q8_K& a,
                                         __m512i (&s)[16]) noexcept {
    const auto* xw = reinterpret_cast<const std::int32_t*>(a.qs);
    for (auto& v : s) v = _mm512_setzero_si512();
    for (std::size_t h = 0; h < 2; ++h)
      for (std::size_t j = 0; j < 8; ++j) {
        __m512i u[4];
        codes(h, j, u);
        for (std::size_t k = 0; k < 4; ++k) {
          const std::size_t g = 8 * h + 2 * k + j / 4;
          s[g] = _mm512_dpbusd_epi32(s[g], u[k], _mm512_set1_epi32(xw[32 * h + 8 * k + j]));
        }
      }
  }

  /// isum of signed scales sc[k] (groups 4 k .. 4 k + 3, a byte each) for codes that went
  /// in plus `offset`: sum_g scale_g s_g - offset sum_g scale_g (x's sum over g).
  static MNEMO_INLINE __m512i signed_isum_(const __m512i (&s)[16], const __m512i (&sc)[4],
                                           const dtype::block_q8_K& a, int offset) noexcept {
    __m512i isum = _mm512_setzero_si512(), back = _mm512_setzero_si512();
    for (std::size_t k = 0; k < 4; ++k) {
      isum = scaled4_<true>(s + 4 * k, sc[k], isum);
      const std::int16_t* bs = a.bsums + 4 * k;
      back = _mm512_add_epi32(back, bytes_dot_<true>(sc[k], bs[0], bs[1], bs[2], bs[3]));
    }
    return _mm512_sub_epi32(isum, _mm512_mullo_epi32(back, _mm512_set1_epi32(offset)));
  }

  /// q6_K's codes plus 32: the low 4 bits from ql, bits 2 k and 2 k + 1 of qh as 4 and 5.
  struct q6_codes_ {
    const __m512i* ql;
    const __m512i* qh;
    MNEMO_INLINE void operator()(std::size_t h, std::size_t j, __m512i (&u)[4]) const noexcept {
      const __m512i m4 = _mm512_set1_epi8(0x0f), m2 = _mm512_set1_epi8(0x30);
      const __m512i l0 = _mm512_loadu_si512(ql + 16 * h + j);
      const __m512i l1 = _mm512_loadu_si512(ql + 16 * h + 8 + j);
      const __m512i hb = _mm512_loadu_si512(qh + 8 * h + j);
      u[0] =
          _mm512_or_si512(_mm512_and_si512(l0, m4), _mm512_and_si512(_mm512_slli_epi16(hb, 4), m2));
      u[1] =
          _mm512_or_si512(_mm512_and_si512(l1, m4), _mm512_and_si512(_mm512_slli_epi16(hb, 2), m2));
      u[2] =
          _mm512_or_si512(_mm512_and_si512(_mm512_srli_epi16(l0, 4), m4), _mm512_and_si512(hb, m2));
      u[3] = _mm512_or_si512(_mm512_and_si512(_mm512_srli_epi16(l1, 4), m4),
                             _mm512_and_si512(_mm512_srli_epi16(hb, 2), m2));
    }
  };

  /// q2_K's codes (bits 2 k, 2 k + 1 of qs) and, with HighBit (bit 4 h + k of hmask,
  /// plus 4 where set), q3_K's codes plus 4.
  template <bool HighBit>
  struct q2_codes_ {
    const __m512i* qs;
    const __m512i* hmask;  // read with HighBit only
    MNEMO_INLINE void operator()(std::size_t h, std::size_t j, __m512i (&u)[4]) const noexcept {
      const __m512i m2 = _mm512_set1_epi8(3);
      const __m512i v = _mm512_loadu_si512(qs + 8 * h + j);
      u[0] = _mm512_and_si512(v, m2);
      u[1] = _mm512_and_si512(_mm512_srli_epi16(v, 2), m2);
      u[2] = _mm512_and_si512(_mm512_srli_epi16(v, 4), m2);
      u[3] = _mm512_and_si512(_mm512_srli_epi16(v, 6), m2);
      if constexpr (HighBit) {
        const __m512i hb = _mm512_loadu_si512(hmask + j), four = _mm512_set1_epi8(4);
        for (std::size_t k = 0; k < 4; ++k) {
          const __m512i bit = _mm512_set1_epi8(static_cast<char>(1u << (4 * h + k)));
          u[k] = _mm512_mask_add_epi8(u[k], _mm512_test_epi8_mask(hb, bit), u[k], four);
        }
      }
    }
  };

  /// The same for one q6_K super-block: + (d da) isum.
  static MNEMO_INLINE void block_(const unsigned char* p, const dtype::block_q8_K& a, __m512& acc,
                                  dtype::type_tag<dtype::block_q6_K>) noexcept {
    __m512i s[16];
    group16_sums_(q6_codes_{reinterpret_cast<const __m512i*>(p + k_q6_K_tile_ql_at),
                            reinterpret_cast<const __m512i*>(p + k_q6_K_tile_qh_at)},
                  a, s);
    const auto* scales = reinterpret_cast<const __m512i*>(p + k_q6_K_tile_scales_at);
    const __m512i sc[4] = {_mm512_loadu_si512(scales), _mm512_loadu_si512(scales + 1),
                           _mm512_loadu_si512(scales + 2), _mm512_loadu_si512(scales + 3)};
    add_scaled_(p, a.d, signed_isum_(s, sc, a, 32), acc);
  }

  /// The same for one q3_K super-block: + (d da) isum, its 6-bit scales minus 32 unpacked
  /// lane-wise as dtype's q3_scale does per row.
  static MNEMO_INLINE void block_(const unsigned char* p, const dtype::block_q8_K& a, __m512& acc,
                                  dtype::type_tag<dtype::block_q3_K>) noexcept {
    __m512i s[16];
    group16_sums_(q2_codes_<true>{reinterpret_cast<const __m512i*>(p + k_q3_K_tile_codes_at),
                                  reinterpret_cast<const __m512i*>(p + k_q3_K_tile_hmask_at)},
                  a, s);
    const auto* packed = reinterpret_cast<const __m512i*>(p + k_q3_K_tile_scales_at);
    const __m512i w0 = _mm512_loadu_si512(packed), w1 = _mm512_loadu_si512(packed + 1),
                  w2 = _mm512_loadu_si512(packed + 2);
    const __m512i low4 = _mm512_set1_epi32(0x0f0f0f0f), top2 = _mm512_set1_epi32(0x30303030),
                  bias = _mm512_set1_epi8(32);
    // groups 0..3, 4..7: low nibbles of bytes 0..3, 4..7; 8..11, 12..15: their high
    // nibbles; the top two bits from bytes 8..11, bits 2 (g / 4), 2 (g / 4) + 1
    const __m512i sc[4] = {
        _mm512_sub_epi8(_mm512_or_si512(_mm512_and_si512(w0, low4),
                                        _mm512_and_si512(_mm512_slli_epi32(w2, 4), top2)),
                        bias),
        _mm512_sub_epi8(_mm512_or_si512(_mm512_and_si512(w1, low4),
                                        _mm512_and_si512(_mm512_slli_epi32(w2, 2), top2)),
                        bias),
        _mm512_sub_epi8(_mm512_or_si512(_mm512_and_si512(_mm512_srli_epi32(w0, 4), low4),
                                        _mm512_and_si512(w2, top2)),
                        bias),
        _mm512_sub_epi8(_mm512_or_si512(_mm512_and_si512(_mm512_srli_epi32(w1, 4), low4),
                                        _mm512_and_si512(_mm512_srli_epi32(w2, 2), top2)),
                        bias)};
    add_scaled_(p, a.d, signed_isum_(s, sc, a, 4), acc);
  }

  /// The same for one q2_K super-block: + (d da) isum - (dmin da) msum, each group's
  /// scale in the low nibble of its byte and its min in the high one.
  static MNEMO_INLINE void block_(const unsigned char* p, const dtype::block_q8_K& a, __m512& acc,
                                  dtype::type_tag<dtype::block_q2_K>) noexcept {
    __m512i s[16];
    group16_sums_(
        q2_codes_<false>{reinterpret_cast<const __m512i*>(p + k_q2_K_tile_codes_at), nullptr}, a,
        s);
    const auto* scales = reinterpret_cast<const __m512i*>(p + k_q2_K_tile_scales_at);
    const __m512i low4 = _mm512_set1_epi32(0x0f0f0f0f);
    __m512i isum = _mm512_setzero_si512(), msum = _mm512_setzero_si512();
    for (std::size_t k = 0; k < 4; ++k) {
      const __m512i v = _mm512_loadu_si512(scales + k);
      isum = scaled4_<false>(s + 4 * k, _mm512_and_si512(v, low4), isum);
      const std::int16_t* bs = a.bsums + 4 * k;
      msum =
          _mm512_add_epi32(msum, bytes_dot_<false>(_mm512_and_si512(_mm512_srli_epi32(v, 4), low4),
                                                   bs[0], bs[1], bs[2], bs[3]));
    }
    add_scaled_(p, a.d, isum, acc);
    add_scaled_<true>(p + 2 * k_tile_rows, a.d, msum, acc);  // dmin
  }

  /// y[16 t + r] = x . row r of tile t for n_tiles tiles of nb super-blocks of E at
  /// `tiles`, x given as nb q8_K blocks: [16 n_tiles] f32 y. One sequential stream,
  /// prefetched a fixed distance ahead and never past the range, with page walks
  /// started ahead once per tile, as the q4_0 tiles' kernel does. A row's sum does not
  /// depend on the other rows or on how the tiles are split between threads.
  template <class E>
  static void gemv(const unsigned char* tiles, std::size_t n_tiles, std::size_t nb,
                   const dtype::block_q8_K* x, float* y) noexcept {
    constexpr std::size_t block_bytes = k_tile_rows * sizeof(E);
    const std::size_t tile_bytes = nb * block_bytes;
    const auto base = reinterpret_cast<std::uintptr_t>(tiles);
    MK::decode_stream s(base, base + n_tiles * tile_bytes, simd::current_prefetch_target());
    s.advance(base);
    for (std::size_t t = 0; t < n_tiles; ++t) {
      const unsigned char* tile = tiles + t * tile_bytes;
      s.touch(reinterpret_cast<std::uintptr_t>(tile + tile_bytes));
      __m512 acc = _mm512_setzero_ps();
      for (std::size_t b = 0; b < nb; ++b) {
        const unsigned char* p = tile + b * block_bytes;
        s.advance(reinterpret_cast<std::uintptr_t>(p + block_bytes));
        block_(p, x[b], acc, dtype::type_tag<E>{});
      }
      _mm512_storeu_ps(y + k_tile_rows * t, acc);
    }
  }
};
MNEMO_END_TARGET
MNEMO_END_ISA_WARNINGS
#endif

}  // namespace mnemo::model::detail
