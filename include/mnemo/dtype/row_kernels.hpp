// dtype::row_kernels<Isa>: encode, decode, dot, axpy, dot_rows and axpy_rows for every storage
// type, one specialisation per ISA, each compiled inside that ISA's target region
// (stamped by simd/foreach_target.hpp: the bodies in detail/*.inl are written once against
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

#define MNEMO_FOREACH_TARGET_BODY "mnemo/dtype/detail/row_kernels_for_isa.inl"
#include "mnemo/simd/foreach_target.hpp"

}  // namespace mnemo::dtype

#undef MNEMO_DTYPE_ROW_KERNEL_BODY_
