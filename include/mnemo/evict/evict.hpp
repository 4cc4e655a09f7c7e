// The eviction layer: the policy concept and the policies mnemo ships.
#pragma once

#include "mnemo/evict/concepts.hpp"
#include "mnemo/evict/h2o.hpp"
#include "mnemo/evict/key_norm.hpp"
#include "mnemo/evict/last_recent.hpp"
#include "mnemo/evict/oracle.hpp"
#include "mnemo/evict/random_evict.hpp"
#include "mnemo/evict/snapkv.hpp"
#include "mnemo/evict/streaming_llm.hpp"
#include "mnemo/evict/tova.hpp"
