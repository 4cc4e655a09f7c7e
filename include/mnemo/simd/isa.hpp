// ISA tag types, the native alias, and which ISAs this build compiled.
// Every kernel takes an ISA tag as a template argument; the scalar path is always
// compiled and is the reference the others are tested against.
#pragma once

#include <concepts>
#include <cstddef>
#include <string_view>
#include <type_traits>

#include "mnemo/base/config.hpp"

namespace mnemo::simd {

struct scalar {
  static constexpr std::string_view name = "scalar";
  static constexpr std::size_t lanes_f32 = 1;
};
struct avx2 {  // AVX2 + FMA + F16C (Haswell, Zen 1 and later)
  static constexpr std::string_view name = "avx2";
  static constexpr std::size_t lanes_f32 = 8;
};
struct avx512 {  // AVX-512 F/BW/DQ/VL (Skylake-SP, Zen 4 and later)
  static constexpr std::string_view name = "avx512";
  static constexpr std::size_t lanes_f32 = 16;
};
struct neon {  // AArch64 Advanced SIMD
  static constexpr std::string_view name = "neon";
  static constexpr std::size_t lanes_f32 = 4;
};

template <class T>
concept isa_tag = std::same_as<T, scalar> || std::same_as<T, avx2> || std::same_as<T, avx512> ||
    std::same_as<T, neon>;

/// True when this build contains code for `Isa`: x86 ISAs on x86-64, NEON on AArch64,
/// scalar everywhere. Whether the running CPU has it is `supported<Isa>()`.
template <isa_tag Isa>
inline constexpr bool is_compiled = std::is_same_v<Isa, scalar>
#if defined(MNEMO_ARCH_X86_64)
                                    || std::is_same_v<Isa, avx2> || std::is_same_v<Isa, avx512>
#elif defined(MNEMO_ARCH_AARCH64)
                                    || std::is_same_v<Isa, neon>
#endif
    ;

/// The widest ISA the compiler flags of this translation unit guarantee.
/// MNEMO_FORCE_SCALAR selects the scalar path (the `scalar` preset).
/// MNEMO_FOREACH_OTHER_ISA(X) expands to X(tag) for every other ISA this build compiles
/// (the kernels library's explicit instantiations, docs/compile-time.md).
#if defined(MNEMO_FORCE_SCALAR)
using native = scalar;
#define MNEMO_NATIVE_IS_SCALAR_ 1
#elif defined(__AVX512F__) && defined(__AVX512BW__) && defined(__AVX512DQ__) && \
    defined(__AVX512VL__) && defined(__FMA__) && defined(__F16C__)
using native = avx512;
#define MNEMO_FOREACH_OTHER_ISA(X) X(::mnemo::simd::scalar) X(::mnemo::simd::avx2)
#elif defined(__AVX2__) && defined(__FMA__) && defined(__F16C__)
using native = avx2;
#define MNEMO_FOREACH_OTHER_ISA(X) X(::mnemo::simd::scalar) X(::mnemo::simd::avx512)
#elif defined(__ARM_NEON) && defined(MNEMO_ARCH_AARCH64)
using native = neon;
#define MNEMO_FOREACH_OTHER_ISA(X) X(::mnemo::simd::scalar)
#else
using native = scalar;
#define MNEMO_NATIVE_IS_SCALAR_ 1
#endif
#if defined(MNEMO_NATIVE_IS_SCALAR_)
#if defined(MNEMO_ARCH_X86_64)
#define MNEMO_FOREACH_OTHER_ISA(X) X(::mnemo::simd::avx2) X(::mnemo::simd::avx512)
#elif defined(MNEMO_ARCH_AARCH64)
#define MNEMO_FOREACH_OTHER_ISA(X) X(::mnemo::simd::neon)
#else
#define MNEMO_FOREACH_OTHER_ISA(X)
#endif
#undef MNEMO_NATIVE_IS_SCALAR_
#endif

/// Every ISA tag, widest first (the order run-time dispatch tries them in).
template <class... Isa>
struct isa_list {};
using all_isas = isa_list<avx512, avx2, neon, scalar>;

}  // namespace mnemo::simd
