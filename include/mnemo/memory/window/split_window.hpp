// The per-stream sliding-window KV strategy: one sliding_window per sequence
// ("stream"), each configured for one sequence, so a stream holds pad(n_swa + n_ubatch,
// 256) cells (min n_ctx; swa_full: n_ctx) and, as split_stream, attention never scores
// one sequence's query against another's keys (llama.cpp's SWA cache with
// kv_unified = false: n_seq_max = 1 per stream). Local layers of an interleaved model
// run on it next to split_stream global layers (layered<split_stream, split_window>).
//
// Sequence s lives in stream s as that stream's sequence 0: every window rule
// (horizons, lost context, reuse of cells only after commit, exact rollback, K-shift)
// is the stream's own (sliding_window.hpp); this wrapper routes tokens and sequence
// operations; a stream's statuses name its sequence 0 as the caller's id
// (sliding_window_config::seq_label_base).
// Batches are split equally and sequentially (split_stream's strategy); the streams a
// batch touches are prepared, applied, committed and rolled back together. Coupled
// tokens (one token in several sequences) are refused with a status, as split_stream.
// seq_cp across streams copies cells (and the source's horizon, as the unified window).
#pragma once

#include <algorithm>
#include <cstring>
#include <span>
#include <string>
#include <vector>

#include "mnemo/batch/strategies.hpp"
#include "mnemo/memory/concepts.hpp"
#include "mnemo/memory/seq_guards.hpp"
#include "mnemo/memory/stream_views.hpp"
#include "mnemo/memory/token_checks.hpp"
#include "mnemo/memory/types.hpp"
#include "mnemo/memory/window/sliding_window.hpp"
#include "mnemo/memory/window/split_window_fwd.hpp"
#include "mnemo/memory/window/window_rules.hpp"

namespace mnemo::memory {

template <dtype::kv_element KE, dtype::kv_element VE>
class split_window {
 public:
  using k_element = KE;
  using v_element = VE;
  using window_type = sliding_window<KE, VE>;

  static result<split_window> make(const split_window_config& cfg) {
    MNEMO_RETURN_IF_ERROR(check_n_seq_max("split window", cfg.n_seq_max));
    split_window m;
    m.cfg_ = cfg;
    m.cfg_.stream.n_seq_max = 1;
    for (seq_id s = 0; s < cfg.n_seq_max; ++s) {
      sliding_window_config c = m.cfg_.stream;
      c.seq_label_base = s;  // the stream's statuses name its sequence 0 as s
      MNEMO_ASSIGN_OR_RETURN(window_type w, window_type::make(c));
      m.streams_.push_back(std::move(w));
    }
    return m;
  }

  const split_window_config& config() const noexcept { return cfg_; }
  seq_id n_seq_max() const noexcept { return cfg_.n_seq_max; }
  std::size_t n_layer() const noexcept { return cfg_.stream.shape.n_layer; }
  /// The stream (window cache) of sequence s, whose sequence 0 is s. @pre s is valid
  const window_type& stream(seq_id s) const noexcept { return streams_[idx(s)]; }
  window_type& mutable_stream(seq_id s) noexcept { return streams_[idx(s)]; }
  std::size_t n_streams() const noexcept { return streams_.size(); }
  std::size_t size_per_stream() const noexcept { return streams_[0].size(); }
  std::size_t size() const noexcept { return size_per_stream() * streams_.size(); }
  std::size_t used() const noexcept {
    std::size_t n = 0;
    for (const auto& w : streams_) n += w.used();
    return n;
  }
  attention::window_kind window() const noexcept { return cfg_.stream.window; }
  pos_t n_swa() const noexcept { return cfg_.stream.n_swa; }
  bool can_shift() const noexcept { return streams_[0].can_shift(); }
  bool has_pending_shift() const noexcept {
    for (const auto& w : streams_)
      if (w.has_pending_shift()) return true;
    return false;
  }
  bool in_batch() const noexcept {
    if (!plan_.empty()) return true;
    for (const auto& w : streams_)
      if (w.in_batch()) return true;
    return false;
  }
  /// One stream per sequence: tokens grouped by consecutive sequences (as split_stream).
  static equal_split split_strategy(std::uint32_t n_ubatch) noexcept { return {n_ubatch, true}; }

  pos_t seq_pos_min(seq_id s) const noexcept { return valid(s) ? stream(s).seq_pos_min(0) : -1; }
  pos_t seq_pos_max(seq_id s) const noexcept { return valid(s) ? stream(s).seq_pos_max(0) : -1; }
  pos_t horizon(seq_id s) const noexcept { return valid(s) ? stream(s).horizon(0) : 0; }
  pos_t earliest_restorable_pos(seq_id s) const noexcept {
    return valid(s) ? stream(s).earliest_restorable_pos(0) : -1;
  }
  bool can_resume(seq_id s, pos_t p) const noexcept {
    return valid(s) && stream(s).can_resume(0, p);
  }

  // ---- checks: the status the operation would return, nothing changed -------------

  status check_seq_rm(seq_id s, pos_t p0, pos_t p1) const {
    MNEMO_RETURN_IF_ERROR(check_seq(s, cfg_.n_seq_max, "seq_rm", true));
    MNEMO_RETURN_IF_ERROR(check_not_in_batch(in_batch(), "seq_rm"));
    for (seq_id q = s < 0 ? 0 : s; q < (s < 0 ? cfg_.n_seq_max : s + 1); ++q)
      MNEMO_RETURN_IF_ERROR(stream(q).check_seq_rm(0, p0, p1));
    return {};
  }
  /// dst continues after the highest position it holds afterwards, with the horizon
  /// the unified window's seq_cp gives it: that window must be held, and the cells
  /// must fit dst's stream.
  status check_seq_cp(seq_id src, seq_id dst, pos_t p0, pos_t p1) const {
    MNEMO_RETURN_IF_ERROR(check_seq(src, cfg_.n_seq_max, "seq_cp"));
    MNEMO_RETURN_IF_ERROR(check_seq(dst, cfg_.n_seq_max, "seq_cp"));
    MNEMO_RETURN_IF_ERROR(check_not_in_batch(in_batch(), "seq_cp"));
    if (src == dst) return {};
    const pos_range r = pos_range::of(p0, p1);
    const cell_array& a = stream(src).cells();
    const cell_array& b = stream(dst).cells();
    pos_t top = -1;
    std::size_t n = 0;
    for (std::size_t i = 0; i < a.size(); ++i)
      if (!a.empty(i) && r.contains(a.pos(i))) top = std::max(top, a.pos(i)), ++n;
    for (std::size_t i = 0; i < b.size(); ++i)
      if (!b.empty(i) && !r.contains(b.pos(i))) top = std::max(top, b.pos(i)), ++n;
    const pos_t h = copied_horizon(src, dst, r);
    if (h > 0 && !(top >= h && resumable(window(), n_swa(), h, top + 1)))
      return make_status(status_code::unsupported,
                         "seq_cp: sequence %d would continue at %d, whose %s window of %d "
                         "reaches below %d, where sequence %d forgot its positions (it can "
                         "resume from %d)",
                         dst, top + 1, attention::to_string(window()).data(), n_swa(), h, src,
                         earliest_restorable_pos(src));
    if (n > size_per_stream())
      return make_status(status_code::no_space,
                         "seq_cp: sequence %d would hold %zu cells, its stream has %zu", dst, n,
                         size_per_stream());
    return {};
  }
  status check_seq_keep(seq_id s) const {
    MNEMO_RETURN_IF_ERROR(check_seq(s, cfg_.n_seq_max, "seq_keep"));
    return check_not_in_batch(in_batch(), "seq_keep");
  }
  status check_seq_add(seq_id s, pos_t p0, pos_t p1, pos_t delta) const {
    MNEMO_RETURN_IF_ERROR(check_seq(s, cfg_.n_seq_max, "seq_add"));
    return stream(s).check_seq_add(0, p0, p1, delta);
  }
  status check_seq_div(seq_id s, pos_t p0, pos_t p1, int d) const {
    MNEMO_RETURN_IF_ERROR(check_seq(s, cfg_.n_seq_max, "seq_div"));
    return stream(s).check_seq_div(0, p0, p1, d);
  }

  // ---- sequence operations (checked first, all-or-nothing) --------------------------

  status seq_rm(seq_id s, pos_t p0, pos_t p1) {
    MNEMO_RETURN_IF_ERROR(check_seq_rm(s, p0, p1));
    for (seq_id q = s < 0 ? 0 : s; q < (s < 0 ? cfg_.n_seq_max : s + 1); ++q)
      MNEMO_RETURN_IF_ERROR(at(q).seq_rm(0, p0, p1));
    return {};
  }
  /// dst holds exactly src's cells in [p0, p1) afterwards (copied, pending shifts
  /// included), next to its own cells outside the range, packed from cell 0.
  status seq_cp(seq_id src, seq_id dst, pos_t p0, pos_t p1);
  /// Only s remains: every other stream is emptied (horizons included).
  status seq_keep(seq_id s) {
    MNEMO_RETURN_IF_ERROR(check_seq_keep(s));
    for (seq_id q = 0; q < cfg_.n_seq_max; ++q)
      if (q != s) at(q).clear(false);
    return {};
  }
  status seq_add(seq_id s, pos_t p0, pos_t p1, pos_t delta) {
    MNEMO_RETURN_IF_ERROR(check_seq(s, cfg_.n_seq_max, "seq_add"));
    return at(s).seq_add(0, p0, p1, delta);
  }
  status seq_div(seq_id s, pos_t p0, pos_t p1, int d) {
    MNEMO_RETURN_IF_ERROR(check_seq(s, cfg_.n_seq_max, "seq_div"));
    return at(s).seq_div(0, p0, p1, d);
  }
  void clear(bool data) {
    for (auto& w : streams_) w.clear(data);
    plan_.clear();
    touched_.clear();
    applied_ = false;
  }
  status update() {
    MNEMO_RETURN_IF_ERROR(check_not_in_batch(in_batch(), "update"));
    for (auto& w : streams_) MNEMO_RETURN_IF_ERROR(w.update());
    return {};
  }

  // ---- planning and transactions ---------------------------------------------------

  /// Plans every micro-batch in the streams of its tokens (each stream sees every
  /// micro-batch, empty where it has no token, so indices stay aligned). A stream's
  /// refusal undoes the plans of the others.
  status prepare(std::span<const ubatch_tokens> ubatches);
  /// Applies micro-batch u in every stream the batch touches; a refusal rolls the
  /// whole batch back.
  status apply(std::size_t u, const ubatch_tokens& ub);

  void commit() {
    for (seq_id s : touched_) at(s).commit();
    plan_.clear();
    touched_.clear();
    applied_ = false;
  }
  void rollback() {
    for (auto& w : streams_) w.rollback();  // streams without an open batch drop their plan
    plan_.clear();
    touched_.clear();
    applied_ = false;
  }

  /// K/V of token j of micro-batch u. k: [n_head_kv, d_k] f32, v: [n_head_kv, d_v] f32.
  template <class Isa = simd::native>
  void write_kv(std::size_t layer, std::size_t u, std::size_t j, const float* k,
                const float* v) noexcept {
    const ubatch_plan& p = plan_[u];
    at(static_cast<seq_id>(p.stream[j])).template write_kv<Isa>(layer, u, p.local[j], k, v);
  }

  /// One kv_view per sequence of micro-batch u, by increasing sequence id (as
  /// split_stream), each the stream's window-sized cell prefix; per token its view.
  void views(std::size_t layer, std::size_t u, layer_views& out) const {
    start_views(out, layer_window(layer));
    if (u >= plan_.size()) return;
    const ubatch_plan& p = plan_[u];
    for (seq_id s : p.ids) {
      attention::kv_segment g = stream(s).segment(layer);
      g.owners = nullptr;  // every cell of the stream is the querying sequence's
      out.segments.push_back(g);
    }
    view_per_segment(out);
    token_views(out, std::span<const seq_id>(p.ids), p.stream,
                [](std::uint32_t s) { return static_cast<seq_id>(s); });
  }

  /// Every layer's window is the streams' (they forget by it).
  attention::layer_window layer_window(std::size_t layer) const noexcept {
    (void)layer;
    return {window(), n_swa()};
  }

  memory_report report() const {
    memory_report r;
    const auto& kv = streams_[0].storage();
    const std::size_t cells = size();
    add_kv_layers(r, cfg_.stream.shape.n_layer, "kv-window", dtype::element_traits<KE>::name,
                  dtype::element_traits<VE>::name, kv.k_row_bytes() * cells,
                  kv.v_row_bytes() * cells);
    r.cells = cells;
    r.cells_used = used();
    for (seq_id s = 0; s < cfg_.n_seq_max; ++s)
      if (const std::size_t n = stream(s).cells().seq_cells(0)) r.cells_per_seq.push_back({s, n});
    return r;
  }

 private:
  struct ubatch_plan {
    std::vector<std::uint32_t> stream;  // [n_tokens] the token's sequence (stream)
    std::vector<std::uint32_t> local;   // [n_tokens] its index in the stream's micro-batch
    std::vector<seq_id> ids;            // the streams of the micro-batch, sorted
  };

  static std::size_t idx(seq_id s) noexcept { return static_cast<std::size_t>(s); }
  bool valid(seq_id s) const noexcept { return s >= 0 && s < cfg_.n_seq_max; }
  window_type& at(seq_id s) noexcept { return streams_[idx(s)]; }

  /// dst's horizon after seq_cp (window_rules.hpp, the unified window's rule).
  pos_t copied_horizon(seq_id src, seq_id dst, pos_range r) const {
    return memory::copied_horizon(horizon(src), horizon(dst), r);
  }

  /// Why a token of several sequences is refused (check_stream_tokens; the window
  /// rules of a token's stream are checked by the stream).
  static constexpr const char* k_coupled =
      "split windows hold each sequence in a stream of its own; decode a shared prefix on one "
      "sequence and seq_cp it, or use a unified memory";

  split_window_config cfg_;
  std::vector<window_type> streams_;  // [n_seq_max]
  std::vector<ubatch_plan> plan_;     // [micro-batch]
  std::vector<seq_id> touched_;       // streams of the prepared batch, sorted
  std::vector<pos_t> pos_scratch_;
  std::vector<seq_set> seq0_;  // seq_set::of(0) repeated
  bool applied_ = false;       // a micro-batch of the prepared batch was applied
};

}  // namespace mnemo::memory

#include "mnemo/memory/window/split_window_impl.hpp"

namespace mnemo::memory {
static_assert(kv_memory<split_window<float>>);
}  // namespace mnemo::memory
