// The base layer: configuration macros, status/result, debug asserts, buffers, views.
#pragma once

#include "mnemo/base/aligned_buffer.hpp"
#include "mnemo/base/assert.hpp"
#include "mnemo/base/config.hpp"
#include "mnemo/base/result.hpp"
#include "mnemo/base/rng.hpp"
#include "mnemo/base/status.hpp"
#include "mnemo/base/tensor_view.hpp"
