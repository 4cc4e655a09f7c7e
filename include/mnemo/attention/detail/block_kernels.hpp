// attention::detail::block_kernels<Isa>: the per-ISA inner loops, one specialisation
// per compiled ISA, each inside its target region (stamped by simd/foreach_target.hpp;
// bodies: tile_math.inl, block_steps.inl, decode_steps.inl, in that order: later ones use
// earlier types).
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <tuple>
#include <type_traits>

#include "mnemo/attention/detail/bf16_dots.hpp"
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

#define MNEMO_FOREACH_TARGET_BODY "mnemo/attention/detail/block_kernels_for_isa.inl"
#include "mnemo/simd/foreach_target.hpp"

}  // namespace mnemo::attention::detail
