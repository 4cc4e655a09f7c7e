// bounded's transactions and planning (the class and its documentation are in
// memory/bounded.hpp; eviction in bounded_evict.hpp, sequence operations in
// bounded_seq_ops.hpp).
#pragma once

#if !defined(MNEMO_MEMORY_DETAIL_OK_)
#error "mnemo/memory/detail/ headers are internal: include mnemo/memory/bounded.hpp"
#endif

#include <bit>

namespace mnemo::memory {

namespace bounded_detail {
inline seq_id only_seq(const seq_set& o) noexcept {
  for (int w = 0; w < k_max_seq / 64; ++w)
    if (o.words[w] != 0) return static_cast<seq_id>(w * 64 + std::countr_zero(o.words[w]));
  return -1;
}
}  // namespace bounded_detail

// ---- transactions -------------------------------------------------------------------

template <class P, dtype::kv_element KE, dtype::kv_element VE>
void bounded<P, KE, VE>::touch(seq_id s, std::size_t layer, std::size_t head) {
  const std::size_t li = lane_index(s, layer, head);
  if (!tx_open_ || snap_of_[li] >= 0) return;
  if (n_snaps_ == snaps_.size()) snaps_.emplace_back();
  snapshot& sn = snaps_[n_snaps_];
  const lane& ln = lanes_[li];
  sn.lane = li;
  sn.pos.assign(ln.pos.begin(), ln.pos.end());
  sn.state.assign(ln.state.begin(), ln.state.end());
  sn.saved.assign(ln.pos.size(), 0);
  sn.live = ln.live;
  sn.top = ln.top;
  snap_of_[li] = static_cast<int>(n_snaps_++);
}

// A lane owns its part of each cell (the whole row per layer, one head's part per
// head), so saves of different lanes never overlap and restore in any order.
template <class P, dtype::kv_element KE, dtype::kv_element VE>
void bounded<P, KE, VE>::save_row(seq_id s, std::size_t layer, std::size_t head, std::size_t slot) {
  if (!tx_open_) return;
  touch(s, layer, head);
  snapshot& sn = snaps_[static_cast<std::size_t>(snap_of_[lane_index(s, layer, head)])];
  if (sn.pos[slot] < 0 || sn.saved[slot]) return;  // free at the start: nothing to keep
  sn.saved[slot] = 1;
  const std::size_t kb = k_part_bytes(), vb = v_part_bytes();
  const std::size_t off = save_bytes_.size();
  save_bytes_.resize(off + kb + vb);
  std::memcpy(save_bytes_.data() + off, k_part(layer, s, slot, head), kb);
  std::memcpy(save_bytes_.data() + off + kb, v_part(layer, s, slot, head), vb);
  saves_.push_back({layer, s, slot, head, off});
}

template <class P, dtype::kv_element KE, dtype::kv_element VE>
void bounded<P, KE, VE>::commit() {
  for (std::size_t i = 0; i < n_snaps_; ++i) snap_of_[snaps_[i].lane] = -1;
  n_snaps_ = 0;
  saves_.clear();
  save_bytes_.clear();
  tx_open_ = false;
  plan_.clear();
}

template <class P, dtype::kv_element KE, dtype::kv_element VE>
void bounded<P, KE, VE>::rollback() {
  if (tx_open_) {
    const std::size_t kb = k_part_bytes(), vb = v_part_bytes();
    for (const row_save& r : saves_) {
      std::memcpy(k_part(r.layer, r.seq, r.slot, r.head), save_bytes_.data() + r.offset, kb);
      std::memcpy(v_part(r.layer, r.seq, r.slot, r.head), save_bytes_.data() + r.offset + kb, vb);
    }
    for (std::size_t i = 0; i < n_snaps_; ++i) {
      const snapshot& sn = snaps_[i];
      lane& ln = lanes_[sn.lane];
      std::copy(sn.pos.begin(), sn.pos.end(), ln.pos.begin());
      std::copy(sn.state.begin(), sn.state.end(), ln.state.begin());
      ln.live = sn.live;
      ln.top = sn.top;
    }
    pos_max_ = tx_pos_max_;
  }
  commit();
}

// ---- planning -------------------------------------------------------------------------

template <class P, dtype::kv_element KE, dtype::kv_element VE>
status bounded<P, KE, VE>::prepare(std::span<const ubatch_tokens> ubatches) {
  MNEMO_RETURN_IF_ERROR(no_open_batch("prepare"));
  const std::size_t n_seq = static_cast<std::size_t>(cfg_.n_seq_max);
  std::vector<std::size_t> occ(n_seq, 0), n_of(n_seq, 0);
  for (seq_id s = 0; s < cfg_.n_seq_max; ++s)
    for (std::size_t l = 0; l < cfg_.shape.n_layer; ++l)
      for (std::size_t h = 0; h < lh_; ++h)
        occ[static_cast<std::size_t>(s)] =
            std::max(occ[static_cast<std::size_t>(s)], lane_of(s, l, h).live);
  std::vector<planned> plan(ubatches.size());
  for (std::size_t u = 0; u < ubatches.size(); ++u) {
    const ubatch_tokens& ub = ubatches[u];
    if (ub.seqs.size() != ub.pos.size())
      return make_status(status_code::invalid_argument,
                         "prepare: micro-batch %zu has %zu positions but %zu sequence sets", u,
                         ub.pos.size(), ub.seqs.size());
    std::fill(n_of.begin(), n_of.end(), 0);
    planned& pl = plan[u];
    for (std::size_t j = 0; j < ub.size(); ++j) {
      const int n = ub.seqs[j].count();
      const seq_id s = bounded_detail::only_seq(ub.seqs[j]);
      if (ub.pos[j] < 0 || n == 0)
        return make_status(status_code::invalid_argument,
                           "prepare: token %zu of micro-batch %zu needs a position >= 0 (has %d) "
                           "and a sequence",
                           j, u, ub.pos[j]);
      if (n > 1)
        return make_status(status_code::unsupported,
                           "prepare: token %zu of micro-batch %zu belongs to %d sequences: a "
                           "bounded cache evicts per sequence, so decode a shared prefix on one "
                           "sequence and seq_cp it",
                           j, u, n);
      if (s >= cfg_.n_seq_max)
        return make_status(
            status_code::out_of_range,
            "prepare: token %zu of micro-batch %zu names sequence %d, outside [0, %d)", j, u, s,
            cfg_.n_seq_max);
      ++n_of[static_cast<std::size_t>(s)];
    }
    for (std::size_t s = 0; s < n_seq; ++s) {
      if (n_of[s] == 0) continue;
      if (occ[s] + n_of[s] > capacity())
        return make_status(status_code::no_space,
                           "prepare: sequence %zu needs %zu slots in micro-batch %zu but holds %zu "
                           "of %zu (budget %zu + max_ubatch %zu); use smaller micro-batches or a "
                           "larger max_ubatch",
                           s, n_of[s], u, occ[s], capacity(), cfg_.budget, cfg_.max_ubatch);
      occ[s] = std::min(occ[s] + n_of[s], cfg_.kept());  // the call ends at the kept size
      pl.seqs.push_back({static_cast<seq_id>(s), n_of[s], -1, pl.seqs.size()});
    }
    pl.token_seq.resize(ub.size());
    for (std::size_t j = 0; j < ub.size(); ++j) {
      const seq_id s = bounded_detail::only_seq(ub.seqs[j]);
      std::size_t k = 0;
      while (pl.seqs[k].seq != s) ++k;
      pl.token_seq[j] = static_cast<std::uint32_t>(k);
      pl.seqs[k].pos_end = std::max(pl.seqs[k].pos_end, ub.pos[j] + 1);
    }
    pl.slots.assign(ub.size() * cfg_.shape.n_layer * lh_, 0);
  }
  plan_ = std::move(plan);
  return {};
}

template <class P, dtype::kv_element KE, dtype::kv_element VE>
status bounded<P, KE, VE>::apply(std::size_t u, const ubatch_tokens& ub) {
  if (u >= plan_.size() || plan_[u].token_seq.size() != ub.size())
    return make_status(status_code::invalid_argument,
                       "apply: micro-batch %zu was not prepared (or has another size)", u);
  if (!tx_open_) {
    tx_open_ = true;
    tx_pos_max_ = pos_max_;
  }
  planned& pl = plan_[u];
  const std::size_t L = cfg_.shape.n_layer;
  for (const seq_step& ss : pl.seqs)
    for (std::size_t l = 0; l < L; ++l)
      for (std::size_t h = 0; h < lh_; ++h) touch(ss.seq, l, h);
  for (std::size_t j = 0; j < ub.size(); ++j) {
    const seq_id s = pl.seqs[pl.token_seq[j]].seq;
    for (std::size_t l = 0; l < L; ++l)
      for (std::size_t h = 0; h < lh_; ++h) {
        lane& ln = mut_lane(s, l, h);
        std::size_t slot = 0;
        while (ln.pos[slot] >= 0) ++slot;  // prepare() made sure one is free
        save_row(s, l, h, slot);
        ln.pos[slot] = ub.pos[j];
        ++ln.live;
        ln.top = std::max(ln.top, slot + 1);
        pl.slots[(j * L + l) * lh_ + h] = static_cast<std::uint32_t>(slot);
      }
    auto& pm = pos_max_[static_cast<std::size_t>(s)];
    pm = std::max(pm, ub.pos[j]);
  }
  for (const seq_step& ss : pl.seqs)
    for (std::size_t l = 0; l < L; ++l)
      for (std::size_t h = 0; h < lh_; ++h) close_holes(ss.seq, l, h);
  // New tokens took the lowest free slots, so close_holes moves only older cells
  // and the slots in pl.slots stay valid.
  return {};
}

template <class P, dtype::kv_element KE, dtype::kv_element VE>
void bounded<P, KE, VE>::move_slot(seq_id s, std::size_t layer, std::size_t head, std::size_t from,
                                   std::size_t to) {
  save_row(s, layer, head, to);
  lane& ln = mut_lane(s, layer, head);
  std::memcpy(k_part(layer, s, to, head), k_part(layer, s, from, head), k_part_bytes());
  std::memcpy(v_part(layer, s, to, head), v_part(layer, s, from, head), v_part_bytes());
  ln.pos[to] = ln.pos[from];
  for (std::size_t i = 0; i < state_floats; ++i)
    ln.state[to * state_floats + i] = ln.state[from * state_floats + i];
  ln.pos[from] = -1;
}

template <class P, dtype::kv_element KE, dtype::kv_element VE>
void bounded<P, KE, VE>::close_holes(seq_id s, std::size_t layer, std::size_t head) {
  lane& ln = mut_lane(s, layer, head);
  if (ln.live == ln.top) return;
  std::size_t i = 0, j = ln.top;
  while (true) {
    while (i < j && ln.pos[i] >= 0) ++i;
    while (j > i && ln.pos[j - 1] < 0) --j;
    if (j <= i + 1) break;
    move_slot(s, layer, head, j - 1, i);
    --j;
  }
  recount(ln);
}

}  // namespace mnemo::memory
