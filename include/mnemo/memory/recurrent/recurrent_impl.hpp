// memory::recurrent's sequence operations and their checks (the class and its
// documentation are in recurrent.hpp). A recurrent state holds its whole history in
// one slot, so only what a slot or a checkpoint can represent is allowed: every
// refusal is a status naming the sequence, never a silent no-op (docs/recurrent.md).
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <limits>

#include "mnemo/memory/recurrent/recurrent.hpp"

namespace mnemo::memory {

// ---- checks -----------------------------------------------------------------------------

inline status recurrent::check_seq_rm(seq_id s, pos_t p0, pos_t p1) const {
  MNEMO_RETURN_IF_ERROR(check_seq(s, cfg_.n_seq_max, "seq_rm", true));
  MNEMO_RETURN_IF_ERROR(check_not_in_batch(in_batch(), "seq_rm"));
  const pos_range r = pos_range::of(p0, p1);
  if (r.empty()) return {};
  const bool all = r.p0 == 0 && r.p1 == std::numeric_limits<pos_t>::max();
  if (s < 0) {
    if (all) return {};
    return make_status(status_code::unsupported,
                       "seq_rm: a recurrent state holds its whole history; for every "
                       "sequence only the full range can be removed");
  }
  const pos_t P = pos_[idx(s)];
  if (P < 0 || r.p0 > P) return {};      // nothing held in the range
  if (r.p0 == 0 && r.p1 > P) return {};  // the whole history
  if (r.p1 <= P)  // a prefix or middle: the state still contains those tokens
    return make_status(status_code::unsupported,
                       "seq_rm: sequence %d: [%d, %d) leaves its last position %d; a "
                       "recurrent state cannot forget a prefix or middle of its history",
                       s, r.p0, r.p1, P);
  // A suffix [p0, P]: the state after token p0 - 1 must be kept (checkpoint or snapshot).
  if (saved_at(s, r.p0 - 1) != nullptr) return {};
  const auto& ring = rings_[idx(s)];
  const token_snaps& ts = snaps_[idx(s)];
  char snaps[96] = "";
  if (ts.count > 0)
    std::snprintf(snaps, sizeof snaps, "; token snapshots at positions %d .. %d", ts.first,
                  ts.first + static_cast<pos_t>(ts.count) - 1);
  return make_status(
      status_code::unsupported, "seq_rm: sequence %d cannot roll back to position %d: %s%s", s,
      r.p0 - 1,
      ring.empty() ? "it has no checkpoint" : restorable(ring, "checkpoints are at").c_str(),
      snaps);
}

inline status recurrent::check_seq_cp(seq_id src, seq_id dst, pos_t p0, pos_t p1) const {
  MNEMO_RETURN_IF_ERROR(check_seq(src, cfg_.n_seq_max, "seq_cp"));
  MNEMO_RETURN_IF_ERROR(check_seq(dst, cfg_.n_seq_max, "seq_cp"));
  MNEMO_RETURN_IF_ERROR(check_not_in_batch(in_batch(), "seq_cp"));
  const pos_t P = pos_[idx(src)];
  if (src == dst || P < 0) return {};
  const pos_range r = pos_range::of(p0, p1);
  if (r.p0 != 0)
    return make_status(status_code::unsupported,
                       "seq_cp: a recurrent state holds [0, %d] of sequence %d; it cannot be "
                       "copied from position %d",
                       P, src, r.p0);
  if (r.p1 <= P && saved_at(src, r.p1 - 1) == nullptr)
    return make_status(status_code::unsupported,
                       "seq_cp: sequence %d is at position %d and has no checkpoint at %d (%s)",
                       src, P, r.p1 - 1, restorable(rings_[idx(src)], "checkpoints").c_str());
  return {};
}

inline status recurrent::check_seq_keep(seq_id s) const {
  MNEMO_RETURN_IF_ERROR(check_seq(s, cfg_.n_seq_max, "seq_keep"));
  return check_not_in_batch(in_batch(), "seq_keep");
}

inline status recurrent::check_seq_add(seq_id s, pos_t p0, pos_t p1, pos_t delta) const {
  return check_shift(s, p0, p1, "seq_add",
                     [delta](pos_t p) { return static_cast<std::int64_t>(p) + delta; });
}

inline status recurrent::check_seq_div(seq_id s, pos_t p0, pos_t p1, int d) const {
  MNEMO_RETURN_IF_ERROR(check_divisor(d));
  return check_shift(s, p0, p1, "seq_div", [d](pos_t p) { return std::int64_t{p} / d; });
}

/// Only the last position counts (the state holds no other): the new one must be a position.
template <class NewPos>
status recurrent::check_shift(seq_id s, pos_t p0, pos_t p1, const char* op, NewPos new_pos) const {
  MNEMO_RETURN_IF_ERROR(check_seq(s, cfg_.n_seq_max, op));
  MNEMO_RETURN_IF_ERROR(check_not_in_batch(in_batch(), op));
  const pos_range r = pos_range::of(p0, p1);
  const pos_t P = pos_[idx(s)];
  if (P < 0 || !r.contains(P)) return {};
  const std::int64_t np = new_pos(P);
  if (np < 0 || np > std::numeric_limits<pos_t>::max())
    return make_status(status_code::out_of_range, "%s: sequence %d's position %d would become %lld",
                       op, s, P, static_cast<long long>(np));
  return {};
}

// ---- the operations -----------------------------------------------------------------------

inline status recurrent::seq_rm(seq_id s, pos_t p0, pos_t p1) {
  MNEMO_RETURN_IF_ERROR(check_seq_rm(s, p0, p1));
  const pos_range r = pos_range::of(p0, p1);
  if (r.empty()) return {};
  if (s < 0) {
    clear(false);
    return {};
  }
  const pos_t P = pos_[idx(s)];
  if (P < 0 || r.p0 > P) return {};
  if (r.p0 == 0 && r.p1 > P) {
    drop(s);
    return {};
  }
  // A suffix [p0, P]: restore the state after token p0 - 1 (checked above). Checkpoints
  // and snapshots before it stay: they are states of the same history.
  const pos_t q = r.p0 - 1;
  std::memcpy(slot_ptr(s), saved_at(s, q), state_bytes());
  pos_[idx(s)] = q;
  auto& ring = rings_[idx(s)];
  while (!ring.empty() && ring.back().pos > q) release(ring, ring.size() - 1);
  token_snaps& ts = snaps_[idx(s)];
  ts.count = q < ts.first ? 0 : std::min(ts.count, static_cast<std::size_t>(q - ts.first));
  return {};
}

inline status recurrent::seq_cp(seq_id src, seq_id dst, pos_t p0, pos_t p1) {
  MNEMO_RETURN_IF_ERROR(check_seq_cp(src, dst, p0, p1));
  if (src == dst) return {};
  const pos_t P = pos_[idx(src)];
  if (P < 0) {
    drop(dst);
    return {};
  }
  const pos_range r = pos_range::of(p0, p1);
  const float* from = slot_ptr(src);
  pos_t at = P;
  if (r.p1 <= P) {
    at = r.p1 - 1;
    from = saved_at(src, at);
  }
  drop(dst);
  std::memcpy(slot_ptr(dst), from, state_bytes());
  pos_[idx(dst)] = at;
  for (const auto& c : rings_[idx(src)])  // dst can roll back as far as src could
    if (c.pos < at) push_checkpoint(dst, c.pos, c.data.data());
  return {};
}

inline status recurrent::seq_keep(seq_id s) {
  MNEMO_RETURN_IF_ERROR(check_seq_keep(s));
  for (seq_id o = 0; o < cfg_.n_seq_max; ++o)
    if (o != s) drop(o);
  return {};
}

inline status recurrent::seq_add(seq_id s, pos_t p0, pos_t p1, pos_t delta) {
  MNEMO_RETURN_IF_ERROR(check_seq_add(s, p0, p1, delta));
  shift(s, p0, p1, [delta](pos_t p) { return static_cast<std::int64_t>(p) + delta; });
  return {};
}

inline status recurrent::seq_div(seq_id s, pos_t p0, pos_t p1, int d) {
  MNEMO_RETURN_IF_ERROR(check_seq_div(s, p0, p1, d));
  shift(s, p0, p1, [d](pos_t p) { return std::int64_t{p} / d; });
  return {};
}

template <class NewPos>
void recurrent::shift(seq_id s, pos_t p0, pos_t p1, NewPos new_pos) {
  const pos_range r = pos_range::of(p0, p1);
  pos_t& P = pos_[idx(s)];
  if (P < 0 || !r.contains(P)) return;
  // Token snapshots move with P when the range covers all of them and keeps their
  // spacing (seq_add); else they are dropped.
  token_snaps& ts = snaps_[idx(s)];
  const pos_t last = ts.first + static_cast<pos_t>(ts.count) - 1;
  const std::int64_t moved = new_pos(ts.first);
  if (ts.count > 0 && r.contains(ts.first) && r.contains(last) && moved >= 0 &&
      new_pos(last) - moved == last - ts.first && new_pos(P) - new_pos(last) == P - last)
    ts.first = static_cast<pos_t>(moved);
  else
    ts.count = 0;
  P = static_cast<pos_t>(new_pos(P));
  for (auto& c : rings_[idx(s)])  // checkpoints keep their distance to P
    if (r.contains(c.pos)) c.pos = static_cast<pos_t>(std::max<std::int64_t>(-1, new_pos(c.pos)));
}

}  // namespace mnemo::memory
