// Run-time ISA support: can this CPU, under this OS, run the code of an ISA tag?
// is_compiled<Isa> (isa.hpp) says whether the build contains the code at all; an ISA
// is usable when both hold. Run-time dispatch (dispatch.hpp) builds on this.
#pragma once

#include <array>
#include <string_view>
#include <type_traits>

#include "mnemo/base/config.hpp"
#include "mnemo/simd/isa.hpp"

#if defined(MNEMO_ARCH_X86_64)
#include <cpuid.h>
#elif defined(MNEMO_ARCH_AARCH64) && defined(__linux__)
#include <asm/hwcap.h>
#include <sys/auxv.h>
#endif

namespace mnemo::simd {

namespace detail {

struct cpu_features {
  bool avx2 = false;         // AVX2 + FMA + F16C + BMI1/2, and the OS saves YMM state
  bool avx512 = false;       // AVX-512 F/BW/DQ/VL on top of that, and the OS saves ZMM state
  bool avx512_int8 = false;  // AVX-512 VNNI + VBMI on top of avx512 (8-bit dot products)
  bool avx512_bf16 = false;  // AVX512_BF16 on top of avx512 (vdpbf16ps)
  bool neon = false;
};

#if defined(MNEMO_ARCH_X86_64)
/// cpuid + xgetbv, not __builtin_cpu_supports: the feature names it accepts (f16c)
/// differ between GCC and clang versions, and the target regions also enable BMI1/2,
/// which must be checked as well. xgetbv is issued as raw asm so no -mxsave is needed.
inline cpu_features probe_cpu_features() noexcept {
  cpu_features f;
  unsigned a = 0, b = 0, c = 0, d = 0;
  if (!__get_cpuid(1, &a, &b, &c, &d)) return f;
  const bool fma = c & (1u << 12), osxsave = c & (1u << 27), avx = c & (1u << 28),
             f16c = c & (1u << 29);
  if (!osxsave || !avx) return f;
  unsigned xcr0_lo = 0, xcr0_hi = 0;
  __asm__ volatile("xgetbv" : "=a"(xcr0_lo), "=d"(xcr0_hi) : "c"(0));
  const bool os_ymm = (xcr0_lo & 0x6u) == 0x6u;    // SSE + AVX state
  const bool os_zmm = (xcr0_lo & 0xe6u) == 0xe6u;  // + opmask, ZMM0-15 hi, ZMM16-31
  if (!__get_cpuid_count(7, 0, &a, &b, &c, &d)) return f;
  const unsigned leaf7_subleaves = a;  // the highest subleaf of leaf 7
  const bool bmi1 = b & (1u << 3), avx2 = b & (1u << 5), bmi2 = b & (1u << 8);
  const bool avx512f = b & (1u << 16), avx512dq = b & (1u << 17), avx512bw = b & (1u << 30),
             avx512vl = b & (1u << 31);
  f.avx2 = os_ymm && avx2 && fma && f16c && bmi1 && bmi2;
  f.avx512 = f.avx2 && os_zmm && avx512f && avx512dq && avx512bw && avx512vl;
  const bool vbmi = c & (1u << 1), vnni = c & (1u << 11);
  f.avx512_int8 = f.avx512 && vbmi && vnni;
  if (f.avx512 && leaf7_subleaves >= 1 && __get_cpuid_count(7, 1, &a, &b, &c, &d))
    f.avx512_bf16 = a & (1u << 5);  // leaf 7 subleaf 1, EAX bit 5
  return f;
}
#elif defined(MNEMO_ARCH_AARCH64)
inline cpu_features probe_cpu_features() noexcept {
  cpu_features f;
#if defined(__linux__)
  f.neon = (getauxval(AT_HWCAP) & HWCAP_ASIMD) != 0;
#else
  f.neon = true;  // Advanced SIMD is mandatory in AArch64 (Apple, Windows on Arm)
#endif
  return f;
}
#else
inline cpu_features probe_cpu_features() noexcept { return {}; }
#endif

/// Probed once per process (thread-safe static initialisation).
inline const cpu_features& cpu() noexcept {
  static const cpu_features f = probe_cpu_features();
  return f;
}

}  // namespace detail

/// True on AMD family 17h models below 30h (Zen 1 and Zen+): two 128-bit FMA pipes, and
/// an F16C widening (vcvtph2ps ymm) that costs about three cycles per eight values, two
/// of them on the FMA pipes (simd::f16_widening). Probed once.
inline bool is_zen1() noexcept {
#if defined(MNEMO_ARCH_X86_64)
  static const bool zen1 = [] {
    unsigned a = 0, b = 0, c = 0, d = 0;
    if (!__get_cpuid(0, &a, &b, &c, &d)) return false;
    const bool amd = b == 0x68747541u && d == 0x69746e65u && c == 0x444d4163u;  // AuthenticAMD
    if (!amd || !__get_cpuid(1, &a, &b, &c, &d)) return false;
    const unsigned base_family = (a >> 8) & 0xfu;
    const unsigned family = base_family == 0xfu ? base_family + ((a >> 20) & 0xffu) : base_family;
    const unsigned model = ((a >> 4) & 0xfu) | (((a >> 16) & 0xfu) << 4);
    return family == 0x17u && model < 0x30u;
  }();
  return zen1;
#else
  return false;
#endif
}

/// True when this build contains code for Isa and the running CPU and OS can run it.
/// scalar is always supported.
template <isa_tag Isa>
bool supported() noexcept {
  if constexpr (!is_compiled<Isa>) {
    return false;
  } else if constexpr (std::is_same_v<Isa, scalar>) {
    return true;
  } else if constexpr (std::is_same_v<Isa, avx2>) {
    return detail::cpu().avx2;
  } else if constexpr (std::is_same_v<Isa, avx512>) {
    return detail::cpu().avx512;
  } else {
    return detail::cpu().neon;
  }
}

/// One row of isa_report().
struct isa_status {
  std::string_view name;
  bool compiled;   // is_compiled<Isa>: the build contains its code
  bool supported;  // supported<Isa>(): this CPU and OS can run it
};

namespace detail {
template <class... Isa>
std::array<isa_status, sizeof...(Isa)> make_isa_report(isa_list<Isa...>) noexcept {
  return {isa_status{Isa::name, is_compiled<Isa>, supported<Isa>()}...};
}
}  // namespace detail

/// Every ISA tag in the order of all_isas (widest first) with its compiled and
/// supported flags; for diagnostics and the demo.
inline auto isa_report() noexcept { return detail::make_isa_report(all_isas{}); }

/// Name of the widest ISA that is both compiled and supported ("scalar" at worst).
/// This ignores MNEMO_FORCE_SCALAR; dispatch() honours it.
inline std::string_view best_supported_isa_name() noexcept {
  for (const isa_status& s : isa_report())
    if (s.compiled && s.supported) return s.name;
  return scalar::name;
}

}  // namespace mnemo::simd
