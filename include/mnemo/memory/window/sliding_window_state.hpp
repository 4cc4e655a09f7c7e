// State save/load of the sliding-window memory, in the format of state_format.hpp
// (strategy_id::sliding_window). Payload:
//   u32 window kind, i32 n_swa, u32 swa_full
//   u32 n_horizons, then (i32 seq, i32 horizon) for every sequence that forgot something
//   the cells and their K/V rows as state_cells.hpp lists them
// A whole state writes every cell. A per-sequence state writes the sequence's cells its
// last token still attends (not masked relative to pos_max: a checkpoint holds the
// window ending at pos_max, docs/sliding-window.md), and the horizon that leaves.
#pragma once

#include <cstring>
#include <vector>

#include "mnemo/memory/state_cells.hpp"
#include "mnemo/memory/state_format.hpp"
#include "mnemo/memory/window/sliding_window.hpp"

namespace mnemo::memory {

namespace detail {

/// A parsed, fully checked state (nothing of the memory changed yet).
struct window_state {
  std::int32_t src = -1;
  std::vector<std::pair<seq_id, pos_t>> horizons;
  unified_cells cells;
};

}  // namespace detail

/// Writes the state of sequence s, or of the whole memory (s == -1), into `out`.
/// Pending shifts are applied first, so the keys in a file match their positions.
template <class KE, class VE>
status state_write(sliding_window<KE, VE>& c, seq_id s, std::vector<std::uint8_t>& out) {
  const auto& cfg = c.config();
  MNEMO_RETURN_IF_ERROR(check_state_write(s, cfg.n_seq_max, c.in_batch()));
  MNEMO_RETURN_IF_ERROR(c.update());
  const cell_array& cells = c.cells();
  // A checkpoint of s keeps what its last token attends (everything with swa_full).
  const pos_t from = s < 0 || cfg.swa_full ? std::numeric_limits<pos_t>::min()
                                           : lowest_kept(cfg.window, cfg.n_swa, c.seq_pos_max(s));
  std::vector<std::uint32_t> picked;
  bool omitted = false;
  for (std::size_t i = 0; i < cells.size(); ++i) {
    if (cells.empty(i) || (s >= 0 && !cells.owners(i).contains(s))) continue;
    if (cells.pos(i) < from) {
      omitted = true;
      continue;
    }
    picked.push_back(static_cast<std::uint32_t>(i));
  }
  std::vector<std::pair<seq_id, pos_t>> horizons;
  if (s >= 0) {
    const pos_t h = omitted ? std::max(c.horizon(s), from) : c.horizon(s);
    if (h > 0) horizons.push_back({s, h});
  } else {
    for (seq_id q = 0; q < cfg.n_seq_max; ++q)
      if (c.horizon(q) > 0) horizons.push_back({q, c.horizon(q)});
  }
  state_builder b(
      out, memory_state_header(strategy_id::sliding_window, s, c),
      12 + 4 + horizons.size() * 8 + unified_cells_bytes(cells, c.storage(), picked, s));
  byte_writer& w = b.payload();
  w.put(static_cast<std::uint32_t>(cfg.window));
  w.put(cfg.n_swa);
  w.put(static_cast<std::uint32_t>(cfg.swa_full));
  w.put(static_cast<std::uint32_t>(horizons.size()));
  for (const auto& [q, h] : horizons) {
    w.put(q);
    w.put(h);
  }
  put_unified_cells(w, cells, c.storage(), picked, s);
  b.seal();
  return {};
}

namespace detail {

/// Parses and checks a state against c, and for a per-sequence state finds the cells
/// it will take (free cells, dest's own, or cells out of every owner's window).
/// Nothing changes: state_read and composites call it before any change.
template <class KE, class VE>
result<window_state> sliding_window_parse(const sliding_window<KE, VE>& c,
                                          std::span<const std::uint8_t> data, seq_id dest,
                                          std::vector<std::size_t>* slots) {
  const auto& cfg = c.config();
  window_state st;
  MNEMO_ASSIGN_OR_RETURN(
      auto opened, open_state_into(data, memory_state_header(strategy_id::sliding_window, -1, c),
                                   dest, cfg.n_seq_max, c.in_batch()));
  st.src = opened.src;
  byte_reader r(opened.payload);
  std::uint32_t kind = 0, full = 0, n_h = 0;
  pos_t n_swa = 0;
  r.get(kind);
  r.get(n_swa);
  r.get(full);
  if (!r.ok() || kind != static_cast<std::uint32_t>(cfg.window) || n_swa != cfg.n_swa || full > 1)
    return make_status(status_code::invalid_argument,
                       "state_read: the state was written with another window (kind %u, n_swa "
                       "%d), this memory has %s %d",
                       kind, n_swa, attention::to_string(cfg.window).data(), cfg.n_swa);
  r.get(n_h);
  if (!r.ok() || n_h > static_cast<std::uint32_t>(k_max_seq))
    return make_status(status_code::corrupt_data, "state_read: %u horizons", n_h);
  const seq_id id_limit = dest >= 0 ? k_max_seq : cfg.n_seq_max;
  for (std::uint32_t i = 0; i < n_h; ++i) {
    seq_id q = -1;
    pos_t h = -1;
    r.get(q);
    r.get(h);
    if (!r.ok() || q < 0 || q >= id_limit || h < 0)
      return make_status(status_code::corrupt_data, "state_read: horizon %u is malformed", i);
    st.horizons.push_back({dest >= 0 ? dest : q, h});
  }
  MNEMO_RETURN_IF_ERROR(get_unified_cells(r, c.storage(), c.size(), cfg.n_seq_max, dest, st.cells));
  const std::size_t n = st.cells.size();
  if (dest >= 0) {
    std::vector<std::size_t> mine;
    std::vector<std::size_t>& out = slots ? *slots : mine;
    out.clear();
    const cell_array& cells = c.cells();
    for (std::size_t i = 0; i < cells.size() && out.size() < n; ++i)
      if (c.usable(i, dest)) out.push_back(i);
    if (out.size() < n)
      return make_status(status_code::no_space, "state_read: %zu cells needed, %zu available", n,
                         out.size());
  }
  return st;
}

}  // namespace detail

/// Everything state_read checks, nothing changed (the composite asks every part first).
template <class KE, class VE>
status state_check(const sliding_window<KE, VE>& c, std::span<const std::uint8_t> data,
                   seq_id dest) {
  auto st = detail::sliding_window_parse(c, data, dest, nullptr);
  return st.is_ok() ? status{} : st.error();
}

/// Loads a state written by state_write: the whole memory (dest == -1: cells densely
/// from index 0) or sequence dest (its cells and horizon are replaced; an empty state
/// empties it). Every check runs first: on failure nothing changed.
template <class KE, class VE>
status state_read(sliding_window<KE, VE>& c, std::span<const std::uint8_t> data, seq_id dest = -1) {
  std::vector<std::size_t> slots;
  MNEMO_ASSIGN_OR_RETURN(auto st, detail::sliding_window_parse(c, data, dest, &slots));
  const std::size_t n = st.cells.size();
  if (dest < 0) {
    c.clear(false);
    slots.resize(n);
    for (std::size_t i = 0; i < n; ++i) slots[i] = i;
  } else {
    MNEMO_RETURN_IF_ERROR(c.seq_rm(dest, -1, -1));  // a whole removal always succeeds
  }
  std::vector<pos_t> bump(static_cast<std::size_t>(c.config().n_seq_max), 0);
  for (std::size_t i = 0; i < n; ++i)
    c.overwrite(slots[i], st.cells.pos[i], st.cells.owners[i], bump);
  c.forget_below(bump, false);
  for (const auto& [q, h] : st.horizons) c.set_horizon(q, h);
  load_unified_rows(c.storage(), st.cells, slots);
  c.reset_head();
  return {};
}

}  // namespace mnemo::memory
