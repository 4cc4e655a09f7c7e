// "Would this sequence operation succeed?" for each memory strategy, without changing
// anything: the composite memory (layered.hpp) asks every part before it changes any,
// so a part's refusal leaves all parts as they were (spec §6.2 LIB, D-16). The
// sliding window answers with its own check_* members; for full_cache and recurrent
// the rules of their headers are restated here from their public accessors (the
// composite's tests run every operation on both and compare, so a drift shows).
#pragma once

#include <cstdint>
#include <limits>

#include "mnemo/memory/full_cache.hpp"
#include "mnemo/memory/recurrent.hpp"
#include "mnemo/memory/types.hpp"

namespace mnemo::memory {

/// One sequence operation as a value.
struct seq_op {
  enum class kind : std::uint8_t { rm, cp, keep, add, div } k = kind::rm;
  seq_id a = 0, b = 0;  // seq (rm, keep, add, div) or src, dst (cp)
  pos_t p0 = -1, p1 = -1;
  pos_t delta = 0;  // add
  int d = 1;        // div

  static seq_op rm(seq_id s, pos_t p0, pos_t p1) { return {kind::rm, s, 0, p0, p1, 0, 1}; }
  static seq_op cp(seq_id s, seq_id t, pos_t p0, pos_t p1) {
    return {kind::cp, s, t, p0, p1, 0, 1};
  }
  static seq_op keep(seq_id s) { return {kind::keep, s, 0, -1, -1, 0, 1}; }
  static seq_op add(seq_id s, pos_t p0, pos_t p1, pos_t delta) {
    return {kind::add, s, 0, p0, p1, delta, 1};
  }
  static seq_op div(seq_id s, pos_t p0, pos_t p1, int d) { return {kind::div, s, 0, p0, p1, 0, d}; }
};

/// Runs op on any sequence memory.
template <class M>
status run_seq_op(M& m, const seq_op& o) {
  switch (o.k) {
    case seq_op::kind::rm: return m.seq_rm(o.a, o.p0, o.p1);
    case seq_op::kind::cp: return m.seq_cp(o.a, o.b, o.p0, o.p1);
    case seq_op::kind::keep: return m.seq_keep(o.a);
    case seq_op::kind::add: return m.seq_add(o.a, o.p0, o.p1, o.delta);
    case seq_op::kind::div: return m.seq_div(o.a, o.p0, o.p1, o.d);
  }
  return make_status(status_code::internal, "unknown sequence operation");
}

/// Memories with check_seq_* members (sliding_window, layered).
template <class M>
requires requires(const M& m, seq_id s, pos_t p) {
  { m.check_seq_rm(s, p, p) } -> std::same_as<status>;
  { m.check_seq_cp(s, s, p, p) } -> std::same_as<status>;
  { m.check_seq_keep(s) } -> std::same_as<status>;
  { m.check_seq_add(s, p, p, p) } -> std::same_as<status>;
  { m.check_seq_div(s, p, p, 2) } -> std::same_as<status>;
}
status check_seq_op(const M& m, const seq_op& o) {
  switch (o.k) {
    case seq_op::kind::rm: return m.check_seq_rm(o.a, o.p0, o.p1);
    case seq_op::kind::cp: return m.check_seq_cp(o.a, o.b, o.p0, o.p1);
    case seq_op::kind::keep: return m.check_seq_keep(o.a);
    case seq_op::kind::add: return m.check_seq_add(o.a, o.p0, o.p1, o.delta);
    case seq_op::kind::div: return m.check_seq_div(o.a, o.p0, o.p1, o.d);
  }
  return make_status(status_code::internal, "unknown sequence operation");
}

namespace detail {
inline status busy(bool in_batch, const char* op) {
  if (!in_batch) return {};
  return make_status(status_code::invalid_argument,
                     "%s: a batch is prepared or being applied; commit() or rollback() first", op);
}
}  // namespace detail

/// full_cache: ids, open batch, shift support, position overflow, room for the
/// copy-on-write of shared cells (full_cache.hpp).
template <class KE, class VE>
status check_seq_op(const full_cache<KE, VE>& c, const seq_op& o) {
  const seq_id n = c.config().n_seq_max;
  static const char* names[] = {"seq_rm", "seq_cp", "seq_keep", "seq_add", "seq_div"};
  const char* name = names[static_cast<int>(o.k)];
  if (o.k == seq_op::kind::div && o.d <= 0)
    return make_status(status_code::invalid_argument, "seq_div: divisor %d must be > 0", o.d);
  MNEMO_RETURN_IF_ERROR(check_seq(o.a, n, name, o.k == seq_op::kind::rm));
  if (o.k == seq_op::kind::cp) MNEMO_RETURN_IF_ERROR(check_seq(o.b, n, name));
  MNEMO_RETURN_IF_ERROR(detail::busy(c.in_batch(), name));
  if (o.k != seq_op::kind::add && o.k != seq_op::kind::div) return {};
  const pos_range r = pos_range::of(o.p0, o.p1);
  const pos_t top = c.seq_pos_max(o.a);
  if (o.k == seq_op::kind::add && o.delta > 0 && top >= 0 &&
      top > std::numeric_limits<pos_t>::max() - o.delta && r.p0 <= top)
    return make_status(status_code::out_of_range,
                       "seq_add: position %d + %d overflows the position type", top, o.delta);
  if (!c.can_shift())
    return make_status(status_code::unsupported,
                       "%s: this model's positions cannot be shifted (no K-shift)", name);
  if ((o.k == seq_op::kind::add ? o.delta == 0 : o.d == 1) || r.empty()) return {};
  const cell_array& cells = c.cells();
  std::size_t shared = 0, free_cells = 0;
  for (std::size_t i = 0; i < cells.size(); ++i) {
    if (cells.empty(i)) {
      ++free_cells;
      continue;
    }
    shared +=
        r.contains(cells.pos(i)) && cells.owners(i).contains(o.a) && cells.owners(i).count() > 1;
  }
  if (free_cells < shared)
    return make_status(status_code::no_space,
                       "%s: sequence %d shares %zu cells and needs as many free cells (%zu)", name,
                       o.a, shared, free_cells);
  return {};
}

/// recurrent: what a state slot can represent (recurrent.hpp, spec §5.4).
inline status check_seq_op(const recurrent& m, const seq_op& o) {
  const seq_id n = m.config().n_seq_max;
  static const char* names[] = {"seq_rm", "seq_cp", "seq_keep", "seq_add", "seq_div"};
  const char* name = names[static_cast<int>(o.k)];
  if (o.k == seq_op::kind::div && o.d <= 0)
    return make_status(status_code::invalid_argument, "seq_div: divisor %d must be > 0", o.d);
  MNEMO_RETURN_IF_ERROR(check_seq(o.a, n, name, o.k == seq_op::kind::rm));
  if (o.k == seq_op::kind::cp) MNEMO_RETURN_IF_ERROR(check_seq(o.b, n, name));
  MNEMO_RETURN_IF_ERROR(detail::busy(m.in_batch(), name));
  const pos_range r = pos_range::of(o.p0, o.p1);
  auto has_checkpoint = [&](seq_id s, pos_t at) {
    for (pos_t c : m.checkpoints(s))
      if (c == at) return true;
    return false;
  };
  auto refuse = [&](const char* why) {
    return make_status(status_code::unsupported, "%s: sequence %d: %s", name, o.a, why);
  };
  switch (o.k) {
    case seq_op::kind::rm: {
      if (r.empty()) return {};
      const bool all = r.p0 == 0 && r.p1 == std::numeric_limits<pos_t>::max();
      if (o.a < 0) return all ? status{} : refuse("only the full range of every sequence");
      const pos_t P = m.seq_pos_max(o.a);
      if (P < 0 || r.p0 > P || (r.p0 == 0 && r.p1 > P)) return {};
      if (r.p1 <= P) return refuse("a recurrent state cannot forget a prefix or middle");
      return has_checkpoint(o.a, r.p0 - 1) ? status{} : refuse("no checkpoint at the cut");
    }
    case seq_op::kind::cp: {
      const pos_t P = m.seq_pos_max(o.a);
      if (o.a == o.b || P < 0) return {};
      if (r.p0 != 0) return refuse("a copy must start at position 0");
      if (r.p1 <= P && !has_checkpoint(o.a, r.p1 - 1)) return refuse("no checkpoint at the end");
      return {};
    }
    case seq_op::kind::keep: return {};
    case seq_op::kind::add:
    case seq_op::kind::div: {
      const pos_t P = m.seq_pos_max(o.a);
      if (P < 0 || !r.contains(P)) return {};
      const std::int64_t np =
          o.k == seq_op::kind::add ? std::int64_t{P} + o.delta : std::int64_t{P} / o.d;
      if (np < 0 || np > std::numeric_limits<pos_t>::max())
        return make_status(status_code::out_of_range,
                           "%s: sequence %d's position %d would become %lld", name, o.a, P,
                           static_cast<long long>(np));
      return {};
    }
  }
  return {};
}

/// Whether the composite can ask M before changing it.
template <class M>
concept checked_memory = requires(const M& m, const seq_op& o) {
  { check_seq_op(m, o) } -> std::same_as<status>;
};

}  // namespace mnemo::memory
