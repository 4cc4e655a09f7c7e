// The simd layer: ISA tags, target regions and every compiled ISA's operation set.
#pragma once

#include "mnemo/simd/isa.hpp"
#include "mnemo/simd/ops.hpp"
#include "mnemo/simd/scalar.hpp"
#include "mnemo/simd/target.hpp"
