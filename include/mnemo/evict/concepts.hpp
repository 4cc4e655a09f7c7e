// The eviction policy concept (docs/eviction.md): what a policy of the bounded
// KV strategy (memory/bounded/bounded.hpp) sees and decides. The cache owns storage,
// positions, per-slot policy state, budgets and victim selection; a policy only
// scores slots. That keeps a policy small (a few functions, a handful of lines) and
// makes sequence operations, state files and rollback policy-agnostic: the per-slot
// state is plain floats that the cache copies, moves, saves and restores with the
// slot it belongs to.
//
// Order of a call for one (sequence, layer) ("attend first, then evict", docs/eviction.md):
//   1. the new tokens are written into free slots; on_insert(step, slots, slot, k, v)
//   2. req = request(step); attention runs with the null sink when req is empty
//      (always, when uses_attention is false: the mass export is not even compiled)
//   3. on_attention(step, slots, mass) when req asked for rows
//   4. while more than `budget` slots are live, the cache evicts the unprotected slot
//      with the lowest score (ties: the oldest position, then the lowest slot), then
//      protected ones the same way if the protected set alone exceeds the budget.
#pragma once

#include <concepts>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <span>

#include "mnemo/attention/rope.hpp"
#include "mnemo/base/seq_set.hpp"

namespace mnemo::evict {

/// One attention call of one sequence in one layer (and, with per-KV-head lanes,
/// one KV head: the lane the hook is about).
struct step_info {
  std::size_t layer = 0;
  seq_id seq = 0;
  pos_t pos_end = 0;        // 1 + the sequence's newest position after this call
  std::size_t n_new = 0;    // tokens of this sequence in the call (> 1: a prefill chunk)
  std::size_t kv_head = 0;  // the lane's KV head (per_kv_head granularity; else 0)
  bool per_head = false;    // true: the lane holds KV head kv_head only
  bool prefill() const noexcept { return n_new > 1; }
  /// The KV heads a slot of this lane stands for: [first, first + count) of the
  /// token's k/v rows (all of them per layer, kv_head alone per head).
  std::size_t first_head() const noexcept { return per_head ? kv_head : 0; }
  std::size_t head_count(std::size_t n_head_kv) const noexcept { return per_head ? 1 : n_head_kv; }
};

/// The slots of one (sequence, layer): positions and the policy's per-slot state.
/// state[slot * state_floats + i]; entries of empty slots are unspecified. `lane` is
/// the policy's state of the whole lane (lane_floats, below; empty without it).
struct slot_view {
  std::span<const pos_t> pos;  // [capacity]; < 0: empty
  std::span<float> state;      // [capacity * Policy::state_floats]
  std::span<float> lane = {};  // [lane_floats(...)], zero when the lane starts
  /// The cache's undo log of `lane` (journals_lane, below; null otherwise).
  void (*save_lane)(void* ctx, std::size_t first, std::size_t count) noexcept = nullptr;
  void* save_ctx = nullptr;
  bool live(std::size_t slot) const noexcept { return pos[slot] >= 0; }
  /// A policy that journals its lane state calls this before it overwrites lane[first,
  /// first + count) in a hook, so the cache can undo the write on rollback.
  void will_write(std::size_t first, std::size_t count) const noexcept {
    if (save_lane != nullptr) save_lane(save_ctx, first, count);
  }
};

/// The signals a policy can receive (docs/eviction.md, "Signals"). The attention
/// kernel computes only what is asked: mass, lse and logits come from the kernel's
/// export (E1, E2, E3), the query rows from the call (E4), and remap notices from
/// the cache when cells move.
enum class signal : std::uint8_t {
  mass = 1,    // per KV head and slot: softmax weight summed over the rows and the group
  lse = 2,     // per row and query head: log-sum-exp of the logits
  logits = 4,  // per row, query head and slot: the pre-softmax logit (scaled, capped)
  query = 8,   // per row and query head: the query as attention saw it (post-RoPE)
  remap = 16,  // on_remap(step, slot_view, moves) when cells change slot or position
};

/// A set of signals, composed with `|` (signal::mass | signal::lse).
struct signal_set {
  std::uint8_t bits = 0;
  constexpr signal_set() = default;
  constexpr signal_set(signal s) : bits(static_cast<std::uint8_t>(s)) {}  // NOLINT: implicit
  constexpr bool has(signal s) const noexcept { return (bits & static_cast<std::uint8_t>(s)) != 0; }
  constexpr bool empty() const noexcept { return bits == 0; }
  /// Whether the kernel must export anything (mass, lse or logits).
  constexpr bool from_kernel() const noexcept {
    return has(signal::mass) || has(signal::lse) || has(signal::logits);
  }
  /// Whether on_attention is called (any per-call signal; remap is separate).
  constexpr bool per_call() const noexcept { return from_kernel() || has(signal::query); }
  friend constexpr signal_set operator|(signal_set a, signal_set b) noexcept {
    signal_set r;
    r.bits = static_cast<std::uint8_t>(a.bits | b.bits);
    return r;
  }
  friend constexpr signal_set operator&(signal_set a, signal_set b) noexcept {
    signal_set r;
    r.bits = static_cast<std::uint8_t>(a.bits & b.bits);
    return r;
  }
  friend constexpr bool operator==(signal_set, signal_set) = default;
};
constexpr signal_set operator|(signal a, signal b) noexcept {
  return signal_set(a) | signal_set(b);
}

/// Which query rows of the call a policy wants signals from, and which signals:
/// the last `last_rows` tokens of the sequence in the call (all_rows: every one;
/// 0: nothing this call). The cache intersects `signals` with the policy's declared
/// ones, so a request can narrow but never widen them.
struct stats_request {
  std::size_t last_rows = 0;
  signal_set signals = signal::mass;
  static constexpr std::size_t all_rows = std::numeric_limits<std::size_t>::max();
  bool empty() const noexcept { return last_rows == 0 || signals.empty(); }
};

/// What the kernel and the call exported for one lane: every pointer is null unless
/// its signal was declared and requested. Rows are the requested rows of the
/// sequence in micro-batch order; query heads are the lane's (n_head_kv * group),
/// head-major as in the model's query layout.
struct attention_signals {
  /// E1: mass[h * stride + slot] = sum over the requested rows and the GQA group of
  /// KV head h of the softmax weight on `slot`. Each row's weights sum to 1 over the
  /// live slots, so the total is rows * n_head (rows * group per KV head).
  const float* mass = nullptr;  // [n_head_kv, stride]
  std::size_t stride = 0;       // slots covered (a prefix of the capacity)
  std::size_t n_head_kv = 0, rows = 0;
  std::size_t group = 0;           // query heads per KV head
  std::size_t d_k = 0;             // query row length
  const pos_t* row_pos = nullptr;  // [rows] position of each row (with any signal)
  const float* lse = nullptr;      // E2: [rows, n_head_kv * group]
  const float* logits = nullptr;   // E3: [rows, n_head_kv * group, stride]; -inf: not attended
  const float* query = nullptr;    // E4: [rows, n_head_kv * group, d_k]

  float at(std::size_t h, std::size_t slot) const noexcept { return mass[h * stride + slot]; }
  /// The slot's mass summed over KV heads.
  float total(std::size_t slot) const noexcept {
    float s = 0.0f;
    for (std::size_t h = 0; h < n_head_kv; ++h) s += at(h, slot);
    return s;
  }
  /// total(slot) for slots [first, first + n) into dst[0, n): the same sums, taken one
  /// KV head's row at a time so that they vectorise.
  void totals(std::size_t first, std::size_t n, float* dst) const noexcept {
    for (std::size_t j = 0; j < n; ++j) dst[j] = 0.0f;
    for (std::size_t h = 0; h < n_head_kv; ++h) {
      const float* row = mass + h * stride + first;
      for (std::size_t j = 0; j < n; ++j) dst[j] += row[j];
    }
  }
  /// Calls fn(first, n, totals) for runs of at most 256 slots covering [0, stride),
  /// totals[0, n) = total(first ..): totals() without an allocation.
  template <class Fn>
  void for_each_total_run(Fn&& fn) const {
    float run[256];
    for (std::size_t first = 0; first < stride; first += 256) {
      const std::size_t n = stride - first < 256 ? stride - first : 256;
      totals(first, n, run);
      fn(first, n, static_cast<const float*>(run));
    }
  }
  std::size_t n_q_head() const noexcept { return n_head_kv * group; }
  float logit(std::size_t row, std::size_t qh, std::size_t slot) const noexcept {
    return logits[(row * n_q_head() + qh) * stride + slot];
  }
};
/// The name policies written against the mass-only interface use.
using attention_mass = attention_signals;

/// One cell that changed slot or position (`on_remap`): slot `from` now lives in
/// slot `to` (equal when only the position changed) with position new_pos.
struct slot_move {
  std::uint32_t from = 0, to = 0;
  pos_t old_pos = -1, new_pos = -1;
};

/// An eviction policy. Members (all const: runtime parameters only, STYLE rule 3):
///   static constexpr std::size_t state_floats   per-slot floats the cache keeps
///   static constexpr bool uses_attention         false: the mass export is compiled out
///   stats_request request(const step_info&)      which rows' mass this call needs
///   void on_insert(const step_info&, slot_view, std::size_t slot,
///                  const float* k, const float* v)  k: [n_head_kv, d_k], v: [n_head_kv, d_v] f32
///                  (the whole token; a per-head lane's slot stands for KV head
///                  step.kv_head, so a per-head-aware policy reads that head's row:
///                  step.first_head(), step.head_count(n_head_kv))
/// A per-layer policy works unchanged under per-KV-head lanes: every hook is called
/// per lane, the mass it sees is the lane's head's, and on_insert scores that ignore
/// kv_head give every head the same order (the same kept set when nothing else differs).
///   void on_attention(const step_info&, slot_view, const attention_mass&)
///   float score(const step_info&, slot_view, std::size_t slot)   lower is evicted first
///   bool protect(const step_info&, slot_view, std::size_t slot)  evicted only as a last resort
template <class P>
concept eviction_policy = std::copy_constructible<P> && requires {
  { P::state_floats } -> std::convertible_to<std::size_t>;
  { P::uses_attention } -> std::convertible_to<bool>;
} && requires(const P& p, const step_info& s, slot_view v, std::size_t slot, const float* k,
              const attention_mass& m) {
  { p.request(s) }
  noexcept->std::same_as<stats_request>;
  { p.on_insert(s, v, slot, k, k) }
  noexcept;
  { p.on_attention(s, v, m) }
  noexcept;
  { p.score(s, v, slot) }
  noexcept->std::convertible_to<float>;
  { p.protect(s, v, slot) }
  noexcept->std::convertible_to<bool>;
};

namespace detail {
template <class P>
consteval signal_set declared_signals() {
  if constexpr (requires {
                  { P::signals } -> std::convertible_to<signal_set>;
                })
    return P::signals;
  else
    return P::uses_attention ? signal_set(signal::mass) : signal_set();
}
template <class P>
concept remap_observer = requires(const P& p, const step_info& s, slot_view v,
                                  std::span<const slot_move> m) {
  { p.on_remap(s, v, m) }
  noexcept;
};
}  // namespace detail

/// The signals policy P receives: `static constexpr signal_set signals` when it
/// declares them, else the attention mass when uses_attention is true.
template <class P>
inline constexpr signal_set policy_signals = detail::declared_signals<P>();

/// The readable check a cache applies to its policy argument (STYLE rule 5).
template <class P>
struct check_policy {
  static_assert(eviction_policy<P>,
                "mnemo::evict: this type is not an eviction policy. It needs `static constexpr "
                "std::size_t state_floats`, `static constexpr bool uses_attention`, and const "
                "noexcept members request(step_info) -> stats_request, on_insert(step_info, "
                "slot_view, slot, k, v), on_attention(step_info, slot_view, attention_mass), "
                "score(step_info, slot_view, slot) -> float and protect(step_info, slot_view, "
                "slot) -> bool. See docs/eviction.md, \"Writing a policy\".");
  static constexpr bool value = eviction_policy<P>;
};
template <class P>
requires eviction_policy<P>
struct check_policy<P> {
  static_assert(P::uses_attention == policy_signals<P>.per_call(),
                "mnemo::evict: uses_attention must be true exactly when the declared signals "
                "include mass, lse, logits or query (on_attention is called for those).");
  static_assert(!policy_signals<P>.has(signal::remap) || detail::remap_observer<P>,
                "mnemo::evict: a policy that declares signal::remap needs a const noexcept "
                "on_remap(step_info, slot_view, std::span<const slot_move>).");
  static constexpr bool value = true;
};

/// Base for policies that need no per-slot hook: empty on_insert / on_attention and
/// no attention request. A policy derives from it and overrides what it uses.
struct policy_defaults {
  static constexpr std::size_t state_floats = 0;
  static constexpr bool uses_attention = false;
  stats_request request(const step_info&) const noexcept { return {}; }
  void on_insert(const step_info&, slot_view, std::size_t, const float*,
                 const float*) const noexcept {}
  void on_attention(const step_info&, slot_view, const attention_mass&) const noexcept {}
  bool protect(const step_info&, slot_view, std::size_t) const noexcept { return false; }
};

/// State of a whole lane (Expected Attention's query statistics): a policy that keeps
/// some declares `std::size_t lane_floats(std::size_t n_head_kv, std::size_t d_k)
/// const noexcept` (n_head_kv: the KV heads of one lane), and the cache keeps that many
/// floats per lane, zero at the start, handed to every hook as slot_view::lane and
/// saved, restored, copied (seq_cp) and written to state files with the lane.
template <class P>
std::size_t lane_floats_of(const P& p, std::size_t n_head_kv, std::size_t d_k) noexcept {
  if constexpr (requires {
                  { p.lane_floats(n_head_kv, d_k) } -> std::convertible_to<std::size_t>;
                })
    return p.lane_floats(n_head_kv, d_k);
  else
    return 0;
}

/// A policy whose lane state is large and mostly unchanged by a call (Expected
/// Attention's window: one query row per decode step) declares `static constexpr
/// bool journals_lane = true` and calls slot_view::will_write before every write to
/// slot_view::lane; the cache then saves only those floats for rollback instead of
/// copying the whole lane state at the lane's first change in a batch.
template <class P>
inline constexpr bool journals_lane = requires {
  requires P::journals_lane;
};

/// The chunked trigger: when a lane goes over its kept size, a policy with a member
/// `evict_chunk` (m) frees m - 1 cells more than needed, so the next m - 1 tokens
/// evict nothing (Scissorhands' "drop m at once"); every other policy evicts what
/// is needed (1 per decode step).
template <class P>
std::size_t evict_chunk_of(const P& p) noexcept {
  if constexpr (requires { std::size_t{p.evict_chunk}; })
    return p.evict_chunk > 0 ? p.evict_chunk : 1;
  else
    return 1;
}

/// Whether `slot` holds one of the `window` newest positions of the sequence.
inline bool in_recent_window(const step_info& s, slot_view v, std::size_t slot,
                             std::size_t window) noexcept {
  return static_cast<std::int64_t>(v.pos[slot]) >=
         static_cast<std::int64_t>(s.pos_end) - static_cast<std::int64_t>(window);
}

// ---- read selection and key-channel pruning (Quest, ThinK) ---------------------------

/// A read policy (Quest, evict/quest.hpp): keeps metadata of the keys as they are
/// appended and chooses, per decode row q: [n_head, d_k], the pages a step reads, one
/// set per KV head (or one for the layer). It frees nothing.
template <class R>
concept read_selector = requires(R& r, const R& cr, const float* x, std::size_t n) {
  r.append(x);
  r.select(x, n);
  { cr.n_sets() } -> std::convertible_to<std::size_t>;
  { cr.selected(n) } -> std::same_as<std::span<const std::uint32_t>>;
  { cr.selected_cells(n) } -> std::convertible_to<std::size_t>;
};

/// A key-channel pruner (ThinK, evict/think.hpp): from the observation window's
/// queries and the keys it chooses, per KV head, the key channels attention keeps;
/// keys are stored with those channels only and queries gathered to match.
template <class T>
concept key_channel_pruner = requires(T& t, const T& ct, const float* x, std::size_t n) {
  t.choose(x, n, x, n);
  { ct.kept_channels() } -> std::convertible_to<std::size_t>;
  { ct.channels(n) } -> std::same_as<std::span<const std::uint32_t>>;
  ct.prune_keys(x, n, static_cast<float*>(nullptr));
  ct.gather_queries(x, n, static_cast<float*>(nullptr));
};

/// A policy whose memory allocates per-head budgets at run time across the KV heads of
/// a (sequence, layer) (AdaKV, evict/adakv.hpp): `static constexpr bool head_allocation`
/// and `double alpha`, the safeguard share.
template <class P>
concept head_allocating = requires(const P& p) {
  { P::head_allocation } -> std::convertible_to<bool>;
  { p.alpha } -> std::convertible_to<double>;
}
&&P::head_allocation;

/// A policy whose memory hands decode rows to a per-lane reader instead of the plain
/// kernel (Quest's page selection, evict/quest_reads.hpp; ThinK's pruned keys,
/// evict/think_keys.hpp): `using lane_reader = R` and `make_reader(n_head_kv, d_k)`
/// returning result<R>. model::attend_observed gives a micro-batch of decode rows to
/// the lanes' readers (R::attend_row); any other call attends with the kernel and its
/// query rows are shown to the readers (observe(q, pos, n_rows, n_head)). The memory
/// calls touched(slot) when a cell's key changes and reset() when its lane is
/// replaced (state load, clear, rollback, sequence operations).
template <class P>
concept lane_reading = requires(const P& p, typename P::lane_reader& r, std::size_t n,
                                const float* x, const pos_t* pos,
                                const attention::rope_config& rope) {
  p.make_reader(n, n, rope);
  r.observe(x, pos, n, n);
  r.touched(n);
  r.reset();
};

}  // namespace mnemo::evict
