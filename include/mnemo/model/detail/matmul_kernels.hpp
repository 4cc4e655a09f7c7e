// model::detail::matmul_kernels<Isa>: the product kernels of mul_mat, one
// specialisation per ISA, each compiled inside that ISA's target region (THE KERNEL
// PATTERN: the bodies matmul_gemv.inl and matmul_gemm.inl are written once against
// V = simd::ops<isa> and included into every specialisation).
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

MNEMO_BEGIN_TARGET_SCALAR
template <>
struct matmul_kernels<simd::scalar> {
  using isa = simd::scalar;
  using V = simd::ops<isa>;
  using vf = V::vf;
  using RK = dtype::row_kernels<isa>;
  using C = dtype::detail::block_codes<isa>;
  static constexpr std::size_t L = V::lanes;
  // clang-format off
#include "mnemo/simd/detail/transpose_matrix.inl"
#include "mnemo/model/detail/matmul_gemv.inl"
#include "mnemo/model/detail/matmul_gemm.inl"
  // clang-format on
};
MNEMO_END_TARGET_SCALAR

#if defined(MNEMO_ARCH_X86_64)
MNEMO_BEGIN_ISA_WARNINGS
MNEMO_BEGIN_TARGET_AVX2
template <>
struct matmul_kernels<simd::avx2> {
  using isa = simd::avx2;
  using V = simd::ops<isa>;
  using vf = V::vf;
  using RK = dtype::row_kernels<isa>;
  using C = dtype::detail::block_codes<isa>;
  static constexpr std::size_t L = V::lanes;
  // clang-format off
#include "mnemo/simd/detail/transpose_matrix.inl"
#include "mnemo/model/detail/matmul_gemv.inl"
#include "mnemo/model/detail/matmul_gemm.inl"
  // clang-format on
};
MNEMO_END_TARGET

MNEMO_BEGIN_TARGET_AVX512
template <>
struct matmul_kernels<simd::avx512> {
  using isa = simd::avx512;
  using V = simd::ops<isa>;
  using vf = V::vf;
  using RK = dtype::row_kernels<isa>;
  using C = dtype::detail::block_codes<isa>;
  static constexpr std::size_t L = V::lanes;
  // clang-format off
#include "mnemo/simd/detail/transpose_matrix.inl"
#include "mnemo/model/detail/matmul_gemv.inl"
#include "mnemo/model/detail/matmul_gemm.inl"
  // clang-format on
};
MNEMO_END_TARGET
MNEMO_END_ISA_WARNINGS

#elif defined(MNEMO_ARCH_AARCH64)
MNEMO_BEGIN_TARGET_NEON
template <>
struct matmul_kernels<simd::neon> {
  using isa = simd::neon;
  using V = simd::ops<isa>;
  using vf = V::vf;
  using RK = dtype::row_kernels<isa>;
  using C = dtype::detail::block_codes<isa>;
  static constexpr std::size_t L = V::lanes;
  // clang-format off
#include "mnemo/simd/detail/transpose_matrix.inl"
#include "mnemo/model/detail/matmul_gemv.inl"
#include "mnemo/model/detail/matmul_gemm.inl"
  // clang-format on
};
MNEMO_END_TARGET_NEON
#endif

}  // namespace mnemo::model::detail

#undef MNEMO_MODEL_MATMUL_BODY_
