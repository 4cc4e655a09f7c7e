// The simd layer: ISA tags, target regions, every compiled ISA's operation set,
// run-time CPU checks and dispatch.
// The ISA headers guard themselves by architecture, so this includes all of them.
#pragma once

#include "mnemo/simd/avx2.hpp"
#include "mnemo/simd/avx512.hpp"
#include "mnemo/simd/concepts.hpp"
#include "mnemo/simd/cpu.hpp"
#include "mnemo/simd/dispatch.hpp"
#include "mnemo/simd/f16_widening.hpp"
#include "mnemo/simd/half.hpp"
#include "mnemo/simd/isa.hpp"
#include "mnemo/simd/neon.hpp"
#include "mnemo/simd/ops.hpp"
#include "mnemo/simd/prefetch.hpp"
#include "mnemo/simd/scalar.hpp"
#include "mnemo/simd/target.hpp"

namespace mnemo::simd {
// The ISA headers check themselves; the reference ops<scalar> is checked here.
static_assert(vector_ops<ops<scalar>>, "ops<scalar> must provide the whole vector operation set");
}  // namespace mnemo::simd
