// dtype::row_kernels<Isa>: encode, decode, dot, axpy, dot_rows and axpy_rows for every storage
// type, one specialisation per ISA, each compiled inside that ISA's target region
// (THE KERNEL PATTERN: the bodies in detail/*.inl are written once against
// V = simd::ops<isa> and included into every specialisation).
//
// Code that itself sits in a target region of the same ISA (attention kernels) calls
// these static members directly so that they inline; everything else uses the free
// functions of rows.hpp, which check their arguments in debug builds.
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "mnemo/base/assert.hpp"
#include "mnemo/base/config.hpp"
#include "mnemo/dtype/element_type.hpp"
#include "mnemo/dtype/types.hpp"
#include "mnemo/simd/simd.hpp"

// The bodies and detail headers refuse to be included anywhere else.
#define MNEMO_DTYPE_ROW_KERNEL_BODY_ 1
#include "mnemo/dtype/detail/block_codes.hpp"

namespace mnemo::dtype {

template <class Isa>
struct row_kernels {
  static_assert(simd::isa_tag<Isa>,
                "dtype::row_kernels<Isa>: Isa must be one of simd::scalar, avx2, avx512, neon");
  static_assert(!simd::isa_tag<Isa> || simd::is_compiled<Isa>,
                "dtype::row_kernels<Isa>: this ISA is not compiled for the target architecture; "
                "check simd::is_compiled<Isa> before instantiating kernels for it");
};

MNEMO_BEGIN_TARGET_SCALAR
template <>
struct row_kernels<simd::scalar> {
  using isa = simd::scalar;
  using V = simd::ops<isa>;
  using vf = V::vf;
  using C = detail::block_codes<isa>;
  static constexpr std::size_t lanes = V::lanes;
  // clang-format off
#include "mnemo/dtype/detail/float_rows.inl"
#include "mnemo/dtype/detail/q8_0_rows.inl"
#include "mnemo/dtype/detail/q4_0_rows.inl"
#include "mnemo/dtype/detail/dot_rows.inl"
  // clang-format on
};
MNEMO_END_TARGET_SCALAR

#if defined(MNEMO_ARCH_X86_64)
// Compiler false positives inside intrinsics: see MNEMO_BEGIN_ISA_WARNINGS.
MNEMO_BEGIN_ISA_WARNINGS
MNEMO_BEGIN_TARGET_AVX2
template <>
struct row_kernels<simd::avx2> {
  using isa = simd::avx2;
  using V = simd::ops<isa>;
  using vf = V::vf;
  using C = detail::block_codes<isa>;
  static constexpr std::size_t lanes = V::lanes;
  // clang-format off
#include "mnemo/dtype/detail/float_rows.inl"
#include "mnemo/dtype/detail/q8_0_rows.inl"
#include "mnemo/dtype/detail/q4_0_rows.inl"
#include "mnemo/dtype/detail/dot_rows.inl"
  // clang-format on
};
MNEMO_END_TARGET

MNEMO_BEGIN_TARGET_AVX512
template <>
struct row_kernels<simd::avx512> {
  using isa = simd::avx512;
  using V = simd::ops<isa>;
  using vf = V::vf;
  using C = detail::block_codes<isa>;
  static constexpr std::size_t lanes = V::lanes;
  // clang-format off
#include "mnemo/dtype/detail/float_rows.inl"
#include "mnemo/dtype/detail/q8_0_rows.inl"
#include "mnemo/dtype/detail/q4_0_rows.inl"
#include "mnemo/dtype/detail/dot_rows.inl"
  // clang-format on
};
MNEMO_END_TARGET
MNEMO_END_ISA_WARNINGS

#elif defined(MNEMO_ARCH_AARCH64)
MNEMO_BEGIN_TARGET_NEON
template <>
struct row_kernels<simd::neon> {
  using isa = simd::neon;
  using V = simd::ops<isa>;
  using vf = V::vf;
  using C = detail::block_codes<isa>;
  static constexpr std::size_t lanes = V::lanes;
  // clang-format off
#include "mnemo/dtype/detail/float_rows.inl"
#include "mnemo/dtype/detail/q8_0_rows.inl"
#include "mnemo/dtype/detail/q4_0_rows.inl"
#include "mnemo/dtype/detail/dot_rows.inl"
  // clang-format on
};
MNEMO_END_TARGET_NEON
#endif

}  // namespace mnemo::dtype

#undef MNEMO_DTYPE_ROW_KERNEL_BODY_
