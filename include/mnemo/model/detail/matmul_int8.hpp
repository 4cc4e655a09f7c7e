// model::detail::int8_decode: the one-token product for q8_0 and q4_0 weights on CPUs
// with AVX-512 VNNI and VBMI (Ice Lake, Zen 4 and later), y[o] = x . W[o] in 8-bit
// integers, as ggml's vec_dot_q4_0_q8_0 / vec_dot_q8_0_q8_0 define it:
//
//   x is first rounded to q8_0 (ggml's quantize_row_q8_0: per 32 values a scale
//   dx = max|x| / 127 stored as f16, codes round(x / dx)); then per block
//   dot = dw * dx * sum_j (w code_j) * (x code_j), the integer sum exact.
//
// mul_mat rounds x through q8_0 for these weights on every path and ISA (it dequantises
// the codes for the f32 kernels), so this kernel and the others compute the same
// products up to the order of the f32 sums. Here, one vpdpbusd multiplies 64 unsigned
// weight codes by 64 signed x codes into 16 lanes of 4 products each, where the f32
// kernels decode every weight code to a float first: the f32 decode loop was compute
// bound at 19 (q4_0) and 35 (q8_0) GB/s per core (docs/products.md).
//
// vpdpbusd takes one unsigned operand: q4_0 codes are 0..15 (value code - 8) and q8_0
// codes are offset by 128 (xor 0x80), so each lane starts from a bias of -8 (or -128)
// times the sum of its x codes, precomputed once per call. q4_0 codes are not moved:
// x is laid out at their byte positions in a 3-block load (int8_x_group).
#pragma once

#if !defined(MNEMO_MODEL_MATMUL_INTERNAL_)
#error "mnemo/model/detail/matmul_int8.hpp is internal: include mnemo/model/matmul.hpp"
#endif

#include <array>
#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "mnemo/base/config.hpp"
#include "mnemo/dtype/row_kernels.hpp"
#include "mnemo/model/detail/matmul_kernels.hpp"
#include "mnemo/simd/cpu.hpp"
#include "mnemo/simd/simd.hpp"

namespace mnemo::model::detail {

/// A group of blocks of x rounded to q8_0 (3 for q4_0 weights, 2 for q8_0), laid out for
/// the kernel: the codes at the byte positions of the weight codes they multiply (`lo`,
/// and `hi` for the high nibbles of q4_0; zero elsewhere), and per 32-bit lane of a
/// vpdpbusd (four codes, never of two blocks) its block's dx and the lane's bias.
/// Missing blocks (the last group of a row) are all zeros.
struct alignas(64) int8_x_group {
  std::int8_t lo[64];
  std::int8_t hi[64];
  float dx[16];
  std::int32_t bias[16];
};

/// Floats of workspace that one thread's packed x of n_in values takes (whole groups of
/// at least 2 blocks).
constexpr std::size_t int8_x_floats(std::size_t n_in) noexcept {
  return (n_in + 63) / 64 * (sizeof(int8_x_group) / sizeof(float));
}

/// The kernel, for the ISAs that have one (the CPU must also have VNNI and VBMI:
/// simd::detail::cpu().avx512_int8).
template <class Isa>
struct int8_decode;

template <class Isa>
inline constexpr bool has_int8_decode = false;

#if defined(MNEMO_ARCH_X86_64)
MNEMO_BEGIN_ISA_WARNINGS
template <>
inline constexpr bool has_int8_decode<simd::avx512> = true;

MNEMO_BEGIN_TARGET_(MNEMO_TARGET_FEATURES_AVX512 ",avx512vnni,avx512vbmi")
template <>
struct int8_decode<simd::avx512> {
  using codes = dtype::detail::block_codes<simd::avx512>;
  using MK = matmul_kernels<simd::avx512>;

  template <class E>
  static constexpr bool q4_ = std::is_same_v<E, dtype::block_q4_0>;

  /// Blocks per group: one 64-byte load holds 3 q4_0 blocks (54 bytes) and their codes
  /// map to lanes of one block each; q8_0 codes (32 bytes a block) fill a vector per 2.
  template <class E>
  static constexpr std::size_t group_blocks_ = q4_<E> ? 3 : 2;

  /// Where block j's 32 codes sit in the vectors: q4_0, at its code bytes in the group's
  /// load (18 j + 2 .. 18 j + 17, low nibbles in lo, high in hi); q8_0, at 32 j .. 32 j + 31.
  template <class E>
  static constexpr std::size_t code_at_(std::size_t j) noexcept {
    return q4_<E> ? j * sizeof(E) + 2 : j * 32;
  }

  /// The block whose codes lane l (bytes 4 l .. 4 l + 3) holds, or group_blocks_ if none.
  template <class E>
  static constexpr std::size_t block_of_lane_(std::size_t l) noexcept {
    for (std::size_t j = 0; j < group_blocks_<E>; ++j)
      if (4 * l + 3 >= code_at_<E>(j) && 4 * l < code_at_<E>(j) + (q4_<E> ? 16 : 32)) return j;
    return group_blocks_<E>;
  }

  /// Each lane's codes belong to at most one block (the layout above).
  template <class E>
  static constexpr bool lanes_of_one_block_() noexcept {
    for (std::size_t l = 0; l < 16; ++l) {
      std::size_t n = 0;
      for (std::size_t j = 0; j < group_blocks_<E>; ++j)
        n += 4 * l + 3 >= code_at_<E>(j) && 4 * l < code_at_<E>(j) + (q4_<E> ? 16 : 32);
      if (n > 1) return false;
    }
    return true;
  }

  /// vpermw indices spreading each block's f16 scale (word j * sizeof(E) / 2 of the
  /// load) over its lanes. Only q4_0 has lanes of no block (14 and 15); they take word
  /// 31, which its masked loads leave zero (their dx is 0 too, and 0 * inf is NaN).
  template <class E>
  alignas(64) static constexpr std::array<std::uint16_t, 32> scale_words_ = [] {
    std::array<std::uint16_t, 32> a{};
    for (std::size_t l = 0; l < 16; ++l) {
      const std::size_t j = block_of_lane_<E>(l);
      a[l] = static_cast<std::uint16_t>(j < group_blocks_<E> ? j * sizeof(E) / 2 : 31);
    }
    return a;
  }();

  /// Load masks of a group of k blocks.
  template <class E>
  static constexpr __mmask64 group_mask_(std::size_t k) noexcept {
    return (__mmask64{1} << (k * sizeof(E))) - 1;
  }

  template <class E>
  static constexpr std::int32_t bias_factor_ = q4_<E> ? -8 : -128;

  /// Lanes that hold codes of a block, and that block's index (0 for the others).
  template <class E>
  static constexpr __mmask16 lanes_with_block_ = [] {
    unsigned m = 0;
    for (std::size_t l = 0; l < 16; ++l) m |= (block_of_lane_<E>(l) < group_blocks_<E>) << l;
    return static_cast<__mmask16>(m);
  }();
  template <class E>
  alignas(64) static constexpr std::array<std::int32_t, 16> lane_blocks_ = [] {
    std::array<std::int32_t, 16> a{};
    for (std::size_t l = 0; l < 16; ++l)
      a[l] = static_cast<std::int32_t>(block_of_lane_<E>(l) % group_blocks_<E>);
    return a;
  }();

  /// q4_0: byte p of a group's code vector holds code p - code_at_(j) of block j's half
  /// (low or high), which vpermb takes from byte 16 j + p - code_at_(j) of the three
  /// halves side by side; bytes of no block are masked off.
  template <class E>
  alignas(64) static constexpr std::array<std::uint8_t, 64> q4_code_source_ = [] {
    std::array<std::uint8_t, 64> a{};
    for (std::size_t j = 0; j < 3; ++j)
      for (std::size_t i = 0; i < 16; ++i)
        a[code_at_<E>(j) + i] = static_cast<std::uint8_t>(16 * j + i);
    return a;
  }();
  template <class E>
  static constexpr __mmask64 q4_code_mask_ = [] {
    std::uint64_t m = 0;
    for (std::size_t j = 0; j < 3; ++j) m |= std::uint64_t{0xffff} << code_at_<E>(j);
    return m;
  }();

  /// Blocks of x whose q8_0 scales are computed together, 16 per vector operation.
  template <class E>
  static constexpr std::size_t pack_chunk_ = 16 * group_blocks_<E>;

  /// The q8_0 scales of nb <= pack_chunk_ blocks of x, with encode's arithmetic:
  /// d = max|x| / 127, id = 1 / d (0 when d is 0), and dx = d stored as f16 and read back
  /// (what the codes stand for). The lanes from nb on, and 16 more of dx, are 0.
  template <class E>
  static MNEMO_INLINE void block_scales_(const float* x, std::size_t nb, float* id,
                                         float* dx) noexcept {
    constexpr std::size_t chunk = pack_chunk_<E>;
    alignas(64) float amax[chunk];
    for (std::size_t b = 0; b < chunk; ++b) amax[b] = b < nb ? codes::abs_max(x + 32 * b) : 0.0f;
    for (std::size_t v = 0; v < chunk; v += 16) {
      const __m512 d = _mm512_div_ps(_mm512_load_ps(amax + v), _mm512_set1_ps(127.0f));
      const __mmask16 nonzero = _mm512_cmp_ps_mask(d, _mm512_setzero_ps(), _CMP_NEQ_UQ);
      _mm512_store_ps(id + v, _mm512_maskz_div_ps(nonzero, _mm512_set1_ps(1.0f), d));
      _mm512_store_ps(dx + v, _mm512_cvtph_ps(_mm512_cvtps_ph(
                                  d, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC)));
    }
    _mm512_store_ps(dx + chunk, _mm512_setzero_ps());
  }

  /// One group of k blocks of x (id and dx: its blocks' scales) laid out as int8_x_group.
  template <class E>
  static MNEMO_INLINE void pack_group_(const float* x, std::size_t k, const float* id,
                                       const float* dx, int8_x_group* out) noexcept {
    constexpr std::size_t G = group_blocks_<E>;
    __m128i c[2 * G];  // the codes of each half block
    for (std::size_t h = 0; h < 2 * G; ++h)
      c[h] = h / 2 < k ? codes::q8_codes16(x + 16 * h, _mm512_set1_ps(id[h / 2]))
                       : _mm_setzero_si128();
    __m512i lo, hi = _mm512_setzero_si512();
    if constexpr (q4_<E>) {  // first halves to the low nibbles' bytes, second to the high
      const __m512i idx = _mm512_load_si512(q4_code_source_<E>.data());
      const auto halves = [&](std::size_t h) {
        return _mm512_inserti32x4(_mm512_inserti32x4(_mm512_zextsi128_si512(c[h]), c[h + 2], 1),
                                  c[h + 4], 2);
      };
      lo = _mm512_maskz_permutexvar_epi8(q4_code_mask_<E>, idx, halves(0));
      hi = _mm512_maskz_permutexvar_epi8(q4_code_mask_<E>, idx, halves(1));
    } else {
      lo = _mm512_inserti32x4(
          _mm512_inserti32x4(_mm512_inserti32x4(_mm512_zextsi128_si512(c[0]), c[1], 1), c[2], 2),
          c[3], 3);
    }
    const __m512i ones = _mm512_set1_epi8(1);
    __m512i sums = _mm512_dpbusd_epi32(_mm512_setzero_si512(), ones, lo);
    if constexpr (q4_<E>) sums = _mm512_dpbusd_epi32(sums, ones, hi);
    _mm512_store_si512(out->lo, lo);
    _mm512_store_si512(out->hi, hi);
    _mm512_store_ps(out->dx, _mm512_maskz_permutexvar_ps(lanes_with_block_<E>,
                                                         _mm512_load_si512(lane_blocks_<E>.data()),
                                                         _mm512_loadu_ps(dx)));
    _mm512_store_si512(out->bias, _mm512_mullo_epi32(sums, _mm512_set1_epi32(bias_factor_<E>)));
  }

  /// x [n] f32 -> ceil(n / 32 / group_blocks_) groups, for weights of type E: the codes
  /// and scales of dtype's q8_0 encoder, bit for bit. @pre n % 32 == 0
  template <class E>
  static void pack(const float* x, std::size_t n, int8_x_group* out) noexcept {
    static_assert(lanes_of_one_block_<E>());
    constexpr std::size_t G = group_blocks_<E>, chunk = pack_chunk_<E>;
    const std::size_t n_blocks = n / 32;
    for (std::size_t b0 = 0; b0 < n_blocks; b0 += chunk) {
      const std::size_t nb = n_blocks - b0 < chunk ? n_blocks - b0 : chunk;
      alignas(64) float id[chunk], dx[chunk + 16];
      block_scales_<E>(x + b0 * 32, nb, id, dx);
      for (std::size_t j = 0; j < nb; j += G)
        pack_group_<E>(x + (b0 + j) * 32, nb - j < G ? nb - j : G, id + j, dx + j,
                       out + (b0 + j) / G);
    }
  }

  /// The x vectors of one group.
  struct x_regs {
    __m512i lo, hi, bias;
    __m512 dx;
  };

  static MNEMO_INLINE x_regs load_x_(const int8_x_group& x) noexcept {
    return {_mm512_load_si512(x.lo), _mm512_load_si512(x.hi), _mm512_load_si512(x.bias),
            _mm512_load_ps(x.dx)};
  }

  /// acc += the products of one group of k blocks of E at b, scaled per block: 16 lanes of
  /// partial sums. `whole`: k is group_blocks_ (else the load stops at k blocks).
  template <class E>
  static MNEMO_INLINE void group_dot_(const unsigned char* b, bool whole, std::size_t k,
                                      const x_regs& x, __m512& acc) noexcept {
    __m512i a, dot;
    if constexpr (q4_<E>) {
      // Weight codes stay at their byte positions: the low and high nibbles of each byte
      // are two vectors; the scale bytes among them meet x codes of 0.
      a = _mm512_maskz_loadu_epi8(group_mask_<E>(whole ? group_blocks_<E> : k), b);
      const __m512i nib = _mm512_set1_epi8(0x0f);
      const __m512i lo = _mm512_and_si512(a, nib);
      const __m512i hi = _mm512_and_si512(_mm512_srli_epi16(a, 4), nib);
      dot = _mm512_dpbusd_epi32(_mm512_dpbusd_epi32(x.bias, lo, x.lo), hi, x.hi);
    } else {
      // 34-byte blocks: codes at 2..33 and 36..67, offset by 128 to be unsigned.
      const __m256i c0 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b + 2));
      __m512i codes;
      if (whole) {
        a = _mm512_loadu_si512(b);
        const __m256i c1 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b + 36));
        codes = _mm512_inserti64x4(_mm512_castsi256_si512(c0), c1, 1);
      } else {
        a = _mm512_maskz_loadu_epi8(group_mask_<E>(1), b);
        codes = _mm512_zextsi256_si512(c0);
      }
      codes = _mm512_xor_si512(codes, _mm512_set1_epi8(static_cast<char>(0x80)));
      dot = _mm512_dpbusd_epi32(x.bias, codes, x.lo);
    }
    const __m512i d_idx = _mm512_loadu_si512(scale_words_<E>.data());
    const __m512 dw = _mm512_cvtph_ps(_mm512_castsi512_si256(_mm512_permutexvar_epi16(d_idx, a)));
    acc = _mm512_fmadd_ps(_mm512_cvtepi32_ps(dot), _mm512_mul_ps(dw, x.dx), acc);
  }

  /// Lane sums of x . one row of n_blocks blocks of E at w. The stream's lines are
  /// prefetched up to `stop` (a fixed distance past the row's end), `per_pair` lines per
  /// two groups. Two accumulators (groups in pairs), so that the fma of one group does
  /// not wait for the previous one.
  template <class E>
  static MNEMO_INLINE __m512 dot_row_(const unsigned char* w, std::size_t n_blocks,
                                      const int8_x_group* x, MK::decode_stream& s,
                                      std::size_t per_pair, std::uintptr_t stop) noexcept {
    constexpr std::size_t G = group_blocks_<E>, group_bytes = G * sizeof(E);
    const std::size_t n_whole = n_blocks / G, tail = n_blocks % G;
    std::uintptr_t pf = s.pf;  // a local copy stays in a register
    __m512 acc0 = _mm512_setzero_ps(), acc1 = _mm512_setzero_ps();
    std::size_t g = 0;
    for (; g + 2 <= n_whole; g += 2) {
      for (std::size_t i = 0; i < per_pair && pf < stop; ++i, pf += 64)
        simd::prefetch(reinterpret_cast<const void*>(pf), s.target);
      group_dot_<E>(w + g * group_bytes, true, G, load_x_(x[g]), acc0);
      group_dot_<E>(w + (g + 1) * group_bytes, true, G, load_x_(x[g + 1]), acc1);
    }
    if (g < n_whole) group_dot_<E>(w + g * group_bytes, true, G, load_x_(x[g]), acc0);
    if (tail != 0) group_dot_<E>(w + n_whole * group_bytes, false, tail, load_x_(x[n_whole]), acc1);
    MK::prefetch_lines(pf, stop, s.target);
    s.pf = pf;
    return _mm512_add_ps(acc0, acc1);
  }

  /// Lane i = the sum of the lanes of a[i]: a transpose-and-add tree, 15 adds and 30
  /// shuffles for 16 rows where 16 separate reductions take 64 of each. Each lane's
  /// order of additions depends only on its own vector, so a row's sum does not depend
  /// on which rows share the tree (1 and 2 threads agree bit for bit).
  static MNEMO_INLINE __m512 sum_lanes16_(const __m512 (&a)[16]) noexcept {
    __m512 t[8], u[4], v[2];
    for (std::size_t i = 0; i < 8; ++i)  // per 128-bit lane: [a0 + a2, b0 + b2, a1 + a3, b1 + b3]
      t[i] = _mm512_add_ps(_mm512_unpacklo_ps(a[2 * i], a[2 * i + 1]),
                           _mm512_unpackhi_ps(a[2 * i], a[2 * i + 1]));
    for (std::size_t i = 0; i < 4; ++i)  // per 128-bit lane: the 4 rows' sums of that lane
      u[i] = _mm512_add_ps(_mm512_shuffle_ps(t[2 * i], t[2 * i + 1], _MM_SHUFFLE(1, 0, 1, 0)),
                           _mm512_shuffle_ps(t[2 * i], t[2 * i + 1], _MM_SHUFFLE(3, 2, 3, 2)));
    for (std::size_t i = 0; i < 2; ++i)  // 128-bit lanes 0 + 1 and 2 + 3 of two u
      v[i] = _mm512_add_ps(_mm512_shuffle_f32x4(u[2 * i], u[2 * i + 1], _MM_SHUFFLE(2, 0, 2, 0)),
                           _mm512_shuffle_f32x4(u[2 * i], u[2 * i + 1], _MM_SHUFFLE(3, 1, 3, 1)));
    return _mm512_add_ps(_mm512_shuffle_f32x4(v[0], v[1], _MM_SHUFFLE(2, 0, 2, 0)),
                         _mm512_shuffle_f32x4(v[0], v[1], _MM_SHUFFLE(3, 1, 3, 1)));
  }

  /// y[r] = x . row r for n_rows rows of n values (row_bytes apart): [n] f32 x
  /// [n_rows, n] E -> [n_rows] f32. Each thread packs x itself (into its own `packed`,
  /// int8_x_floats(n) floats) after it has started the prefetch of its rows, so the
  /// packing overlaps the first DRAM reads instead of delaying every thread.
  /// The rows are read one after the other, one sequential stream per thread, prefetched
  /// a fixed distance ahead and never past the range: reading 4 rows at a time (sharing
  /// the x loads) was a little faster in cache and slower from DRAM (docs/products.md).
  /// Rows are summed up 16 at a time (sum_lanes16_).
  template <class E>
  static void gemv1(const unsigned char* w, std::size_t row_bytes, std::size_t n_rows,
                    std::size_t n, const float* x, int8_x_group* packed, float* y) noexcept {
    constexpr std::size_t distance = MK::k_decode_prefetch_bytes;
    const std::size_t n_blocks = n / 32, n_whole = n_blocks / group_blocks_<E>;
    const auto base = reinterpret_cast<std::uintptr_t>(w);
    const std::uintptr_t end = base + n_rows * row_bytes;
    MK::decode_stream s(base, end, simd::current_prefetch_target());
    s.advance(base);
    // A row's lines (and one more, for rows that straddle lines) over its group pairs.
    const std::size_t row_lines = row_bytes / 64 + 2;
    const std::size_t per_pair = n_whole < 2 ? row_lines : (2 * row_lines + n_whole - 1) / n_whole;
    pack<E>(x, n, packed);
    for (std::size_t r0 = 0; r0 < n_rows; r0 += 16) {
      const std::size_t m = n_rows - r0 < 16 ? n_rows - r0 : 16;
      __m512 sums[16];
      for (std::size_t i = 0; i < 16; ++i) {
        const std::size_t r = r0 + i;
        const std::uintptr_t row_end = base + (r + 1) * row_bytes;
        if (i < m) s.touch(row_end);  // page walks ahead
        const std::uintptr_t ahead = row_end + distance;
        sums[i] = i < m ? dot_row_<E>(w + r * row_bytes, n_blocks, packed, s, per_pair,
                                      ahead < end ? ahead : end)
                        : _mm512_setzero_ps();
      }
      _mm512_mask_storeu_ps(y + r0, static_cast<__mmask16>((1u << m) - 1), sum_lanes16_(sums));
    }
  }
};
MNEMO_END_TARGET
MNEMO_END_ISA_WARNINGS
#endif

}  // namespace mnemo::model::detail
