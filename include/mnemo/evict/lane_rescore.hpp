// The rescoring hook: a policy whose score of a cell depends on the whole lane (the
// mean key of KeyDiff, the query statistics of Expected Attention) declares
// rescore(step, slot_view, lane_keys, signals), which the cache calls with the
// lane's cached keys decoded to f32 on demand: after on_attention in a call that
// delivered signals (`signals` points at them), else right before it evicts from
// the lane (`signals` null). Nothing else calls it, so a policy without signals pays
// once per eviction (once per `evict_chunk` decode steps with the chunked trigger),
// and it needs no state beyond its per-slot floats: rollback, sequence operations
// and state files stay policy-agnostic.
#pragma once

#include <cstddef>

#include "mnemo/evict/concepts.hpp"

namespace mnemo::evict {

/// The keys a lane holds: row(slot, out) writes slot's key row as attention reads
/// it (post-RoPE), [n_head_kv, d_k] f32 (all KV heads per layer, the lane's head
/// alone per KV head: n_head_kv = 1 then). Only live slots hold keys.
struct lane_keys {
  std::size_t n_head_kv = 0, d_k = 0;
  const void* ctx = nullptr;
  void (*decode)(const void* ctx, std::size_t slot, float* out) noexcept = nullptr;
  void row(std::size_t slot, float* out) const noexcept { decode(ctx, slot, out); }
};

/// A policy that rescores its lane from the cached keys (and the call's signals).
template <class P>
concept lane_rescorer = requires(const P& p, const step_info& s, slot_view v, const lane_keys& k,
                                 const attention_signals* sg) {
  { p.rescore(s, v, k, sg) }
  noexcept;
};

}  // namespace mnemo::evict
