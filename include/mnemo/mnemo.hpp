// The umbrella header for applications: everything mnemo offers today.
// mnemo's own headers never include it; they include exactly the layers they use.
#pragma once

#include "mnemo/attention/attention.hpp"
#include "mnemo/base/base.hpp"
#include "mnemo/batch/split.hpp"
#include "mnemo/batch/validate.hpp"
#include "mnemo/dtype/dtype.hpp"
#include "mnemo/memory/memory.hpp"
#include "mnemo/model/gguf.hpp"
#include "mnemo/model/gguf_writer.hpp"
#include "mnemo/simd/simd.hpp"
