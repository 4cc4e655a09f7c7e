// Software prefetch, and which cache it fills: a property of the machine, not the ISA.
//
// The streaming kernels (one-token products over weight rows, attention decode over
// K/V blocks) ask for lines a fixed distance ahead. Two CPUs with the same AVX-512
// flags want different instructions (docs/simd.md, "Software prefetch"):
//   - Zen 5 VM (AMD family 1Ah): prefetcht0 (into L1) was 5-15% faster than
//     prefetcht1 for attention decode, and the products depend on it (without, q4_0
//     weights read at 0.2-0.26 of the bandwidth).
//   - Zen 4 VM (family 19h): prefetcht0 of a weight stream halved its rate (15 against
//     27 GB/s without software prefetch, one thread) and attention decode read at ~0.6
//     of the bandwidth; prefetcht1 (into L2) gave the products 0.8-0.97 and attention
//     ~0.8. (dtype's dot_rows, a row's lines at a time, stays on prefetcht0: faster
//     for it on this VM too. The default is a measured guess a host can override.)
// So the target is chosen per CPU at first use and can be set by the host (which may
// measure its own machine: bench/products and bench/attention take
// MNEMO_PREFETCH=l1|l2 for that).
//
//   simd::set_prefetch_target(simd::prefetch_target::l2);
//   simd::prefetch(p, simd::current_prefetch_target());
#pragma once

#include <cstdint>

#include "mnemo/base/config.hpp"
#include "mnemo/base/process_setting.hpp"

#if defined(MNEMO_ARCH_X86_64)
#include <cpuid.h>
#endif

namespace mnemo::simd {

/// The cache a software prefetch fills: L1 (prefetcht0) or L2 (prefetcht1).
enum class prefetch_target : std::uint8_t { l1, l2 };

/// The target for the running CPU: l2 on AMD family 19h (Zen 3 / Zen 4), l1 elsewhere
/// (Zen 5 and CPUs not measured: what the kernels were first tuned with).
inline prefetch_target detect_prefetch_target() noexcept {
#if defined(MNEMO_ARCH_X86_64)
  unsigned a = 0, b = 0, c = 0, d = 0;
  if (!__get_cpuid(0, &a, &b, &c, &d)) return prefetch_target::l1;
  const bool amd = b == 0x68747541u && d == 0x69746e65u && c == 0x444d4163u;  // "AuthenticAMD"
  if (!amd || !__get_cpuid(1, &a, &b, &c, &d)) return prefetch_target::l1;
  const unsigned base_family = (a >> 8) & 0xfu;
  const unsigned family = base_family == 0xfu ? base_family + ((a >> 20) & 0xffu) : base_family;
  return family == 0x19u ? prefetch_target::l2 : prefetch_target::l1;
#else
  return prefetch_target::l1;
#endif
}

namespace detail {
inline process_setting<prefetch_target>& prefetch_target_setting() noexcept {
  static process_setting<prefetch_target> t{detect_prefetch_target()};
  return t;
}
}  // namespace detail

/// The target the kernels use now (read once per call by each kernel).
inline prefetch_target current_prefetch_target() noexcept {
  return detail::prefetch_target_setting().get();
}

/// Sets the target for calls that start afterwards (calls running keep theirs).
inline void set_prefetch_target(prefetch_target t) noexcept {
  detail::prefetch_target_setting().set(t);
}

/// Asks for the line at p to be brought into t's cache; never faults.
MNEMO_INLINE void prefetch(const void* p, prefetch_target t) noexcept {
  if (t == prefetch_target::l2)
    __builtin_prefetch(p, 0, 2);
  else
    __builtin_prefetch(p, 0, 3);
}

}  // namespace mnemo::simd
