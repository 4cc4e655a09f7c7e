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

/// Every accumulator of a register tile set to zero.
template <class Isa, class Tile>
void zero_tile(Tile& acc) noexcept {
  for (auto& row : acc)
    for (auto& a : row) a = mnemo::simd::ops<Isa>::zero();
}

/// The sum of every lane of every accumulator of a register tile.
template <class Isa, class Tile>
float sum_tile(const Tile& acc) noexcept {
  using V = mnemo::simd::ops<Isa>;
  typename V::vf s = V::zero();
  for (const auto& row : acc)
    for (const auto& a : row) s = V::add(s, a);
  return sum_lanes<Isa>(s);
}

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
  return sum_tile<Isa>(acc);
}

/// The register tiles of a decode kernel that widens each f16 vector once for R query
/// rows, from L1 with no memory wait. dots (Q.K): per vector, R FMAs against R query
/// vectors loaded by the FMAs (q: [R, d] floats, d = 128), R accumulators (two vectors per
/// step at R = 4). broadcast (P.V): per vector, R FMAs, each with a broadcast
/// probability from p (R x 64 floats). @pre n % (2 * lanes) == 0
inline constexpr std::size_t k_tile_d = 128;

template <class Isa, std::size_t R>
float widen_once_dots(const std::uint16_t* p, std::size_t n, const float* q) noexcept {
  using V = mnemo::simd::ops<Isa>;
  using vf = typename V::vf;
  constexpr std::size_t L = V::lanes, C = R >= 8 ? 1 : 2;  // vectors per step
  vf acc[R][C];
  zero_tile<Isa>(acc);
  for (std::size_t i = 0; i < n; i += C * L) {
    vf x[C];
#pragma GCC unroll 2
    for (std::size_t c = 0; c < C; ++c) x[c] = V::load_f16(p + i + c * k_tile_d);
    const std::size_t e = i % k_tile_d;
#pragma GCC unroll 8
    for (std::size_t r = 0; r < R; ++r)
#pragma GCC unroll 2
      for (std::size_t c = 0; c < C; ++c)
        acc[r][c] = V::fma(V::load(q + r * k_tile_d + e), x[c], acc[r][c]);
  }
  return sum_tile<Isa>(acc);
}

template <class Isa, std::size_t R>
float widen_once_broadcast(const std::uint16_t* p, std::size_t n, const float* prob) noexcept {
  using V = mnemo::simd::ops<Isa>;
  using vf = typename V::vf;
  constexpr std::size_t L = V::lanes, NV = R >= 8 ? 1 : 2;  // V vectors per cell
  vf acc[R][NV];
  zero_tile<Isa>(acc);
  for (std::size_t i = 0; i < n; i += NV * L) {
    vf x[NV];
#pragma GCC unroll 2
    for (std::size_t v = 0; v < NV; ++v) x[v] = V::load_f16(p + i + v * L);
    const std::size_t j = i / k_tile_d % 64;
#pragma GCC unroll 8
    for (std::size_t r = 0; r < R; ++r) {
      const vf pr = V::set1(prob[r * 64 + j]);
#pragma GCC unroll 2
      for (std::size_t v = 0; v < NV; ++v) acc[r][v] = V::fma(pr, x[v], acc[r][v]);
    }
  }
  return sum_tile<Isa>(acc);
}

}  // namespace mnemo_bench::probe
