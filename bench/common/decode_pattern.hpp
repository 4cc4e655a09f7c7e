// The order in which attention decode reads a long f16 context, without its arithmetic:
// the access-pattern ceiling of the decode kernel on this machine.
//
// A context of cells, each an 8-head x 256-byte K row and a V row of the same size (d
// 128, f16: the bench_attention shape), K and V in two regions like a KV cache's. Per
// 64-cell block, read_decode_pattern reads K then V, in one of three orders:
//   address  every row in address order (cell, then head): what the hardware
//            prefetchers follow best, the ceiling of any layout;
//   heads    head by head (a 2 KiB stride between a head's rows), with the kernel's
//            software prefetch in address order: this block's V during the K pass, the
//            next block's K during the V pass (attention/detail/decode_steps.inl);
//   heads_no_prefetch  the same order without software prefetch.
// On a Zen 4 VM (docs/performance.md, "Session 12") one thread reads 21 GB/s in the
// heads order against 28-29 in address order, where the hardware prefetchers join the
// software ones, and 11 without software prefetch: a decode thread that also computes
// has less than that left, which is why one-row-per-head decode reads in address order.
#pragma once

#include <cstddef>

#include "common/probe_kernels.hpp"

#include "mnemo/simd/prefetch.hpp"
#include "mnemo/simd/simd.hpp"

namespace mnemo_bench::probe {

enum class decode_order { address, heads, heads_no_prefetch };

inline constexpr std::size_t k_pattern_heads = 8;
inline constexpr std::size_t k_pattern_head_bytes = 256;  // d 128, f16
inline constexpr std::size_t k_pattern_cell_bytes = k_pattern_heads * k_pattern_head_bytes;
inline constexpr std::size_t k_pattern_block_cells = 64;

/// Reads the K and V rows of n_cells cells (k and v: n_cells x 2 KiB each, n_cells a
/// multiple of 64) in `order`; returns a meaningless sum so the loads stay.
template <class Isa>
float read_decode_pattern(const char* k, const char* v, std::size_t n_cells,
                          decode_order order) noexcept {
  using V = mnemo::simd::ops<Isa>;
  using vf = typename V::vf;
  constexpr std::size_t row_floats = k_pattern_head_bytes / sizeof(float);
  constexpr std::size_t B = k_pattern_block_cells;
  constexpr std::size_t block_bytes = B * k_pattern_cell_bytes;
  constexpr std::size_t block_lines = block_bytes / 64;
  constexpr std::size_t steps = B * k_pattern_heads;  // one per row read
  const auto target = mnemo::simd::current_prefetch_target();
  vf acc = V::zero();
  auto read_row = [&](const char* row) {
    const auto* f = reinterpret_cast<const float*>(row);
    for (std::size_t i = 0; i < row_floats; i += V::lanes) acc = V::add(acc, V::load(f + i));
  };
  // One pass over a block's rows; with `pf`, prefetches [pf, pf + block_bytes) spread
  // evenly over the pass, as the kernel's prefetch cursors do.
  auto pass = [&](const char* block, const char* pf) {
    if (order == decode_order::address) {
      for (std::size_t off = 0; off < block_bytes; off += k_pattern_head_bytes)
        read_row(block + off);
      return;
    }
    std::size_t line = 0, step = 0;
    for (std::size_t h = 0; h < k_pattern_heads; ++h)
      for (std::size_t c = 0; c < B; ++c, ++step) {
        if (pf != nullptr)
          for (const std::size_t until = block_lines * (step + 1) / steps; line < until; ++line)
            mnemo::simd::prefetch(pf + 64 * line, target);
        read_row(block + c * k_pattern_cell_bytes + h * k_pattern_head_bytes);
      }
  };
  const bool prefetch = order == decode_order::heads;
  const std::size_t n_bytes = n_cells * k_pattern_cell_bytes;
  for (std::size_t b = 0; b < n_bytes; b += block_bytes) {
    const char* next_k = b + block_bytes < n_bytes ? k + b + block_bytes : nullptr;
    pass(k + b, prefetch ? v + b : nullptr);
    pass(v + b, prefetch ? next_k : nullptr);
  }
  return sum_lanes<Isa>(acc);
}

}  // namespace mnemo_bench::probe
