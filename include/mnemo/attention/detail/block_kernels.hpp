// attention::detail::block_kernels<Isa>: the per-ISA inner loops, one specialisation
// per compiled ISA, each inside its target region (bodies: tile_math.inl,
// block_steps.inl, decode_steps.inl, in that order: later ones use earlier types).
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <tuple>
#include <type_traits>

#include "mnemo/attention/detail/item.hpp"
#include "mnemo/attention/kv_view.hpp"
#include "mnemo/attention/params.hpp"
#include "mnemo/dtype/dtype.hpp"
#include "mnemo/simd/simd.hpp"

#if defined(MNEMO_ARCH_X86_64)
#include <immintrin.h>
#endif

namespace mnemo::attention::detail {

template <class Isa>
struct block_kernels {
  static_assert(simd::is_compiled<Isa>,
                "attention kernels: this ISA is not compiled for the target architecture");
};

MNEMO_BEGIN_TARGET_SCALAR
template <>
struct block_kernels<simd::scalar> {
  using isa = simd::scalar;
  using V = simd::ops<isa>;
  using rows = dtype::row_kernels<isa>;
// In this order: later bodies use earlier types.
// clang-format off
#include "mnemo/simd/detail/transpose_matrix.inl"
#include "mnemo/attention/detail/tile_math.inl"
#include "mnemo/attention/detail/block_steps.inl"
#include "mnemo/attention/detail/decode_steps.inl"
  // clang-format on
};
MNEMO_END_TARGET_SCALAR

#if defined(MNEMO_ARCH_X86_64)
// Compiler false positives inside intrinsics: see MNEMO_BEGIN_ISA_WARNINGS.
MNEMO_BEGIN_ISA_WARNINGS
MNEMO_BEGIN_TARGET_AVX2
template <>
struct block_kernels<simd::avx2> {
  using isa = simd::avx2;
  using V = simd::ops<isa>;
  using rows = dtype::row_kernels<isa>;
// In this order: later bodies use earlier types.
// clang-format off
#include "mnemo/simd/detail/transpose_matrix.inl"
#include "mnemo/attention/detail/tile_math.inl"
#include "mnemo/attention/detail/block_steps.inl"
#include "mnemo/attention/detail/decode_steps.inl"
  // clang-format on
};
MNEMO_END_TARGET

MNEMO_BEGIN_TARGET_AVX512
template <>
struct block_kernels<simd::avx512> {
  using isa = simd::avx512;
  using V = simd::ops<isa>;
  using rows = dtype::row_kernels<isa>;
// In this order: later bodies use earlier types.
// clang-format off
#include "mnemo/simd/detail/transpose_matrix.inl"
#include "mnemo/attention/detail/tile_math.inl"
#include "mnemo/attention/detail/block_steps.inl"
#include "mnemo/attention/detail/decode_steps.inl"
  // clang-format on
};
MNEMO_END_TARGET
MNEMO_END_ISA_WARNINGS
#elif defined(MNEMO_ARCH_AARCH64)
MNEMO_BEGIN_TARGET_NEON
template <>
struct block_kernels<simd::neon> {
  using isa = simd::neon;
  using V = simd::ops<isa>;
  using rows = dtype::row_kernels<isa>;
// In this order: later bodies use earlier types.
// clang-format off
#include "mnemo/simd/detail/transpose_matrix.inl"
#include "mnemo/attention/detail/tile_math.inl"
#include "mnemo/attention/detail/block_steps.inl"
#include "mnemo/attention/detail/decode_steps.inl"
  // clang-format on
};
MNEMO_END_TARGET_NEON
#endif

}  // namespace mnemo::attention::detail
