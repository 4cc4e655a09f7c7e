// Internal to Quest (included by evict/quest.hpp, not by users): the page bounds of one
// block of pages, vectorised across the block's pages.
//
// Layout of a block (quest_page_block pages): per KV head and key channel c one 32-bit
// word per page, the channel's minimum m (low half) and maximum M (high half) as bf16
// rounded outward (m down, M up, so they still bound every key), [n_head_kv, d_k,
// quest_page_block] words: one channel of every page of the block is one vector of
// words and a query channel is one broadcast. Per channel
//   max(q_c m_c, q_c M_c) = max(q_c, 0) M_c + min(q_c, 0) m_c
// (one of the two products is 0 x finite = 0): two FMAs and no compare, the M term
// first, each page's sum over the channels in order with one rounding per FMA.
// - f32 bounds: the query in f32, qpm [R, d_k, 2] (q+, q-), the words widened;
//   every ISA gives the scalar bound()'s numbers.
// - bf16 bounds (AVX512_BF16, quest_config::bf16_bounds): the query's q+ and
//   q- rounded to bf16 and packed like the metadata (q- low, q+ high), qw [R, d_k];
//   vdpbf16ps adds the high product, then the low one, each exact and rounded once
//   (as specified; checked on Zen 4): the f32 kernels' numbers for that rounded query
//   (subnormal sums flushed to 0).
#pragma once

#include <cstddef>
#include <cstdint>

#include "mnemo/base/config.hpp"
#include "mnemo/simd/simd.hpp"
#include "mnemo/simd/target.hpp"

#if defined(MNEMO_ARCH_X86_64)
#include <immintrin.h>
#endif

namespace mnemo::evict::detail {

/// Pages per metadata block: the vector width of the widest ISA (AVX-512: 16 floats).
inline constexpr std::size_t quest_page_block = 16;

/// best[i] = max(best[i], max over the R rows r of sum_c q+_rc M_ic + q-_rc m_ic) for
/// the quest_page_block pages i of one block and one KV head. meta: [d_k, block]
/// words; qpm: [R, d_k, 2] (q+, q-).
template <class Isa, std::size_t R>
void quest_block_bounds(const std::uint32_t* meta, const float* qpm, std::size_t d_k,
                        float* best) noexcept {
  using O = simd::ops<Isa>;
  using vf = typename O::vf;
  constexpr std::size_t L = O::lanes, NV = quest_page_block / L, B = quest_page_block;
  static_assert(quest_page_block % L == 0, "quest: the page block must be whole vectors");
  vf acc[R][NV];
  for (std::size_t r = 0; r < R; ++r)
    for (std::size_t v = 0; v < NV; ++v) acc[r][v] = O::zero();
  for (std::size_t c = 0; c < d_k; ++c) {
    vf m[NV], M[NV];
    for (std::size_t v = 0; v < NV; ++v) O::load_bf16_pairs(meta + c * B + v * L, m[v], M[v]);
    for (std::size_t r = 0; r < R; ++r) {
      const vf qp = O::set1(qpm[(r * d_k + c) * 2]), qm = O::set1(qpm[(r * d_k + c) * 2 + 1]);
      for (std::size_t v = 0; v < NV; ++v)
        acc[r][v] = O::fma(qm, m[v], O::fma(qp, M[v], acc[r][v]));
    }
  }
  for (std::size_t v = 0; v < NV; ++v) {
    vf b = O::load(best + v * L);
    for (std::size_t r = 0; r < R; ++r) b = O::max(b, acc[r][v]);
    O::store(best + v * L, b);
  }
}

/// The same for n rows (qpm: [n, d_k, 2]), four at a time: each channel's words are
/// loaded once for four rows (8 FMAs per load and 8 broadcasts).
template <class Isa>
void quest_block_bounds(const std::uint32_t* meta, const float* qpm, std::size_t n, std::size_t d_k,
                        float* best) noexcept {
  std::size_t r = 0;
  for (; r + 4 <= n; r += 4) quest_block_bounds<Isa, 4>(meta, qpm + r * d_k * 2, d_k, best);
  for (; r + 2 <= n; r += 2) quest_block_bounds<Isa, 2>(meta, qpm + r * d_k * 2, d_k, best);
  if (r < n) quest_block_bounds<Isa, 1>(meta, qpm + r * d_k * 2, d_k, best);
}

#if defined(MNEMO_ARCH_X86_64)
MNEMO_BEGIN_ISA_WARNINGS
MNEMO_BEGIN_TARGET_(MNEMO_TARGET_FEATURES_AVX512 ",avx512bf16")
/// bf16 bounds of NB blocks (block_stride words apart) for R rows of qw [R, d_k]: one
/// vdpbf16ps per channel, block and row; NB x R independent sums hide its latency.
template <std::size_t R, std::size_t NB>
void quest_block_bounds_bf16(const std::uint32_t* meta, std::size_t block_stride,
                             const std::uint32_t* qw, std::size_t d_k, float* best) noexcept {
  constexpr std::size_t B = quest_page_block;
  static_assert(B == 16, "quest: one AVX-512 vector of words per channel and block");
  __m512 acc[NB][R];
  for (std::size_t b = 0; b < NB; ++b)
    for (std::size_t r = 0; r < R; ++r) acc[b][r] = _mm512_setzero_ps();
  for (std::size_t c = 0; c < d_k; ++c) {
    __m512bh w[NB];
    for (std::size_t b = 0; b < NB; ++b)
      w[b] = (__m512bh)_mm512_loadu_si512(meta + b * block_stride + c * B);
    for (std::size_t r = 0; r < R; ++r) {
      const auto q = (__m512bh)_mm512_set1_epi32(static_cast<int>(qw[r * d_k + c]));
      for (std::size_t b = 0; b < NB; ++b) acc[b][r] = _mm512_dpbf16_ps(acc[b][r], w[b], q);
    }
  }
  for (std::size_t b = 0; b < NB; ++b) {
    __m512 m = _mm512_loadu_ps(best + b * B);
    for (std::size_t r = 0; r < R; ++r) m = _mm512_max_ps(m, acc[b][r]);
    _mm512_storeu_ps(best + b * B, m);
  }
}

/// The same for n rows and NB blocks, four rows at a time, then two, then one.
template <std::size_t NB>
void quest_block_bounds_bf16(const std::uint32_t* meta, std::size_t block_stride,
                             const std::uint32_t* qw, std::size_t n, std::size_t d_k,
                             float* best) noexcept {
  std::size_t r = 0;
  for (; r + 4 <= n; r += 4)
    quest_block_bounds_bf16<4, NB>(meta, block_stride, qw + r * d_k, d_k, best);
  for (; r + 2 <= n; r += 2)
    quest_block_bounds_bf16<2, NB>(meta, block_stride, qw + r * d_k, d_k, best);
  if (r < n) quest_block_bounds_bf16<1, NB>(meta, block_stride, qw + r * d_k, d_k, best);
}
MNEMO_END_TARGET
MNEMO_END_ISA_WARNINGS
#endif

}  // namespace mnemo::evict::detail
