// model::detail::matmul_kernels<Isa>: the product kernels of mul_mat, one
// specialisation per ISA, each compiled inside that ISA's target region (stamped by
// simd/foreach_target.hpp: the bodies matmul_gemv.inl and matmul_gemm.inl are written
// once against V = simd::ops<isa> and included into every specialisation).
#pragma once

#if !defined(MNEMO_MODEL_MATMUL_INTERNAL_)
#error "mnemo/model/detail/matmul_kernels.hpp is internal: include mnemo/model/matmul.hpp"
#endif

#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "mnemo/base/config.hpp"
#include "mnemo/dtype/row_kernels.hpp"
#include "mnemo/simd/prefetch.hpp"
#include "mnemo/simd/simd.hpp"

#define MNEMO_MODEL_MATMUL_BODY_ 1

namespace mnemo::model::detail {

template <class Isa>
struct matmul_kernels {
  static_assert(simd::isa_tag<Isa> && simd::is_compiled<Isa>,
                "model::mul_mat<Isa>: this ISA is not compiled for the target architecture "
                "(x86 ISAs on x86-64, neon on AArch64, scalar everywhere)");
};

#define MNEMO_FOREACH_TARGET_BODY "mnemo/model/detail/matmul_kernels_for_isa.inl"
#include "mnemo/simd/foreach_target.hpp"

}  // namespace mnemo::model::detail

#undef MNEMO_MODEL_MATMUL_BODY_
