// model::detail::int8_tile_decode: the one-token product of a q4_0 weight whose rows are
// also held as tiles of 16 rows (model/q4_0_tiles.hpp), on CPUs with AVX-512 VNNI and
// VBMI. The products are matmul_int8.hpp's (x rounded to q8_0, per block
// dw * dx * the exact integer dot), only laid out so that a vector holds 16 rows:
//
//   per block, 16 f16 scales, then 4 vectors; lane r of vector j holds code bytes
//   4 j .. 4 j + 3 of row r (low nibbles: values 4 j .., high: 16 + 4 j ..).
//
// So one vpdpbusd multiplies 4 codes of 16 rows by 4 x codes broadcast from memory, the
// 16 scales are one vector, and each lane ends as one row's sum: no shuffle, no lane
// reduction. On the GGUF rows (18-byte blocks) the same products needed a scale
// permutation and a 16-row reduction tree, and were compute bound at ~25 GB/s per core
// from DRAM where the tiles stream at the read bandwidth (docs/products.md).
#pragma once

#if !defined(MNEMO_MODEL_MATMUL_INTERNAL_)
#error "mnemo/model/detail/matmul_int8_tiles.hpp is internal: include mnemo/model/matmul.hpp"
#endif

#include <cstddef>
#include <cstdint>

#include "mnemo/model/detail/matmul_int8.hpp"
#include "mnemo/model/detail/matmul_kernels.hpp"
#include "mnemo/model/q4_0_tiles.hpp"

namespace mnemo::model::detail {

/// One block of x rounded to q8_0 for the tile kernel: the codes in order, dx, and the
/// bias -8 * (sum of the codes) that turns the unsigned q4_0 codes 0..15 into code - 8.
struct int8_x_block {
  std::int8_t codes[32];
  float dx;
  std::int32_t bias;
};
// A thread's packed x must fit the workspace slice sized for the row kernel's groups.
static_assert(sizeof(int8_x_block) * 2 <= sizeof(int8_x_group));

template <class Isa>
struct int8_tile_decode;

#if defined(MNEMO_ARCH_X86_64)
MNEMO_BEGIN_ISA_WARNINGS
MNEMO_BEGIN_TARGET_(MNEMO_TARGET_FEATURES_AVX512 ",avx512vnni,avx512vbmi")
template <>
struct int8_tile_decode<simd::avx512> {
  using rows_kernel = int8_decode<simd::avx512>;
  using codes = rows_kernel::codes;
  using MK = matmul_kernels<simd::avx512>;
  using E = dtype::block_q4_0;

  /// x [n] f32 -> n / 32 blocks: dtype's q8_0 encoder's codes and scales, bit for bit
  /// (the row kernel's scale routine). @pre n % 32 == 0
  static void pack(const float* x, std::size_t n, int8_x_block* out) noexcept {
    constexpr std::size_t chunk = rows_kernel::pack_chunk_<E>;
    const std::size_t n_blocks = n / 32;
    const __m256i flip = _mm256_set1_epi8(static_cast<char>(0x80));
    for (std::size_t b0 = 0; b0 < n_blocks; b0 += chunk) {
      const std::size_t nb = n_blocks - b0 < chunk ? n_blocks - b0 : chunk;
      alignas(64) float id[chunk], dx[chunk + 16];
      rows_kernel::block_scales_<E>(x + b0 * 32, nb, id, dx);
      for (std::size_t j = 0; j < nb; ++j) {
        const float* xb = x + (b0 + j) * 32;
        const __m512 vid = _mm512_set1_ps(id[j]);
        const __m256i c =
            _mm256_setr_m128i(codes::q8_codes16(xb, vid), codes::q8_codes16(xb + 16, vid));
        _mm256_storeu_si256(reinterpret_cast<__m256i*>(out[b0 + j].codes), c);
        // sum of (code + 128) per 8 bytes, as 4 x 64 bits
        const __m256i s = _mm256_sad_epu8(_mm256_xor_si256(c, flip), _mm256_setzero_si256());
        const __m128i s2 = _mm_add_epi64(_mm256_castsi256_si128(s), _mm256_extracti128_si256(s, 1));
        const auto sum =
            static_cast<std::int32_t>(_mm_cvtsi128_si64(s2) + _mm_extract_epi64(s2, 1)) - 32 * 128;
        out[b0 + j].dx = dx[j];
        out[b0 + j].bias = -8 * sum;
      }
    }
  }

  /// acc += the 16 rows' products of one block of the tile at p with x block xb.
  static MNEMO_INLINE void block_dot_(const unsigned char* p, const int8_x_block& xb,
                                      __m512& acc) noexcept {
    const __m512i nib = _mm512_set1_epi8(0x0f);
    const auto* xc = reinterpret_cast<const std::int32_t*>(xb.codes);
    // two chains (low and high nibbles), so that no vpdpbusd waits for 7 others
    __m512i lo = _mm512_set1_epi32(xb.bias), hi = _mm512_setzero_si512();
    for (std::size_t j = 0; j < 4; ++j) {
      const __m512i a = _mm512_loadu_si512(p + k_q4_0_tile_scale_bytes + j * sizeof(__m512i));
      lo = _mm512_dpbusd_epi32(lo, _mm512_and_si512(a, nib), _mm512_set1_epi32(xc[j]));
      hi = _mm512_dpbusd_epi32(hi, _mm512_and_si512(_mm512_srli_epi16(a, 4), nib),
                               _mm512_set1_epi32(xc[4 + j]));
    }
    const __m512 dw = _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
    acc = _mm512_fmadd_ps(_mm512_cvtepi32_ps(_mm512_add_epi32(lo, hi)),
                          _mm512_mul_ps(dw, _mm512_set1_ps(xb.dx)), acc);
  }

  /// y[16 t + r] = x . row r of tile t for n_tiles tiles of n_blocks blocks at `tiles`:
  /// [32 n_blocks] f32 x -> [16 n_tiles] f32 y. Each thread packs x itself (into its own
  /// `packed`, n_blocks blocks) after it has started the prefetch of its tiles, so the
  /// packing overlaps the first DRAM reads. One sequential stream, prefetched a fixed
  /// distance ahead and never past the range, with page walks started ahead once per
  /// tile, as the row kernel does. Even and odd blocks go to two accumulators, so that
  /// the fma of one block does not wait for the previous one; a row's sum does not
  /// depend on the other rows or on how the tiles are split between threads.
  static void gemv(const unsigned char* tiles, std::size_t n_tiles, std::size_t n_blocks,
                   const float* x_f32, int8_x_block* x, float* y) noexcept {
    constexpr std::size_t block_bytes = k_q4_0_tile_block_bytes;
    const std::size_t tile_bytes = n_blocks * block_bytes;
    const auto base = reinterpret_cast<std::uintptr_t>(tiles);
    MK::decode_stream s(base, base + n_tiles * tile_bytes, simd::current_prefetch_target());
    s.advance(base);
    pack(x_f32, 32 * n_blocks, x);
    for (std::size_t t = 0; t < n_tiles; ++t) {
      const unsigned char* tile = tiles + t * tile_bytes;
      s.touch(reinterpret_cast<std::uintptr_t>(tile + tile_bytes));
      __m512 acc0 = _mm512_setzero_ps(), acc1 = _mm512_setzero_ps();
      std::size_t b = 0;
      for (; b + 2 <= n_blocks; b += 2) {
        const unsigned char* p = tile + b * block_bytes;
        s.advance(reinterpret_cast<std::uintptr_t>(p + 2 * block_bytes));
        block_dot_(p, x[b], acc0);
        block_dot_(p + block_bytes, x[b + 1], acc1);
      }
      if (b < n_blocks) block_dot_(tile + b * block_bytes, x[b], acc0);
      _mm512_storeu_ps(y + k_q4_0_tile_rows * t, _mm512_add_ps(acc0, acc1));
    }
  }
};
MNEMO_END_TARGET
MNEMO_END_ISA_WARNINGS
#endif

}  // namespace mnemo::model::detail
