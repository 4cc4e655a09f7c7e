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
#include <cstring>
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
  using RK = dtype::row_kernels<simd::avx512>;

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

  /// x [n] f32 -> ceil(n / 32 / group_blocks_) groups, for weights of type E.
  /// @pre n % 32 == 0
  template <class E>
  static void pack(const float* x, std::size_t n, int8_x_group* out) noexcept {
    static_assert(lanes_of_one_block_<E>());
    constexpr std::size_t G = group_blocks_<E>;
    const std::size_t n_blocks = n / 32;
    const __m512i ones = _mm512_set1_epi8(1);
    for (std::size_t g = 0; g * G < n_blocks; ++g) {
      const std::size_t k = n_blocks - g * G < G ? n_blocks - g * G : G;
      dtype::block_q8_0 q[G] = {};
      RK::encode(x + g * G * 32, q, k * 32);
      int8_x_group o = {};
      for (std::size_t j = 0; j < k; ++j) {
        if constexpr (q4_<E>) {
          std::memcpy(o.lo + code_at_<E>(j), q[j].qs, 16);
          std::memcpy(o.hi + code_at_<E>(j), q[j].qs + 16, 16);
        } else {
          std::memcpy(o.lo + code_at_<E>(j), q[j].qs, 32);
        }
      }
      for (std::size_t l = 0; l < 16; ++l) {
        const std::size_t j = block_of_lane_<E>(l);
        o.dx[l] = j < G ? q[j].d.to_float() : 0.0f;
      }
      __m512i sums = _mm512_dpbusd_epi32(_mm512_setzero_si512(), ones, _mm512_load_si512(o.lo));
      if constexpr (q4_<E>) sums = _mm512_dpbusd_epi32(sums, ones, _mm512_load_si512(o.hi));
      _mm512_store_si512(o.bias, _mm512_mullo_epi32(sums, _mm512_set1_epi32(bias_factor_<E>)));
      out[g] = o;
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

  /// x . one row of n_blocks blocks of E at w. The row's lines are prefetched up to
  /// `ahead` (a fixed distance past its end), spread over its groups. Two accumulators
  /// (groups in pairs), so that the fma of one group does not wait for the previous one.
  template <class E>
  static MNEMO_INLINE float dot_row_(const unsigned char* w, std::size_t n_blocks,
                                     const int8_x_group* x, std::uintptr_t& next_pf,
                                     std::uintptr_t ahead, std::uintptr_t end) noexcept {
    constexpr std::size_t G = group_blocks_<E>, group_bytes = G * sizeof(E);
    const std::size_t n_whole = n_blocks / G, tail = n_blocks % G;
    const std::uintptr_t stop = ahead < end ? ahead : end;
    const std::size_t lines = stop > next_pf ? (stop - next_pf + 63) / 64 : 0;
    const std::size_t per_pair = n_whole < 2 ? lines : (2 * lines + n_whole - 1) / n_whole;
    std::uintptr_t pf = next_pf;
    __m512 acc0 = _mm512_setzero_ps(), acc1 = _mm512_setzero_ps();
    std::size_t g = 0;
    for (; g + 2 <= n_whole; g += 2) {
      for (std::size_t i = 0; i < per_pair && pf < stop; ++i, pf += 64)
        __builtin_prefetch(reinterpret_cast<const void*>(pf), 0, 3);
      group_dot_<E>(w + g * group_bytes, true, G, load_x_(x[g]), acc0);
      group_dot_<E>(w + (g + 1) * group_bytes, true, G, load_x_(x[g + 1]), acc1);
    }
    if (g < n_whole) group_dot_<E>(w + g * group_bytes, true, G, load_x_(x[g]), acc0);
    if (tail != 0) group_dot_<E>(w + n_whole * group_bytes, false, tail, load_x_(x[n_whole]), acc1);
    for (; pf < stop; pf += 64) __builtin_prefetch(reinterpret_cast<const void*>(pf), 0, 3);
    next_pf = pf;
    return _mm512_reduce_add_ps(_mm512_add_ps(acc0, acc1));
  }

  /// y[r] = x . row r for n_rows rows of n values (row_bytes apart): [n] f32 x
  /// [n_rows, n] E -> [n_rows] f32. Each thread packs x itself (into its own `packed`,
  /// int8_x_floats(n) floats) after it has started the prefetch of its rows, so the
  /// packing overlaps the first DRAM reads instead of delaying every thread.
  /// The rows are read one after the other, one sequential stream per thread, prefetched
  /// a fixed distance ahead and never past the range: reading 4 rows at a time (sharing
  /// the x loads) was a little faster in cache and slower from DRAM (docs/products.md).
  template <class E>
  static void gemv1(const unsigned char* w, std::size_t row_bytes, std::size_t n_rows,
                    std::size_t n, const float* x, int8_x_group* packed, float* y) noexcept {
    constexpr std::size_t distance = matmul_kernels<simd::avx512>::k_decode_prefetch_bytes;
    const std::size_t n_blocks = n / 32;
    const auto base = reinterpret_cast<std::uintptr_t>(w);
    const std::uintptr_t end = base + n_rows * row_bytes;
    std::uintptr_t pf = base & ~std::uintptr_t{63};
    for (const std::uintptr_t stop = base + distance < end ? base + distance : end; pf < stop;
         pf += 64)
      __builtin_prefetch(reinterpret_cast<const void*>(pf), 0, 3);
    pack<E>(x, n, packed);
    for (std::size_t r = 0; r < n_rows; ++r)
      y[r] = dot_row_<E>(w + r * row_bytes, n_blocks, packed, pf,
                         base + (r + 1) * row_bytes + distance, end);
  }
};
MNEMO_END_TARGET
MNEMO_END_ISA_WARNINGS
#endif

}  // namespace mnemo::model::detail
