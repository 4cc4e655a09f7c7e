// Internal to Quest (included by evict/quest.hpp, not by users): the page bounds of one
// block of pages, vectorised across the block's pages.
//
// Layout of a block (quest_page_block pages): per KV head and key channel c the block's
// minima then maxima, [n_head_kv, d_k, 2, quest_page_block] floats, so one channel of
// every page of the block is two vectors and a query channel is one broadcast. A
// query row enters as (max(q_c, 0), min(q_c, 0)) pairs, [d_k, 2]: per channel
//   max(q_c m_c, q_c M_c) = max(q_c, 0) M_c + min(q_c, 0) m_c
// (one of the two products is 0 x finite = 0), two FMAs and no compare, and each
// page's sum runs over the channels in order with one rounding per FMA, as the scalar
// bound() does, so every ISA gives the same numbers.
#pragma once

#include <cstddef>

#include "mnemo/simd/simd.hpp"

namespace mnemo::evict::detail {

/// Pages per metadata block: the vector width of the widest ISA (AVX-512: 16 floats).
inline constexpr std::size_t quest_page_block = 16;

/// best[i] = max(best[i], max over the R rows r of sum_c q+_rc M_ic + q-_rc m_ic) for
/// the quest_page_block pages i of one block and one KV head. meta: [d_k, 2, block];
/// qpm: [R, d_k, 2] (q+, q-).
template <class Isa, std::size_t R>
void quest_block_bounds(const float* meta, const float* qpm, std::size_t d_k,
                        float* best) noexcept {
  using O = simd::ops<Isa>;
  using vf = typename O::vf;
  constexpr std::size_t L = O::lanes, NV = quest_page_block / L, B = quest_page_block;
  static_assert(quest_page_block % L == 0, "quest: the page block must be whole vectors");
  vf acc[R][NV];
  for (std::size_t r = 0; r < R; ++r)
    for (std::size_t v = 0; v < NV; ++v) acc[r][v] = O::zero();
  for (std::size_t c = 0; c < d_k; ++c) {
    const float* lo = meta + c * 2 * B;
    vf m[NV], M[NV];
    for (std::size_t v = 0; v < NV; ++v) {
      m[v] = O::load(lo + v * L);
      M[v] = O::load(lo + B + v * L);
    }
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

/// The same for n rows (qpm: [n, d_k, 2]), four at a time: each channel's two vectors
/// are loaded once for four rows (8 FMAs per 2 loads and 8 broadcasts).
template <class Isa>
void quest_block_bounds(const float* meta, const float* qpm, std::size_t n, std::size_t d_k,
                        float* best) noexcept {
  std::size_t r = 0;
  for (; r + 4 <= n; r += 4) quest_block_bounds<Isa, 4>(meta, qpm + r * d_k * 2, d_k, best);
  for (; r + 2 <= n; r += 2) quest_block_bounds<Isa, 2>(meta, qpm + r * d_k * 2, d_k, best);
  if (r < n) quest_block_bounds<Isa, 1>(meta, qpm + r * d_k * 2, d_k, best);
}

}  // namespace mnemo::evict::detail
