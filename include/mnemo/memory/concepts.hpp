// The memory concept every strategy models: sequence operations, queries, batch
// planning with transactions, and K-shift (docs/memory.md). State I/O is a pair
// of free functions per strategy (state_write / state_read).
#pragma once

#include <concepts>
#include <cstdint>
#include <span>
#include <vector>

#include "mnemo/attention/kv_view.hpp"
#include "mnemo/attention/params.hpp"
#include "mnemo/base/seq_set.hpp"
#include "mnemo/base/status.hpp"
#include "mnemo/dtype/concepts.hpp"
#include "mnemo/memory/types.hpp"

namespace mnemo::memory {

template <class M>
concept sequence_memory = requires(M m, const M cm, seq_id s, pos_t p, bool b, std::size_t u,
                                   std::span<const ubatch_tokens> ubs, const ubatch_tokens& ub) {
  { m.seq_rm(s, p, p) } -> std::same_as<status>;
  { m.seq_cp(s, s, p, p) } -> std::same_as<status>;
  { m.seq_keep(s) } -> std::same_as<status>;
  { m.seq_add(s, p, p, p) } -> std::same_as<status>;
  { m.seq_div(s, p, p, 2) } -> std::same_as<status>;
  {m.clear(b)};
  { cm.seq_pos_min(s) } -> std::same_as<pos_t>;
  { cm.seq_pos_max(s) } -> std::same_as<pos_t>;
  { cm.can_shift() } -> std::same_as<bool>;
  { m.update() } -> std::same_as<status>;
  { m.prepare(ubs) } -> std::same_as<status>;
  { m.apply(u, ub) } -> std::same_as<status>;
  {m.commit()};
  {m.rollback()};
  { cm.report() } -> std::same_as<memory_report>;
};

// ---- what a model needs of a memory that holds K/V -------------------------------
// A model writes the K/V rows of the micro-batch being applied and asks for each
// layer's attention views, and knows nothing else of the strategy, so full,
// split-stream, sliding-window and bounded memories (and composites routing layers)
// plug in alike.

/// The attention input of one layer for the micro-batch being computed: one KV view
/// per stream and, per token of the micro-batch, the stream it reads (empty: every
/// token reads stream 0). The caller keeps one and the memory refills it, so a warm
/// decode allocates nothing. `streams` point into `segments`.
struct layer_views {
  std::vector<attention::kv_segment> segments;
  std::vector<attention::kv_view> streams;
  std::vector<std::uint32_t> token_stream;  // [n_tokens of the micro-batch] or empty
  /// The layer's window: the one source of the attention mask's window (a memory that
  /// forgets positions reports the window it forgets by).
  attention::layer_window window;
};

/// A sequence memory that stores K/V rows of element types k_element / v_element:
///   write_kv<Isa>(layer, u, j, k, v)  K/V of token j of applied micro-batch u
///                                 (a template over the ISA, defaulted),
///                                 k: [n_head_kv, d_k] f32, v: [n_head_kv, d_v] f32
///   views(layer, u, out)          what micro-batch u's tokens attend in that layer, and
///                                 the layer's window (valid until the next mutation)
template <class M>
concept kv_memory = sequence_memory<M> && dtype::kv_element<typename M::k_element> &&
    dtype::kv_element<typename M::v_element> &&
    requires(M m, const M cm, std::size_t i, const float* f, layer_views& lv) {
  m.write_kv(i, i, i, f, f);
  cm.views(i, i, lv);
};

}  // namespace mnemo::memory
