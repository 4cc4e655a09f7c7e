// last-recent: keeps the newest `budget` tokens (a sliding window over what the
// cache holds; litgpt's ring buffer, keys_values `lastrec` without grace tokens).
#pragma once

#include "mnemo/evict/concepts.hpp"

namespace mnemo::evict {

struct last_recent : policy_defaults {
  float score(const step_info&, slot_view v, std::size_t slot) const noexcept {
    return static_cast<float>(v.pos[slot]);  // the oldest goes first
  }
};
static_assert(eviction_policy<last_recent>);

}  // namespace mnemo::evict
