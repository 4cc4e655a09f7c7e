// The split-stream KV strategy (llama.cpp's kv_unified = false): sequence s
// lives in stream s, a cell array of its own of size_per_stream cells, so attention
// never scores one sequence's query against another's keys, and the streams of a
// micro-batch are attended in one kernel call (views(): one kv_view per stream and
// the stream of every token).
//
// A stream is a list of references to blocks of block_cells cells (block_pool.hpp).
// seq_cp across streams shares the source's blocks instead of copying them, and a
// stream copies a shared block only when it writes into it (a new token, a moved
// position): a branch costs no copy until it diverges. Cell metadata (position,
// pending shift) is per stream, so removing cells from a shared block is free.
// Invariant: the cells of a shared block that several streams hold carry the same
// position and pending shift in each of them (every change copies the block first),
// so update() rotates each physical row once.
//
// Deviations from llama.cpp (docs/split-stream.md): partial cross-stream seq_cp works;
// seq_keep empties the other streams; unknown sequences and coupled tokens are statuses
// naming the sequence, never aborts or "no slot"; copies are immediate, so a state
// written after seq_cp holds the copied data; a failed batch is rolled back exactly.
#pragma once

#include <algorithm>
#include <cstring>
#include <limits>
#include <map>
#include <span>
#include <utility>
#include <vector>

#include "mnemo/attention/kv_view.hpp"
#include "mnemo/attention/rope.hpp"
#include "mnemo/batch/strategies.hpp"
#include "mnemo/dtype/dtype.hpp"
#include "mnemo/memory/cells.hpp"
#include "mnemo/memory/concepts.hpp"
#include "mnemo/memory/key_rotator.hpp"
#include "mnemo/memory/seq_guards.hpp"
#include "mnemo/memory/stream/block_pool.hpp"
#include "mnemo/memory/stream/split_stream_fwd.hpp"
#include "mnemo/memory/stream/stream_undo.hpp"
#include "mnemo/memory/stream_views.hpp"
#include "mnemo/memory/token_checks.hpp"
#include "mnemo/memory/types.hpp"

namespace mnemo::memory {

/// Block usage of a split_stream (what report() cannot express per layer).
struct block_usage {
  std::size_t blocks = 0, free = 0, shared = 0, references = 0;
};

template <dtype::kv_element KE, dtype::kv_element VE>
class split_stream {
 public:
  using k_element = KE;
  using v_element = VE;

  /// One stream: logical cells [size_per_stream] and the block behind every run of
  /// block_cells of them (-1: no block, every cell of the run is empty).
  struct stream {
    cell_array cells;
    std::vector<block_id> blocks;  // [blocks_per_stream]
    std::size_t head = 0;
  };

  static result<split_stream> make(const split_stream_config& cfg) {
    MNEMO_RETURN_IF_ERROR(check_n_seq_max("split stream", cfg.n_seq_max));
    MNEMO_RETURN_IF_ERROR(check_layer_windows("split stream", cfg.windows, cfg.shape.n_layer));
    if (cfg.size_per_stream == 0 || cfg.block_cells == 0)
      return make_status(status_code::invalid_argument,
                         "split stream: cells per stream (%zu) and per block (%zu) must be > 0",
                         cfg.size_per_stream, cfg.block_cells);
    MNEMO_RETURN_IF_ERROR(cfg.rope.validate(cfg.shape.d_k));
    split_stream c;
    c.cfg_ = cfg;
    const std::size_t bps = cfg.blocks_per_stream();
    if (c.cfg_.pool_blocks == 0) c.cfg_.pool_blocks = bps * static_cast<std::size_t>(cfg.n_seq_max);
    MNEMO_ASSIGN_OR_RETURN(
        c.pool_, (block_pool<KE, VE>::make(cfg.shape, cfg.block_cells, c.cfg_.pool_blocks)));
    c.streams_.resize(static_cast<std::size_t>(cfg.n_seq_max));
    for (auto& st : c.streams_) {
      st.cells = cell_array(cfg.size_per_stream);
      st.blocks.assign(bps, -1);
    }
    return c;
  }

  const split_stream_config& config() const noexcept { return cfg_; }
  seq_id n_seq_max() const noexcept { return cfg_.n_seq_max; }
  std::size_t n_layer() const noexcept { return cfg_.shape.n_layer; }
  /// Cells of every stream (logical capacity) and cells in use, summed over streams.
  std::size_t size() const noexcept { return cfg_.size_per_stream * streams_.size(); }
  std::size_t used() const noexcept {
    std::size_t n = 0;
    for (const auto& st : streams_) n += st.cells.used();
    return n;
  }
  const stream& stream_of(seq_id s) const noexcept { return streams_[static_cast<std::size_t>(s)]; }
  const block_pool<KE, VE>& pool() const noexcept { return pool_; }
  bool can_shift() const noexcept { return cfg_.shift_supported; }
  /// One stream per sequence: tokens grouped by consecutive sequences.
  static equal_split split_strategy(std::uint32_t n_ubatch) noexcept { return {n_ubatch, true}; }
  bool has_pending_shift() const noexcept {
    for (const auto& st : streams_)
      if (st.cells.has_shift()) return true;
    return false;
  }
  bool in_batch() const noexcept { return tx_.open() || !plan_.empty(); }

  pos_t seq_pos_min(seq_id s) const noexcept {
    return valid(s) ? stream_of(s).cells.seq_pos_min(s) : -1;
  }
  pos_t seq_pos_max(seq_id s) const noexcept {
    return valid(s) ? stream_of(s).cells.seq_pos_max(s) : -1;
  }

  /// Where logical cell i of stream s lives in pool().kv(). @pre its block exists
  std::size_t storage_cell(seq_id s, std::size_t i) const noexcept {
    const auto& st = stream_of(s);
    return pool_.cell(st.blocks[i / cfg_.block_cells], i % cfg_.block_cells);
  }

  // ---- sequence operations ---------------------------------------------------------

  /// Removes s's cells at positions in [p0, p1) (every stream's when s == -1);
  /// blocks left without a used cell go back to the pool.
  status seq_rm(seq_id s, pos_t p0, pos_t p1) {
    MNEMO_RETURN_IF_ERROR(check_seq(s, cfg_.n_seq_max, "seq_rm", true));
    MNEMO_RETURN_IF_ERROR(check_not_in_batch(in_batch(), "seq_rm"));
    const pos_range r = pos_range::of(p0, p1);
    for (seq_id q = 0; q < cfg_.n_seq_max; ++q) {
      if (s >= 0 && q != s) continue;
      stream& st = at(q);
      st.head = std::min(st.head, st.cells.remove_seq(q, r));
      release_empty_blocks(st);
    }
    return {};
  }

  /// dst holds exactly src's cells in [p0, p1) afterwards, next to its own cells
  /// outside the range (the unified strategy's semantics, any range: llama.cpp
  /// aborts on partial ranges). When dst has no cell outside the range, dst
  /// shares src's blocks (no K/V copy); otherwise the cells are copied into dst's
  /// free cells (no_space naming dst when they do not fit; nothing changed).
  status seq_cp(seq_id src, seq_id dst, pos_t p0, pos_t p1) {
    MNEMO_RETURN_IF_ERROR(check_seq(src, cfg_.n_seq_max, "seq_cp"));
    MNEMO_RETURN_IF_ERROR(check_seq(dst, cfg_.n_seq_max, "seq_cp"));
    MNEMO_RETURN_IF_ERROR(check_not_in_batch(in_batch(), "seq_cp"));
    if (src == dst) return {};
    const pos_range r = pos_range::of(p0, p1);
    const stream& a = at(src);
    stream& b = at(dst);
    bool outside = false;
    for (std::size_t i = 0; i < b.cells.size() && !outside; ++i)
      outside = !b.cells.empty(i) && !r.contains(b.cells.pos(i));
    if (!outside) return share_into(a, b, src, dst, r);
    return copy_into(a, b, src, dst, r);
  }

  /// Only s remains: every other stream is emptied (llama.cpp leaves them).
  status seq_keep(seq_id s) {
    MNEMO_RETURN_IF_ERROR(check_seq(s, cfg_.n_seq_max, "seq_keep"));
    MNEMO_RETURN_IF_ERROR(check_not_in_batch(in_batch(), "seq_keep"));
    for (seq_id q = 0; q < cfg_.n_seq_max; ++q)
      if (q != s) empty_stream(at(q));
    return {};
  }

  /// Adds delta to s's positions in [p0, p1); cells moved below 0 are freed. Blocks
  /// s shares with other streams are copied first (no_space, nothing changed, when
  /// the pool is short). The keys are re-rotated by update().
  status seq_add(seq_id s, pos_t p0, pos_t p1, pos_t delta) {
    MNEMO_RETURN_IF_ERROR(check_add_overflow(s, seq_pos_max(s), p0, p1, delta));
    return shift_positions(
        s, p0, p1, "seq_add", [delta](pos_t p) { return p + delta; }, delta == 0);
  }

  /// Divides s's positions in [p0, p1) by d; the pending shift is new - old.
  status seq_div(seq_id s, pos_t p0, pos_t p1, int d) {
    MNEMO_RETURN_IF_ERROR(check_divisor(d));
    return shift_positions(
        s, p0, p1, "seq_div", [d](pos_t p) { return p / d; }, d == 1);
  }

  /// Empties every stream; with `data` the K/V bytes are zeroed too.
  void clear(bool data) {
    for (auto& st : streams_) {
      st.cells.clear();
      std::fill(st.blocks.begin(), st.blocks.end(), -1);
      st.head = 0;
    }
    pool_.reset();
    tx_.reset();
    plan_.clear();
    if (data) pool_.kv().zero();
  }

  /// K-shift: rotates every shifted cell's cached key by its pending shift, each
  /// physical row once (a shared block's rows carry one shift).
  status update() {
    if (tx_.open()) return check_not_in_batch(true, "update");
    if (!has_pending_shift()) return {};
    if (cfg_.rope.layout != attention::rope_layout::none) rotate_shifted_keys();
    for (auto& st : streams_) st.cells.clear_shifts();
    return {};
  }

  // ---- planning and transactions -------------------------------------------------

  /// Finds cells for every micro-batch in the streams of its tokens, and counts the
  /// blocks the plan needs (new ones and private copies of shared ones), before
  /// anything changes. Tokens of a micro-batch may come in any stream order.
  status prepare(std::span<const ubatch_tokens> ubatches);

  /// Writes micro-batch u's cell metadata (taking or copying blocks as planned); the
  /// first apply opens a transaction that commit() closes and rollback() undoes.
  status apply(std::size_t u, const ubatch_tokens& ub);

  /// Stores the K and V rows of token j of micro-batch u for one layer.
  /// k: [n_head_kv, d_k] f32, v: [n_head_kv, d_v] f32.
  template <class Isa = simd::native>
  void write_kv(std::size_t layer, std::size_t u, std::size_t j, const float* k,
                const float* v) noexcept {
    const slot& sl = plan_[u][j];
    const std::size_t c = storage_cell(static_cast<seq_id>(sl.stream), sl.cell);
    const auto& sh = cfg_.shape;
    dtype::row_kernels<Isa>::encode(k, pool_.kv().k(layer, c), sh.n_head_kv * sh.d_k);
    dtype::row_kernels<Isa>::encode(v, pool_.kv().v(layer, c), sh.n_head_kv * sh.d_v);
  }

  void commit() {
    tx_.commit(pool_);
    plan_.clear();
  }

  /// Undoes every apply() since the last commit: cells, heads, pending-shift flags,
  /// block tables and reference counts are exactly as before.
  void rollback() {
    if (tx_.open()) tx_.undo(streams_, pool_);
    plan_.clear();
  }

  /// Appends stream s's attention segments of one layer: one per block in the
  /// attended prefix [0, used_max_p1) (blocks not taken hold no cell and are
  /// skipped). Valid until the next mutation.
  void stream_segments(std::size_t layer, seq_id s, std::vector<attention::kv_segment>& out) const {
    const stream& st = stream_of(s);
    const std::size_t n = st.cells.used_max_p1(), bc = cfg_.block_cells;
    const auto& kv = pool_.kv();
    for (std::size_t t = 0; t * bc < n; ++t) {
      if (st.blocks[t] < 0) continue;
      attention::kv_segment g;
      g.k = kv.k(layer, pool_.cell(st.blocks[t], 0));
      g.v = kv.v(layer, pool_.cell(st.blocks[t], 0));
      g.k_stride = kv.k_row_bytes();
      g.v_stride = kv.v_row_bytes();
      g.pos = st.cells.pos_data() + t * bc;
      g.owners = st.cells.owners_data() + t * bc;
      g.n_cells = std::min(bc, n - t * bc);
      out.push_back(g);
    }
  }

  /// The attention views of one layer for applied micro-batch u (memory::kv_memory):
  /// one kv_view per stream the micro-batch touches, by increasing sequence id, and
  /// per token the index of its view (one attend() call covers them all), and the
  /// layer's window.
  void views(std::size_t layer, std::size_t u, layer_views& out) const {
    start_views(out, layer_window(layer));
    if (u >= plan_.size()) return;
    std::vector<std::uint32_t> ids;  // the streams of u, sorted
    for (const slot& sl : plan_[u]) ids.push_back(sl.stream);
    std::sort(ids.begin(), ids.end());
    ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
    std::vector<std::size_t> first(ids.size() + 1);
    for (std::size_t k = 0; k < ids.size(); ++k) {
      first[k] = out.segments.size();
      stream_segments(layer, static_cast<seq_id>(ids[k]), out.segments);
    }
    first[ids.size()] = out.segments.size();
    views_from_runs(out, first);
    token_views(out, std::span<const std::uint32_t>(ids), plan_[u],
                [](const slot& sl) { return sl.stream; });
  }

  /// Compacts every stream: the cells of its private blocks move to the front of
  /// those blocks in cell order (rows included), emptied blocks return to the pool,
  /// and the block list is closed up (metadata only). Shared blocks are never
  /// rewritten (that would copy them), so their holes stay.
  status defragment();

  /// The window layer `layer`'s attention masks by (config windows; none without).
  attention::layer_window layer_window(std::size_t layer) const noexcept {
    return cfg_.windows.empty() ? attention::layer_window{} : cfg_.windows[layer];
  }

  memory_report report() const {
    memory_report r;
    const auto& kv = pool_.kv();
    const std::size_t cells = pool_.n_blocks() * cfg_.block_cells;
    add_kv_layers(r, cfg_.shape.n_layer, "kv", dtype::element_traits<KE>::name,
                  dtype::element_traits<VE>::name, kv.k_row_bytes() * cells,
                  kv.v_row_bytes() * cells);
    r.cells = size();
    r.cells_used = used();
    for (seq_id s = 0; s < cfg_.n_seq_max; ++s)
      if (const std::size_t n = stream_of(s).cells.seq_cells(s)) r.cells_per_seq.push_back({s, n});
    return r;
  }

  block_usage blocks() const {
    block_usage u;
    u.blocks = pool_.n_blocks();
    u.free = pool_.n_free();
    for (std::size_t b = 0; b < pool_.n_blocks(); ++b) {
      const auto id = static_cast<block_id>(b);
      u.shared += pool_.shared(id);
      u.references += pool_.refs(id);
    }
    return u;
  }

  // ---- for state_read (split_stream_state.hpp) ---------------------------------------

  stream& mutable_stream(seq_id s) noexcept { return at(s); }
  block_pool<KE, VE>& mutable_pool() noexcept { return pool_; }
  /// Empties stream s, returning its blocks to the pool.
  void empty_stream(seq_id s) { empty_stream(at(s)); }

 private:
  struct slot {
    std::uint32_t stream;
    std::uint32_t cell;
  };

  bool valid(seq_id s) const noexcept { return s >= 0 && s < cfg_.n_seq_max; }
  stream& at(seq_id s) noexcept { return streams_[static_cast<std::size_t>(s)]; }
  const stream& at(seq_id s) const noexcept { return streams_[static_cast<std::size_t>(s)]; }

  status fail_plan(status s) {
    plan_.clear();
    return s;
  }

  /// Why a token of several sequences is refused (check_stream_tokens).
  static constexpr const char* k_coupled =
      "split streams hold each sequence in a stream of its own; decode a shared prefix on one "
      "sequence and seq_cp it (the copy shares the blocks), or use a unified memory";

  void empty_stream(stream& st) {
    st.cells.clear();
    for (block_id& b : st.blocks)
      if (b >= 0) pool_.release(std::exchange(b, -1));
    st.head = 0;
  }

  /// Returns the blocks of st that hold no used cell to the pool.
  void release_empty_blocks(stream& st) {
    const std::size_t bc = cfg_.block_cells;
    for (std::size_t t = 0; t < st.blocks.size(); ++t) {
      if (st.blocks[t] < 0) continue;
      bool any = false;
      for (std::size_t i = t * bc; i < std::min(st.cells.size(), (t + 1) * bc) && !any; ++i)
        any = !st.cells.empty(i);
      if (!any) pool_.release(std::exchange(st.blocks[t], -1));
    }
  }

  /// Makes slot t of st a block of its own: takes a block when there is none, copies
  /// a shared one. Returns (old, new) when the table changed, else (-2, -2). In a
  /// batch (`hold_old`) st's reference to old passes to the undo log (stream_undo).
  /// @pre the pool has a free block when one is needed (checked by the caller)
  std::pair<block_id, block_id> make_private(stream& st, std::size_t t, bool hold_old = false) {
    const block_id old = st.blocks[t];
    if (old >= 0 && !pool_.shared(old)) return {-2, -2};
    const block_id fresh = pool_.acquire();
    MNEMO_DASSERT(fresh >= 0);
    if (old >= 0) {
      pool_.copy_block(old, fresh);
      if (!hold_old) pool_.release(old);
    }
    st.blocks[t] = fresh;
    return {old, fresh};
  }

  status share_into(const stream& a, stream& b, seq_id src, seq_id dst, pos_range r);
  status copy_into(const stream& a, stream& b, seq_id src, seq_id dst, pos_range r);

  template <class NewPos>
  status shift_positions(seq_id s, pos_t p0, pos_t p1, const char* op, NewPos new_pos, bool noop);

  void rotate_shifted_keys();

  split_stream_config cfg_;
  block_pool<KE, VE> pool_;
  std::vector<stream> streams_;  // [n_seq_max]
  stream_undo tx_;
  std::vector<std::vector<slot>> plan_;  // [micro-batch][token]
};

}  // namespace mnemo::memory

#include "mnemo/memory/stream/split_stream_impl.hpp"

namespace mnemo::memory {
static_assert(kv_memory<split_stream<float>>);
}  // namespace mnemo::memory
