// State save/load of the full cache, in the format of state_format.hpp. Payload:
//   u32 cell_count, then per cell: i32 pos, u32 n_owners, i32 owner ids,
//   then per layer: K rows [cell_count, k_row_bytes], V rows [cell_count, v_row_bytes].
// A per-sequence state lists that sequence's cells with one owner (itself).
#pragma once

#include <vector>

#include "mnemo/memory/full_cache.hpp"
#include "mnemo/memory/state_format.hpp"

namespace mnemo::memory {

namespace detail {

template <class KE, class VE>
state_header full_cache_header(const full_cache<KE, VE>& c, std::int32_t seq) {
  return kv_state_header<KE, VE>(strategy_id::full, seq, c.config());
}

}  // namespace detail

/// Writes the state of sequence s, or of the whole cache when s == -1, into `out`
/// (its capacity is reused). Pending shifts are applied first, so the keys in the
/// file match their positions (D-6).
template <class KE, class VE>
status state_write(full_cache<KE, VE>& c, seq_id s, std::vector<std::uint8_t>& out) {
  MNEMO_RETURN_IF_ERROR(check_seq(s, c.config().n_seq_max, "state_write", true));
  if (c.in_batch())
    return make_status(status_code::invalid_argument, "state_write: a batch is being applied");
  MNEMO_RETURN_IF_ERROR(c.update());
  const cell_array& cells = c.cells();
  std::vector<std::uint32_t> picked;
  for (std::size_t i = 0; i < cells.size(); ++i)
    if (!cells.empty(i) && (s < 0 || cells.owners(i).contains(s)))
      picked.push_back(static_cast<std::uint32_t>(i));
  const auto& kv = c.storage();
  std::size_t owner_ids = 0;
  for (std::uint32_t i : picked)
    owner_ids += s >= 0 ? 1 : static_cast<std::size_t>(cells.owners(i).count());
  state_builder b(
      out, detail::full_cache_header(c, s),
      4 + picked.size() * 8 + owner_ids * 4 +
          c.config().shape.n_layer * picked.size() * (kv.k_row_bytes() + kv.v_row_bytes()));
  byte_writer& w = b.payload();
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
  for (std::size_t l = 0; l < c.config().shape.n_layer; ++l) {
    for (std::uint32_t i : picked) w.put_bytes(kv.k(l, i), kv.k_row_bytes());
    for (std::uint32_t i : picked) w.put_bytes(kv.v(l, i), kv.v_row_bytes());
  }
  b.seal();
  return {};
}

/// The state of sequence s (or of the whole cache, s == -1) as a new buffer.
template <class KE, class VE>
result<std::vector<std::uint8_t>> state_write(full_cache<KE, VE>& c, seq_id s = -1) {
  std::vector<std::uint8_t> out;
  MNEMO_RETURN_IF_ERROR(state_write(c, s, out));
  return out;
}

/// Loads a state written by state_write. Into the whole cache (dest == -1, from a
/// whole state): cells are restored densely from index 0. Into sequence dest (from
/// a per-sequence state): dest's cells are replaced. Every check runs before any
/// change, so on failure the cache is exactly as it was.
template <class KE, class VE>
status state_read(full_cache<KE, VE>& c, std::span<const std::uint8_t> data, seq_id dest = -1) {
  const auto& cfg = c.config();
  MNEMO_RETURN_IF_ERROR(check_seq(dest, cfg.n_seq_max, "state_read", true));
  if (c.in_batch())
    return make_status(status_code::invalid_argument, "state_read: a batch is being applied");
  std::int32_t src = 0;
  MNEMO_ASSIGN_OR_RETURN(auto payload, open_state(data, detail::full_cache_header(c, -1), src));
  if ((dest < 0) != (src < 0))
    return make_status(
        status_code::invalid_argument, "state_read: a %s state cannot be loaded into %s",
        src < 0 ? "whole-cache" : "per-sequence", dest < 0 ? "the whole cache" : "a sequence");
  byte_reader r(payload);
  std::uint32_t n = 0;
  r.get(n);
  if (!r.ok() || n > c.size())
    return make_status(status_code::corrupt_data, "state_read: %u cells do not fit %zu", n,
                       c.size());
  std::vector<pos_t> pos(n);
  std::vector<seq_set> owners(n);
  for (std::uint32_t i = 0; i < n; ++i) {
    std::uint32_t k = 0;
    r.get(pos[i]);
    r.get(k);
    if (!r.ok() || pos[i] < 0 || k == 0 || k > static_cast<std::uint32_t>(cfg.n_seq_max) ||
        (dest >= 0 && k != 1))
      return make_status(status_code::corrupt_data, "state_read: cell %u is malformed", i);
    for (std::uint32_t j = 0; j < k; ++j) {
      seq_id o = -1;
      r.get(o);
      // A per-sequence state names its source sequence, which dest replaces (T67).
      const seq_id limit = dest >= 0 ? k_max_seq : cfg.n_seq_max;
      if (!r.ok() || o < 0 || o >= limit)
        return make_status(status_code::corrupt_data,
                           "state_read: cell %u names sequence %d outside [0, %d)", i, o, limit);
      owners[i].insert(dest >= 0 ? dest : o);
    }
  }
  const auto& kv = c.storage();
  const std::size_t rows_bytes = cfg.shape.n_layer * n * (kv.k_row_bytes() + kv.v_row_bytes());
  const std::uint8_t* rows = r.get_bytes(rows_bytes);
  if (rows == nullptr || r.remaining() != 0)
    return make_status(status_code::corrupt_data,
                       "state_read: K/V data of %zu bytes expected, %zu present", rows_bytes,
                       r.remaining() + (rows ? rows_bytes : 0));

  // Where the cells go: densely from 0 (whole), or free cells plus dest's own.
  std::vector<std::size_t> slots;
  const cell_array& cells = c.cells();
  if (dest < 0) {
    for (std::uint32_t i = 0; i < n; ++i) slots.push_back(i);
  } else {
    for (std::size_t i = 0; i < cells.size() && slots.size() < n; ++i)
      if (cells.empty(i) || cells.owners(i) == seq_set::of(dest)) slots.push_back(i);
    if (slots.size() < n)
      return make_status(status_code::no_space, "state_read: %u cells needed, %zu available", n,
                         slots.size());
  }
  // Past this point nothing can fail.
  if (dest < 0) {
    c.clear(false);
  } else {
    MNEMO_RETURN_IF_ERROR(c.seq_rm(dest, -1, -1));
  }
  cell_array& mc = c.mutable_cells();
  auto& mkv = c.storage();
  for (std::uint32_t i = 0; i < n; ++i) mc.occupy(slots[i], pos[i], owners[i]);
  const std::uint8_t* p = rows;
  for (std::size_t l = 0; l < cfg.shape.n_layer; ++l) {
    for (std::uint32_t i = 0; i < n; ++i, p += kv.k_row_bytes())
      std::memcpy(mkv.k(l, slots[i]), p, kv.k_row_bytes());
    for (std::uint32_t i = 0; i < n; ++i, p += kv.v_row_bytes())
      std::memcpy(mkv.v(l, slots[i]), p, kv.v_row_bytes());
  }
  c.reset_head();
  return {};
}

}  // namespace mnemo::memory
