// State save/load of the full cache, in the format of state_format.hpp
// (strategy_id::full); the payload is the cell list of state_cells.hpp: every cell of
// the cache, or a sequence's cells with one owner (itself).
#pragma once

#include <span>
#include <vector>

#include "mnemo/memory/full/full_cache.hpp"
#include "mnemo/memory/state_cells.hpp"
#include "mnemo/memory/state_format.hpp"

namespace mnemo::memory {

namespace detail {

/// Parses and checks a state for c and finds the cells it will take: densely from 0
/// (whole), or free cells and dest's own. Nothing changes.
template <class KE, class VE>
status full_cache_parse(const full_cache<KE, VE>& c, std::span<const std::uint8_t> data,
                        seq_id dest, unified_cells& st, std::vector<std::size_t>& slots) {
  const auto& cfg = c.config();
  MNEMO_ASSIGN_OR_RETURN(auto opened,
                         open_state_into(data, memory_state_header(strategy_id::full, -1, c), dest,
                                         cfg.n_seq_max, c.in_batch()));
  byte_reader r(opened.payload);
  MNEMO_RETURN_IF_ERROR(get_unified_cells(r, c.storage(), c.size(), cfg.n_seq_max, dest, st));
  slots.clear();
  if (dest < 0) {
    for (std::size_t i = 0; i < st.size(); ++i) slots.push_back(i);
    return {};
  }
  const cell_array& cells = c.cells();
  for (std::size_t i = 0; i < cells.size() && slots.size() < st.size(); ++i)
    if (cells.empty(i) || cells.owners(i) == seq_set::of(dest)) slots.push_back(i);
  if (slots.size() < st.size())
    return make_status(status_code::no_space, "state_read: %zu cells needed, %zu available",
                       st.size(), slots.size());
  return {};
}

}  // namespace detail

/// Writes the state of sequence s, or of the whole cache when s == -1, into `out`
/// (its capacity is reused). Pending shifts are applied first, so the keys in the
/// file match their positions (llama.cpp writes keys that are still to be re-rotated).
template <class KE, class VE>
status state_write(full_cache<KE, VE>& c, seq_id s, std::vector<std::uint8_t>& out) {
  MNEMO_RETURN_IF_ERROR(check_state_write(s, c.config().n_seq_max, c.in_batch()));
  MNEMO_RETURN_IF_ERROR(c.update());
  const cell_array& cells = c.cells();
  std::vector<std::uint32_t> picked;
  for (std::size_t i = 0; i < cells.size(); ++i)
    if (!cells.empty(i) && (s < 0 || cells.owners(i).contains(s)))
      picked.push_back(static_cast<std::uint32_t>(i));
  state_builder b(out, memory_state_header(strategy_id::full, s, c),
                  unified_cells_bytes(cells, c.storage(), picked, s));
  put_unified_cells(b.payload(), cells, c.storage(), picked, s);
  b.seal();
  return {};
}

/// Everything state_read checks, nothing changed (the composite asks every part first).
template <class KE, class VE>
status state_check(const full_cache<KE, VE>& c, std::span<const std::uint8_t> data, seq_id dest) {
  unified_cells st;
  std::vector<std::size_t> slots;
  return detail::full_cache_parse(c, data, dest, st, slots);
}

/// Loads a state written by state_write. Into the whole cache (dest == -1, from a
/// whole state): cells are restored densely from index 0. Into sequence dest (from
/// a per-sequence state): dest's cells are replaced. Every check runs before any
/// change, so on failure the cache is exactly as it was.
template <class KE, class VE>
status state_read(full_cache<KE, VE>& c, std::span<const std::uint8_t> data, seq_id dest = -1) {
  unified_cells st;
  std::vector<std::size_t> slots;
  MNEMO_RETURN_IF_ERROR(detail::full_cache_parse(c, data, dest, st, slots));
  // Past this point nothing can fail.
  if (dest < 0) {
    c.clear(false);
  } else {
    MNEMO_RETURN_IF_ERROR(c.seq_rm(dest, -1, -1));
  }
  cell_array& cells = c.mutable_cells();
  for (std::size_t i = 0; i < st.size(); ++i) cells.occupy(slots[i], st.pos[i], st.owners[i]);
  load_unified_rows(c.storage(), st, slots);
  c.reset_head();
  return {};
}

}  // namespace mnemo::memory
