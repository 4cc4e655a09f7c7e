// A sequence operation as a value, to run it on any memory or to ask first whether it
// would succeed: a memory with check_seq_* members answers without changing anything.
// The composite memory (layered/layered.hpp) asks every part before it changes any, so
// a part's refusal leaves all parts as they were (docs/composite.md).
#pragma once

#include <concepts>
#include <cstdint>

#include "mnemo/base/status.hpp"
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

/// A memory that says, without changing anything, the status each sequence operation
/// would return (check_seq_rm, ..., check_seq_div).
template <class M>
concept checked_memory = requires(const M& m, seq_id s, pos_t p) {
  { m.check_seq_rm(s, p, p) } -> std::same_as<status>;
  { m.check_seq_cp(s, s, p, p) } -> std::same_as<status>;
  { m.check_seq_keep(s) } -> std::same_as<status>;
  { m.check_seq_add(s, p, p, p) } -> std::same_as<status>;
  { m.check_seq_div(s, p, p, 2) } -> std::same_as<status>;
};

/// The status run_seq_op(m, o) would return; nothing changes.
template <checked_memory M>
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

}  // namespace mnemo::memory
