// ssm::detail::kernels<Isa>: conv1d, scan_step and scan_chunk, one specialisation per
// compiled ISA, each inside its target region (THE KERNEL PATTERN: the bodies in
// math.inl, conv1d.inl and scan.inl are written once against V = simd::ops<isa>).
#pragma once

#include <algorithm>
#include <cstddef>
#include <type_traits>

#include "mnemo/base/config.hpp"
#include "mnemo/simd/simd.hpp"
#include "mnemo/ssm/types.hpp"

#if defined(MNEMO_ARCH_X86_64)
#include <immintrin.h>
#elif defined(MNEMO_ARCH_AARCH64)
#include <arm_neon.h>
#endif

#define MNEMO_SSM_KERNEL_BODY_ 1

namespace mnemo::ssm::detail {

template <class Isa>
struct kernels {
  static_assert(simd::isa_tag<Isa>,
                "ssm kernels: Isa must be one of simd::scalar, avx2, avx512, neon");
  static_assert(!simd::isa_tag<Isa> || simd::is_compiled<Isa>,
                "ssm kernels: this ISA is not compiled for the target architecture; check "
                "simd::is_compiled<Isa> before instantiating kernels for it");
};

MNEMO_BEGIN_TARGET_SCALAR
template <>
struct kernels<simd::scalar> {
  using isa = simd::scalar;
  using V = simd::ops<isa>;
  using vf = V::vf;
  static constexpr std::size_t lanes = V::lanes;
  // clang-format off
#include "mnemo/ssm/detail/math.inl"
#include "mnemo/ssm/detail/conv1d.inl"
#include "mnemo/ssm/detail/scan.inl"
  // clang-format on
};
MNEMO_END_TARGET_SCALAR

#if defined(MNEMO_ARCH_X86_64)
MNEMO_BEGIN_ISA_WARNINGS
MNEMO_BEGIN_TARGET_AVX2
template <>
struct kernels<simd::avx2> {
  using isa = simd::avx2;
  using V = simd::ops<isa>;
  using vf = V::vf;
  static constexpr std::size_t lanes = V::lanes;
  // clang-format off
#include "mnemo/ssm/detail/math.inl"
#include "mnemo/ssm/detail/conv1d.inl"
#include "mnemo/ssm/detail/scan.inl"
  // clang-format on
};
MNEMO_END_TARGET

MNEMO_BEGIN_TARGET_AVX512
template <>
struct kernels<simd::avx512> {
  using isa = simd::avx512;
  using V = simd::ops<isa>;
  using vf = V::vf;
  static constexpr std::size_t lanes = V::lanes;
  // clang-format off
#include "mnemo/ssm/detail/math.inl"
#include "mnemo/ssm/detail/conv1d.inl"
#include "mnemo/ssm/detail/scan.inl"
  // clang-format on
};
MNEMO_END_TARGET
MNEMO_END_ISA_WARNINGS

#elif defined(MNEMO_ARCH_AARCH64)
MNEMO_BEGIN_TARGET_NEON
template <>
struct kernels<simd::neon> {
  using isa = simd::neon;
  using V = simd::ops<isa>;
  using vf = V::vf;
  static constexpr std::size_t lanes = V::lanes;
  // clang-format off
#include "mnemo/ssm/detail/math.inl"
#include "mnemo/ssm/detail/conv1d.inl"
#include "mnemo/ssm/detail/scan.inl"
  // clang-format on
};
MNEMO_END_TARGET_NEON
#endif

}  // namespace mnemo::ssm::detail

#undef MNEMO_SSM_KERNEL_BODY_
