// StreamingLLM (Xiao et al. 2023, arXiv 2309.17453): the first n_sink positions
// (attention sinks) and the most recent tokens; the oldest non-sink goes first.
// With position_mode::compact the cache renumbers kept tokens (the paper's
// "positions within the cache") so a stream can outrun the trained context.
#pragma once

#include "mnemo/evict/concepts.hpp"

namespace mnemo::evict {

struct streaming_llm : policy_defaults {
  pos_t n_sink = 4;

  bool protect(const step_info&, slot_view v, std::size_t slot) const noexcept {
    return v.pos[slot] < n_sink;
  }
  /// The oldest non-sink goes first; when the budget is below n_sink the sinks go
  /// newest first, so a budget of 1 keeps position 0.
  float score(const step_info&, slot_view v, std::size_t slot) const noexcept {
    const auto p = static_cast<float>(v.pos[slot]);
    return v.pos[slot] < n_sink ? -p : p;
  }
};
static_assert(eviction_policy<streaming_llm>);

}  // namespace mnemo::evict
