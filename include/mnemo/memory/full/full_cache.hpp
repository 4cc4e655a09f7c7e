// The unified ("full") KV strategy: one cell array for every sequence; a cell may
// belong to several sequences, so copying a prefix costs nothing. Placement, sequence
// operations and K-shift follow llama.cpp's unified cache, with the deviations
// docs/full-cache.md lists: errors are statuses, never aborts; a failed batch is rolled
// back entirely; shifting a shared cell copies it first; seq_div shifts with the right
// sign.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "mnemo/attention/kv_view.hpp"
#include "mnemo/attention/rope.hpp"
#include "mnemo/batch/strategies.hpp"
#include "mnemo/dtype/dtype.hpp"
#include "mnemo/memory/cell_store.hpp"
#include "mnemo/memory/cells.hpp"
#include "mnemo/memory/concepts.hpp"
#include "mnemo/memory/full/full_cache_fwd.hpp"
#include "mnemo/memory/kv_storage.hpp"
#include "mnemo/memory/seq_guards.hpp"
#include "mnemo/memory/token_checks.hpp"
#include "mnemo/memory/transaction.hpp"
#include "mnemo/memory/types.hpp"

namespace mnemo::memory {

template <dtype::kv_element KE, dtype::kv_element VE>
class full_cache : public cell_store<KE, VE> {
  using store = cell_store<KE, VE>;
  using store::cells_, store::head_, store::plan_;

 public:
  static result<full_cache> make(const full_cache_config& cfg) {
    MNEMO_RETURN_IF_ERROR(check_n_seq_max("full cache", cfg.n_seq_max));
    MNEMO_RETURN_IF_ERROR(check_layer_windows("full cache", cfg.windows, cfg.shape.n_layer));
    MNEMO_RETURN_IF_ERROR(cfg.rope.validate(cfg.shape.d_k));
    full_cache c;
    c.cfg_ = cfg;
    MNEMO_RETURN_IF_ERROR(c.init(cfg.shape, cfg.size, cfg.n_seq_max));
    return c;
  }

  const full_cache_config& config() const noexcept { return cfg_; }
  seq_id n_seq_max() const noexcept { return cfg_.n_seq_max; }
  std::size_t n_layer() const noexcept { return cfg_.shape.n_layer; }
  bool can_shift() const noexcept { return cfg_.shift_supported; }
  /// One cell array for every sequence: any split will do.
  static simple_split split_strategy(std::uint32_t n_ubatch) noexcept { return {n_ubatch}; }
  bool in_batch() const noexcept { return tx_.open() || !plan_.empty(); }
  using store::seq_pos_max;

  // ---- checks: the status the operation would return, nothing changed -------------

  status check_seq_rm(seq_id s, pos_t p0, pos_t p1) const {
    (void)p0, (void)p1;
    MNEMO_RETURN_IF_ERROR(check_seq(s, cfg_.n_seq_max, "seq_rm", true));
    return check_not_in_batch(in_batch(), "seq_rm");
  }
  status check_seq_cp(seq_id src, seq_id dst, pos_t p0, pos_t p1) const {
    (void)p0, (void)p1;
    MNEMO_RETURN_IF_ERROR(check_seq(src, cfg_.n_seq_max, "seq_cp"));
    MNEMO_RETURN_IF_ERROR(check_seq(dst, cfg_.n_seq_max, "seq_cp"));
    return check_not_in_batch(in_batch(), "seq_cp");
  }
  status check_seq_keep(seq_id s) const {
    MNEMO_RETURN_IF_ERROR(check_seq(s, cfg_.n_seq_max, "seq_keep"));
    return check_not_in_batch(in_batch(), "seq_keep");
  }
  status check_seq_add(seq_id s, pos_t p0, pos_t p1, pos_t delta) const {
    MNEMO_RETURN_IF_ERROR(check_add_overflow(s, seq_pos_max(s), p0, p1, delta));
    return check_shift(s, p0, p1, "seq_add", delta == 0);
  }
  status check_seq_div(seq_id s, pos_t p0, pos_t p1, int d) const {
    MNEMO_RETURN_IF_ERROR(check_divisor(d));
    return check_shift(s, p0, p1, "seq_div", d == 1);
  }

  // ---- sequence operations ------------------------------------------------------------

  /// Removes s (every sequence when s == -1) from the cells holding positions in
  /// [p0, p1); cells left without owner become free.
  status seq_rm(seq_id s, pos_t p0, pos_t p1) {
    MNEMO_RETURN_IF_ERROR(check_seq_rm(s, p0, p1));
    this->remove_seq(s, pos_range::of(p0, p1));
    return {};
  }

  /// dst holds exactly src's cells in [p0, p1) afterwards (its own cells in that
  /// range are dropped first; llama.cpp keeps them), sharing them with src.
  status seq_cp(seq_id src, seq_id dst, pos_t p0, pos_t p1) {
    MNEMO_RETURN_IF_ERROR(check_seq_cp(src, dst, p0, p1));
    if (src != dst) this->copy_seq(src, dst, pos_range::of(p0, p1));
    return {};
  }

  /// Only s remains: cells without s become free, cells with s keep only s.
  status seq_keep(seq_id s) {
    MNEMO_RETURN_IF_ERROR(check_seq_keep(s));
    this->keep_seq(s);
    return {};
  }

  /// Adds delta to the positions of s in [p0, p1). Cells whose position becomes
  /// negative are freed. A cell s shares with other sequences is copied first, so
  /// the others keep their positions (docs/full-cache.md); no_space when there is no room for
  /// the copies (nothing changed). The keys are re-rotated by update().
  status seq_add(seq_id s, pos_t p0, pos_t p1, pos_t delta) {
    MNEMO_RETURN_IF_ERROR(check_seq_add(s, p0, p1, delta));
    const pos_range r = pos_range::of(p0, p1);
    if (delta != 0 && !r.empty()) this->move_seq(s, r, [delta](pos_t p) { return p + delta; });
    return {};
  }

  /// Divides the positions of s in [p0, p1) by d (integer division); the pending
  /// shift is new - old (llama.cpp records it with the opposite sign).
  status seq_div(seq_id s, pos_t p0, pos_t p1, int d) {
    MNEMO_RETURN_IF_ERROR(check_seq_div(s, p0, p1, d));
    const pos_range r = pos_range::of(p0, p1);
    if (d != 1 && !r.empty()) this->move_seq(s, r, [d](pos_t p) { return p / d; });
    return {};
  }

  /// Frees every cell; with `data` the K/V bytes are zeroed too.
  void clear(bool data) {
    this->clear_cells(data);
    tx_.reset();
  }

  /// Applies pending position shifts to the cached keys (K-shift): every shifted
  /// cell's K rows are rotated by their accumulated shift.
  status update() {
    if (tx_.open()) return check_not_in_batch(true, "update");  // rollback() cannot undo it
    this->apply_shifts(cfg_.rope);
    return {};
  }

  // ---- planning and transactions -------------------------------------------------

  /// Finds cells for every micro-batch before anything changes (llama.cpp's slot
  /// search, run as a dry run over all of them). On failure nothing changed.
  status prepare(std::span<const ubatch_tokens> ubatches) {
    if (tx_.open()) return check_not_in_batch(true, "prepare");  // an unapplied plan is replaced
    plan_.clear();
    // Cells taken by earlier micro-batches: only a multi-micro-batch plan needs the
    // map, and zeroing it costs O(size), most of a one-token plan of a large cache.
    std::vector<std::uint8_t> taken(ubatches.size() > 1 ? cells_.size() : 0, 0);
    std::size_t head = head_, used = cells_.used();
    for (std::size_t u = 0; u < ubatches.size(); ++u) {
      const std::size_t n = ubatches[u].size();
      if (status st = check_unified_tokens("prepare", u, ubatches[u], cfg_.n_seq_max); !st)
        return fail_plan(std::move(st));
      if (n > cells_.size())
        return fail_plan(make_status(status_code::no_space,
                                     "micro-batch %zu has %zu tokens but the cache has %zu cells",
                                     u, n, cells_.size()));
      std::vector<std::uint32_t> slots;
      scan_slots(
          head, used, cells_.size(), n,
          [&](std::size_t i) { return cells_.empty(i) && (taken.empty() || !taken[i]); }, slots);
      if (slots.size() < n)
        return fail_plan(make_status(
            status_code::no_space, "no room for micro-batch %zu: %zu tokens, %zu free cells of %zu",
            u, n, slots.size(), cells_.size()));
      if (!taken.empty())
        for (auto i : slots) taken[i] = 1;
      used += n;
      if (n > 0) head = slots.back() + 1;
      plan_.push_back(std::move(slots));
    }
    return {};
  }

  /// Writes micro-batch u's cell metadata; the first apply opens a transaction
  /// that commit() closes and rollback() undoes.
  status apply(std::size_t u, const ubatch_tokens& ub) {
    if (u >= plan_.size() || plan_[u].size() != ub.size())
      return make_status(status_code::invalid_argument,
                         "apply: micro-batch %zu does not match the prepared plan", u);
    MNEMO_RETURN_IF_ERROR(check_unified_tokens("apply", u, ub, cfg_.n_seq_max));
    for (std::uint32_t c : plan_[u])  // planned cells stay free until applied (seq ops are refused)
      if (!cells_.empty(c))
        return make_status(status_code::invalid_argument,
                           "apply: micro-batch %zu was applied already", u);
    if (!tx_.open()) tx_.begin(head_, cells_.has_shift());
    for (std::size_t j = 0; j < ub.size(); ++j) {
      const std::size_t c = plan_[u][j];
      tx_.save(c, cells_);
      cells_.occupy(c, ub.pos[j], ub.seqs[j]);
    }
    if (!plan_[u].empty()) head_ = plan_[u].back() + 1;
    return {};
  }

  void commit() {
    tx_.reset();
    plan_.clear();
  }

  /// Undoes every apply() since the last commit: cell metadata, head and pending
  /// shifts are exactly as before (rows written to free cells are unreachable).
  void rollback() {
    if (tx_.open()) head_ = tx_.undo(cells_);
    plan_.clear();
  }

  /// Moves every used cell to the front, in order, with its K/V rows: the attended
  /// prefix [0, used) becomes dense again.
  status defragment() {
    MNEMO_RETURN_IF_ERROR(check_not_in_batch(in_batch(), "defragment"));
    std::size_t to = 0;
    for (std::size_t i = 0; i < cells_.size(); ++i) {
      if (cells_.empty(i)) continue;
      if (i != to) {
        this->kv_.copy_cell(i, to);
        cells_.relocate(i, to);
      }
      ++to;
    }
    head_ = to;
    return {};
  }

  memory_report report() const { return this->report_as("kv"); }

  /// The window layer `layer`'s attention masks by (config windows; none without).
  attention::layer_window layer_window(std::size_t layer) const noexcept {
    return cfg_.windows.empty() ? attention::layer_window{} : cfg_.windows[layer];
  }
  /// The attention views of one layer for micro-batch u: the one unified stream and
  /// the layer's window.
  void views(std::size_t layer, std::size_t u, layer_views& out) const {
    store::views(layer, u, out);
    out.window = layer_window(layer);
  }

 private:
  /// seq_add / seq_div after their own argument checks: allowed at all, and room to
  /// move the cells s shares apart (nothing to do when `noop` or the range is empty).
  status check_shift(seq_id s, pos_t p0, pos_t p1, const char* op, bool noop) const {
    MNEMO_RETURN_IF_ERROR(
        check_shift_allowed(s, cfg_.n_seq_max, in_batch(), cfg_.shift_supported, op));
    const pos_range r = pos_range::of(p0, p1);
    if (noop || r.empty()) return {};
    return this->check_unshare_room(s, r, op, s);
  }

  status fail_plan(status s) {
    plan_.clear();
    return s;
  }

  full_cache_config cfg_;
  transaction tx_;
};

static_assert(kv_memory<full_cache<float>>);

}  // namespace mnemo::memory
