// The umbrella header for applications: everything mnemo offers today.
// mnemo's own headers never include it; they include exactly the layers they use.
#pragma once

#include "mnemo/attention/attention.hpp"
#include "mnemo/base/base.hpp"
#include "mnemo/batch/split.hpp"
#include "mnemo/batch/validate.hpp"
#include "mnemo/context.hpp"
#include "mnemo/dtype/dtype.hpp"
#include "mnemo/evict/evict.hpp"
#include "mnemo/memory/memory.hpp"
#include "mnemo/model/model.hpp"
#include "mnemo/sampling.hpp"
#include "mnemo/simd/simd.hpp"
#include "mnemo/ssm/ssm.hpp"
#include "mnemo/text/text.hpp"
