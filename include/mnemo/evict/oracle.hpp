// Oracle eviction: an upper reference for quality harnesses, not a deployable policy.
// The caller supplies, per position, the attention mass the token will receive from
// the queries that come after the eviction (computed with hindsight from a full-cache
// run); the token with the least future mass goes first. Positions beyond the span
// score +inf (kept: nothing is known about them).
#pragma once

#include <limits>
#include <span>

#include "mnemo/evict/concepts.hpp"

namespace mnemo::evict {

struct oracle : policy_defaults {
  std::span<const float> future_mass;  // [positions]; the caller keeps it alive
  /// > 0: future_mass is [n_head_kv, head_stride] and a per-KV-head lane reads its
  /// head's row (per-layer lanes read row 0, which the caller fills with the sum).
  std::size_t head_stride = 0;

  float score(const step_info& s, slot_view v, std::size_t slot) const noexcept {
    const auto p = static_cast<std::size_t>(v.pos[slot]);
    const std::size_t row = head_stride > 0 && s.per_head ? s.kv_head * head_stride : 0;
    const std::size_t n = head_stride > 0 ? head_stride : future_mass.size();
    return p < n ? future_mass[row + p] : std::numeric_limits<float>::infinity();
  }
};
static_assert(eviction_policy<oracle>);

}  // namespace mnemo::evict
