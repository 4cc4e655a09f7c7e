// The sliding-window KV strategy (spec/memory.md §4): one cell array for every
// sequence, like full_cache, but sized for the window instead of the context,
// pad(n_swa * n_seq_max + n_ubatch, 256) cells (min n_ctx, T31), because a cell whose
// token left the window of every owner's next query is reused (spec §2.2 rule 3).
// Standard, chunked and symmetric windows (attention/params.hpp, window_rules.hpp).
//
// Lost context is explicit (LIB of spec §4.2 D-4, §4.4, §4.5, §10.1): each sequence has
// a horizon h, every position below h may have been forgotten, and every position from
// h up is held exactly. An operation that would continue a sequence where its window
// was forgotten (remove a suffix, branch with seq_cp, shift, a token at an old
// position) returns `unsupported` naming the sequence and earliest_restorable_pos();
// can_resume(s, p) answers beforehand. Reuse happens inside the batch that needs the
// cells, but the undo log keeps the overwritten rows, so rollback() restores them: a
// token is forgotten only when its batch commits. swa_full: n_ctx cells, nothing is
// forgotten. Sequence operations otherwise follow full_cache (docs/full-cache.md).
#pragma once

#include <algorithm>
#include <limits>
#include <span>
#include <vector>

#include "mnemo/attention/kv_view.hpp"
#include "mnemo/attention/params.hpp"
#include "mnemo/attention/rope.hpp"
#include "mnemo/batch/strategies.hpp"
#include "mnemo/dtype/dtype.hpp"
#include "mnemo/memory/cells.hpp"
#include "mnemo/memory/concepts.hpp"
#include "mnemo/memory/kv_storage.hpp"
#include "mnemo/memory/types.hpp"
#include "mnemo/memory/window_rules.hpp"
#include "mnemo/memory/window_undo.hpp"

#define MNEMO_MEMORY_DETAIL_OK_
#include "mnemo/memory/detail/sliding_window_ops.hpp"
#undef MNEMO_MEMORY_DETAIL_OK_

namespace mnemo::memory {

struct sliding_window_config {
  kv_shape shape;
  std::size_t n_ctx = 0;         // the context a full cache would hold (cells)
  seq_id n_seq_max = 1;          // sequence ids live in [0, n_seq_max), at most 256
  std::uint32_t n_ubatch = 512;  // the largest micro-batch
  attention::window_kind window = attention::window_kind::standard;
  pos_t n_swa = 0;              // the window size
  bool swa_full = false;        // n_ctx cells and nothing forgotten (spec §4.1)
  std::size_t size = 0;         // cells; 0: the formula below (explicit: tests, spec §9)
  attention::rope_config rope;  // how cached keys were rotated (for K-shift)
  bool shift_supported = true;  // false for M-RoPE-like models
  seq_id seq_label_base = 0;    // statuses name sequence s as s + this (split_window's streams)

  static constexpr std::size_t k_pad = 256;
  /// Cells of the cache: size, else n_ctx with swa_full, else
  /// min(n_ctx, pad(n_swa * n_seq_max + n_ubatch, 256)) (spec §4.1, T31).
  std::size_t cells() const noexcept {
    if (size != 0) return size;
    if (swa_full || n_swa <= 0) return n_ctx;
    const std::size_t want =
        static_cast<std::size_t>(n_swa) * static_cast<std::size_t>(n_seq_max) + n_ubatch;
    return std::min(n_ctx, (want + k_pad - 1) / k_pad * k_pad);
  }
};

template <dtype::kv_element KE, dtype::kv_element VE = KE>
class sliding_window : public detail::sliding_window_ops<sliding_window<KE, VE>> {
  friend class detail::sliding_window_ops<sliding_window<KE, VE>>;

 public:
  using k_element = KE;
  using v_element = VE;

  static result<sliding_window> make(const sliding_window_config& cfg) {
    if (cfg.n_seq_max < 1 || cfg.n_seq_max > k_max_seq)
      return make_status(status_code::invalid_argument,
                         "sliding window: n_seq_max %d is outside [1, %d]", cfg.n_seq_max,
                         k_max_seq);
    if (cfg.window == attention::window_kind::none || cfg.n_swa <= 0)
      return make_status(status_code::invalid_argument,
                         "sliding window: needs a standard, chunked or symmetric window of "
                         "n_swa > 0 (got %s, %d); use full_cache for global layers",
                         attention::to_string(cfg.window).data(), cfg.n_swa);
    if (cfg.cells() == 0)
      return make_status(status_code::invalid_argument,
                         "sliding window: 0 cells (set n_ctx, or size)");
    MNEMO_RETURN_IF_ERROR(cfg.rope.validate(cfg.shape.d_k));
    sliding_window c;
    c.cfg_ = cfg;
    MNEMO_ASSIGN_OR_RETURN(c.kv_, (kv_storage<KE, VE>::make(cfg.shape, cfg.cells())));
    c.cells_ = cell_array(cfg.cells());
    c.horizon_.assign(static_cast<std::size_t>(cfg.n_seq_max), 0);
    return c;
  }

  const sliding_window_config& config() const noexcept { return cfg_; }
  std::size_t size() const noexcept { return cells_.size(); }
  std::size_t used() const noexcept { return cells_.used(); }
  const cell_array& cells() const noexcept { return cells_; }
  const kv_storage<KE, VE>& storage() const noexcept { return kv_; }
  kv_storage<KE, VE>& storage() noexcept { return kv_; }
  bool has_pending_shift() const noexcept { return cells_.has_shift(); }
  bool in_batch() const noexcept { return tx_.open() || !plan_.empty(); }
  /// The attention parameters' window part for the layers of this memory.
  attention::window_kind window() const noexcept { return cfg_.window; }
  pos_t n_swa() const noexcept { return cfg_.n_swa; }
  /// Whether every shift is safe: nothing can be forgotten (swa_full, or n_ctx cells;
  /// T31). seq_add / seq_div still decide exactly, shift by shift.
  bool can_shift() const noexcept {
    return cfg_.shift_supported && (cfg_.swa_full || size() >= cfg_.n_ctx);
  }
  /// One cell array for every sequence: any split will do (spec §7.4).
  static simple_split split_strategy(std::uint32_t n_ubatch) noexcept { return {n_ubatch}; }

  /// The lowest / highest position s still holds, or -1 (exact: cells below the
  /// horizon are purged when the horizon moves, so the held positions of a decoded
  /// history form the interval [min, max]). See earliest_restorable_pos for the
  /// position a caller may continue from.
  pos_t seq_pos_min(seq_id s) const noexcept { return valid(s) ? cells_.seq_pos_min(s) : -1; }
  pos_t seq_pos_max(seq_id s) const noexcept { return valid(s) ? cells_.seq_pos_max(s) : -1; }
  /// Every position of s below it may have been forgotten (0: nothing was).
  pos_t horizon(seq_id s) const noexcept { return valid(s) ? horizon_[idx(s)] : 0; }
  /// The smallest p for which s can continue at p (seq_rm(s, p, -1), then decode p):
  /// 0 when s forgot nothing; -1 for an id outside [0, n_seq_max).
  pos_t earliest_restorable_pos(seq_id s) const noexcept {
    return valid(s) ? first_resumable(cfg_.window, cfg_.n_swa, horizon_[idx(s)]) : -1;
  }
  /// Whether s can continue at p: p <= pos_max + 1 and its window at p is held.
  bool can_resume(seq_id s, pos_t p) const noexcept {
    return valid(s) && p >= 0 && p <= seq_pos_max(s) + 1 &&
           resumable(cfg_.window, cfg_.n_swa, horizon_[idx(s)], p);
  }

  // ---- planning and transactions -------------------------------------------------

  /// Places every micro-batch for real and undoes it (a dry run, spec §2.3): a cell
  /// is usable when it is empty or every owner's next query masks it. On failure
  /// nothing changed.
  status prepare(std::span<const ubatch_tokens> ubatches) {
    if (tx_.open()) return this->no_open_batch("prepare");  // an unapplied plan is replaced
    plan_.clear();
    tx_.begin(cells_.size(), head_, cells_.has_shift(), horizon_);
    status st;
    for (std::size_t u = 0; u < ubatches.size() && st.is_ok(); ++u) {
      const ubatch_tokens& ub = ubatches[u];
      st = this->check_tokens("prepare", u, ub);
      if (!st.is_ok()) break;
      std::vector<std::uint32_t> slots;
      st = find_slots(u, ub.size(), slots);
      if (!st.is_ok()) break;
      place(slots, ub, false);
      plan_.push_back(std::move(slots));
    }
    head_ = tx_.undo(cells_, kv_, horizon_);
    next_u_ = 0;
    if (!st.is_ok()) plan_.clear();
    return st;
  }

  std::span<const std::uint32_t> slots(std::size_t u) const noexcept { return plan_[u]; }

  /// Writes micro-batch u's metadata (the first apply opens the transaction). Tokens
  /// of cells it reuses are forgotten: their owners' horizons move up and their older
  /// cells are purged, all in the undo log with the overwritten rows.
  status apply(std::size_t u, const ubatch_tokens& ub) {
    if (u >= plan_.size() || plan_[u].size() != ub.size())
      return make_status(status_code::invalid_argument,
                         "apply: micro-batch %zu does not match the prepared plan", u);
    MNEMO_RETURN_IF_ERROR(this->check_tokens("apply", u, ub));
    // The plan holds for the state the dry run saw: micro-batches in order, once each.
    if (u != next_u_)
      return make_status(status_code::invalid_argument,
                         "apply: micro-batch %zu comes after %zu (in order, once each)", u,
                         next_u_);
    if (!tx_.open()) tx_.begin(cells_.size(), head_, cells_.has_shift(), horizon_);
    place(plan_[u], ub, true);
    ++next_u_;
    return {};
  }

  /// Stores the K and V rows of token j of micro-batch u for one layer.
  /// k: [n_head_kv, d_k] f32, v: [n_head_kv, d_v] f32.
  template <class Isa = simd::native>
  void write_kv(std::size_t layer, std::size_t u, std::size_t j, const float* k,
                const float* v) noexcept {
    const std::size_t c = plan_[u][j];
    const auto& sh = cfg_.shape;
    dtype::row_kernels<Isa>::encode(k, kv_.k(layer, c), sh.n_head_kv * sh.d_k);
    dtype::row_kernels<Isa>::encode(v, kv_.v(layer, c), sh.n_head_kv * sh.d_v);
  }

  void commit() {
    tx_.reset();
    plan_.clear();
    next_u_ = 0;
  }

  /// Undoes every apply() since prepare(): metadata, horizons, head, pending shifts
  /// and the rows of every reused cell.
  void rollback() {
    if (tx_.open()) head_ = tx_.undo(cells_, kv_, horizon_);
    plan_.clear();
    next_u_ = 0;
  }

  /// The attention view of one layer: cells [0, used_max_p1) (at most size(), the
  /// window-sized cache) with positions and owners; the window mask drops the cells
  /// that left it.
  attention::kv_segment segment(std::size_t layer) const noexcept {
    attention::kv_segment s;
    s.k = kv_.k(layer, 0);
    s.v = kv_.v(layer, 0);
    s.k_stride = kv_.k_row_bytes();
    s.v_stride = kv_.v_row_bytes();
    s.pos = cells_.pos_data();
    s.owners = cells_.owners_data();
    s.n_cells = cells_.used_max_p1();
    return s;
  }

  void views(std::size_t layer, std::size_t u, layer_views& out) const {
    (void)u;  // one stream for every micro-batch
    out.segments.assign(1, segment(layer));
    out.streams.assign(1, attention::kv_view{{out.segments.data(), 1}});
    out.token_stream.clear();
  }

  memory_report report() const {
    memory_report r;
    for (std::size_t l = 0; l < cfg_.shape.n_layer; ++l) {
      r.layers.push_back({l, "kv-window", std::string(dtype::element_traits<KE>::name),
                          std::string(dtype::element_traits<VE>::name), kv_.k_row_bytes() * size(),
                          kv_.v_row_bytes() * size()});
      r.total_bytes += (kv_.k_row_bytes() + kv_.v_row_bytes()) * size();
    }
    r.cells = size();
    r.cells_used = used();
    for (seq_id s = 0; s < cfg_.n_seq_max; ++s)
      if (const std::size_t n = cells_.seq_cells(s)) r.cells_per_seq.push_back({s, n});
    return r;
  }

  // ---- for state_read (sliding_window_state.hpp) ----------------------------------
  cell_array& mutable_cells() noexcept { return cells_; }
  void set_horizon(seq_id s, pos_t h) noexcept { horizon_[idx(s)] = h; }
  void reset_head() noexcept { head_ = 0; }
  /// Whether cell i may take a new token now (empty, or masked for every owner).
  bool usable(std::size_t i) const noexcept {
    if (cells_.empty(i)) return true;
    if (cfg_.swa_full) return false;
    const pos_t p = cells_.pos(i);
    bool masked = true;
    // An owner's last position stays even when its next query masks it (a chunk
    // boundary, a window of 1), so seq_pos_max remains the position to continue from.
    for_each_owner(cells_.owners(i), [&](seq_id o) {
      const pos_t top = cells_.seq_pos_max(o);
      masked =
          masked && p < top && attention::is_masked_by_window(cfg_.window, cfg_.n_swa, p, top + 1);
    });
    return masked;
  }
  /// Makes cell c hold (p, owners), forgetting what it held (see apply).
  void overwrite(std::size_t c, pos_t p, const seq_set& owners, std::vector<pos_t>& bump) {
    if (!cells_.empty(c)) {
      const pos_t old = cells_.pos(c);
      for_each_owner(cells_.owners(c),
                     [&](seq_id o) { bump[idx(o)] = std::max(bump[idx(o)], old + 1); });
      cells_.release(c);
    }
    cells_.occupy(c, p, owners);
  }
  /// Raises the horizons of `bump` and purges the owners' cells below them.
  void forget_below(const std::vector<pos_t>& bump, bool log) {
    bool any = false;
    for (seq_id s = 0; s < cfg_.n_seq_max; ++s)
      if (bump[idx(s)] > horizon_[idx(s)]) horizon_[idx(s)] = bump[idx(s)], any = true;
    if (!any) return;
    for (std::size_t i = 0; i < cells_.size(); ++i) {
      if (cells_.empty(i)) continue;
      const seq_set o = cells_.owners(i);
      for_each_owner(o, [&](seq_id s) {
        if (bump[idx(s)] > 0 && cells_.pos(i) < horizon_[idx(s)]) {
          if (log) tx_.save(i, cells_);
          if (cells_.remove_owner(i, s)) head_ = std::min(head_, i);
        }
      });
    }
  }

 private:
  static std::size_t idx(seq_id s) noexcept { return static_cast<std::size_t>(s); }
  bool valid(seq_id s) const noexcept { return s >= 0 && s < cfg_.n_seq_max; }

  template <class Fn>
  static void for_each_owner(const seq_set& o, Fn&& fn) {
    for (int w = 0; w < k_max_seq / 64; ++w)
      for (std::uint64_t bits = o.words[w]; bits != 0; bits &= bits - 1)
        fn(static_cast<seq_id>(w * 64 + std::countr_zero(bits)));
  }

  /// The spec §2.2 scan from the head (restart at 0 when there are enough holes
  /// before it), taking usable cells in scan order, not necessarily contiguous.
  status find_slots(std::size_t u, std::size_t n, std::vector<std::uint32_t>& slots) const {
    if (n > cells_.size())
      return make_status(status_code::no_space,
                         "micro-batch %zu has %zu tokens but the window cache has %zu cells", u, n,
                         cells_.size());
    std::size_t head = head_;
    if (head > cells_.used() + 2 * n) head = 0;
    for (std::size_t k = 0; k < cells_.size() && slots.size() < n; ++k) {
      const std::size_t i = (head + k) % cells_.size();
      if (usable(i)) slots.push_back(static_cast<std::uint32_t>(i));
    }
    if (slots.size() < n)
      return make_status(status_code::no_space,
                         "no room for micro-batch %zu: %zu tokens, %zu cells free or out of every "
                         "window of %zu",
                         u, n, slots.size(), cells_.size());
    return {};
  }

  /// Occupies `slots` with micro-batch tokens; `rows`: save overwritten rows (apply).
  void place(std::span<const std::uint32_t> slots, const ubatch_tokens& ub, bool rows) {
    bump_.assign(horizon_.size(), 0);
    for (std::size_t j = 0; j < slots.size(); ++j) {
      tx_.save(slots[j], cells_);
      if (rows) tx_.save_rows(slots[j], kv_);
      overwrite(slots[j], ub.pos[j], ub.seqs[j], bump_);
    }
    forget_below(bump_, true);
    if (!slots.empty()) head_ = slots.back() + 1;
  }

  sliding_window_config cfg_;
  kv_storage<KE, VE> kv_;
  cell_array cells_;
  std::vector<pos_t> horizon_;  // [n_seq_max]
  std::size_t head_ = 0;
  window_undo tx_;
  std::vector<std::vector<std::uint32_t>> plan_;
  std::vector<pos_t> bump_;
  std::size_t next_u_ = 0;  // the next micro-batch apply() accepts
};

static_assert(kv_memory<sliding_window<float>>);

}  // namespace mnemo::memory
