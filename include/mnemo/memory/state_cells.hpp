// The cells of a unified memory in a state payload (full cache, sliding window):
//   u32 cell_count, then per cell: i32 pos, u32 n_owners, i32 owner ids,
//   then per layer: K rows [cell_count, k_row_bytes], V rows [cell_count, v_row_bytes].
// A sequence's state lists its cells with one owner, itself; it names its source
// sequence, which the reader replaces by its destination, so it loads into any
// sequence. The reader checks every count and id before the memory changes.
#pragma once

#include <cstdint>
#include <cstring>
#include <span>
#include <vector>

#include "mnemo/base/seq_set.hpp"
#include "mnemo/memory/cells.hpp"
#include "mnemo/memory/kv_storage.hpp"
#include "mnemo/memory/state_format.hpp"

namespace mnemo::memory {

/// Cells `picked` of `cells` as a state lists them: with every owner (s == -1) or with
/// s alone. Also the K/V rows: unified_cells_bytes() is the payload size of both.
template <class KE, class VE>
std::size_t unified_cells_bytes(const cell_array& cells, const kv_storage<KE, VE>& kv,
                                std::span<const std::uint32_t> picked, seq_id s) {
  std::size_t owner_ids = 0;
  for (std::uint32_t i : picked)
    owner_ids += s >= 0 ? 1 : static_cast<std::size_t>(cells.owners(i).count());
  return 4 + picked.size() * 8 + owner_ids * 4 +
         kv.shape().n_layer * picked.size() * (kv.k_row_bytes() + kv.v_row_bytes());
}

template <class KE, class VE>
void put_unified_cells(byte_writer& w, const cell_array& cells, const kv_storage<KE, VE>& kv,
                       std::span<const std::uint32_t> picked, seq_id s) {
  w.put(static_cast<std::uint32_t>(picked.size()));
  for (std::uint32_t i : picked) {
    w.put(cells.pos(i));
    if (s >= 0) {
      w.put(std::uint32_t{1});
      w.put(s);
      continue;
    }
    w.put(static_cast<std::uint32_t>(cells.owners(i).count()));
    for_each_seq(cells.owners(i), [&](seq_id o) { w.put(o); });
  }
  for (std::size_t l = 0; l < kv.shape().n_layer; ++l) {
    for (std::uint32_t i : picked) w.put_bytes(kv.k(l, i), kv.k_row_bytes());
    for (std::uint32_t i : picked) w.put_bytes(kv.v(l, i), kv.v_row_bytes());
  }
}

/// The cells of a state, parsed and checked; `rows` points into the payload.
struct unified_cells {
  std::vector<pos_t> pos;
  std::vector<seq_set> owners;  // dest alone for a sequence's state
  const std::uint8_t* rows = nullptr;
  std::size_t size() const noexcept { return pos.size(); }
};

/// Reads what put_unified_cells wrote, for a memory of `max_cells` cells and ids in
/// [0, n_seq_max), into sequence dest (-1: the whole memory). The payload must end there.
template <class KE, class VE>
status get_unified_cells(byte_reader& r, const kv_storage<KE, VE>& kv, std::size_t max_cells,
                         seq_id n_seq_max, seq_id dest, unified_cells& out) {
  std::uint32_t n = 0;
  r.get(n);
  if (!r.ok() || n > max_cells)
    return make_status(status_code::corrupt_data, "state_read: %u cells do not fit %zu", n,
                       max_cells);
  out.pos.assign(n, -1);
  out.owners.assign(n, seq_set{});
  // A sequence's state names its source sequence, which dest replaces.
  const seq_id id_limit = dest >= 0 ? k_max_seq : n_seq_max;
  for (std::uint32_t i = 0; i < n; ++i) {
    std::uint32_t k = 0;
    r.get(out.pos[i]);
    r.get(k);
    if (!r.ok() || out.pos[i] < 0 || k == 0 || k > static_cast<std::uint32_t>(n_seq_max) ||
        (dest >= 0 && k != 1))
      return make_status(status_code::corrupt_data, "state_read: cell %u is malformed", i);
    for (std::uint32_t j = 0; j < k; ++j) {
      seq_id o = -1;
      r.get(o);
      if (!r.ok() || o < 0 || o >= id_limit)
        return make_status(status_code::corrupt_data,
                           "state_read: cell %u names sequence %d outside [0, %d)", i, o, id_limit);
      out.owners[i].insert(dest >= 0 ? dest : o);
    }
  }
  const std::size_t rows_bytes = kv.shape().n_layer * n * (kv.k_row_bytes() + kv.v_row_bytes());
  out.rows = r.get_bytes(rows_bytes);
  if (out.rows == nullptr || r.remaining() != 0)
    return make_status(status_code::corrupt_data,
                       "state_read: K/V data of %zu bytes expected, %zu present", rows_bytes,
                       r.remaining() + (out.rows ? rows_bytes : 0));
  return {};
}

/// Copies the parsed rows into cells `slots` (slots[i] takes cell i of the state).
template <class KE, class VE>
void load_unified_rows(kv_storage<KE, VE>& kv, const unified_cells& st,
                       std::span<const std::size_t> slots) {
  const std::uint8_t* p = st.rows;
  for (std::size_t l = 0; l < kv.shape().n_layer; ++l) {
    for (std::size_t i = 0; i < st.size(); ++i, p += kv.k_row_bytes())
      std::memcpy(kv.k(l, slots[i]), p, kv.k_row_bytes());
    for (std::size_t i = 0; i < st.size(); ++i, p += kv.v_row_bytes())
      std::memcpy(kv.v(l, slots[i]), p, kv.v_row_bytes());
  }
}

}  // namespace mnemo::memory
