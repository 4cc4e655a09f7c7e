// ssm::detail::kernels<Isa>: conv1d, scan_step and scan_chunk, one specialisation per
// compiled ISA, each inside its target region (stamped by simd/foreach_target.hpp: the bodies in
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

#define MNEMO_FOREACH_TARGET_BODY "mnemo/ssm/detail/kernels_for_isa.inl"
#include "mnemo/simd/foreach_target.hpp"

}  // namespace mnemo::ssm::detail

#undef MNEMO_SSM_KERNEL_BODY_
