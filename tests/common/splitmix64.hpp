// The tests' deterministic generator is the library's (base/rng.hpp).
#pragma once

#include "mnemo/base/rng.hpp"

namespace mnemo_test {
using mnemo::splitmix64;
}  // namespace mnemo_test
