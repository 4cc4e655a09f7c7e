// bounded's transactions, planning and sequence operations (the class and its
// documentation are in bounded.hpp; eviction in bounded_eviction_impl.hpp). Every
// sequence operation runs over all lanes of a sequence: one per layer, or one per
// (layer, KV head).
#pragma once

#include "mnemo/memory/bounded/bounded.hpp"

namespace mnemo::memory {

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
  sn.stats.assign(ln.stats.begin(), ln.stats.end());
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
  if constexpr (pooled) {  // the cell may have been another head's at the start
    for (std::size_t h = 0; h < lh_; ++h) {
      touch(s, layer, h);
      if (snaps_[static_cast<std::size_t>(snap_of_[lane_index(s, layer, h)])].pos[slot] >= 0)
        head = h;
    }
  }
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
      std::copy(sn.stats.begin(), sn.stats.end(), ln.stats.begin());
      ln.live = sn.live;
      ln.top = sn.top;
    }
    pos_max_ = tx_pos_max_;
    reset_readers();  // restored rows may be ones a reader had read
  }
  commit();
}

// ---- planning -------------------------------------------------------------------------

template <class P, dtype::kv_element KE, dtype::kv_element VE>
status bounded<P, KE, VE>::prepare(std::span<const ubatch_tokens> ubatches) {
  MNEMO_RETURN_IF_ERROR(check_not_in_batch(in_batch(), "prepare"));
  const std::size_t n_seq = static_cast<std::size_t>(cfg_.n_seq_max);
  std::vector<std::size_t> occ(n_seq, 0), n_of(n_seq, 0);
  // Pooled (AdaKV): a sequence's occupancy is its heads' cells together, against the
  // pool; each token takes one cell per head.
  const std::size_t per_token = pooled ? lh_ : 1, room = pooled ? slots_ : capacity();
  for (seq_id s = 0; s < cfg_.n_seq_max; ++s)
    for (std::size_t l = 0; l < cfg_.shape.n_layer; ++l) {
      std::size_t n = 0;
      for (std::size_t h = 0; h < lh_; ++h)
        n = pooled ? n + lane_of(s, l, h).live : std::max(n, lane_of(s, l, h).live);
      occ[static_cast<std::size_t>(s)] = std::max(occ[static_cast<std::size_t>(s)], n);
    }
  std::vector<planned> plan(ubatches.size());
  for (std::size_t u = 0; u < ubatches.size(); ++u) {
    const ubatch_tokens& ub = ubatches[u];
    MNEMO_RETURN_IF_ERROR(check_stream_tokens(
        "prepare", u, ub, cfg_.n_seq_max,
        "a bounded cache evicts per sequence, so decode a shared prefix on one sequence and "
        "seq_cp it"));
    std::fill(n_of.begin(), n_of.end(), 0);
    planned& pl = plan[u];
    for (std::size_t j = 0; j < ub.size(); ++j)
      ++n_of[static_cast<std::size_t>(ub.seqs[j].lowest())];
    for (std::size_t s = 0; s < n_seq; ++s) {
      if (n_of[s] == 0) continue;
      if (occ[s] + per_token * n_of[s] > room)
        return make_status(status_code::no_space,
                           "prepare: sequence %zu needs %zu slots in micro-batch %zu but holds %zu "
                           "of %zu (budget %zu + max_ubatch %zu); use smaller micro-batches or a "
                           "larger max_ubatch",
                           s, per_token * n_of[s], u, occ[s], room, cfg_.max_budget(),
                           cfg_.max_ubatch);
      // the call ends at the kept size
      occ[s] = std::min(occ[s] + per_token * n_of[s], per_token * cfg_.kept());
      pl.seqs.push_back({static_cast<seq_id>(s), n_of[s], -1, pl.seqs.size()});
    }
    pl.token_seq.resize(ub.size());
    for (std::size_t j = 0; j < ub.size(); ++j) {
      const seq_id s = ub.seqs[j].lowest();
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
        const std::size_t slot = first_free_slot(s, l, h, 0);  // prepare() made sure of one
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
  note_move(from, to, ln.pos[from], ln.pos[from]);
  key_changed(s, layer, head, to);
  ln.pos[to] = ln.pos[from];
  for (std::size_t i = 0; i < state_floats; ++i)
    ln.state[to * state_floats + i] = ln.state[from * state_floats + i];
  ln.pos[from] = -1;
}

template <class P, dtype::kv_element KE, dtype::kv_element VE>
void bounded<P, KE, VE>::close_holes(seq_id s, std::size_t layer, std::size_t head) {
  lane& ln = mut_lane(s, layer, head);
  if (pooled || ln.live == ln.top) return;  // pooled: the holes are other heads' cells
  std::size_t i = 0, j = ln.top;
  while (true) {
    while (i < j && ln.pos[i] >= 0) ++i;
    while (j > i && ln.pos[j - 1] < 0) --j;
    if (j <= i + 1) break;
    move_slot(s, layer, head, j - 1, i);
    --j;
  }
  recount(ln);
  report_moves(s, layer, head);
}

// ---- sequence operations -----------------------------------------------------------
template <class P, dtype::kv_element KE, dtype::kv_element VE>
status bounded<P, KE, VE>::seq_rm(seq_id s, pos_t p0, pos_t p1) {
  MNEMO_RETURN_IF_ERROR(check_seq(s, cfg_.n_seq_max, "seq_rm", true));
  MNEMO_RETURN_IF_ERROR(check_not_in_batch(in_batch(), "seq_rm"));
  const pos_range r = pos_range::of(p0, p1);
  for (seq_id q = 0; q < cfg_.n_seq_max; ++q) {
    if (s >= 0 && q != s) continue;
    for (std::size_t l = 0; l < cfg_.shape.n_layer; ++l)
      for (std::size_t h = 0; h < lh_; ++h) {
        lane& ln = mut_lane(q, l, h);
        for (std::size_t j = 0; j < ln.top; ++j)
          if (ln.pos[j] >= 0 && r.contains(ln.pos[j])) ln.pos[j] = -1;
        recount(ln);
      }
    pos_t& pm = pos_max_[static_cast<std::size_t>(q)];
    if (pm >= 0 && r.p0 <= pm && pm < r.p1) pm = r.p0 - 1;  // the history now ends at p0
    if (pm < 0)  // nothing of the sequence is left: its lanes start afresh
      for (std::size_t l = 0; l < cfg_.shape.n_layer; ++l)
        for (std::size_t h = 0; h < lh_; ++h) {
          auto& st = mut_lane(q, l, h).stats;
          std::fill(st.begin(), st.end(), 0.0f);
        }
  }
  return {};
}

template <class P, dtype::kv_element KE, dtype::kv_element VE>
status bounded<P, KE, VE>::seq_cp(seq_id src, seq_id dst, pos_t p0, pos_t p1) {
  MNEMO_RETURN_IF_ERROR(check_seq(src, cfg_.n_seq_max, "seq_cp"));
  MNEMO_RETURN_IF_ERROR(check_seq(dst, cfg_.n_seq_max, "seq_cp"));
  MNEMO_RETURN_IF_ERROR(check_not_in_batch(in_batch(), "seq_cp"));
  if (src == dst) return {};
  const pos_range r = pos_range::of(p0, p1);
  const std::size_t L = cfg_.shape.n_layer;
  for (std::size_t l = 0; l < L; ++l) {  // check first: nothing changes on no_space
    std::size_t pool = 0;                // pooled: every head's cells against the pool
    for (std::size_t h = 0; h < lh_; ++h) {
      const lane &a = lane_of(src, l, h), &b = lane_of(dst, l, h);
      std::size_t in = 0, keep = 0;
      for (pos_t p : a.pos) in += p >= 0 && r.contains(p);
      for (pos_t p : b.pos) keep += p >= 0 && !r.contains(p);
      pool += in + keep;
      if (pooled ? pool > slots_ : in + keep > capacity())
        return make_status(status_code::no_space,
                           "seq_cp: sequence %d would hold %zu cells in layer %zu, capacity %zu",
                           dst, pooled ? pool : in + keep, l, pooled ? slots_ : capacity());
    }
  }
  for (std::size_t l = 0; l < L; ++l)      // first clear the range in every lane (pooled:
    for (std::size_t h = 0; h < lh_; ++h)  // a lane's free slots depend on all of them)
      for (pos_t& p : mut_lane(dst, l, h).pos)
        if (p >= 0 && r.contains(p)) p = -1;
  for (std::size_t l = 0; l < L; ++l)
    for (std::size_t h = 0; h < lh_; ++h) {
      lane& b = mut_lane(dst, l, h);
      const lane& a = lane_of(src, l, h);
      b.stats = a.stats;  // the copy continues src's history (its query statistics)
      std::size_t slot = 0;
      for (std::size_t j = 0; j < a.top; ++j) {
        if (a.pos[j] < 0 || !r.contains(a.pos[j])) continue;
        slot = first_free_slot(dst, l, h, slot);
        b.pos[slot] = a.pos[j];
        std::copy_n(a.state.begin() + static_cast<std::ptrdiff_t>(j * state_floats), state_floats,
                    b.state.begin() + static_cast<std::ptrdiff_t>(slot * state_floats));
        std::memcpy(k_part(l, dst, slot, h), k_part(l, src, j, h), k_part_bytes());
        key_changed(dst, l, h, slot);
        std::memcpy(v_part(l, dst, slot, h), v_part(l, src, j, h), v_part_bytes());
      }
      recount(b);
    }
  // The copy's logical end is src's within the range, evicted or not (as seq_rm and
  // eviction keep it), so dst continues at min(ps, p1 - 1) + 1 like src would.
  pos_t& pd = pos_max_[static_cast<std::size_t>(dst)];
  if (pd >= 0 && r.p0 <= pd && pd < r.p1) pd = r.p0 - 1;
  const pos_t ps = pos_max_[static_cast<std::size_t>(src)];
  if (ps >= r.p0 && !r.empty()) pd = std::max(pd, std::min(ps, r.p1 - 1));
  return {};
}

template <class P, dtype::kv_element KE, dtype::kv_element VE>
status bounded<P, KE, VE>::seq_keep(seq_id s) {
  MNEMO_RETURN_IF_ERROR(check_seq(s, cfg_.n_seq_max, "seq_keep"));
  MNEMO_RETURN_IF_ERROR(check_not_in_batch(in_batch(), "seq_keep"));
  for (seq_id q = 0; q < cfg_.n_seq_max; ++q)
    if (q != s) MNEMO_RETURN_IF_ERROR(seq_rm(q, -1, -1));
  return {};
}

template <class P, dtype::kv_element KE, dtype::kv_element VE>
template <class NewPos>
status bounded<P, KE, VE>::shift_positions(seq_id s, pos_t p0, pos_t p1, const char* op,
                                           NewPos new_pos) {
  MNEMO_RETURN_IF_ERROR(
      check_shift_allowed(s, cfg_.n_seq_max, in_batch(), cfg_.shift_supported, op));
  const pos_range r = pos_range::of(p0, p1);
  for (std::size_t l = 0; l < cfg_.shape.n_layer; ++l)
    for (std::size_t h = 0; h < lh_; ++h) {
      lane& ln = mut_lane(s, l, h);
      for (std::size_t j = 0; j < ln.top; ++j) {
        const pos_t p = ln.pos[j];
        if (p < 0 || !r.contains(p)) continue;
        const pos_t q = new_pos(p);
        if (q < 0) {
          ln.pos[j] = -1;
          continue;
        }
        if (q != p && cfg_.rope.layout != attention::rope_layout::none)
          rotate_key(l, s, j, h, q - p);
        if (q != p) note_move(j, j, p, q);
        ln.pos[j] = q;
      }
      recount(ln);
      report_moves(s, l, h);
    }
  pos_t& pm = pos_max_[static_cast<std::size_t>(s)];
  if (pm >= 0 && r.contains(pm)) pm = std::max<pos_t>(-1, new_pos(pm));
  return {};
}

template <class P, dtype::kv_element KE, dtype::kv_element VE>
status bounded<P, KE, VE>::seq_add(seq_id s, pos_t p0, pos_t p1, pos_t delta) {
  MNEMO_RETURN_IF_ERROR(check_add_overflow(s, seq_pos_max(s), p0, p1, delta));
  if (delta == 0) return check_seq(s, cfg_.n_seq_max, "seq_add");
  return shift_positions(s, p0, p1, "seq_add", [delta](pos_t p) { return p + delta; });
}

template <class P, dtype::kv_element KE, dtype::kv_element VE>
status bounded<P, KE, VE>::seq_div(seq_id s, pos_t p0, pos_t p1, int d) {
  MNEMO_RETURN_IF_ERROR(check_divisor(d));
  if (d == 1) return check_seq(s, cfg_.n_seq_max, "seq_div");
  return shift_positions(s, p0, p1, "seq_div", [d](pos_t p) { return p / d; });
}

template <class P, dtype::kv_element KE, dtype::kv_element VE>
void bounded<P, KE, VE>::clear(bool data) {
  rollback();
  for (lane& ln : lanes_) {
    std::fill(ln.pos.begin(), ln.pos.end(), -1);
    std::fill(ln.stats.begin(), ln.stats.end(), 0.0f);
    ln.live = ln.top = 0;
  }
  reset_readers();
  std::fill(pos_max_.begin(), pos_max_.end(), -1);
  if (data) kv_.zero();
}

template <class P, dtype::kv_element KE, dtype::kv_element VE>
memory_report bounded<P, KE, VE>::report() const {
  memory_report r;
  const std::size_t cells = kv_.size();
  add_kv_layers(r, cfg_.shape.n_layer, "kv-bounded", dtype::element_traits<KE>::name,
                dtype::element_traits<VE>::name, kv_.k_row_bytes() * cells,
                kv_.v_row_bytes() * cells);
  r.cells = cells / lh_;  // token cells (per KV head: rows of one head each)
  for (seq_id s = 0; s < cfg_.n_seq_max; ++s) {
    std::size_t n = 0;  // layer 0 stands for all; per head: its fullest lane
    for (std::size_t h = 0; h < lh_; ++h)
      n = pooled ? n + lane_of(s, 0, h).live : std::max(n, lane_of(s, 0, h).live);
    if (pooled) n = (n + lh_ - 1) / lh_;  // the pool's cells in token cells
    r.cells_used += n;
    if (n) r.cells_per_seq.push_back({s, n});
  }
  return r;
}

}  // namespace mnemo::memory
