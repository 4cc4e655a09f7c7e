// The bounded KV strategy, bounded<Policy, KE, VE> (docs/eviction.md):
// every lane keeps at most `budget` cells between calls; a call writes its tokens
// into free slots, attends, and then evicts down to the budget by the policy's
// scores ("attend first, then evict": each token is scored before it can go).
// Eviction frees slots in place; the policy's per-slot state stays with its slot.
//
// Granularity: a lane is one (sequence, layer) by default (kv_granularity::per_layer:
// one kept set for all KV heads), or one (sequence, layer, KV head) with
// kv_granularity::per_kv_head (each head keeps its own B slots, chosen from its own
// scores). Per-head lanes store one KV
// head per row, each lane's rows contiguous ([n_seq, n_head_kv, capacity] rows of
// d_k), so the bytes are the same as per layer and attention for KV head h streams
// that lane's dense prefix (model::attend_observed attends every head in one call).
// A head-allocating policy (AdaKV, evict/adakv.hpp) pools the heads instead: the lanes
// of a (sequence, layer) share a pool of pages of one-head rows, each lane's slots
// mapped page by page onto pool pages from a free list, and their kept sizes are
// allocated together after each call.
//
// Layout: each lane has capacity = its budget + max_ubatch slots (the slack holds one
// micro-batch of a sequence before eviction), positions and policy state per slot,
// K/V rows in one kv_storage per layer holding that layer's lanes (per-layer and
// per-head budgets store each lane's own capacity, not the largest). A lane's live slots are
// kept within a dense prefix: new tokens take the lowest free slots and, when a call
// leaves holes below the highest live slot (after a multi-token eviction), the
// highest cells move into them. A steady decode moves no row (the victim's slot
// takes the next token).
//
// Budget rule: budget_rule::kept keeps B cells between calls, so a decode step reads
// B + 1 (the kept cells and its own token); budget_rule::read ("decode with budget B
// reads at most B cells") keeps B - 1 between calls, so a decode step reads at most
// max(B, 1) cells including its own token.
//
// Positions: position_mode::original keeps each token's position (no re-rotation;
// the queries keep their absolute positions); position_mode::compact renumbers the
// kept tokens 0..n-1 after an eviction and re-rotates their keys by the difference
// (StreamingLLM's positions within the cache), so seq_pos_max() is n - 1.
// seq_pos_max() is the logical newest position, which an eviction does not lower.
//
// Transactions: the first change of a lane in a batch snapshots its positions and
// state, and a K/V part that was live when the batch began is saved before it is
// overwritten, so rollback() restores evictions, moves and new tokens exactly.
// Like split_stream, a token belongs to one sequence (coupled tokens are refused).
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <limits>
#include <span>
#include <string>
#include <vector>

#include "mnemo/attention/rope.hpp"
#include "mnemo/attention/sink.hpp"
#include "mnemo/base/assert.hpp"
#include "mnemo/batch/strategies.hpp"
#include "mnemo/dtype/dtype.hpp"
#include "mnemo/dtype/rows.hpp"
#include "mnemo/evict/concepts.hpp"
#include "mnemo/evict/lane_rescore.hpp"
#include "mnemo/memory/concepts.hpp"
#include "mnemo/memory/key_rotator.hpp"
#include "mnemo/memory/kv_storage.hpp"
#include "mnemo/memory/seq_guards.hpp"
#include "mnemo/memory/stream_views.hpp"
#include "mnemo/memory/token_checks.hpp"
#include "mnemo/memory/types.hpp"
#include "mnemo/simd/simd.hpp"

namespace mnemo::attention {
class workspace;  // attention/attend.hpp: attend_reads passes them to a lane reader
struct options;
}  // namespace mnemo::attention

namespace mnemo::memory {

namespace detail {
/// The per-lane reader of a policy that declares one (evict::lane_reading), else an
/// empty stand-in that is never stored.
template <class P>
struct lane_reader_of {
  struct type {
    void touched(std::size_t) noexcept {}
    void reset() noexcept {}
  };
};
template <class P>
requires evict::lane_reading<P>
struct lane_reader_of<P> {
  using type = typename P::lane_reader;
};
}  // namespace detail

enum class position_mode : std::uint8_t {
  original,  // tokens keep their positions (kvpress, H2O, SnapKV; no re-rotation)
  compact,   // kept tokens renumbered 0..n-1, keys re-rotated (StreamingLLM streaming)
};

/// Which cells share one kept set.
enum class kv_granularity : std::uint8_t {
  per_layer,    // one set per (sequence, layer) for all KV heads
  per_kv_head,  // one set per (sequence, layer, KV head), each from its own scores
};

/// What the budget bounds.
enum class budget_rule : std::uint8_t {
  kept,  // B cells kept between calls; a decode step reads B + 1
  read,  // B - 1 kept between calls; a decode step reads at most max(B, 1)
};

struct bounded_config {
  kv_shape shape;
  std::size_t budget = 0;        // cells per lane (see `rule`)
  std::size_t max_ubatch = 512;  // most tokens of one sequence in one micro-batch
  seq_id n_seq_max = 1;
  attention::rope_config rope;  // how cached keys were rotated (shifts, compact mode)
  bool shift_supported = true;
  position_mode positions = position_mode::original;
  kv_granularity granularity = kv_granularity::per_layer;
  budget_rule rule = budget_rule::kept;
  /// Per layer, the window its attention masks by (empty: none), as full_cache_config's:
  /// reported with the layer's views, so a sliding-window model keeps its window on a
  /// bounded cache (with position_mode::compact, over the renumbered positions).
  std::vector<attention::layer_window> windows;

  /// Per-layer budgets (PyramidKV's schedule: evict/budget_schedule.hpp): n_layer
  /// entries that replace `budget` layer by layer; empty: `budget` in every layer.
  std::vector<std::size_t> layer_budgets;
  /// Per-KV-head budgets, [n_layer, n_head_kv] (kv_granularity::per_kv_head only;
  /// DuoAttention's profile: evict/duo_attention.hpp): each lane keeps its own;
  /// empty: the layer's budget. A decode step of head h reads its own budget.
  std::vector<std::size_t> head_budgets;

  std::size_t budget_of(std::size_t layer, std::size_t head = 0) const noexcept {
    if (!head_budgets.empty()) return head_budgets[layer * shape.n_head_kv + head];
    return layer < layer_budgets.size() ? layer_budgets[layer] : budget;
  }
  std::size_t max_budget() const noexcept {
    const auto& v = head_budgets.empty() ? layer_budgets : head_budgets;
    std::size_t b = v.empty() ? budget : 0;
    for (std::size_t x : v) b = std::max(b, x);
    return b;
  }
  std::size_t capacity() const noexcept { return max_budget() + max_ubatch; }
  /// Cells a lane of `layer` (and KV head `head`) keeps after a call's eviction.
  std::size_t kept(std::size_t layer, std::size_t head = 0) const noexcept {
    const std::size_t b = budget_of(layer, head);
    return rule == budget_rule::kept ? b : (b > 0 ? b - 1 : 0);
  }
  /// The most cells any lane keeps after a call.
  std::size_t kept() const noexcept {
    return rule == budget_rule::kept ? max_budget() : (max_budget() > 0 ? max_budget() - 1 : 0);
  }
  /// Lanes per (sequence, layer): 1, or n_head_kv with per-KV-head lanes.
  std::size_t lanes_per_layer() const noexcept {
    return granularity == kv_granularity::per_kv_head ? shape.n_head_kv : 1;
  }
};

/// What views() handed to attention so far (the "reads at most B cells" check).
struct bounded_view_stats {
  std::size_t calls = 0;           // views() calls
  std::size_t max_cells = 0;       // most cells of one lane's view
  std::size_t max_new_tokens = 0;  // with this many tokens of that sequence in the call
};

template <class Policy, dtype::kv_element KE, dtype::kv_element VE = KE>
class bounded {
  static_assert(evict::check_policy<Policy>::value);

 public:
  using k_element = KE;
  using v_element = VE;
  using policy_type = Policy;
  /// The signals the policy declared (evict::signal): the model asks for attention
  /// statistics only when the policy can use them, and compiles the kernel's export
  /// only when one of them comes from the kernel (compile time).
  static constexpr evict::signal_set signals = evict::policy_signals<Policy>;
  static constexpr bool wants_attention_stats = signals.per_call();
  static constexpr bool wants_kernel_stats = signals.from_kernel();
  static constexpr std::size_t state_floats = Policy::state_floats;
  /// AdaKV (evict/adakv.hpp): the KV heads of a (sequence, layer) share one pool of
  /// n_head_kv x capacity one-head rows, each lane owning the cells it holds, and the
  /// heads' kept sizes are allocated together after each call.
  static constexpr bool pooled = evict::head_allocating<Policy>;
  /// Quest / ThinK (evict/quest_reads.hpp, evict/think_keys.hpp): decode rows are read
  /// through a per-lane reader (attend_reads, called by model::attend_observed).
  static constexpr bool reads_hooked = evict::lane_reading<Policy>;
  using lane_reader = typename detail::lane_reader_of<Policy>::type;

  /// One (sequence, layer[, KV head]): slot positions (< 0: free) and the policy's state.
  struct lane {
    std::vector<pos_t> pos;    // [lane slots]
    std::vector<float> state;  // [lane slots * state_floats]
    std::vector<float> stats;  // [lane_floats]: the policy's state of the whole lane
    std::size_t live = 0;      // slots with pos >= 0
    std::size_t top = 0;       // 1 + the highest live slot (0: empty)
    std::size_t base = 0;      // the lane's first storage row in its layer (its pool's, pooled)
    std::vector<std::uint32_t> pages;  // pooled: the pool page of each page of slots in use
  };

  static result<bounded> make(const bounded_config& cfg, Policy policy = {}) {
    MNEMO_RETURN_IF_ERROR(check_n_seq_max("bounded", cfg.n_seq_max));
    if (cfg.max_ubatch == 0)
      return make_status(status_code::invalid_argument, "bounded: max_ubatch must be > 0");
    if (!cfg.layer_budgets.empty() && cfg.layer_budgets.size() != cfg.shape.n_layer)
      return make_status(status_code::invalid_argument,
                         "bounded: %zu layer budgets for %zu layers (give one per layer, or none)",
                         cfg.layer_budgets.size(), cfg.shape.n_layer);
    if (!cfg.head_budgets.empty() &&
        (cfg.granularity != kv_granularity::per_kv_head ||
         cfg.head_budgets.size() != cfg.shape.n_layer * cfg.shape.n_head_kv))
      return make_status(status_code::invalid_argument,
                         "bounded: head_budgets needs kv_granularity::per_kv_head and n_layer x "
                         "n_head_kv = %zu entries (has %zu)",
                         cfg.shape.n_layer * cfg.shape.n_head_kv, cfg.head_budgets.size());
    if (pooled && (cfg.granularity != kv_granularity::per_kv_head || !cfg.head_budgets.empty()))
      return make_status(status_code::invalid_argument,
                         "bounded: a head-allocating policy (AdaKV) needs kv_granularity::"
                         "per_kv_head and no head_budgets (it chooses them)");
    if (reads_hooked && cfg.granularity != kv_granularity::per_layer)
      return make_status(status_code::invalid_argument,
                         "bounded: a policy with a lane reader (Quest, ThinK) needs "
                         "kv_granularity::per_layer");
    if (cfg.granularity == kv_granularity::per_kv_head && cfg.shape.n_head_kv == 0)
      return make_status(status_code::invalid_argument, "bounded: per_kv_head needs n_head_kv > 0");
    MNEMO_RETURN_IF_ERROR(check_layer_windows("bounded", cfg.windows, cfg.shape.n_layer));
    MNEMO_RETURN_IF_ERROR(cfg.rope.validate(cfg.shape.d_k));
    bounded b;
    b.cfg_ = cfg;
    b.policy_ = std::move(policy);
    const std::size_t n_seq = static_cast<std::size_t>(cfg.n_seq_max), L = cfg.shape.n_layer;
    // Per KV head: rows of one head each, [n_seq, n_head_kv, lane capacity] of them, so a
    // head's lane is contiguous in memory (the kernel streams it like a full cache), and
    // each lane holds its own budget + max_ubatch rows (DuoAttention's streaming heads
    // store only their sinks and recent window). Pooled (AdaKV): [n_seq] pools of pages.
    b.lh_ = cfg.lanes_per_layer();
    b.head_rescored_.assign(b.lh_, 0);
    kv_shape row_shape = cfg.shape;
    row_shape.n_layer = 1;
    row_shape.n_head_kv = cfg.shape.n_head_kv / b.lh_;
    b.seq_rows_.assign(L, 0);
    b.page_shift_.assign(L, 0);
    b.pool_pages_.assign(L, 0);
    for (std::size_t l = 0; l < L; ++l) {
      if constexpr (pooled) {
        const std::size_t cap = cfg.budget_of(l) + cfg.max_ubatch;
        b.page_shift_[l] = pool_page_shift(cap);
        const std::size_t C = std::size_t{1} << b.page_shift_[l];
        // Every head's last page may be partly filled: n_head_kv x (C - 1) rows of slack.
        b.pool_pages_[l] = (b.lh_ * cap + b.lh_ * (C - 1)) / C;
        b.seq_rows_[l] = b.pool_pages_[l] * C;
      } else {
        for (std::size_t h = 0; h < b.lh_; ++h)
          b.seq_rows_[l] += cfg.budget_of(l, h) + cfg.max_ubatch;
      }
      MNEMO_ASSIGN_OR_RETURN(auto kv,
                             (kv_storage<KE, VE>::make(row_shape, n_seq * b.seq_rows_[l])));
      b.kv_.push_back(std::move(kv));
    }
    b.k_part_ = b.kv_[0].k_row_bytes() / sizeof(KE);
    b.v_part_ = b.kv_[0].v_row_bytes() / sizeof(VE);
    b.rot_ = key_rotator<KE>(cfg.rope, row_shape.n_head_kv, cfg.shape.d_k);
    b.lanes_.resize(n_seq * L * b.lh_);
    b.lane_floats_ = evict::lane_floats_of(b.policy_, row_shape.n_head_kv, cfg.shape.d_k);
    for (std::size_t s = 0; s < n_seq; ++s)
      for (std::size_t l = 0; l < L; ++l) {
        std::size_t row = s * b.seq_rows_[l];
        for (std::size_t h = 0; h < b.lh_; ++h) {
          lane& ln = b.lanes_[b.lane_index(static_cast<seq_id>(s), l, h)];
          // A pooled head may hold up to every cell the pool can give one head.
          const std::size_t slots = pooled ? b.lh_ * (cfg.budget_of(l) + cfg.max_ubatch)
                                           : cfg.budget_of(l, h) + cfg.max_ubatch;
          ln.pos.assign(slots, -1);
          ln.state.assign(slots * state_floats, 0.0f);
          ln.stats.assign(b.lane_floats_, 0.0f);
          ln.base = row;
          if (!pooled) row += slots;
        }
      }
    if constexpr (pooled) {
      b.free_pages_.resize(n_seq * L);
      for (std::size_t g = 0; g < b.free_pages_.size(); ++g) b.reset_pool(g);
    }
    b.pos_max_.assign(n_seq, -1);
    b.snap_of_.assign(b.lanes_.size(), -1);
    if constexpr (evict::journals_lane<Policy>) b.journal_ctx_.assign(b.lanes_.size(), {});
    if constexpr (reads_hooked)
      for (std::size_t i = 0; i < b.lanes_.size(); ++i) {
        MNEMO_ASSIGN_OR_RETURN(lane_reader r,
                               b.policy_.make_reader(cfg.shape.n_head_kv, cfg.shape.d_k, cfg.rope));
        b.readers_.push_back(std::move(r));
      }
    return b;
  }

  const bounded_config& config() const noexcept { return cfg_; }
  seq_id n_seq_max() const noexcept { return cfg_.n_seq_max; }
  std::size_t n_layer() const noexcept { return cfg_.shape.n_layer; }
  const Policy& policy() const noexcept { return policy_; }
  /// The largest lane's capacity (budget + max_ubatch); lane_slots() gives each lane's.
  std::size_t capacity() const noexcept { return cfg_.capacity(); }
  /// Lanes per (sequence, layer): 1 per layer, n_head_kv per KV head.
  std::size_t lanes_per_layer() const noexcept { return lh_; }
  /// The lane of (s, layer) and, with per-KV-head lanes, KV head `head`.
  const lane& lane_of(seq_id s, std::size_t layer, std::size_t head = 0) const noexcept {
    return lanes_[lane_index(s, layer, head)];
  }
  /// The storage row (in layer `layer`) of slot `slot` of lane (s, layer, head).
  /// @pre pooled: the slot's page is mapped (slot < the lane's pages x page size)
  std::size_t row_of(std::size_t layer, seq_id s, std::size_t slot,
                     std::size_t head = 0) const noexcept {
    const lane& ln = lane_of(s, layer, head);
    if constexpr (pooled) {
      const unsigned sh = page_shift_[layer];
      return ln.base + (std::size_t{ln.pages[slot >> sh]} << sh) + (slot & ((1u << sh) - 1));
    }
    return ln.base + slot;
  }
  /// Slots of one lane: its budget + max_ubatch, or pooled the most its pool can give
  /// one head (lanes_per_layer() x (budget + max_ubatch)).
  std::size_t lane_slots(std::size_t layer, std::size_t head = 0) const noexcept {
    return lanes_[lane_index(0, layer, head)].pos.size();
  }
  /// Storage rows (one lane's part of a cell each) that layer `layer` holds per
  /// sequence: the sum of its lanes' capacities, or its pool's pages.
  std::size_t rows_per_seq(std::size_t layer) const noexcept { return seq_rows_[layer]; }
  /// Pooled: cells per pool page (a power of two, at most the kernel's 64-cell block).
  std::size_t page_cells(std::size_t layer) const noexcept {
    return std::size_t{1} << page_shift_[layer];
  }
  /// Floats of the policy's per-lane state (evict::lane_floats_of; 0: none).
  std::size_t lane_floats() const noexcept { return lane_floats_; }
  const bounded_view_stats& view_stats() const noexcept { return vstats_; }
  void reset_view_stats() noexcept { vstats_ = {}; }
  bool can_shift() const noexcept { return cfg_.shift_supported; }
  static equal_split split_strategy(std::uint32_t n_ubatch) noexcept { return {n_ubatch, true}; }
  bool in_batch() const noexcept { return tx_open_ || !plan_.empty(); }

  pos_t seq_pos_min(seq_id s) const noexcept {
    if (!valid(s)) return -1;
    pos_t m = -1;
    for (std::size_t l = 0; l < cfg_.shape.n_layer; ++l)
      for (std::size_t h = 0; h < lh_; ++h)
        for (pos_t p : lane_of(s, l, h).pos)
          if (p >= 0 && (m < 0 || p < m)) m = p;
    return m;
  }
  /// The newest position of s (evicted or not); -1 when s holds nothing.
  pos_t seq_pos_max(seq_id s) const noexcept {
    return valid(s) ? pos_max_[static_cast<std::size_t>(s)] : -1;
  }

  // ---- sequence operations (bounded_impl.hpp) -------------------------------------

  status seq_rm(seq_id s, pos_t p0, pos_t p1);
  status seq_cp(seq_id src, seq_id dst, pos_t p0, pos_t p1);
  status seq_keep(seq_id s);
  status seq_add(seq_id s, pos_t p0, pos_t p1, pos_t delta);
  status seq_div(seq_id s, pos_t p0, pos_t p1, int d);
  void clear(bool data);
  /// Shifts are applied when requested: nothing is pending.
  status update() { return check_not_in_batch(in_batch(), "update"); }

  // ---- planning, transactions, the model's interface -----------------------------

  /// Checks every token (one sequence each) and that each micro-batch's tokens of a
  /// sequence fit its free slots, given that every call ends at most at the budget.
  status prepare(std::span<const ubatch_tokens> ubatches);
  /// Places micro-batch u's tokens in free slots of every layer (and closes holes).
  status apply(std::size_t u, const ubatch_tokens& ub);
  void commit();
  void rollback();

  /// K/V of token j of micro-batch u in one layer; k: [n_head_kv, d_k] f32,
  /// v: [n_head_kv, d_v] f32. The policy sees the f32 rows (on_insert, per lane).
  template <class Isa = simd::native>
  void write_kv(std::size_t layer, std::size_t u, std::size_t j, const float* k,
                const float* v) noexcept {
    const planned& pl = plan_[u];
    const seq_step& ss = pl.seqs[pl.token_seq[j]];
    const std::size_t hk = cfg_.shape.n_head_kv / lh_;  // KV heads per lane
    for (std::size_t h = 0; h < lh_; ++h) {
      const std::uint32_t slot = pl.slots[(j * cfg_.shape.n_layer + layer) * lh_ + h];
      dtype::encode_row<Isa>(k + h * hk * cfg_.shape.d_k, k_part(layer, ss.seq, slot, h),
                             hk * cfg_.shape.d_k);
      dtype::encode_row<Isa>(v + h * hk * cfg_.shape.d_v, v_part(layer, ss.seq, slot, h),
                             hk * cfg_.shape.d_v);
      policy_.on_insert(step(ss, layer, h), view_of(mut_lane(ss.seq, layer, h)), slot, k, v);
      key_changed(ss.seq, layer, h, slot);
    }
  }

  /// Per layer: one kv_view per sequence of micro-batch u (increasing id), one
  /// segment over the lane's dense prefix [0, top). Per KV head: lanes_per_layer()
  /// groups of such views, head-major (streams[h * n_seq + k] is head h's part of
  /// sequence k's lane); model::attend_observed attends each group with n_head_kv 1.
  void views(std::size_t layer, std::size_t u, layer_views& out) const;
  /// The window layer `layer`'s attention masks by (config windows; none without).
  attention::layer_window layer_window(std::size_t layer) const noexcept {
    return cfg_.windows.empty() ? attention::layer_window{} : cfg_.windows[layer];
  }

  /// The attention call about to run for (layer, u): its head geometry and queries
  /// (post-RoPE), which lse, logits and query signals need. model::attend_observed
  /// calls it first; without it a policy gets the mass only. q must stay valid until
  /// after_attention.
  void observe_call(std::size_t layer, std::size_t u, const attention::shape& sh,
                    const attention::query_batch& q) noexcept {
    call_ = {layer, u, sh, q.q, true};
  }
  /// Quest / ThinK: each decode row of micro-batch u (a sequence with one token in
  /// it) is attended by its lane's reader (read[row] = 1); the readers see the prefill
  /// chunks' rows, which the caller attends with the kernel (read[row] = 0).
  template <simd::isa_tag Isa>
  status attend_reads(std::size_t layer, std::size_t u, const attention::shape& sh,
                      const attention::params& p, const attention::query_batch& q,
                      const layer_views& lv, float* out, attention::workspace& ws,
                      const attention::options& opt, std::vector<std::uint8_t>& read);
  /// The reader of lane (s, layer) (reads_hooked).
  const lane_reader& reader_of(seq_id s, std::size_t layer) const noexcept {
    return readers_[lane_index(s, layer, 0)];
  }

  /// Fills `sink` with the buffers of the signals that the sequences' policy asks for
  /// in this layer and call (mass, lse, logits; only those); false when none asks
  /// for any signal (null-sink path).
  bool stats_sink(std::size_t layer, std::size_t u, attention::mass_sink& sink);
  /// After attention of one layer: hands the policy the mass (when collected), then
  /// evicts every sequence of micro-batch u down to the budget.
  status after_attention(std::size_t layer, std::size_t u, bool had_stats);

  memory_report report() const;

  // ---- for state_read (bounded_state.hpp) ----------------------------------------
  lane& mutable_lane(seq_id s, std::size_t layer, std::size_t head = 0) noexcept {
    if constexpr (reads_hooked) readers_[lane_index(s, layer, head)].reset();
    return mut_lane(s, layer, head);
  }
  /// The K/V row of slot `slot` of lane (s, layer, head): all KV heads per layer,
  /// head `head` alone per KV head.
  KE* k_part(std::size_t layer, seq_id s, std::size_t slot, std::size_t head) noexcept {
    return kv_[layer].k(0, row_of(layer, s, slot, head));
  }
  VE* v_part(std::size_t layer, seq_id s, std::size_t slot, std::size_t head) noexcept {
    return kv_[layer].v(0, row_of(layer, s, slot, head));
  }
  const KE* k_part(std::size_t layer, seq_id s, std::size_t slot, std::size_t head) const noexcept {
    return kv_[layer].k(0, row_of(layer, s, slot, head));
  }
  const VE* v_part(std::size_t layer, seq_id s, std::size_t slot, std::size_t head) const noexcept {
    return kv_[layer].v(0, row_of(layer, s, slot, head));
  }
  std::size_t k_part_bytes() const noexcept { return k_part_ * sizeof(KE); }
  std::size_t v_part_bytes() const noexcept { return v_part_ * sizeof(VE); }
  /// Pooled: maps pool pages to lane (s, layer, head) until its slots [0, top) have
  /// rows, and returns the pages above to the pool (a no-op for other lanes).
  void fit_pages(seq_id s, std::size_t layer, std::size_t head) noexcept;
  void set_pos_max(seq_id s, pos_t p) noexcept { pos_max_[static_cast<std::size_t>(s)] = p; }
  /// Pooled: the free pages of pool (s, layer), the next one taken last.
  const std::vector<std::uint32_t>& free_pages(seq_id s, std::size_t layer) const noexcept {
    return free_pages_[pool_index(s, layer)];
  }
  std::vector<std::uint32_t>& mutable_free_pages(seq_id s, std::size_t layer) noexcept {
    return free_pages_[pool_index(s, layer)];
  }
  /// Pooled: pages in the pool of one (sequence, layer).
  std::size_t pool_pages(std::size_t layer) const noexcept { return pool_pages_[layer]; }
  /// Recounts live and top over slots [0, top) (every slot above top is free).
  static void recount_below_top(lane& ln) noexcept {
    std::size_t live = 0, top = 0;
    for (std::size_t i = 0; i < ln.top; ++i)
      if (ln.pos[i] >= 0) {
        ++live;
        top = i + 1;
      }
    ln.live = live;
    ln.top = top;
  }
  static void recount(lane& ln) noexcept {
    ln.live = 0;
    ln.top = 0;
    for (std::size_t i = 0; i < ln.pos.size(); ++i)
      if (ln.pos[i] >= 0) {
        ++ln.live;
        ln.top = i + 1;
      }
  }

 private:
  struct seq_step {
    seq_id seq;
    std::size_t n_new;
    pos_t pos_end;
    std::size_t view;  // index of the sequence's kv_view
  };
  struct planned {
    std::vector<seq_step> seqs;            // sorted by sequence id
    std::vector<std::uint32_t> token_seq;  // [n_tokens] index into seqs
    std::vector<std::uint32_t> slots;      // [n_tokens, n_layer, lanes_per_layer]
  };
  struct snapshot {  // a lane at the start of the batch: its slots [0, top) only
    std::size_t lane;
    std::vector<pos_t> pos;
    std::vector<float> state, stats;
    std::vector<std::uint8_t> saved;  // row saved (per slot)
    std::size_t live, top;
    std::vector<std::uint32_t> pages;       // pooled: the lane's pages
    std::vector<std::uint32_t> free_pages;  // pooled, the group's first lane: the free list
  };
  struct row_save {
    std::size_t layer, row, offset;
  };
  struct lane_save {  // lane state floats [first, first + count) of lane `lane`
    std::size_t lane, first, count, offset;
  };

  bounded() = default;

  bool valid(seq_id s) const noexcept { return s >= 0 && s < cfg_.n_seq_max; }
  std::size_t lane_index(seq_id s, std::size_t layer, std::size_t head) const noexcept {
    return (static_cast<std::size_t>(s) * cfg_.shape.n_layer + layer) * lh_ + head;
  }
  lane& mut_lane(seq_id s, std::size_t layer, std::size_t head = 0) noexcept {
    return lanes_[lane_index(s, layer, head)];
  }
  /// The policy's view of a lane; a journaling policy's writes to the lane state go
  /// through lane_journal_ while a batch is open (evict::journals_lane).
  evict::slot_view view_of(lane& ln) noexcept {
    evict::slot_view v{ln.pos, ln.state, ln.stats};
    if constexpr (evict::journals_lane<Policy>) {
      if (tx_open_) {
        const auto li = static_cast<std::size_t>(&ln - lanes_.data());
        journal_ctx_[li] = {this, li};
        v.save_lane = &bounded::save_lane_floats;
        v.save_ctx = &journal_ctx_[li];
      }
    }
    return v;
  }
  struct journal_ctx {
    bounded* self;
    std::size_t lane;
  };
  /// Saves lane state floats [first, first + count) of a lane before the policy
  /// overwrites them (slot_view::will_write); rollback restores them newest first.
  static void save_lane_floats(void* ctx, std::size_t first, std::size_t count) noexcept {
    const auto* c = static_cast<const journal_ctx*>(ctx);
    bounded& b = *c->self;
    const std::vector<float>& st = b.lanes_[c->lane].stats;
    MNEMO_DASSERT(first + count <= st.size());
    b.lane_saves_.push_back({c->lane, first, count, b.lane_save_floats_.size()});
    b.lane_save_floats_.insert(b.lane_save_floats_.end(),
                               st.begin() + static_cast<std::ptrdiff_t>(first),
                               st.begin() + static_cast<std::ptrdiff_t>(first + count));
  }
  /// The K row of a slot changed (written, moved into, re-rotated): its reader re-reads it.
  void key_changed(seq_id s, std::size_t layer, std::size_t head, std::size_t slot) noexcept {
    if constexpr (reads_hooked) readers_[lane_index(s, layer, head)].touched(slot);
  }
  void reset_readers() noexcept {
    for (lane_reader& r : readers_) r.reset();
  }
  evict::step_info step(const seq_step& ss, std::size_t layer, std::size_t head) const noexcept {
    return {layer, ss.seq, ss.pos_end, ss.n_new, head, lh_ > 1};
  }

  // Transaction log: a lane's first change snapshots it; rows live at the start of
  // the batch are saved before their first overwrite.
  void touch(seq_id s, std::size_t layer, std::size_t head);
  /// Snapshots lane li (and, for a pool's first lane, the pool's free list).
  void touch_lane(std::size_t li, const std::vector<std::uint32_t>* free_list);
  void save_row(seq_id s, std::size_t layer, std::size_t head, std::size_t slot);

  void free_slot(lane& ln, std::size_t slot) noexcept {
    ln.pos[slot] = -1;
    --ln.live;
    while (ln.top > 0 && ln.pos[ln.top - 1] < 0) --ln.top;
  }
  void move_slot(seq_id s, std::size_t layer, std::size_t head, std::size_t from, std::size_t to);
  /// The keys of lane (s, layer, head) for a policy's rescore (evict/lane_rescore.hpp).
  struct key_source {
    const bounded* self;
    std::size_t layer;
    seq_id seq;
    std::size_t head;
  };
  static void decode_key(const void* ctx, std::size_t slot, float* out) noexcept {
    const auto* c = static_cast<const key_source*>(ctx);
    const bounded_config& cfg = c->self->cfg_;
    dtype::decode_row<simd::native>(c->self->k_part(c->layer, c->seq, slot, c->head), out,
                                    cfg.shape.n_head_kv / c->self->lh_ * cfg.shape.d_k);
  }
  evict::lane_keys lane_keys(std::size_t layer, seq_id s, std::size_t head) noexcept {
    key_src_ = {this, layer, s, head};
    return {cfg_.shape.n_head_kv / lh_, cfg_.shape.d_k, &key_src_, &bounded::decode_key};
  }
  /// Tells a policy that declared signal::remap about moves_ of lane (s, layer, head).
  void report_moves(seq_id s, std::size_t layer, std::size_t head) noexcept {
    if constexpr (signals.has(evict::signal::remap)) {
      if (moves_.empty()) return;
      const evict::step_info st{layer, s,    pos_max_[static_cast<std::size_t>(s)] + 1,
                                0,     head, lh_ > 1};
      policy_.on_remap(st, view_of(mut_lane(s, layer, head)),
                       std::span<const evict::slot_move>(moves_));
    }
    moves_.clear();
  }
  void note_move(std::size_t from, std::size_t to, pos_t old_pos, pos_t new_pos) {
    if constexpr (signals.has(evict::signal::remap))
      moves_.push_back(
          {static_cast<std::uint32_t>(from), static_cast<std::uint32_t>(to), old_pos, new_pos});
  }
  /// Fills the per-call signals of lane (sequence k of micro-batch u, head) for on_attention.
  evict::attention_signals lane_signals(const planned& pl, std::size_t k, std::size_t layer,
                                        std::size_t head, const lane& ln);
  void close_holes(seq_id s, std::size_t layer, std::size_t head);
  /// Evicts lane (ss.seq, layer, head) down to `kept` cells. rescored: the policy's
  /// rescore already ran in this call (with its signals).
  void evict_to_budget(const seq_step& ss, std::size_t layer, std::size_t head, std::size_t kept,
                       bool rescored);
  /// AdaKV: allocates the heads' kept sizes of (ss.seq, layer) and evicts each head
  /// down to its share (bounded_adakv_impl.hpp).
  void evict_pooled(const seq_step& ss, std::size_t layer);
  /// The lowest slot >= from that lane (s, layer, head) does not hold.
  std::size_t first_free_slot(seq_id s, std::size_t layer, std::size_t head,
                              std::size_t from) const {
    const lane& ln = lane_of(s, layer, head);
    if (ln.live == ln.top) return std::max(from, ln.top);  // no holes
    std::size_t slot = from;
    while (ln.pos[slot] >= 0) ++slot;
    return slot;
  }
  /// Pooled: the page size for lanes of capacity `cap`: a power of two up to the
  /// attention kernel's 64-cell block (so a page run is whole kernel blocks), at most
  /// cap / 16 (the pool's slack, one partly filled page per head, stays under 1/16).
  static unsigned pool_page_shift(std::size_t cap) noexcept {
    unsigned sh = 0;
    while (sh < 6 && (std::size_t{2} << sh) * 16 <= cap) ++sh;
    return sh;
  }
  /// Pooled: the free list of pool g = (s, layer) with every page free, lowest on top.
  void reset_pool(std::size_t g) {
    const std::size_t n = pool_pages_[g % cfg_.shape.n_layer];
    free_pages_[g].resize(n);
    for (std::size_t i = 0; i < n; ++i) free_pages_[g][i] = static_cast<std::uint32_t>(n - 1 - i);
  }
  std::size_t pool_index(seq_id s, std::size_t layer) const noexcept {
    return static_cast<std::size_t>(s) * cfg_.shape.n_layer + layer;
  }
  void renumber(seq_id s, std::size_t layer, std::size_t head);
  /// Rotates the cached key part of (s, slot, head) by `shift` positions (K-shift).
  void rotate_key(std::size_t layer, seq_id s, std::size_t slot, std::size_t head, pos_t shift) {
    rot_.template rotate<simd::scalar>(k_part(layer, s, slot, head), shift);
    key_changed(s, layer, head, slot);
  }
  template <class NewPos>
  status shift_positions(seq_id s, pos_t p0, pos_t p1, const char* op, NewPos new_pos);

  bounded_config cfg_;
  Policy policy_;
  std::vector<kv_storage<KE, VE>> kv_;   // [n_layer] of [n_seq, rows_per_seq(layer)] rows
  std::size_t lh_ = 1;                   // lanes per (sequence, layer)
  std::vector<std::size_t> seq_rows_;    // [n_layer] rows per sequence
  std::vector<unsigned> page_shift_;     // pooled: [n_layer] log2 of the page size
  std::vector<std::size_t> pool_pages_;  // pooled: [n_layer] pages per pool
  std::vector<std::vector<std::uint32_t>> free_pages_;  // pooled: [n_seq, n_layer] free lists
  std::size_t lane_floats_ = 0;                         // the policy's floats per lane
  std::vector<std::size_t> head_kept_;        // AdaKV: [lanes_per_layer] kept after this call
  std::vector<unsigned char> head_rescored_;  // AdaKV: [lanes_per_layer] rescored in this call
  std::size_t k_part_ = 0, v_part_ = 0;       // K / V elements of one lane's row
  std::vector<lane> lanes_;                   // [n_seq_max, n_layer, lanes_per_layer]
  std::vector<lane_reader> readers_;          // [lanes] when reads_hooked, else empty
  std::vector<pos_t> pos_max_;                // [n_seq_max] logical newest position
  std::vector<planned> plan_;
  // transaction
  bool tx_open_ = false;
  std::vector<int> snap_of_;  // [lanes] index into snaps_ or -1
  std::vector<snapshot> snaps_;
  std::size_t n_snaps_ = 0;
  std::vector<row_save> saves_;
  std::vector<std::uint8_t> save_bytes_;
  std::vector<lane_save> lane_saves_;     // journaling policies: lane state overwritten
  std::vector<float> lane_save_floats_;   // their floats before the write
  std::vector<journal_ctx> journal_ctx_;  // [lanes] the save context of each lane's view
  std::vector<pos_t> tx_pos_max_;
  // the attention call in flight (observe_call)
  struct call_info {
    std::size_t layer = 0, u = 0;
    attention::shape sh;
    const float* q = nullptr;
    bool known = false;
  } call_;
  // scratch of the signal export: per sequence of the micro-batch what it asked for
  std::vector<std::size_t> want_, rows_of_seq_;
  std::vector<evict::signal_set> sig_;
  std::vector<std::uint32_t> row_of_;  // [n_tokens] row within its sequence's signals
  std::vector<float> lse_all_;         // [n_tokens, n_head] (lanes split the heads)
  std::vector<float> logits_;
  std::vector<float*> logit_ptr_;  // [lanes_per_layer, n_seq of the micro-batch]
  std::vector<float> lse_lane_, query_lane_;
  std::vector<pos_t> row_pos_;
  std::vector<evict::slot_move> moves_;
  // scratch
  std::vector<float> mass_;
  std::vector<float*> mass_ptr_;  // [lanes_per_layer, n_seq of the micro-batch]
  std::vector<std::uint8_t> rows_;
  std::vector<std::size_t> mass_off_;
  std::vector<std::uint32_t> cand_;
  mutable std::vector<std::size_t> view_first_;  // views(): each stream's first segment
  key_source key_src_{};                         // the lane a rescore reads (lane_keys)
  key_rotator<KE> rot_;  // one lane's key part: n_head_kv / lanes_per_layer heads
  mutable bounded_view_stats vstats_;
};

}  // namespace mnemo::memory

#include "mnemo/memory/bounded/bounded_adakv_impl.hpp"
#include "mnemo/memory/bounded/bounded_eviction_impl.hpp"
#include "mnemo/memory/bounded/bounded_impl.hpp"
#include "mnemo/memory/bounded/bounded_reads_impl.hpp"
