// AdaKV (Feng et al. 2024, arXiv 2407.11550): ragged per-head budgets chosen at run
// time, wrapped around any scorer. When the KV heads of one (sequence, layer) hold more
// than n_head_kv x B cells together, each head first keeps its own top floor(alpha x
// B) cells (the safeguard), then the rest of the n_head_kv x B are the global top over
// every head's remaining cells, so heads whose scores concentrate keep fewer cells and
// heads that spread keep more; sum of B_h = n_head_kv x B. "Top" is the cache's
// eviction order reversed: unprotected before protected, higher score, newer
// position, higher slot.
//
// Storage (memory::bounded with kv_granularity::per_kv_head): the heads of one
// (sequence, layer) share one pool of pages (a power of two of one-head rows, up to
// the attention kernel's 64-cell block), n_head_kv x (B + max_ubatch) rows plus one
// partly filled page per head, so the bytes are uniform budget B's (within 1/16)
// however ragged the B_h are; lanes sized for the largest head would need n_head_kv
// x (max B_h + max_ubatch). Each head's cells are a dense run of slots mapped onto its
// pages, taken from and returned to the pool's free list; its view has one segment
// per run of consecutive pages, so attention reads only the head's own cells.
#pragma once

#include "mnemo/evict/concepts.hpp"

namespace mnemo::evict {

template <class Base>
struct adakv : Base {
  /// The memory allocates per-head budgets across the heads of a (sequence, layer).
  static constexpr bool head_allocation = true;
  double alpha = 0.2;  // each head's guaranteed share of B (the safeguard)
};

}  // namespace mnemo::evict
