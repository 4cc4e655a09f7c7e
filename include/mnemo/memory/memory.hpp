// The memory layer: cells, KV storage, strategies, transactions and state files.
#pragma once

#include "mnemo/memory/batch_plan.hpp"
#include "mnemo/memory/cells.hpp"
#include "mnemo/memory/concepts.hpp"
#include "mnemo/memory/full_cache.hpp"
#include "mnemo/memory/full_cache_state.hpp"
#include "mnemo/memory/kv_storage.hpp"
#include "mnemo/memory/split_stream.hpp"
#include "mnemo/memory/split_stream_state.hpp"
#include "mnemo/memory/state_format.hpp"
#include "mnemo/memory/transaction.hpp"
#include "mnemo/memory/types.hpp"

namespace mnemo::memory {
static_assert(sequence_memory<full_cache<float>>);
static_assert(sequence_memory<full_cache<dtype::f16, dtype::block_q8_0>>);
}  // namespace mnemo::memory

namespace mnemo::memory {
static_assert(sequence_memory<split_stream<float>>);
static_assert(kv_memory<split_stream<dtype::f16, dtype::block_q8_0>>);
}  // namespace mnemo::memory
