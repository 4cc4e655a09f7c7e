// Umbrella of the state-space layer: causal conv1d and the Mamba-1 selective scan
// (per-ISA kernels and their double references). docs/ssm.md.
#pragma once

#include "mnemo/ssm/conv1d.hpp"
#include "mnemo/ssm/reference.hpp"
#include "mnemo/ssm/scan.hpp"
#include "mnemo/ssm/types.hpp"
