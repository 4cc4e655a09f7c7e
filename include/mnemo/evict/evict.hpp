// The eviction layer: the policy concept, the policies mnemo ships and the budget
// schedules.
#pragma once

#include "mnemo/evict/budget_schedule.hpp"
#include "mnemo/evict/concepts.hpp"
#include "mnemo/evict/duo_attention.hpp"
#include "mnemo/evict/h2o.hpp"
#include "mnemo/evict/h2o_normalised.hpp"
#include "mnemo/evict/h2o_vlen.hpp"
#include "mnemo/evict/key_norm.hpp"
#include "mnemo/evict/keyformer.hpp"
#include "mnemo/evict/last_recent.hpp"
#include "mnemo/evict/oracle.hpp"
#include "mnemo/evict/random_evict.hpp"
#include "mnemo/evict/scissorhands.hpp"
#include "mnemo/evict/snapkv.hpp"
#include "mnemo/evict/streaming_llm.hpp"
#include "mnemo/evict/tova.hpp"

// Scored from the keys, the queries' statistics, or the quantisation error.
#include "mnemo/evict/expected_attention.hpp"
#include "mnemo/evict/key_diff.hpp"
#include "mnemo/evict/lane_rescore.hpp"
#include "mnemo/evict/q_hitter.hpp"
