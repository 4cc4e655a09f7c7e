// Stamps out one kernel body per ISA compiled for this target, each inside that ISA's
// target region (simd/target.hpp), in the spirit of Highway's foreach_target.h. The
// includer names the body and includes this file where the specialisations belong:
//
//   namespace mnemo::dtype {
//   template <class Isa> struct row_kernels;  // primary template
//   #define MNEMO_FOREACH_TARGET_BODY "mnemo/dtype/detail/row_kernels_for_isa.inl"
//   #include "mnemo/simd/foreach_target.hpp"
//   }
//
// The body sees MNEMO_TARGET_ISA (simd::scalar, simd::avx2, ...) and writes its
// specialisation once: `template <> struct row_kernels<MNEMO_TARGET_ISA> { ... };`.
// No include guard: every includer stamps its own body. It includes nothing itself
// (it sits inside the includer's namespace), so simd/simd.hpp must come first.
#if !defined(MNEMO_FOREACH_TARGET_BODY)
#error "define MNEMO_FOREACH_TARGET_BODY (the body file to stamp) before including this file"
#endif
#if !defined(MNEMO_BEGIN_TARGET_SCALAR)
#error "include mnemo/simd/simd.hpp before mnemo/simd/foreach_target.hpp"
#endif

#define MNEMO_TARGET_ISA ::mnemo::simd::scalar
MNEMO_BEGIN_TARGET_SCALAR
#include MNEMO_FOREACH_TARGET_BODY
MNEMO_END_TARGET_SCALAR
#undef MNEMO_TARGET_ISA

#if defined(MNEMO_ARCH_X86_64)
// Compiler false positives inside intrinsics: see MNEMO_BEGIN_ISA_WARNINGS.
MNEMO_BEGIN_ISA_WARNINGS
#define MNEMO_TARGET_ISA ::mnemo::simd::avx2
MNEMO_BEGIN_TARGET_AVX2
#include MNEMO_FOREACH_TARGET_BODY
MNEMO_END_TARGET
#undef MNEMO_TARGET_ISA

#define MNEMO_TARGET_ISA ::mnemo::simd::avx512
MNEMO_BEGIN_TARGET_AVX512
#include MNEMO_FOREACH_TARGET_BODY
MNEMO_END_TARGET
#undef MNEMO_TARGET_ISA
MNEMO_END_ISA_WARNINGS

#elif defined(MNEMO_ARCH_AARCH64)
#define MNEMO_TARGET_ISA ::mnemo::simd::neon
MNEMO_BEGIN_TARGET_NEON
#include MNEMO_FOREACH_TARGET_BODY
MNEMO_END_TARGET_NEON
#undef MNEMO_TARGET_ISA
#endif

#undef MNEMO_FOREACH_TARGET_BODY
