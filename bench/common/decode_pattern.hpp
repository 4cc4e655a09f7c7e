// The order in which attention decode reads a long f16 context, without its arithmetic:
// the access-pattern ceiling of the decode kernel on this machine.
//
// A context of cells, each an 8-head x 256-byte K row and a V row of the same size (d
// 128, f16: the bench_attention shape), K and V in two regions like a KV cache's. Per
// 64-cell block, read_decode_pattern reads K then V, in one of five orders:
//   address  every row in address order (cell, then head): what the hardware
//            prefetchers follow best, the ceiling of any layout;
//   groups   eight cells at a time in address order, head by head within a group,
//            prefetching whole cell rows 32 KiB ahead and past a pass's end into the
//            next pass's rows: the kernel's order at two or three rows per KV head;
//   heads    head by head over the whole block (a 2 KiB stride between a head's rows),
//            this block's V prefetched during the K pass and the next block's K during
//            the V pass, spread over the pass: the kernel's order for q8_0/q4_0 and
//            eight rows per KV head and more (attention/detail/decode_steps.inl);
//   heads_no_prefetch  the same order without software prefetch;
//   k_groups K in groups, its prefetches running on into the next block's K, and V
//            head by head, prefetching the next block's V spread over the pass: the
//            kernel's order at four to seven rows per KV head.
// Only the address order lets the hardware prefetchers join the software ones, so the
// other orders read slower here (docs/performance.md, "Attention"); the gain of groups
// and k_groups in the kernel shows only with its arithmetic between the loads.
#pragma once

#include <cstddef>

#include "common/probe_kernels.hpp"

#include "mnemo/simd/prefetch.hpp"
#include "mnemo/simd/simd.hpp"

namespace mnemo_bench::probe {

enum class decode_order { address, groups, heads, heads_no_prefetch, k_groups };

inline constexpr std::size_t k_pattern_heads = 8;
inline constexpr std::size_t k_pattern_head_bytes = 256;  // d 128, f16
inline constexpr std::size_t k_pattern_cell_bytes = k_pattern_heads * k_pattern_head_bytes;
inline constexpr std::size_t k_pattern_block_cells = 64;
inline constexpr std::size_t k_pattern_group_cells = 8;
inline constexpr std::size_t k_pattern_ahead_bytes = 32 * 1024;

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
  // evenly over the pass, as the heads order's prefetch cursors did.
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
  // The groups order's pass: at each group's heads, the cell rows `ahead` bytes further,
  // which past the block's end are the next pass's rows at `next` (null: none).
  auto group_pass = [&](const char* block, const char* next) {
    constexpr std::size_t G = k_pattern_group_cells;
    for (std::size_t c0 = 0; c0 < B; c0 += G)
      for (std::size_t h = 0; h < k_pattern_heads; ++h) {
        const std::size_t y = (c0 + h * G / k_pattern_heads) * k_pattern_cell_bytes +
                              k_pattern_ahead_bytes;  // one cell row per head
        const char* row = y < block_bytes   ? block + y
                          : next != nullptr ? next + (y - block_bytes)
                                            : nullptr;
        if (row != nullptr)
          for (std::size_t i = 0; i < k_pattern_cell_bytes; i += 64)
            mnemo::simd::prefetch(row + i, target);
        for (std::size_t x = c0; x < c0 + G; ++x)
          read_row(block + x * k_pattern_cell_bytes + h * k_pattern_head_bytes);
      }
  };
  const bool prefetch = order == decode_order::heads;
  const std::size_t n_bytes = n_cells * k_pattern_cell_bytes;
  for (std::size_t b = 0; b < n_bytes; b += block_bytes) {
    const char* next_k = b + block_bytes < n_bytes ? k + b + block_bytes : nullptr;
    if (order == decode_order::groups) {
      group_pass(k + b, v + b);
      group_pass(v + b, next_k);
      continue;
    }
    if (order == decode_order::k_groups) {
      group_pass(k + b, next_k);
      pass(v + b, next_k != nullptr ? v + b + block_bytes : nullptr);
      continue;
    }
    pass(k + b, prefetch ? v + b : nullptr);
    pass(v + b, prefetch ? next_k : nullptr);
  }
  return sum_lanes<Isa>(acc);
}

}  // namespace mnemo_bench::probe
