// The memory concepts: everything the library calls on a memory strategy. The
// context, plan_batch and the composite (layered) use sequence_memory; the attention
// decoders add kv_memory's K/V rows and views; state files are a pair of free
// functions (state_memory). What a strategy may add and the library uses when
// present (check_seq_* for the composite, earliest_restorable_pos / can_resume for
// lost context, layer_window for the composite's windows) is listed in
// docs/writing-a-memory.md.
//
// Each requirement is a concept of its own in memory::requirement, so check_memory /
// check_kv_memory can say which member a type lacks (a conjunction only says that it
// failed).
#pragma once

#include <concepts>
#include <cstdint>
#include <span>
#include <vector>

#include "mnemo/attention/kv_view.hpp"
#include "mnemo/attention/params.hpp"
#include "mnemo/base/seq_set.hpp"
#include "mnemo/base/status.hpp"
#include "mnemo/batch/strategies.hpp"
#include "mnemo/dtype/concepts.hpp"
#include "mnemo/memory/types.hpp"

namespace mnemo::memory {

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

namespace requirement {

// ---- sequence operations: a status, and nothing changed when it is an error --------
template <class M>
concept seq_rm = requires(M m, seq_id s, pos_t p) {
  { m.seq_rm(s, p, p) } -> std::same_as<status>;
};
template <class M>
concept seq_cp = requires(M m, seq_id s, pos_t p) {
  { m.seq_cp(s, s, p, p) } -> std::same_as<status>;
};
template <class M>
concept seq_keep = requires(M m, seq_id s) {
  { m.seq_keep(s) } -> std::same_as<status>;
};
template <class M>
concept seq_add = requires(M m, seq_id s, pos_t p) {
  { m.seq_add(s, p, p, p) } -> std::same_as<status>;
};
template <class M>
concept seq_div = requires(M m, seq_id s, pos_t p) {
  { m.seq_div(s, p, p, 2) } -> std::same_as<status>;
};
template <class M>
concept clear = requires(M m, bool b) {
  {m.clear(b)};
};

// ---- queries -------------------------------------------------------------------------
template <class M>
concept seq_pos_range = requires(const M m, seq_id s) {
  { m.seq_pos_min(s) } -> std::same_as<pos_t>;
  { m.seq_pos_max(s) } -> std::same_as<pos_t>;
};
template <class M>
concept n_seq_max = requires(const M m) {
  { m.n_seq_max() } -> std::same_as<seq_id>;
};
template <class M>
concept n_layer = requires(const M m) {
  { m.n_layer() } -> std::same_as<std::size_t>;
};
template <class M>
concept can_shift = requires(const M m) {
  { m.can_shift() } -> std::same_as<bool>;
};
template <class M>
concept report = requires(const M m) {
  { m.report() } -> std::same_as<memory_report>;
};

// ---- planning and transactions -------------------------------------------------------
template <class M>
concept split_strategy = requires(const M m, std::uint32_t n_ubatch) {
  { m.split_strategy(n_ubatch) } -> mnemo::split_strategy;
};
template <class M>
concept update = requires(M m) {
  { m.update() } -> std::same_as<status>;
};
template <class M>
concept prepare = requires(M m, std::span<const ubatch_tokens> ubs) {
  { m.prepare(ubs) } -> std::same_as<status>;
};
template <class M>
concept apply = requires(M m, std::size_t u, const ubatch_tokens& ub) {
  { m.apply(u, ub) } -> std::same_as<status>;
};
template <class M>
concept commit_rollback = requires(M m) {
  {m.commit()};
  {m.rollback()};
};

// ---- K/V: what an attention decoder writes and reads --------------------------------
template <class M>
concept kv_elements = requires {
  typename M::k_element;
  typename M::v_element;
}
&&dtype::kv_element<typename M::k_element>&& dtype::kv_element<typename M::v_element>;
template <class M>
concept write_kv = requires(M m, std::size_t i, const float* f) {
  m.write_kv(i, i, i, f, f);
};
template <class M>
concept views = requires(const M m, std::size_t i, layer_views& lv) {
  m.views(i, i, lv);
};

}  // namespace requirement

/// A memory strategy (docs/memory.md, docs/writing-a-memory.md):
///   seq_rm / seq_cp / seq_keep / seq_add / seq_div -> status, clear(bool data)
///   seq_pos_min(s), seq_pos_max(s) -> pos_t       -1 when s holds nothing
///   n_seq_max() -> seq_id                         sequence ids live in [0, n_seq_max)
///   n_layer() -> std::size_t                      layers it holds (the composite routes them)
///   can_shift() -> bool                           whether seq_add / seq_div may move positions
///   report() -> memory_report
///   split_strategy(n_ubatch)                      how plan_batch splits a batch for it
///   update() -> status                            pending K-shifts, before each decode
///   prepare(ubatches) / apply(u, ub) -> status, commit(), rollback()
template <class M>
concept sequence_memory = requirement::seq_rm<M> && requirement::seq_cp<M> &&
    requirement::seq_keep<M> && requirement::seq_add<M> && requirement::seq_div<M> &&
    requirement::clear<M> && requirement::seq_pos_range<M> && requirement::n_seq_max<M> &&
    requirement::n_layer<M> && requirement::can_shift<M> && requirement::report<M> &&
    requirement::split_strategy<M> && requirement::update<M> && requirement::prepare<M> &&
    requirement::apply<M> && requirement::commit_rollback<M>;

/// A sequence memory that stores K/V rows of element types k_element / v_element:
///   write_kv<Isa>(layer, u, j, k, v)  K/V of token j of applied micro-batch u
///                                 (a template over the ISA, defaulted),
///                                 k: [n_head_kv, d_k] f32, v: [n_head_kv, d_v] f32
///   views(layer, u, out)          what micro-batch u's tokens attend in that layer, and
///                                 the layer's window (valid until the next mutation)
/// A model writes the K/V rows of the micro-batch being applied and asks for each
/// layer's views, and knows nothing else of the strategy, so every K/V strategy (and
/// composites routing layers) plugs in alike.
template <class M>
concept kv_memory = sequence_memory<M> && requirement::kv_elements<M> && requirement::write_kv<M> &&
    requirement::views<M>;

namespace requirement {
// State files: free functions found by argument-dependent lookup (named apart from
// them: a concept of the same name would hide them from the call).
template <class M>
concept writes_state = requires(M& m, seq_id s, std::vector<std::uint8_t>& out) {
  { state_write(m, s, out) } -> std::same_as<status>;
};
template <class M>
concept reads_state = requires(M& m, seq_id s, std::span<const std::uint8_t> in) {
  { state_read(m, in, s) } -> std::same_as<status>;
};
}  // namespace requirement

/// A memory with state files: state_write(m, s, out) / state_read(m, data, dest), free
/// functions found by argument-dependent lookup (each strategy's *_state.hpp).
template <class M>
concept state_memory = requirement::writes_state<M> && requirement::reads_state<M>;

/// The readable check of a memory strategy (STYLE rule 5): one sentence per missing
/// member. context<Model, Memory> and layered<Parts...> apply it; a strategy can end
/// with static_assert(check_memory<S>::value).
template <class M>
struct check_memory {
  static_assert(requirement::seq_rm<M>,
                "mnemo::memory: a memory strategy needs `status seq_rm(seq_id s, pos_t p0, "
                "pos_t p1)`: s leaves its cells in [p0, p1) (docs/writing-a-memory.md)");
  static_assert(requirement::seq_cp<M>,
                "mnemo::memory: a memory strategy needs `status seq_cp(seq_id src, seq_id dst, "
                "pos_t p0, pos_t p1)`: dst holds src's cells in [p0, p1) "
                "(docs/writing-a-memory.md)");
  static_assert(requirement::seq_keep<M>,
                "mnemo::memory: a memory strategy needs `status seq_keep(seq_id s)`: every "
                "other sequence is removed (docs/writing-a-memory.md)");
  static_assert(requirement::seq_add<M>,
                "mnemo::memory: a memory strategy needs `status seq_add(seq_id s, pos_t p0, "
                "pos_t p1, pos_t delta)` (a status saying it cannot shift will do; "
                "docs/writing-a-memory.md)");
  static_assert(requirement::seq_div<M>,
                "mnemo::memory: a memory strategy needs `status seq_div(seq_id s, pos_t p0, "
                "pos_t p1, int d)` (a status saying it cannot shift will do; "
                "docs/writing-a-memory.md)");
  static_assert(requirement::clear<M>,
                "mnemo::memory: a memory strategy needs `void clear(bool data)`: forget every "
                "sequence (docs/writing-a-memory.md)");
  static_assert(requirement::seq_pos_range<M>,
                "mnemo::memory: a memory strategy needs `pos_t seq_pos_min(seq_id) const` and "
                "`pos_t seq_pos_max(seq_id) const`, -1 when the sequence holds nothing "
                "(docs/writing-a-memory.md)");
  static_assert(requirement::n_seq_max<M>,
                "mnemo::memory: a memory strategy needs `seq_id n_seq_max() const`: the "
                "sequence ids it was built for, [0, n_seq_max) (docs/writing-a-memory.md)");
  static_assert(requirement::n_layer<M>,
                "mnemo::memory: a memory strategy needs `std::size_t n_layer() const`: the "
                "layers it holds (docs/writing-a-memory.md)");
  static_assert(requirement::can_shift<M>,
                "mnemo::memory: a memory strategy needs `bool can_shift() const`: whether "
                "seq_add / seq_div may move positions (docs/writing-a-memory.md)");
  static_assert(requirement::report<M>,
                "mnemo::memory: a memory strategy needs `memory_report report() const`: its "
                "bytes per layer and cells used (docs/writing-a-memory.md)");
  static_assert(requirement::split_strategy<M>,
                "mnemo::memory: a memory strategy needs `split_strategy(std::uint32_t n_ubatch) "
                "const` returning a batch split strategy (simple_split, equal_split, seq_split "
                "or any_split): how plan_batch splits a batch for it (docs/writing-a-memory.md)");
  static_assert(requirement::update<M>,
                "mnemo::memory: a memory strategy needs `status update()`: applies pending "
                "K-shifts before a decode (docs/writing-a-memory.md)");
  static_assert(requirement::prepare<M>,
                "mnemo::memory: a memory strategy needs `status "
                "prepare(std::span<const ubatch_tokens>)`: room for every micro-batch, or a "
                "status and nothing changed (docs/writing-a-memory.md)");
  static_assert(requirement::apply<M>,
                "mnemo::memory: a memory strategy needs `status apply(std::size_t u, const "
                "ubatch_tokens&)`: places prepared micro-batch u (docs/writing-a-memory.md)");
  static_assert(requirement::commit_rollback<M>,
                "mnemo::memory: a memory strategy needs `void commit()` and `void rollback()`: "
                "keep or undo every apply of the batch (docs/writing-a-memory.md)");
  static constexpr bool value = sequence_memory<M>;
};

/// check_memory and the K/V members an attention decoder uses.
template <class M>
struct check_kv_memory : check_memory<M> {
  static_assert(requirement::kv_elements<M>,
                "mnemo::memory: a K/V memory needs member types `k_element` and `v_element`, "
                "each a K/V element type (float, dtype::f16, dtype::bf16, dtype::block_q8_0, "
                "dtype::block_q4_0) (docs/writing-a-memory.md)");
  static_assert(requirement::write_kv<M>,
                "mnemo::memory: a K/V memory needs `template <class Isa = simd::native> void "
                "write_kv(std::size_t layer, std::size_t u, std::size_t j, const float* k, const "
                "float* v)`: stores token j's K/V rows (docs/writing-a-memory.md)");
  static_assert(requirement::views<M>,
                "mnemo::memory: a K/V memory needs `void views(std::size_t layer, std::size_t u, "
                "layer_views& out) const`: what micro-batch u attends in a layer, and the "
                "layer's window (docs/writing-a-memory.md)");
  static constexpr bool value = kv_memory<M>;
};

/// The checks of state I/O, where the library saves or loads a memory's state.
template <class M>
struct check_saves_state {
  static_assert(requirement::writes_state<M>,
                "mnemo::memory: saving this memory's state needs a free function `status "
                "state_write(M&, seq_id s, std::vector<std::uint8_t>& out)` found by "
                "argument-dependent lookup: include the strategy's *_state.hpp, or write it "
                "(docs/writing-a-memory.md)");
  static constexpr bool value = requirement::writes_state<M>;
};
template <class M>
struct check_loads_state {
  static_assert(requirement::reads_state<M>,
                "mnemo::memory: loading a state into this memory needs a free function `status "
                "state_read(M&, std::span<const std::uint8_t> data, seq_id dest)` found by "
                "argument-dependent lookup: include the strategy's *_state.hpp, or write it "
                "(docs/writing-a-memory.md)");
  static constexpr bool value = requirement::reads_state<M>;
};

}  // namespace mnemo::memory
