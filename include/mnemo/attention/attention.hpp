// The attention layer: variants and masks, KV views, the {o, m, l} state algebra,
// RoPE, the reference kernel, the fast kernel and statistics sinks.
#pragma once

#include "mnemo/attention/attend.hpp"
#include "mnemo/attention/kv_view.hpp"
#include "mnemo/attention/params.hpp"
#include "mnemo/attention/reference.hpp"
#include "mnemo/attention/rope.hpp"
#include "mnemo/attention/sink.hpp"
#include "mnemo/attention/state.hpp"
