// State save/load of the sliding-window memory, in the format of state_format.hpp
// (strategy_id::sliding_window). Payload:
//   u32 window kind, i32 n_swa, u32 swa_full
//   u32 n_horizons, then (i32 seq, i32 horizon) for every sequence that forgot something
//   u32 cell_count, then per cell: i32 pos, u32 n_owners, i32 owner ids
//   per layer: K rows [cell_count, k_row_bytes], then V rows [cell_count, v_row_bytes]
// A whole state writes every cell (T36). A per-sequence state writes the sequence's
// cells its last token still attends (not masked relative to pos_max, spec §4.3, T36:
// a checkpoint holds the window ending at pos_max), and the horizon that leaves.
#pragma once

#include <cstring>
#include <vector>

#include "mnemo/memory/sliding_window.hpp"
#include "mnemo/memory/state_format.hpp"

namespace mnemo::memory {

namespace detail {

template <class KE, class VE>
state_header sliding_window_header(const sliding_window<KE, VE>& c, std::int32_t seq) {
  return kv_state_header<KE, VE>(strategy_id::sliding_window, seq, c.config());
}

/// A parsed, fully checked state (nothing of the memory changed yet).
struct window_state {
  std::int32_t src = -1;
  std::vector<std::pair<seq_id, pos_t>> horizons;
  std::vector<pos_t> pos;
  std::vector<seq_set> owners;
  const std::uint8_t* rows = nullptr;
};

}  // namespace detail

/// Writes the state of sequence s, or of the whole memory (s == -1), into `out`.
/// Pending shifts are applied first (D-6).
template <class KE, class VE>
status state_write(sliding_window<KE, VE>& c, seq_id s, std::vector<std::uint8_t>& out) {
  const auto& cfg = c.config();
  MNEMO_RETURN_IF_ERROR(check_seq(s, cfg.n_seq_max, "state_write", true));
  if (c.in_batch())
    return make_status(status_code::invalid_argument, "state_write: a batch is being applied");
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
  const auto& kv = c.storage();
  std::size_t owner_ids = 0;
  for (std::uint32_t i : picked)
    owner_ids += s >= 0 ? 1 : static_cast<std::size_t>(cells.owners(i).count());
  state_builder b(out, detail::sliding_window_header(c, s),
                  12 + 4 + horizons.size() * 8 + 4 + picked.size() * 8 + owner_ids * 4 +
                      cfg.shape.n_layer * picked.size() * (kv.k_row_bytes() + kv.v_row_bytes()));
  byte_writer& w = b.payload();
  w.put(static_cast<std::uint32_t>(cfg.window));
  w.put(cfg.n_swa);
  w.put(static_cast<std::uint32_t>(cfg.swa_full));
  w.put(static_cast<std::uint32_t>(horizons.size()));
  for (const auto& [q, h] : horizons) {
    w.put(q);
    w.put(h);
  }
  w.put(static_cast<std::uint32_t>(picked.size()));
  for (std::uint32_t i : picked) {
    w.put(cells.pos(i));
    if (s >= 0) {
      w.put(std::uint32_t{1});
      w.put(s);
      continue;
    }
    w.put(static_cast<std::uint32_t>(cells.owners(i).count()));
    for (seq_id o = 0; o < k_max_seq; ++o)
      if (cells.owners(i).contains(o)) w.put(o);
  }
  for (std::size_t l = 0; l < cfg.shape.n_layer; ++l) {
    for (std::uint32_t i : picked) w.put_bytes(kv.k(l, i), kv.k_row_bytes());
    for (std::uint32_t i : picked) w.put_bytes(kv.v(l, i), kv.v_row_bytes());
  }
  b.seal();
  return {};
}

template <class KE, class VE>
result<std::vector<std::uint8_t>> state_write(sliding_window<KE, VE>& c, seq_id s = -1) {
  std::vector<std::uint8_t> out;
  MNEMO_RETURN_IF_ERROR(state_write(c, s, out));
  return out;
}

/// Parses and checks a state against c, and for a per-sequence state finds the cells
/// it will take (free cells, dest's own, or cells out of every owner's window).
/// Nothing changes: state_read and composites call it before any change.
template <class KE, class VE>
result<detail::window_state> state_check(const sliding_window<KE, VE>& c,
                                         std::span<const std::uint8_t> data, seq_id dest,
                                         std::vector<std::size_t>* slots = nullptr) {
  const auto& cfg = c.config();
  MNEMO_RETURN_IF_ERROR(check_seq(dest, cfg.n_seq_max, "state_read", true));
  if (c.in_batch())
    return make_status(status_code::invalid_argument, "state_read: a batch is being applied");
  detail::window_state st;
  MNEMO_ASSIGN_OR_RETURN(auto payload,
                         open_state(data, detail::sliding_window_header(c, -1), st.src));
  if ((dest < 0) != (st.src < 0))
    return make_status(
        status_code::invalid_argument, "state_read: a %s state cannot be loaded into %s",
        st.src < 0 ? "whole-memory" : "per-sequence", dest < 0 ? "the whole memory" : "a sequence");
  byte_reader r(payload);
  std::uint32_t kind = 0, full = 0, n_h = 0, n = 0;
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
  r.get(n);
  if (!r.ok() || n > c.size())
    return make_status(status_code::corrupt_data, "state_read: %u cells do not fit %zu", n,
                       c.size());
  st.pos.resize(n);
  st.owners.resize(n);
  for (std::uint32_t i = 0; i < n; ++i) {
    std::uint32_t k = 0;
    r.get(st.pos[i]);
    r.get(k);
    if (!r.ok() || st.pos[i] < 0 || k == 0 || k > static_cast<std::uint32_t>(cfg.n_seq_max) ||
        (dest >= 0 && k != 1))
      return make_status(status_code::corrupt_data, "state_read: cell %u is malformed", i);
    for (std::uint32_t j = 0; j < k; ++j) {
      seq_id o = -1;
      r.get(o);
      if (!r.ok() || o < 0 || o >= id_limit)
        return make_status(status_code::corrupt_data,
                           "state_read: cell %u names sequence %d outside [0, %d)", i, o, id_limit);
      st.owners[i].insert(dest >= 0 ? dest : o);
    }
  }
  const auto& kv = c.storage();
  const std::size_t rows_bytes = cfg.shape.n_layer * n * (kv.k_row_bytes() + kv.v_row_bytes());
  st.rows = r.get_bytes(rows_bytes);
  if (st.rows == nullptr || r.remaining() != 0)
    return make_status(status_code::corrupt_data,
                       "state_read: K/V data of %zu bytes expected, %zu present", rows_bytes,
                       r.remaining() + (st.rows ? rows_bytes : 0));
  if (dest >= 0) {
    std::vector<std::size_t> mine;
    std::vector<std::size_t>& out = slots ? *slots : mine;
    out.clear();
    const cell_array& cells = c.cells();
    for (std::size_t i = 0; i < cells.size() && out.size() < n; ++i) {
      bool ok = cells.empty(i) || cells.owners(i) == seq_set::of(dest);
      if (!ok && !cfg.swa_full) {  // out of the window of every other owner's next query
        ok = true;
        for (seq_id o = 0; o < cfg.n_seq_max; ++o)
          if (o != dest && cells.owners(i).contains(o))  // as sliding_window::usable
            ok = ok && cells.pos(i) < c.seq_pos_max(o) &&
                 attention::is_masked_by_window(cfg.window, cfg.n_swa, cells.pos(i),
                                                c.seq_pos_max(o) + 1);
      }
      if (ok) out.push_back(i);
    }
    if (out.size() < n)
      return make_status(status_code::no_space, "state_read: %u cells needed, %zu available", n,
                         out.size());
  }
  return st;
}

/// Loads a state written by state_write: the whole memory (dest == -1: cells densely
/// from index 0) or sequence dest (its cells and horizon are replaced; an empty state
/// empties it). Every check runs first: on failure nothing changed.
template <class KE, class VE>
status state_read(sliding_window<KE, VE>& c, std::span<const std::uint8_t> data, seq_id dest = -1) {
  std::vector<std::size_t> slots;
  MNEMO_ASSIGN_OR_RETURN(auto st, state_check(c, data, dest, &slots));
  const std::size_t n = st.pos.size();
  if (dest < 0) {
    c.clear(false);
    slots.resize(n);
    for (std::size_t i = 0; i < n; ++i) slots[i] = i;
  } else {
    MNEMO_RETURN_IF_ERROR(c.seq_rm(dest, -1, -1));  // a whole removal always succeeds
  }
  std::vector<pos_t> bump(static_cast<std::size_t>(c.config().n_seq_max), 0);
  for (std::size_t i = 0; i < n; ++i) c.overwrite(slots[i], st.pos[i], st.owners[i], bump);
  c.forget_below(bump, false);
  for (const auto& [q, h] : st.horizons) c.set_horizon(q, h);
  auto& kv = c.storage();
  const std::uint8_t* p = st.rows;
  for (std::size_t l = 0; l < c.config().shape.n_layer; ++l) {
    for (std::size_t i = 0; i < n; ++i, p += kv.k_row_bytes())
      std::memcpy(kv.k(l, slots[i]), p, kv.k_row_bytes());
    for (std::size_t i = 0; i < n; ++i, p += kv.v_row_bytes())
      std::memcpy(kv.v(l, slots[i]), p, kv.v_row_bytes());
  }
  c.reset_head();
  return {};
}

}  // namespace mnemo::memory
