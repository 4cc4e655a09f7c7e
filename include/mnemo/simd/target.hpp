// Target regions: code for one ISA is compiled with that ISA's target attributes,
// so several ISAs live in one translation unit without global -m flags, and each
// ISA's code is a distinct specialisation (no ODR clash between ISAs).
//
//   MNEMO_BEGIN_TARGET_AVX2
//   template <> struct my_kernels<simd::avx2> { ... };
//   MNEMO_END_TARGET
//
// GCC attaches `#pragma GCC target` to every function (and template) defined in the
// region; clang's `#pragma clang attribute` does the same. Lambdas in a region are
// fine with both, but keep hot loops out of lambdas anyway.
#pragma once

#include "mnemo/base/config.hpp"

#define MNEMO_PRAGMA_(x) _Pragma(#x)

#if defined(MNEMO_COMPILER_CLANG)
#define MNEMO_BEGIN_TARGET_(features) \
  MNEMO_PRAGMA_(clang attribute push(__attribute__((target(features))), apply_to = function))
#define MNEMO_END_TARGET_NONEMPTY_ MNEMO_PRAGMA_(clang attribute pop)
#elif defined(MNEMO_COMPILER_GCC)
#define MNEMO_BEGIN_TARGET_(features) \
  MNEMO_PRAGMA_(GCC push_options) MNEMO_PRAGMA_(GCC target(features))
#define MNEMO_END_TARGET_NONEMPTY_ MNEMO_PRAGMA_(GCC pop_options)
#else
#error "mnemo needs GCC or clang for its ISA target regions"
#endif

#define MNEMO_TARGET_FEATURES_AVX2 "avx2,fma,f16c,bmi,bmi2"
#define MNEMO_TARGET_FEATURES_AVX512 "avx512f,avx512bw,avx512dq,avx512vl,avx2,fma,f16c,bmi,bmi2"

// The scalar and NEON regions need no attributes (NEON is baseline on AArch64);
// they exist so that every ISA's code reads the same way.
#define MNEMO_BEGIN_TARGET_SCALAR
#define MNEMO_END_TARGET_SCALAR
#define MNEMO_BEGIN_TARGET_NEON
#define MNEMO_END_TARGET_NEON
#define MNEMO_BEGIN_TARGET_AVX2 MNEMO_BEGIN_TARGET_(MNEMO_TARGET_FEATURES_AVX2)
#define MNEMO_BEGIN_TARGET_AVX512 MNEMO_BEGIN_TARGET_(MNEMO_TARGET_FEATURES_AVX512)
#define MNEMO_END_TARGET MNEMO_END_TARGET_NONEMPTY_

// GCC 12 reports false -W(maybe-)uninitialized inside its own AVX-512 intrinsics
// (_mm512_undefined_ps pass-through, GCC PR 105593, fixed in 12.3) and false
// -Warray-bounds on vector loads in loops its constant propagation proves dead, at
// every place they are inlined. ISA kernel regions are wrapped in these so that
// consumers building with -Werror are not broken by the compiler's noise.
#if defined(MNEMO_COMPILER_GCC)
#define MNEMO_BEGIN_ISA_WARNINGS                                \
  MNEMO_PRAGMA_(GCC diagnostic push)                            \
  MNEMO_PRAGMA_(GCC diagnostic ignored "-Wuninitialized")       \
  MNEMO_PRAGMA_(GCC diagnostic ignored "-Wmaybe-uninitialized") \
  MNEMO_PRAGMA_(GCC diagnostic ignored "-Warray-bounds")
#define MNEMO_END_ISA_WARNINGS MNEMO_PRAGMA_(GCC diagnostic pop)
#else
#define MNEMO_BEGIN_ISA_WARNINGS \
  MNEMO_PRAGMA_(clang diagnostic push) MNEMO_PRAGMA_(clang diagnostic ignored "-Wuninitialized")
#define MNEMO_END_ISA_WARNINGS MNEMO_PRAGMA_(clang diagnostic pop)
#endif
