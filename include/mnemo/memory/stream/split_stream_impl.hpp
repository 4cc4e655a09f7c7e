// split_stream's planning, copies, shifts and defragmentation (the class and its
// documentation are in split_stream.hpp).
#pragma once

#include <map>
#include <vector>

#include "mnemo/memory/stream/split_stream.hpp"

namespace mnemo::memory {

template <dtype::kv_element KE, dtype::kv_element VE>
status split_stream<KE, VE>::prepare(std::span<const ubatch_tokens> ubatches) {
  if (tx_.open()) return check_not_in_batch(true, "prepare");
  plan_.clear();
  const std::size_t size = cfg_.size_per_stream, bc = cfg_.block_cells;
  struct sim {
    std::vector<std::uint8_t> taken;         // cells taken by earlier micro-batches (lazily)
    std::vector<std::uint32_t> mine;         // the same, until a second micro-batch needs the map
    std::vector<std::uint8_t> private_slot;  // block slots already counted
    std::size_t head = 0, used = 0;
  };
  std::map<std::uint32_t, sim> sims;  // the streams this batch touches
  std::size_t need = 0;
  // A malformed token is reported as such, never as a full stream found earlier.
  for (std::size_t u = 0; u < ubatches.size(); ++u)
    if (status st = check_stream_tokens("prepare", u, ubatches[u], cfg_.n_seq_max, k_coupled); !st)
      return fail_plan(std::move(st));
  for (std::size_t u = 0; u < ubatches.size(); ++u) {
    const ubatch_tokens& ub = ubatches[u];
    // The tokens of each stream, streams in order of first appearance.
    std::vector<std::pair<std::uint32_t, std::vector<std::size_t>>> groups;
    for (std::size_t j = 0; j < ub.size(); ++j) {
      const auto q = static_cast<std::uint32_t>(ub.seqs[j].lowest());
      auto it =
          std::find_if(groups.begin(), groups.end(), [q](const auto& g) { return g.first == q; });
      if (it == groups.end()) it = groups.insert(groups.end(), {q, {}});
      it->second.push_back(j);
    }
    std::vector<slot> slots(ub.size());
    for (const auto& [q, toks] : groups) {
      const stream& st = streams_[q];
      const std::size_t n = toks.size();
      auto [mit, fresh] = sims.try_emplace(q);
      sim& m = mit->second;
      if (fresh) {
        m.head = st.head;
        m.used = st.cells.used();
        m.private_slot.assign(st.blocks.size(), 0);
      } else if (m.taken.empty()) {
        m.taken.assign(size, 0);
        for (std::uint32_t i : m.mine) m.taken[i] = 1;
      }
      if (m.head > m.used + 2 * n) m.head = 0;  // enough holes before the head
      std::vector<std::uint32_t> found;
      for (std::size_t k = 0; k < size && found.size() < n; ++k) {
        const std::size_t i = (m.head + k) % size;
        if (st.cells.empty(i) && (m.taken.empty() || !m.taken[i]))
          found.push_back(static_cast<std::uint32_t>(i));
      }
      if (found.size() < n)
        return fail_plan(make_status(
            status_code::no_space,
            "prepare: the stream of sequence %u is full: micro-batch %zu brings %zu of its "
            "tokens, %zu of its %zu cells are free",
            q, u, n, found.size(), size));
      for (std::size_t k = 0; k < n; ++k) {
        const std::uint32_t i = found[k];
        slots[toks[k]] = {q, i};
        if (m.taken.empty()) {
          m.mine.push_back(i);
        } else {
          m.taken[i] = 1;
        }
        const std::size_t t = i / bc;
        if (m.private_slot[t]) continue;
        m.private_slot[t] = 1;
        const block_id b = st.blocks[t];
        if (b < 0) {
          ++need;
        } else if (pool_.shared(b)) {
          ++need;  // every writing holder copies it, the last too (stream_undo.hpp)
        }
        if (need > pool_.n_free())
          return fail_plan(make_status(
              status_code::no_space,
              "prepare: the block pool is exhausted (%zu blocks, %zu free) while placing "
              "sequence %u of micro-batch %zu",
              pool_.n_blocks(), pool_.n_free(), q, u));
      }
      m.used += n;
      m.head = found.back() + 1;
    }
    plan_.push_back(std::move(slots));
  }
  return {};
}

template <dtype::kv_element KE, dtype::kv_element VE>
status split_stream<KE, VE>::apply(std::size_t u, const ubatch_tokens& ub) {
  if (u >= plan_.size() || plan_[u].size() != ub.size())
    return make_status(status_code::invalid_argument,
                       "apply: micro-batch %zu does not match the prepared plan", u);
  MNEMO_RETURN_IF_ERROR(check_stream_tokens("apply", u, ub, cfg_.n_seq_max, k_coupled));
  for (std::size_t j = 0; j < ub.size(); ++j) {
    const slot& sl = plan_[u][j];
    if (static_cast<std::uint32_t>(ub.seqs[j].lowest()) != sl.stream)
      return make_status(status_code::invalid_argument,
                         "apply: micro-batch %zu does not match the prepared plan", u);
    if (!streams_[sl.stream].cells.empty(sl.cell))
      return make_status(status_code::invalid_argument,
                         "apply: micro-batch %zu was applied already", u);
  }
  if (!tx_.open()) {
    std::vector<std::size_t> heads(streams_.size());
    std::vector<std::uint8_t> shifted(streams_.size());
    for (std::size_t q = 0; q < streams_.size(); ++q) {
      heads[q] = streams_[q].head;
      shifted[q] = streams_[q].cells.has_shift();
    }
    tx_.begin(std::move(heads), std::move(shifted));
  }
  for (std::size_t j = 0; j < ub.size(); ++j) {
    const slot& sl = plan_[u][j];
    stream& st = streams_[sl.stream];
    const std::size_t t = sl.cell / cfg_.block_cells;
    if (const auto [old_b, new_b] = make_private(st, t, true); new_b != -2)
      tx_.save_block(sl.stream, t, old_b, new_b);
    tx_.save_cell(sl.stream, sl.cell, st.cells);
    st.cells.occupy(sl.cell, ub.pos[j], seq_set::of(static_cast<seq_id>(sl.stream)));
    st.head = sl.cell + 1;
  }
  return {};
}

template <dtype::kv_element KE, dtype::kv_element VE>
status split_stream<KE, VE>::share_into(const stream& a, stream& b, seq_id src, seq_id dst,
                                        pos_range r) {
  (void)src;
  empty_stream(b);
  const std::size_t bc = cfg_.block_cells;
  const seq_set only = seq_set::of(dst);
  bool shifted = false;
  for (std::size_t t = 0; t < a.blocks.size(); ++t) {
    if (a.blocks[t] < 0) continue;
    bool any = false;
    for (std::size_t i = t * bc; i < std::min(a.cells.size(), (t + 1) * bc); ++i) {
      if (a.cells.empty(i) || !r.contains(a.cells.pos(i))) continue;
      b.cells.restore(i, a.cells.pos(i), only, a.cells.shift(i));
      shifted = shifted || a.cells.shift(i) != 0;
      any = true;
    }
    if (!any) continue;
    b.blocks[t] = a.blocks[t];
    pool_.retain(a.blocks[t]);
  }
  if (shifted) b.cells.set_has_shift(true);
  b.head = a.head;
  return {};
}

template <dtype::kv_element KE, dtype::kv_element VE>
status split_stream<KE, VE>::copy_into(const stream& a, stream& b, seq_id src, seq_id dst,
                                       pos_range r) {
  const std::size_t bc = cfg_.block_cells;
  std::vector<std::size_t> from, to;
  for (std::size_t i = 0; i < a.cells.size(); ++i)
    if (!a.cells.empty(i) && r.contains(a.cells.pos(i))) from.push_back(i);
  for (std::size_t i = 0; i < b.cells.size() && to.size() < from.size(); ++i)
    if (b.cells.empty(i) || r.contains(b.cells.pos(i))) to.push_back(i);
  if (to.size() < from.size())
    return make_status(status_code::no_space,
                       "seq_cp: the stream of sequence %d has room for %zu of the %zu cells "
                       "copied from sequence %d",
                       dst, to.size(), from.size(), src);
  std::vector<std::uint8_t> counted(b.blocks.size(), 0);
  std::size_t need = 0;
  for (std::size_t i : to) {
    const std::size_t t = i / bc;
    if (counted[t]) continue;
    counted[t] = 1;
    need += b.blocks[t] < 0 || pool_.shared(b.blocks[t]);
  }
  if (need > pool_.n_free())
    return make_status(status_code::no_space,
                       "seq_cp: copying into sequence %d needs %zu blocks, the pool has %zu free",
                       dst, need, pool_.n_free());
  b.head = std::min(b.head, b.cells.remove_seq(dst, r));
  auto& kv = pool_.kv();
  const seq_set only = seq_set::of(dst);
  for (std::size_t k = 0; k < from.size(); ++k) {
    make_private(b, to[k] / bc);
    const std::size_t pf = pool_.cell(a.blocks[from[k] / bc], from[k] % bc);
    const std::size_t pt = pool_.cell(b.blocks[to[k] / bc], to[k] % bc);
    kv.copy_cell(pf, pt);
    b.cells.restore(to[k], a.cells.pos(from[k]), only, a.cells.shift(from[k]));
    if (a.cells.shift(from[k]) != 0) b.cells.set_has_shift(true);
  }
  release_empty_blocks(b);
  return {};
}

template <dtype::kv_element KE, dtype::kv_element VE>
template <class NewPos>
status split_stream<KE, VE>::shift_positions(seq_id s, pos_t p0, pos_t p1, const char* op,
                                             NewPos new_pos, bool noop) {
  MNEMO_RETURN_IF_ERROR(
      check_shift_allowed(s, cfg_.n_seq_max, in_batch(), cfg_.shift_supported, op));
  const pos_range r = pos_range::of(p0, p1);
  if (noop || r.empty()) return {};
  stream& st = at(s);
  const std::size_t bc = cfg_.block_cells;
  std::vector<std::size_t> mine;
  std::vector<std::uint8_t> unshare(st.blocks.size(), 0);
  std::size_t need = 0;
  for (std::size_t i = 0; i < st.cells.size(); ++i) {
    if (st.cells.empty(i) || !r.contains(st.cells.pos(i))) continue;
    mine.push_back(i);
    const pos_t p = new_pos(st.cells.pos(i));
    const std::size_t t = i / bc;
    if (p >= 0 && p != st.cells.pos(i) && !unshare[t] && pool_.shared(st.blocks[t])) {
      unshare[t] = 1;
      ++need;
    }
  }
  if (need > pool_.n_free())
    return make_status(status_code::no_space,
                       "%s: sequence %d shares %zu blocks with other sequences and needs as many "
                       "free blocks to move apart from them, but the pool has %zu",
                       op, s, need, pool_.n_free());
  for (std::size_t t = 0; t < unshare.size(); ++t)
    if (unshare[t]) make_private(st, t);
  if (st.cells.move_seq(s, r, mine, new_pos)) {
    st.head = 0;
    while (st.head < st.cells.size() && !st.cells.empty(st.head)) ++st.head;
    release_empty_blocks(st);
  }
  return {};
}

template <dtype::kv_element KE, dtype::kv_element VE>
void split_stream<KE, VE>::rotate_shifted_keys() {
  const auto& sh = cfg_.shape;
  auto& kv = pool_.kv();
  key_rotator<KE> rot(cfg_.rope, sh.n_head_kv, sh.d_k);
  std::vector<std::uint8_t> done(pool_.n_blocks() * cfg_.block_cells, 0);
  for (std::size_t q = 0; q < streams_.size(); ++q) {
    const stream& st = streams_[q];
    if (!st.cells.has_shift()) continue;
    for (std::size_t i = 0; i < st.cells.size(); ++i) {
      if (st.cells.empty(i) || st.cells.shift(i) == 0) continue;
      const std::size_t c = storage_cell(static_cast<seq_id>(q), i);
      if (done[c]) continue;  // a shared row: every holder records the same shift
      done[c] = 1;
      for (std::size_t l = 0; l < sh.n_layer; ++l) rot.rotate(kv.k(l, c), st.cells.shift(i));
    }
  }
}

template <dtype::kv_element KE, dtype::kv_element VE>
status split_stream<KE, VE>::defragment() {
  MNEMO_RETURN_IF_ERROR(check_not_in_batch(in_batch(), "defragment"));
  const std::size_t bc = cfg_.block_cells;
  auto& kv = pool_.kv();
  for (std::size_t q = 0; q < streams_.size(); ++q) {
    stream& st = streams_[q];
    cell_array& cells = st.cells;
    // 1. Inside the private blocks, cells move to the front in cell order.
    std::vector<std::size_t> room;  // cells of private blocks, in order
    for (std::size_t t = 0; t < st.blocks.size(); ++t)
      if (st.blocks[t] >= 0 && !pool_.shared(st.blocks[t]))
        for (std::size_t i = t * bc; i < std::min(cells.size(), (t + 1) * bc); ++i)
          room.push_back(i);
    std::size_t k = 0;
    for (std::size_t i : room) {
      if (cells.empty(i)) continue;
      const std::size_t to = room[k++];  // empty, or moved out already
      if (to == i) continue;
      kv.copy_cell(pool_.cell(st.blocks[i / bc], i % bc), pool_.cell(st.blocks[to / bc], to % bc));
      cells.relocate(i, to);
    }
    release_empty_blocks(st);
    // 2. Blocks close up (metadata moves, rows stay in their blocks).
    std::size_t w = 0;
    for (std::size_t t = 0; t < st.blocks.size(); ++t) {
      if (st.blocks[t] < 0) continue;
      if (t != w) {
        st.blocks[w] = std::exchange(st.blocks[t], -1);
        for (std::size_t o = 0; o < bc && t * bc + o < cells.size(); ++o)
          if (!cells.empty(t * bc + o)) cells.relocate(t * bc + o, w * bc + o);
      }
      ++w;
    }
    st.head = 0;
    while (st.head < cells.size() && !cells.empty(st.head)) ++st.head;
  }
  return {};
}

}  // namespace mnemo::memory
