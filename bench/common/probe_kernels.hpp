// The two loops the machine-limits probe times, written once against the vector
// operation set V = mnemo::simd::ops<Isa>:
//   read_sum:   streams a buffer with wide loads (bound by loads, not by add latency);
//   fma_chains: independent FMA chains (bound by FMA throughput, not by FMA latency).
// Bench targets are built with -march=native, so ops<simd::native> inlines here
// without a target region.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>
#include <utility>

#include "mnemo/simd/simd.hpp"

namespace mnemo_bench::probe {

/// Horizontal sum through memory. Once per call, so speed is irrelevant, and it keeps
/// the probe independent of V::reduce_add (GCC 12 raises a false -Wmaybe-uninitialized
/// inside _mm512_castps512_ps256 in some inlining contexts).
template <class Isa>
float sum_lanes(typename mnemo::simd::ops<Isa>::vf v) noexcept {
  using V = mnemo::simd::ops<Isa>;
  alignas(64) float lanes[V::lanes];
  V::store(lanes, v);
  float s = 0.0f;
  for (float x : lanes) s += x;
  return s;
}

/// Sum of p[0, n) with 8 independent vector accumulators: 8 x lanes floats per step
/// keep two load ports busy while each add chain waits only every 8th load (add
/// latency 3-4 cycles on current x86 and Arm cores). The result is returned so the
/// loads cannot be removed; its value is meaningless. The scalar ISA reads 8-byte
/// integers instead of floats: DRAM bandwidth is not a property of the ISA, and 4-byte
/// loads could not reach it (two per cycle are ~30 GB/s at 4 GHz).
template <class Isa>
float read_sum(const float* p, std::size_t n) noexcept {
  if constexpr (std::is_same_v<Isa, mnemo::simd::scalar>) {
    std::uint64_t a[8] = {};
    const std::size_t words = n / 2;  // [words] u64 = [2 * words] f32
    std::size_t i = 0;
    for (; i + 8 <= words; i += 8) {
      for (int k = 0; k < 8; ++k) {
        std::uint64_t w;
        std::memcpy(&w, p + 2 * (i + static_cast<std::size_t>(k)), sizeof w);
        a[k] += w;
      }
    }
    std::uint64_t s = a[0] + a[1] + a[2] + a[3] + a[4] + a[5] + a[6] + a[7];
    for (std::size_t j = 2 * i; j < n; ++j) {
      std::uint32_t w;
      std::memcpy(&w, p + j, sizeof w);
      s += w;
    }
    return static_cast<float>(s);
  } else {
    using V = mnemo::simd::ops<Isa>;
    using vf = typename V::vf;
    constexpr std::size_t L = V::lanes;
    vf a0 = V::zero(), a1 = V::zero(), a2 = V::zero(), a3 = V::zero();
    vf a4 = V::zero(), a5 = V::zero(), a6 = V::zero(), a7 = V::zero();
    std::size_t i = 0;
    for (; i + 8 * L <= n; i += 8 * L) {
      a0 = V::add(a0, V::load(p + i + 0 * L));
      a1 = V::add(a1, V::load(p + i + 1 * L));
      a2 = V::add(a2, V::load(p + i + 2 * L));
      a3 = V::add(a3, V::load(p + i + 3 * L));
      a4 = V::add(a4, V::load(p + i + 4 * L));
      a5 = V::add(a5, V::load(p + i + 5 * L));
      a6 = V::add(a6, V::load(p + i + 6 * L));
      a7 = V::add(a7, V::load(p + i + 7 * L));
    }
    for (; i + L <= n; i += L) a0 = V::add(a0, V::load(p + i));
    if (i < n) a0 = V::add(a0, V::load_partial(p + i, n - i));
    a0 = V::add(V::add(a0, a1), V::add(a2, a3));
    a4 = V::add(V::add(a4, a5), V::add(a6, a7));
    return sum_lanes<Isa>(V::add(a0, a4));
  }
}

/// Independent accumulators per ISA: at least FMA latency x FMA pipes (4 x 2 on Zen 4/5
/// and Intel cores, 4 x 4 on Apple-class Arm cores) and, with the two broadcast
/// constants, no more than the register file (16 ymm for AVX2, 32 for AVX-512 / NEON).
template <class Isa>
inline constexpr int fma_chain_count =
    std::is_same_v<Isa, mnemo::simd::avx512> || std::is_same_v<Isa, mnemo::simd::neon> ? 16 : 12;

/// FLOPs one fma_chains(iters) call performs: 2 per FMA lane.
template <class Isa>
constexpr double fma_chains_flops(std::size_t iters) noexcept {
  return 2.0 * static_cast<double>(Isa::lanes_f32) * fma_chain_count<Isa> *
         static_cast<double>(iters);
}

/// Runs `iters` steps of fma_chain_count<Isa> independent chains acc = acc * mul + add.
/// With mul just below 1 and add small the chains converge to add / (1 - mul) and never
/// reach denormals or infinities (which would be slow on some cores). Pass mul and add
/// from a run-time source so the compiler cannot fold the chains.
template <class Isa>
float fma_chains(std::size_t iters, float mul, float add) noexcept {
  using V = mnemo::simd::ops<Isa>;
  using vf = typename V::vf;
  constexpr int K = fma_chain_count<Isa>;
  const vf m = V::set1(mul);
  const vf c = V::set1(add);
  vf acc[K];
  for (int k = 0; k < K; ++k) acc[k] = V::set1(static_cast<float>(k) * (1.0f / K));
  for (std::size_t it = 0; it < iters; ++it) {
    // Fully unrolled so every chain lives in a register.
    [&]<std::size_t... I>(std::index_sequence<I...>) { ((acc[I] = V::fma(acc[I], m, c)), ...); }
    (std::make_index_sequence<K>{});
  }
  vf s = acc[0];
  for (int k = 1; k < K; ++k) s = V::add(s, acc[k]);
  return sum_lanes<Isa>(s);
}

}  // namespace mnemo_bench::probe
