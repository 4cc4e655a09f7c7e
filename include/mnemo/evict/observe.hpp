// The statistics adapter between a model's attention call and a memory that
// observes attention (the bounded strategy): the model calls attend_observed()
// instead of attention::attend() when the memory models attention_observer, a
// compile-time property, so every other strategy keeps the plain null-sink call.
// The mass export is instantiated only when the memory's policy can use it
// (wants_attention_stats), and taken at run time only when the policy asks for it
// in this layer and call (one branch per layer call, outside every loop).
#pragma once

#include <concepts>
#include <span>

#include "mnemo/attention/attend.hpp"
#include "mnemo/memory/concepts.hpp"

namespace mnemo::evict {

/// A memory that wants to see each layer's attention: after_attention(layer, u,
/// had_stats) is called once per layer and micro-batch after attend; when
/// wants_attention_stats is true, stats_sink(layer, u, sink) may ask for mass.
template <class M>
concept attention_observer = requires(M& m, std::size_t i, attention::mass_sink& sink) {
  { M::wants_attention_stats } -> std::convertible_to<bool>;
  { m.stats_sink(i, i, sink) } -> std::same_as<bool>;
  { m.after_attention(i, i, true) } -> std::same_as<status>;
};

/// attend() of one layer through an observing memory, then its after_attention hook.
template <simd::isa_tag Isa, dtype::kv_element KE, dtype::kv_element VE, attention_observer M>
status attend_observed(M& mem, std::size_t layer, std::size_t u, const attention::shape& sh,
                       const attention::params& p, const attention::query_batch& q,
                       const memory::layer_views& lv, float* out, attention::workspace& ws,
                       const attention::options& opt) {
  if constexpr (M::wants_attention_stats) {
    attention::mass_sink sink;
    if (mem.stats_sink(layer, u, sink)) {
      MNEMO_RETURN_IF_ERROR((attention::attend<Isa, KE, VE, attention::mass_sink>(
          sh, p, q, lv.streams, out, ws, opt, sink)));
      return mem.after_attention(layer, u, true);
    }
  }
  MNEMO_RETURN_IF_ERROR((attention::attend<Isa, KE, VE>(sh, p, q, lv.streams, out, ws, opt)));
  return mem.after_attention(layer, u, false);
}

}  // namespace mnemo::evict
