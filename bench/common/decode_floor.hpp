// The arithmetic floor of attention decode: what no decode kernel that does its
// arithmetic in f32 FMAs can beat on this machine.
//
// One query token with R rows per KV head (R = the GQA ratio) multiplies every K and
// every V element the call reads by R query or probability values: R fused
// multiply-adds per element, 2R FLOP, for Q.K and for P.V alike. fma_floor_pass reads
// f16 elements once, as one stream in address order (what the hardware prefetchers
// follow best), with or without software prefetch 16 KiB ahead into the machine's
// prefetch target (which is faster depends on the machine), and does exactly those R
// FMAs per element into independent accumulators: no horizontal sums, softmax, masks,
// row pointers or output rows. A decode call's rate over this pass's rate on the same
// bytes is then the kernel's own efficiency; this pass's rate over the read bandwidth
// is what the machine's FMA throughput leaves of it at that GQA ratio
// (docs/performance.md, "Attention").
#pragma once

#include <cstddef>
#include <cstdint>

#include "common/probe_kernels.hpp"

#include "mnemo/simd/prefetch.hpp"
#include "mnemo/simd/simd.hpp"

namespace mnemo_bench::probe {

inline constexpr std::size_t k_floor_ahead_bytes = 16 * 1024;

/// R FMAs per f16 element of p[0, n), into four accumulators per row; returns a
/// meaningless sum so the work stays. @pre n % (4 * lanes) == 0
template <class Isa, std::size_t R>
float fma_floor_pass(const std::uint16_t* p, std::size_t n, bool software_prefetch) noexcept {
  using V = mnemo::simd::ops<Isa>;
  using vf = typename V::vf;
  constexpr std::size_t L = V::lanes, step_bytes = 4 * L * sizeof(std::uint16_t);
  const auto target = mnemo::simd::current_prefetch_target();
  const auto* bytes = reinterpret_cast<const char*>(p);
  const char* const end = bytes + n * sizeof(std::uint16_t);
  vf q[R], acc[R][4];
  for (std::size_t r = 0; r < R; ++r) {
    q[r] = V::set1(1e-3f * static_cast<float>(r + 1));
    for (vf& a : acc[r]) a = V::zero();
  }
  // Past `end` from the start without software prefetch.
  const char* pf = software_prefetch ? bytes + k_floor_ahead_bytes : end;
  for (std::size_t i = 0; i < n; i += 4 * L) {
    // The lines step_bytes further on (one per 64 bytes, however wide the vectors).
    for (const char* until = pf + step_bytes; pf < until && pf < end; pf += 64)
      mnemo::simd::prefetch(pf, target);
    vf x[4];
#pragma GCC unroll 4
    for (std::size_t j = 0; j < 4; ++j) x[j] = V::load_f16(p + i + j * L);
#pragma GCC unroll 8
    for (std::size_t r = 0; r < R; ++r)
#pragma GCC unroll 4
      for (std::size_t j = 0; j < 4; ++j) acc[r][j] = V::fma(q[r], x[j], acc[r][j]);
  }
  vf s = V::zero();
  for (std::size_t r = 0; r < R; ++r)
    for (const vf& a : acc[r]) s = V::add(s, a);
  return sum_lanes<Isa>(s);
}

}  // namespace mnemo_bench::probe
