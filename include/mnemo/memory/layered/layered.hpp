// The per-layer composite memory: each model layer is routed to one of the parts by a
// map given at construction (global layers to a full or split cache and local layers
// to a sliding window: interleaved SWA; attention layers to a KV strategy and recurrent
// layers to memory::recurrent: hybrid; docs/composite.md, docs/hybrid.md). The parts
// stay coherent:
//  - planning: one split every part accepts (the strictest of their strategies); every
//    part prepared or none (a later part's failure undoes the earlier plans);
//  - transactions: apply / commit / rollback reach every part; a failed apply rolls the
//    whole batch back in every part;
//  - sequence operations are all-or-nothing: every part is asked first (its check_seq_*
//    members, seq_ops.hpp), then all apply (a prefix removal a recurrent part cannot
//    represent is refused before the KV part changes).
//    At most one part may lack a check: it is run first, and its refusal stops the rest;
//  - state: one file holding each part's state, all checked before any change
//    (layered_state.hpp).
// write_kv / views of a layer go to its part with the part's local layer index;
// groups / layer_state (recurrent.hpp) likewise for recurrent layers.
#pragma once

#include <algorithm>
#include <cstdint>
#include <tuple>
#include <utility>
#include <vector>

#include "mnemo/attention/params.hpp"
#include "mnemo/batch/strategies.hpp"
#include "mnemo/memory/concepts.hpp"
#include "mnemo/memory/layered/layered_fwd.hpp"
#include "mnemo/memory/recurrent/recurrent.hpp"
#include "mnemo/memory/seq_ops.hpp"
#include "mnemo/memory/types.hpp"

namespace mnemo::memory {

namespace detail {

template <class M>
concept has_kv_layers = requires {
  typename M::k_element;
};

/// Whether M holds no K/V, or K/V of types K and V.
template <class M, class K, class V>
constexpr bool kv_types_are() {
  if constexpr (has_kv_layers<M>)
    return std::is_same_v<typename M::k_element, K> && std::is_same_v<typename M::v_element, V>;
  else
    return true;
}

/// The K/V element types of the first KV part (void when there is none).
template <class... P>
struct first_kv {
  using k = void;
  using v = void;
};
template <class H, class... T>
struct first_kv<H, T...> : first_kv<T...> {};
template <has_kv_layers H, class... T>
struct first_kv<H, T...> {
  using k = typename H::k_element;
  using v = typename H::v_element;
};

/// Merges split strategies: an equal split serves every unified cache too,
/// a sequential one every split-stream or recurrent part.
inline any_split stricter(any_split a, any_split b) {
  if (a.kind == split_kind::seq || b.kind == split_kind::seq) return seq_split{a.n_ubatch};
  if (a.kind == split_kind::simple) return b;
  if (b.kind == split_kind::simple) return a;
  return equal_split{a.n_ubatch, a.sequential || b.sequential,
                     std::max(a.n_keep_tail, b.n_keep_tail)};
}

}  // namespace detail

/// Which part holds a model layer, and its index among that part's layers.
struct layer_route {
  std::uint8_t part = 0;
  std::uint32_t local = 0;
};

template <class... Parts>
class layered {
  static_assert(sizeof...(Parts) >= 1 && sizeof...(Parts) < 256,
                "layered<Parts...> routes layers to 1 to 255 parts");
  static_assert((... && check_memory<Parts>::value));  // a sentence per missing member
  static_assert((0 + ... + (checked_memory<Parts> ? 0 : 1)) <= 1,
                "layered<Parts...> can keep at most one part without check_seq_* members "
                "(seq_ops.hpp: checked_memory) all-or-nothing: add them to your strategy");

 public:
  using k_element = typename detail::first_kv<Parts...>::k;
  using v_element = typename detail::first_kv<Parts...>::v;
  static_assert((... && detail::kv_types_are<Parts, k_element, v_element>()),
                "the KV parts of layered<Parts...> must share their K and V element types "
                "(the model calls one attention kernel type for every layer)");

  /// layer_part[l]: the part of model layer l; part k must have exactly as many layers
  /// as are routed to it.
  static result<layered> make(const std::vector<std::uint8_t>& layer_part, Parts&&... parts) {
    layered m;
    m.parts_ = std::tuple<Parts...>(std::move(parts)...);
    std::vector<std::uint32_t> count(sizeof...(Parts), 0);
    for (std::size_t l = 0; l < layer_part.size(); ++l) {
      if (layer_part[l] >= sizeof...(Parts))
        return make_status(status_code::invalid_argument,
                           "layered: layer %zu goes to part %u, there are %zu parts", l,
                           layer_part[l], sizeof...(Parts));
      m.routes_.push_back({layer_part[l], count[layer_part[l]]++});
    }
    status st;
    m.each([&](auto& p, std::size_t k) {
      if (st.is_ok() && p.n_layer() != count[k])
        st = make_status(status_code::invalid_argument,
                         "layered: %u layers are routed to part %zu, which has %zu", count[k], k,
                         p.n_layer());
    });
    if (!st.is_ok()) return st;
    return m;
  }

  std::size_t n_layer() const noexcept { return routes_.size(); }
  /// The sequence ids every part was built for: the smallest of the parts'.
  seq_id n_seq_max() const noexcept {
    seq_id n = k_max_seq;
    each([&](const auto& p, std::size_t) { n = std::min(n, p.n_seq_max()); });
    return n;
  }
  layer_route route(std::size_t layer) const noexcept { return routes_[layer]; }
  template <std::size_t I>
  auto& part() noexcept {
    return std::get<I>(parts_);
  }
  template <std::size_t I>
  const auto& part() const noexcept {
    return std::get<I>(parts_);
  }

  /// The window model layer `layer`'s attention masks by: its part's (none for parts
  /// without K/V).
  std::pair<attention::window_kind, pos_t> window(std::size_t layer) const {
    attention::layer_window w;
    const layer_route r = routes_[layer];
    visit(r.part, [&](const auto& p) {
      if constexpr (requires { p.layer_window(r.local); }) w = p.layer_window(r.local);
    });
    return {w.kind, w.n_swa};
  }

  any_split split_strategy(std::uint32_t n_ubatch) const {
    any_split s = simple_split{n_ubatch};
    each([&](const auto& p, std::size_t) { s = detail::stricter(s, p.split_strategy(n_ubatch)); });
    return s;
  }

  // ---- queries ---------------------------------------------------------------------

  /// The positions every part holds: max of the parts' minimums, min of their maximums;
  /// -1 when any part holds none (the parts are coherent, so then all hold none).
  pos_t seq_pos_min(seq_id s) const noexcept {
    pos_t r = -1;
    bool none = false;
    each([&](const auto& p, std::size_t) {
      const pos_t v = p.seq_pos_min(s);
      none = none || v < 0;
      r = std::max(r, v);
    });
    return none ? -1 : r;
  }
  pos_t seq_pos_max(seq_id s) const noexcept {
    pos_t r = std::numeric_limits<pos_t>::max();
    bool none = false;
    each([&](const auto& p, std::size_t) {
      const pos_t v = p.seq_pos_max(s);
      none = none || v < 0;
      r = std::min(r, v);
    });
    return none ? -1 : r;
  }
  /// The smallest p every part can continue s from (parts without the query: 0).
  pos_t earliest_restorable_pos(seq_id s) const noexcept {
    pos_t r = 0;
    each([&](const auto& p, std::size_t) {
      if constexpr (requires { p.earliest_restorable_pos(s); })
        r = std::max(r, p.earliest_restorable_pos(s));
    });
    return r;
  }
  /// Whether every part can continue s at p (a recurrent part: p = its pos + 1, or a
  /// checkpoint + 1).
  bool can_resume(seq_id s, pos_t p) const noexcept {
    bool ok = p >= 0 && p <= seq_pos_max(s) + 1;
    each([&](const auto& x, std::size_t) {
      if constexpr (requires { x.can_resume(s, p); }) {
        ok = ok && x.can_resume(s, p);
      } else if constexpr (std::is_same_v<std::decay_t<decltype(x)>, recurrent>) {
        ok = ok && (p == 0 || p == x.seq_pos_max(s) + 1 ||
                    memory::check_seq_op(x, seq_op::rm(s, p, -1)).is_ok());
      }
    });
    return ok;
  }
  bool can_shift() const noexcept {
    bool ok = true;
    each([&](const auto& p, std::size_t) { ok = ok && p.can_shift(); });
    return ok;
  }
  bool in_batch() const noexcept {
    bool b = false;
    each([&](const auto& p, std::size_t) {
      if constexpr (requires { p.in_batch(); }) b = b || p.in_batch();
    });
    return b;
  }

  // ---- sequence operations: all or nothing -------------------------------------------

  status check_seq_op(const seq_op& o) const {
    status st;
    each([&](const auto& p, std::size_t) {
      if constexpr (checked_memory<std::decay_t<decltype(p)>>)
        if (st.is_ok()) st = memory::check_seq_op(p, o);
    });
    return st;
  }
  status check_seq_rm(seq_id s, pos_t p0, pos_t p1) const {
    return check_seq_op(seq_op::rm(s, p0, p1));
  }
  status check_seq_cp(seq_id s, seq_id d, pos_t p0, pos_t p1) const {
    return check_seq_op(seq_op::cp(s, d, p0, p1));
  }
  status check_seq_keep(seq_id s) const { return check_seq_op(seq_op::keep(s)); }
  status check_seq_add(seq_id s, pos_t p0, pos_t p1, pos_t d) const {
    return check_seq_op(seq_op::add(s, p0, p1, d));
  }
  status check_seq_div(seq_id s, pos_t p0, pos_t p1, int d) const {
    return check_seq_op(seq_op::div(s, p0, p1, d));
  }

  status run(const seq_op& o) {
    MNEMO_RETURN_IF_ERROR(check_seq_op(o));
    status st;
    each([&](auto& p, std::size_t) {  // the part without a check goes first
      if constexpr (!checked_memory<std::decay_t<decltype(p)>>) st = run_seq_op(p, o);
    });
    if (!st.is_ok()) return st;
    each([&](auto& p, std::size_t k) {
      if constexpr (checked_memory<std::decay_t<decltype(p)>>) {
        status r = run_seq_op(p, o);
        if (!r.is_ok() && st.is_ok())
          st = make_status(status_code::internal,
                           "layered: part %zu refused a sequence operation its check accepted "
                           "(the parts may now disagree): %s",
                           k, r.to_string().c_str());
      }
    });
    return st;
  }
  status seq_rm(seq_id s, pos_t p0, pos_t p1) { return run(seq_op::rm(s, p0, p1)); }
  status seq_cp(seq_id s, seq_id d, pos_t p0, pos_t p1) { return run(seq_op::cp(s, d, p0, p1)); }
  status seq_keep(seq_id s) { return run(seq_op::keep(s)); }
  status seq_add(seq_id s, pos_t p0, pos_t p1, pos_t d) { return run(seq_op::add(s, p0, p1, d)); }
  status seq_div(seq_id s, pos_t p0, pos_t p1, int d) { return run(seq_op::div(s, p0, p1, d)); }

  void clear(bool data) {
    each([&](auto& p, std::size_t) { p.clear(data); });
  }
  /// K-shift in every part (each refuses only inside a batch, which all share).
  status update() {
    status st;
    each([&](auto& p, std::size_t) {
      if (st.is_ok()) st = p.update();
    });
    return st;
  }

  // ---- planning and transactions ---------------------------------------------------

  status prepare(std::span<const ubatch_tokens> ubatches) {
    status st;
    std::size_t done = 0;
    each([&](auto& p, std::size_t) {
      if (!st.is_ok()) return;
      st = p.prepare(ubatches);
      if (st.is_ok()) ++done;
    });
    if (!st.is_ok())  // undo the plans made (rollback of a plan without apply drops it)
      each([&](auto& p, std::size_t k) {
        if (k < done) p.rollback();
      });
    return st;
  }

  status apply(std::size_t u, const ubatch_tokens& ub) {
    status st;
    each([&](auto& p, std::size_t) {
      if (st.is_ok()) st = p.apply(u, ub);
    });
    if (!st.is_ok()) rollback();
    return st;
  }
  void commit() {
    each([&](auto& p, std::size_t) { p.commit(); });
  }
  void rollback() {
    each([&](auto& p, std::size_t) { p.rollback(); });
  }

  // ---- what the model reads and writes -------------------------------------------------

  template <class Isa = simd::native>
  void write_kv(std::size_t layer, std::size_t u, std::size_t j, const float* k,
                const float* v) noexcept {
    const layer_route r = routes_[layer];
    visit(r.part, [&](auto& p) {
      if constexpr (detail::has_kv_layers<std::decay_t<decltype(p)>>)
        p.template write_kv<Isa>(r.local, u, j, k, v);
    });
  }
  void views(std::size_t layer, std::size_t u, layer_views& out) const {
    const layer_route r = routes_[layer];
    visit(r.part, [&](const auto& p) {
      if constexpr (detail::has_kv_layers<std::decay_t<decltype(p)>>) p.views(r.local, u, out);
    });
  }
  /// The sequences of micro-batch u in the recurrent part (empty without one).
  std::span<const recurrent::group> groups(std::size_t u) const noexcept {
    std::span<const recurrent::group> g;
    each([&](const auto& p, std::size_t) {
      if constexpr (std::is_same_v<std::decay_t<decltype(p)>, recurrent>) g = p.groups(u);
    });
    return g;
  }
  /// Model layer l's state for the k-th group of micro-batch u. @pre l is recurrent
  recurrent_layer_state layer_state(std::size_t l, std::size_t u, std::size_t k) noexcept {
    recurrent_layer_state st{nullptr, nullptr};
    const layer_route r = routes_[l];
    visit(r.part, [&](auto& p) {
      if constexpr (std::is_same_v<std::decay_t<decltype(p)>, recurrent>)
        st = p.layer_state(r.local, u, k);
    });
    return st;
  }

  /// Where model layer l's state after token t of group k goes (recurrent.hpp), or nulls.
  recurrent_layer_state token_snapshot(std::size_t l, std::size_t u, std::size_t k,
                                       std::size_t t) noexcept {
    recurrent_layer_state st{nullptr, nullptr};
    const layer_route r = routes_[l];
    visit(r.part, [&](auto& p) {
      if constexpr (std::is_same_v<std::decay_t<decltype(p)>, recurrent>)
        st = p.token_snapshot(r.local, u, k, t);
    });
    return st;
  }

  /// The parts' reports, with model layer indices.
  memory_report report() const {
    memory_report r;
    each([&](const auto& p, std::size_t k) {
      const memory_report q = p.report();
      for (auto l : q.layers) {
        for (std::size_t g = 0; g < routes_.size(); ++g)
          if (routes_[g].part == k && routes_[g].local == l.index) l.index = g;
        r.layers.push_back(l);
      }
      r.total_bytes += q.total_bytes;
      r.cells += q.cells;
      r.cells_used += q.cells_used;
    });
    std::sort(r.layers.begin(), r.layers.end(),
              [](const auto& a, const auto& b) { return a.index < b.index; });
    return r;
  }

  /// Calls fn(part, index) for every part in order.
  template <class Fn>
  void each(Fn&& fn) {
    [&]<std::size_t... I>(std::index_sequence<I...>) { (fn(std::get<I>(parts_), I), ...); }
    (std::index_sequence_for<Parts...>{});
  }
  template <class Fn>
  void each(Fn&& fn) const {
    [&]<std::size_t... I>(std::index_sequence<I...>) { (fn(std::get<I>(parts_), I), ...); }
    (std::index_sequence_for<Parts...>{});
  }

 private:
  layered() = default;

  template <class Fn>
  void visit(std::size_t k, Fn&& fn) {
    each([&](auto& p, std::size_t i) {
      if (i == k) fn(p);
    });
  }
  template <class Fn>
  void visit(std::size_t k, Fn&& fn) const {
    each([&](const auto& p, std::size_t i) {
      if (i == k) fn(p);
    });
  }

  std::tuple<Parts...> parts_;
  std::vector<layer_route> routes_;
};

}  // namespace mnemo::memory
