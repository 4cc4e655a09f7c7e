// The sliding-window KV strategy: one cell array for every sequence, like full_cache,
// but sized for the window instead of the context, pad(n_swa * n_seq_max + n_ubatch,
// 256) cells (min n_ctx), because a cell whose token left the window of every owner's
// next query is reused. Standard, chunked and symmetric windows (window_rules.hpp).
//
// Lost context is explicit (docs/sliding-window.md): each sequence has a horizon h,
// every position below h may have been forgotten, and every position from h up is held
// exactly. An operation that would continue a sequence where its window was forgotten
// (remove a suffix, branch with seq_cp, shift, a token at an old position) returns
// `unsupported` naming the sequence and earliest_restorable_pos(); can_resume(s, p)
// answers beforehand. Reuse happens inside the batch that needs the cells, but the
// undo log keeps the overwritten rows, so rollback() restores them: a token is
// forgotten only when its batch commits. swa_full: n_ctx cells, nothing is forgotten.
// Sequence operations otherwise follow full_cache (docs/full-cache.md); each has a
// check_* twin that says, without changing anything, whether it would succeed.
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
#include "mnemo/memory/cell_store.hpp"
#include "mnemo/memory/cells.hpp"
#include "mnemo/memory/concepts.hpp"
#include "mnemo/memory/kv_storage.hpp"
#include "mnemo/memory/seq_guards.hpp"
#include "mnemo/memory/token_checks.hpp"
#include "mnemo/memory/types.hpp"
#include "mnemo/memory/window/sliding_window_fwd.hpp"
#include "mnemo/memory/window/window_rules.hpp"
#include "mnemo/memory/window/window_undo.hpp"

namespace mnemo::memory {

template <dtype::kv_element KE, dtype::kv_element VE>
class sliding_window : public cell_store<KE, VE> {
  using store = cell_store<KE, VE>;
  using store::cells_, store::kv_, store::head_, store::plan_;

 public:
  static result<sliding_window> make(const sliding_window_config& cfg) {
    MNEMO_RETURN_IF_ERROR(check_n_seq_max("sliding window", cfg.n_seq_max));
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
    MNEMO_RETURN_IF_ERROR(c.init(cfg.shape, cfg.cells(), cfg.n_seq_max));
    c.horizon_.assign(static_cast<std::size_t>(cfg.n_seq_max), 0);
    return c;
  }

  const sliding_window_config& config() const noexcept { return cfg_; }
  seq_id n_seq_max() const noexcept { return cfg_.n_seq_max; }
  std::size_t n_layer() const noexcept { return cfg_.shape.n_layer; }
  using store::cells, store::seq_pos_max, store::size;
  bool in_batch() const noexcept { return tx_.open() || !plan_.empty(); }
  /// The attention parameters' window part for the layers of this memory.
  attention::window_kind window() const noexcept { return cfg_.window; }
  pos_t n_swa() const noexcept { return cfg_.n_swa; }
  /// Whether every shift is safe: nothing can be forgotten (swa_full, or n_ctx cells).
  /// seq_add / seq_div still decide exactly, shift by shift.
  bool can_shift() const noexcept {
    return cfg_.shift_supported && (cfg_.swa_full || size() >= cfg_.n_ctx);
  }
  /// One cell array for every sequence: any split will do.
  static simple_split split_strategy(std::uint32_t n_ubatch) noexcept { return {n_ubatch}; }

  // seq_pos_min / seq_pos_max are exact: cells below the horizon are purged when the
  // horizon moves, so the held positions of a decoded history form the interval
  // [min, max]. earliest_restorable_pos is the position a caller may continue from.

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

  // ---- sequence operations, each after its check_* twin, which returns the status
  // the operation would return and changes nothing (sliding_window_impl.hpp) ----------

  /// Removes s (every sequence when s == -1) from the cells at positions in [p0, p1).
  status seq_rm(seq_id s, pos_t p0, pos_t p1);
  status check_seq_rm(seq_id s, pos_t p0, pos_t p1) const;
  /// dst holds exactly src's cells in [p0, p1) afterwards, sharing them, and inherits
  /// src's horizon (a copy has the same truncated window).
  status seq_cp(seq_id src, seq_id dst, pos_t p0, pos_t p1);
  status check_seq_cp(seq_id src, seq_id dst, pos_t p0, pos_t p1) const;
  status seq_keep(seq_id s);
  status check_seq_keep(seq_id s) const;
  /// Adds delta to the positions of s in [p0, p1) (copy-on-write of shared cells, as
  /// in full_cache); the horizon moves with the positions above it.
  status seq_add(seq_id s, pos_t p0, pos_t p1, pos_t delta);
  status check_seq_add(seq_id s, pos_t p0, pos_t p1, pos_t delta) const;
  status seq_div(seq_id s, pos_t p0, pos_t p1, int d);
  status check_seq_div(seq_id s, pos_t p0, pos_t p1, int d) const;

  /// Frees every cell and forgets every horizon; with `data` the K/V bytes are zeroed.
  void clear(bool data) {
    this->clear_cells(data);
    tx_.reset();
    next_u_ = 0;
    std::fill(horizon_.begin(), horizon_.end(), 0);
  }

  /// K-shift: every shifted cell's K rows are rotated by its pending shift.
  status update() {
    if (tx_.open()) return check_not_in_batch(true, "update");
    this->apply_shifts(cfg_.rope);
    return {};
  }

  // ---- planning and transactions -------------------------------------------------

  /// Places every micro-batch for real and undoes it (a dry run): a cell is usable
  /// when it is empty or every owner's next query masks it. On failure nothing changed.
  status prepare(std::span<const ubatch_tokens> ubatches) {
    if (tx_.open()) return check_not_in_batch(true, "prepare");  // an unapplied plan is replaced
    plan_.clear();
    tx_.begin(cells_.size(), head_, cells_.has_shift(), horizon_);
    status st;
    for (std::size_t u = 0; u < ubatches.size() && st.is_ok(); ++u) {
      const ubatch_tokens& ub = ubatches[u];
      st = check_tokens("prepare", u, ub);
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

  /// Writes micro-batch u's metadata (the first apply opens the transaction). Tokens
  /// of cells it reuses are forgotten: their owners' horizons move up and their older
  /// cells are purged, all in the undo log with the overwritten rows.
  status apply(std::size_t u, const ubatch_tokens& ub) {
    if (u >= plan_.size() || plan_[u].size() != ub.size())
      return make_status(status_code::invalid_argument,
                         "apply: micro-batch %zu does not match the prepared plan", u);
    MNEMO_RETURN_IF_ERROR(check_tokens("apply", u, ub));
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

  // segment() / views(): cells [0, used_max_p1) (at most size(), the window-sized
  // cache); the window mask drops the cells that left it.

  memory_report report() const { return this->report_as("kv-window"); }

  /// Every layer's window is this memory's (it forgets by it).
  attention::layer_window layer_window(std::size_t layer) const noexcept {
    (void)layer;
    return {cfg_.window, cfg_.n_swa};
  }
  void views(std::size_t layer, std::size_t u, layer_views& out) const {
    store::views(layer, u, out);
    out.window = layer_window(layer);
  }

  // ---- for state_read (sliding_window_state.hpp) ----------------------------------
  void set_horizon(seq_id s, pos_t h) noexcept { horizon_[idx(s)] = h; }
  /// Whether cell i may take a new token now: empty, or masked for every owner's next
  /// query; with `except` >= 0, also a cell of that sequence alone, and its ownership
  /// of a shared cell does not count (what loading its state may overwrite).
  bool usable(std::size_t i, seq_id except = -1) const noexcept;
  /// Makes cell c hold (p, owners), forgetting what it held (see apply).
  void overwrite(std::size_t c, pos_t p, const seq_set& owners, std::vector<pos_t>& bump);
  /// Raises the horizons of `bump` and purges the owners' cells below them.
  void forget_below(const std::vector<pos_t>& bump, bool log);

 private:
  using store::valid;
  static std::size_t idx(seq_id s) noexcept { return static_cast<std::size_t>(s); }
  /// How a status names sequence s (config seq_label_base).
  seq_id label(seq_id s) const noexcept { return s + cfg_.seq_label_base; }

  status check_tokens(const char* op, std::size_t u, const ubatch_tokens& ub) const;
  status lost(seq_id s, pos_t at, const char* op) const;
  bool continuable(pos_t h, pos_t top) const;
  template <class NewPos>
  status check_shift(seq_id s, pos_t p0, pos_t p1, const char* op, NewPos new_pos, bool noop) const;
  template <class NewPos>
  void shift(seq_id s, pos_t p0, pos_t p1, NewPos new_pos, bool noop);
  status find_slots(std::size_t u, std::size_t n, std::vector<std::uint32_t>& slots) const;
  void place(std::span<const std::uint32_t> slots, const ubatch_tokens& ub, bool rows);

  sliding_window_config cfg_;
  std::vector<pos_t> horizon_;  // [n_seq_max]
  window_undo tx_;
  std::vector<pos_t> bump_;
  std::size_t next_u_ = 0;  // the next micro-batch apply() accepts
};

}  // namespace mnemo::memory

#include "mnemo/memory/window/sliding_window_impl.hpp"

namespace mnemo::memory {
static_assert(kv_memory<sliding_window<float>>);
}  // namespace mnemo::memory
