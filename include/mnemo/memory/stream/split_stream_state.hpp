// State save/load of split_stream, in the format of state_format.hpp (strategy
// split_stream, n_stream = n_seq_max). Pending shifts are applied first, so the keys in
// a file match their positions.
//
// Whole state (seq -1): the sharing is kept, each shared block is written once.
//   u32 block_cells  u32 size_per_stream  u32 n_blocks (blocks written)
//   per stream: u32 n_refs, (u32 slot, u32 block) x n_refs,
//               u32 cell_count, (u32 cell, i32 pos) x cell_count
//   per layer: K rows [n_blocks * block_cells], V rows [n_blocks * block_cells]
// Per-sequence state: the sequence's cells in cell order, dense, no sharing.
//   u32 cell_count, i32 pos x cell_count, per layer: K rows [cell_count], V rows [cell_count]
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

#include "mnemo/memory/state_format.hpp"
#include "mnemo/memory/stream/split_stream.hpp"

namespace mnemo::memory {

namespace detail {

template <class KE, class VE>
state_header split_stream_header(const split_stream<KE, VE>& c, std::int32_t seq) {
  return kv_state_header<KE, VE>(strategy_id::split_stream, seq, c.config(),
                                 static_cast<std::uint32_t>(c.config().n_seq_max));
}

template <class KE, class VE>
void write_whole(const split_stream<KE, VE>& c, state_builder& b) {
  const auto& cfg = c.config();
  const auto& pool = c.pool();
  const auto& kv = pool.kv();
  std::vector<std::int64_t> file_id(pool.n_blocks(), -1);
  std::vector<block_id> order;  // pool block of each file block
  for (seq_id q = 0; q < cfg.n_seq_max; ++q)
    for (block_id blk : c.stream_of(q).blocks)
      if (blk >= 0 && file_id[static_cast<std::size_t>(blk)] < 0) {
        file_id[static_cast<std::size_t>(blk)] = static_cast<std::int64_t>(order.size());
        order.push_back(blk);
      }
  byte_writer& w = b.payload();
  w.put(static_cast<std::uint32_t>(cfg.block_cells));
  w.put(static_cast<std::uint32_t>(cfg.size_per_stream));
  w.put(static_cast<std::uint32_t>(order.size()));
  for (seq_id q = 0; q < cfg.n_seq_max; ++q) {
    const auto& st = c.stream_of(q);
    std::uint32_t n = 0;
    for (block_id blk : st.blocks) n += blk >= 0;
    w.put(n);
    for (std::size_t t = 0; t < st.blocks.size(); ++t)
      if (st.blocks[t] >= 0) {
        w.put(static_cast<std::uint32_t>(t));
        w.put(static_cast<std::uint32_t>(file_id[static_cast<std::size_t>(st.blocks[t])]));
      }
    w.put(static_cast<std::uint32_t>(st.cells.used()));
    for (std::size_t i = 0; i < st.cells.size(); ++i)
      if (!st.cells.empty(i)) {
        w.put(static_cast<std::uint32_t>(i));
        w.put(st.cells.pos(i));
      }
  }
  // Rows of cells no stream holds are written as zeros: a rolled-back batch or a removal
  // leaves stale rows there, and a file should depend on what the memory holds alone.
  std::vector<std::uint8_t> live(order.size() * cfg.block_cells, 0);  // [file block, cell]
  for (seq_id q = 0; q < cfg.n_seq_max; ++q) {
    const auto& st = c.stream_of(q);
    for (std::size_t i = 0; i < st.cells.size(); ++i) {
      const block_id blk = st.blocks[i / cfg.block_cells];
      if (!st.cells.empty(i) && blk >= 0)
        live[static_cast<std::size_t>(file_id[static_cast<std::size_t>(blk)]) * cfg.block_cells +
             i % cfg.block_cells] = 1;
    }
  }
  const std::vector<std::uint8_t> zeros(std::max(kv.k_row_bytes(), kv.v_row_bytes()), 0);
  auto put_rows = [&](auto row_of, std::size_t row_bytes) {
    for (std::size_t f = 0; f < order.size(); ++f)
      for (std::size_t j = 0; j < cfg.block_cells; ++j)
        w.put_bytes(live[f * cfg.block_cells + j]
                        ? static_cast<const void*>(row_of(pool.cell(order[f], j)))
                        : static_cast<const void*>(zeros.data()),
                    row_bytes);
  };
  for (std::size_t l = 0; l < cfg.shape.n_layer; ++l) {
    put_rows([&](std::size_t cell) { return kv.k(l, cell); }, kv.k_row_bytes());
    put_rows([&](std::size_t cell) { return kv.v(l, cell); }, kv.v_row_bytes());
  }
}

template <class KE, class VE>
status read_whole(split_stream<KE, VE>& c, byte_reader& r);

template <class KE, class VE>
status read_seq(split_stream<KE, VE>& c, byte_reader& r, seq_id dest);

}  // namespace detail

/// Writes the state of sequence s, or of every stream when s == -1, into `out`
/// (its capacity is reused).
template <class KE, class VE>
status state_write(split_stream<KE, VE>& c, seq_id s, std::vector<std::uint8_t>& out) {
  MNEMO_RETURN_IF_ERROR(check_state_write(s, c.config().n_seq_max, c.in_batch()));
  MNEMO_RETURN_IF_ERROR(c.update());
  const auto& cfg = c.config();
  const auto& kv = c.pool().kv();
  if (s < 0) {
    state_builder b(out, detail::split_stream_header(c, s), 0);
    detail::write_whole(c, b);
    b.seal();
    return {};
  }
  const auto& cells = c.stream_of(s).cells;
  std::vector<std::size_t> picked;
  for (std::size_t i = 0; i < cells.size(); ++i)
    if (!cells.empty(i)) picked.push_back(c.storage_cell(s, i));
  state_builder b(out, detail::split_stream_header(c, s),
                  4 + picked.size() * 4 +
                      cfg.shape.n_layer * picked.size() * (kv.k_row_bytes() + kv.v_row_bytes()));
  byte_writer& w = b.payload();
  w.put(static_cast<std::uint32_t>(picked.size()));
  for (std::size_t i = 0; i < cells.size(); ++i)
    if (!cells.empty(i)) w.put(cells.pos(i));
  for (std::size_t l = 0; l < cfg.shape.n_layer; ++l) {
    for (std::size_t p : picked) w.put_bytes(kv.k(l, p), kv.k_row_bytes());
    for (std::size_t p : picked) w.put_bytes(kv.v(l, p), kv.v_row_bytes());
  }
  b.seal();
  return {};
}

/// Loads a state written by state_write: a whole state into the whole memory (dest
/// == -1; every stream, blocks and their sharing as they were), a per-sequence state
/// into sequence dest (its stream is replaced; cells dense from cell 0). Every check
/// runs before any change: on failure the memory is exactly as it was.
template <class KE, class VE>
status state_read(split_stream<KE, VE>& c, std::span<const std::uint8_t> data, seq_id dest = -1) {
  MNEMO_ASSIGN_OR_RETURN(auto opened, open_state_into(data, detail::split_stream_header(c, -1),
                                                      dest, c.config().n_seq_max, c.in_batch()));
  byte_reader r(opened.payload);
  return dest < 0 ? detail::read_whole(c, r) : detail::read_seq(c, r, dest);
}

namespace detail {

template <class KE, class VE>
status read_whole(split_stream<KE, VE>& c, byte_reader& r) {
  const auto& cfg = c.config();
  const std::size_t bc = cfg.block_cells, bps = cfg.blocks_per_stream();
  std::uint32_t f_bc = 0, f_size = 0, n_blocks = 0;
  r.get(f_bc);
  r.get(f_size);
  r.get(n_blocks);
  if (!r.ok()) return make_status(status_code::corrupt_data, "state_read: truncated layout");
  if (f_bc != bc || f_size != cfg.size_per_stream)
    return make_status(status_code::invalid_argument,
                       "state_read: streams of %u cells in blocks of %u, this memory has %zu in "
                       "blocks of %zu",
                       f_size, f_bc, cfg.size_per_stream, bc);
  if (n_blocks > c.pool().n_blocks())
    return make_status(status_code::no_space, "state_read: %u blocks do not fit a pool of %zu",
                       n_blocks, c.pool().n_blocks());
  struct parsed {
    std::vector<std::pair<std::uint32_t, std::uint32_t>> refs;  // (slot, file block)
    std::vector<std::pair<std::uint32_t, pos_t>> cells;         // (cell, pos)
  };
  std::vector<parsed> streams(static_cast<std::size_t>(cfg.n_seq_max));
  std::vector<std::uint32_t> refs(n_blocks, 0);
  for (seq_id q = 0; q < cfg.n_seq_max; ++q) {
    parsed& ps = streams[static_cast<std::size_t>(q)];
    std::vector<std::int64_t> slot_block(bps, -1);
    std::uint32_t n = 0;
    if (!r.get(n) || n > bps)
      return make_status(status_code::corrupt_data, "state_read: stream %d lists %u blocks", q, n);
    for (std::uint32_t k = 0; k < n; ++k) {
      std::uint32_t t = 0, b = 0;
      r.get(t);
      r.get(b);
      if (!r.ok() || t >= bps || b >= n_blocks || slot_block[t] >= 0)
        return make_status(status_code::corrupt_data,
                           "state_read: stream %d has a malformed block reference", q);
      slot_block[t] = b;
      ++refs[b];
      ps.refs.push_back({t, b});
    }
    std::vector<std::uint8_t> seen(cfg.size_per_stream, 0);
    if (!r.get(n) || n > cfg.size_per_stream)
      return make_status(status_code::corrupt_data, "state_read: stream %d lists %u cells", q, n);
    for (std::uint32_t k = 0; k < n; ++k) {
      std::uint32_t i = 0;
      pos_t p = -1;
      r.get(i);
      r.get(p);
      if (!r.ok() || i >= cfg.size_per_stream || seen[i] || p < 0 || slot_block[i / bc] < 0)
        return make_status(status_code::corrupt_data,
                           "state_read: cell %u of sequence %d is malformed", k, q);
      seen[i] = 1;
      ps.cells.push_back({i, p});
    }
  }
  for (std::uint32_t b = 0; b < n_blocks; ++b)
    if (refs[b] == 0)
      return make_status(status_code::corrupt_data, "state_read: block %u is not referenced", b);
  const auto& kv = c.pool().kv();
  const std::size_t rows =
      cfg.shape.n_layer * n_blocks * bc * (kv.k_row_bytes() + kv.v_row_bytes());
  const std::uint8_t* p = r.get_bytes(rows);
  if (p == nullptr || r.remaining() != 0)
    return make_status(status_code::corrupt_data,
                       "state_read: K/V data of %zu bytes expected, %zu present", rows,
                       r.remaining() + (p ? rows : 0));
  // Past this point nothing can fail. A reset pool hands out blocks 0, 1, ... in order.
  c.clear(false);
  auto& pool = c.mutable_pool();
  for (std::uint32_t b = 0; b < n_blocks; ++b) {
    [[maybe_unused]] const block_id got = pool.acquire();
    MNEMO_DASSERT(got == static_cast<block_id>(b));
    for (std::uint32_t k = 1; k < refs[b]; ++k) pool.retain(static_cast<block_id>(b));
  }
  auto& mkv = pool.kv();
  const std::size_t kb = bc * kv.k_row_bytes(), vb = bc * kv.v_row_bytes();
  for (std::size_t l = 0; l < cfg.shape.n_layer; ++l) {
    for (std::uint32_t b = 0; b < n_blocks; ++b, p += kb)
      std::memcpy(mkv.k(l, pool.cell(static_cast<block_id>(b), 0)), p, kb);
    for (std::uint32_t b = 0; b < n_blocks; ++b, p += vb)
      std::memcpy(mkv.v(l, pool.cell(static_cast<block_id>(b), 0)), p, vb);
  }
  for (seq_id q = 0; q < cfg.n_seq_max; ++q) {
    auto& st = c.mutable_stream(q);
    for (const auto& [t, b] : streams[static_cast<std::size_t>(q)].refs)
      st.blocks[t] = static_cast<block_id>(b);
    for (const auto& [i, pos] : streams[static_cast<std::size_t>(q)].cells)
      st.cells.occupy(i, pos, seq_set::of(q));
    st.head = 0;
  }
  return {};
}

template <class KE, class VE>
status read_seq(split_stream<KE, VE>& c, byte_reader& r, seq_id dest) {
  const auto& cfg = c.config();
  const std::size_t bc = cfg.block_cells;
  std::uint32_t n = 0;
  if (!r.get(n)) return make_status(status_code::corrupt_data, "state_read: truncated cell count");
  if (n > cfg.size_per_stream)
    return make_status(status_code::no_space,
                       "state_read: %u cells do not fit the stream of sequence %d (%zu cells)", n,
                       dest, cfg.size_per_stream);
  std::vector<pos_t> pos(n);
  for (std::uint32_t i = 0; i < n; ++i)
    if (!r.get(pos[i]) || pos[i] < 0)
      return make_status(status_code::corrupt_data, "state_read: cell %u is malformed", i);
  const auto& kv = c.pool().kv();
  const std::size_t rows = cfg.shape.n_layer * n * (kv.k_row_bytes() + kv.v_row_bytes());
  const std::uint8_t* p = r.get_bytes(rows);
  if (p == nullptr || r.remaining() != 0)
    return make_status(status_code::corrupt_data,
                       "state_read: K/V data of %zu bytes expected, %zu present", rows,
                       r.remaining() + (p ? rows : 0));
  // Blocks: those dest alone holds come back when its stream is emptied.
  const std::size_t need = (n + bc - 1) / bc;
  std::size_t avail = c.pool().n_free();
  for (block_id b : c.stream_of(dest).blocks) avail += b >= 0 && !c.pool().shared(b);
  if (need > avail)
    return make_status(status_code::no_space,
                       "state_read: sequence %d needs %zu blocks, the pool has %zu for it", dest,
                       need, avail);
  // Past this point nothing can fail.
  c.empty_stream(dest);
  auto& st = c.mutable_stream(dest);
  auto& pool = c.mutable_pool();
  for (std::size_t t = 0; t < need; ++t) st.blocks[t] = pool.acquire();
  for (std::uint32_t i = 0; i < n; ++i) st.cells.occupy(i, pos[i], seq_set::of(dest));
  auto& mkv = pool.kv();
  for (std::size_t l = 0; l < cfg.shape.n_layer; ++l) {
    for (std::uint32_t i = 0; i < n; ++i, p += kv.k_row_bytes())
      std::memcpy(mkv.k(l, c.storage_cell(dest, i)), p, kv.k_row_bytes());
    for (std::uint32_t i = 0; i < n; ++i, p += kv.v_row_bytes())
      std::memcpy(mkv.v(l, c.storage_cell(dest, i)), p, kv.v_row_bytes());
  }
  st.head = n;
  return {};
}

}  // namespace detail

}  // namespace mnemo::memory
