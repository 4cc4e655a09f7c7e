// The dtype layer: storage types of K/V and weight rows (f32, f16, bf16, q8_0, q4_0)
// with GGUF byte layouts, their run-time names and traits, and per-ISA row kernels.
#pragma once

#include "mnemo/dtype/concepts.hpp"
#include "mnemo/dtype/element_type.hpp"
#include "mnemo/dtype/row_kernels.hpp"
#include "mnemo/dtype/rows.hpp"
#include "mnemo/dtype/types.hpp"
