// bounded's transactions, planning and sequence operations (the class and its
// documentation are in bounded.hpp; eviction in bounded_eviction_impl.hpp). Every
// sequence operation runs over all lanes of a sequence: one per layer, or one per
// (layer, KV head).
#pragma once

#include "mnemo/memory/bounded/bounded.hpp"

namespace mnemo::memory {

// ---- transactions -------------------------------------------------------------------

// A snapshot holds the lane's slots [0, top) (every slot above is free), so a decode
// step copies its cells' positions and state once, not the lane's whole capacity. A
// pooled lane is snapshot with every lane of its pool (they share the free list).
template <class P, dtype::kv_element KE, dtype::kv_element VE>
void bounded<P, KE, VE>::touch(seq_id s, std::size_t layer, std::size_t head) {
  if (!tx_open_) return;
  if constexpr (pooled) {
    for (std::size_t h = 0; h < lh_; ++h)
      touch_lane(lane_index(s, layer, h), h == 0 ? &free_pages_[pool_index(s, layer)] : nullptr);
  } else {
    (void)head;
    touch_lane(lane_index(s, layer, head), nullptr);
  }
}

template <class P, dtype::kv_element KE, dtype::kv_element VE>
void bounded<P, KE, VE>::touch_lane(std::size_t li, const std::vector<std::uint32_t>* free_list) {
  if (snap_of_[li] >= 0) return;
  if (n_snaps_ == snaps_.size()) snaps_.emplace_back();
  snapshot& sn = snaps_[n_snaps_];
  const lane& ln = lanes_[li];
  const auto top = static_cast<std::ptrdiff_t>(ln.top);
  sn.lane = li;
  sn.pos.assign(ln.pos.begin(), ln.pos.begin() + top);
  sn.state.assign(ln.state.begin(),
                  ln.state.begin() + top * static_cast<std::ptrdiff_t>(state_floats));
  if constexpr (evict::journals_lane<P>)  // the policy's writes are journaled instead
    sn.stats.clear();
  else
    sn.stats.assign(ln.stats.begin(), ln.stats.end());
  sn.saved.assign(ln.top, 0);
  sn.live = ln.live;
  sn.top = ln.top;
  sn.pages.assign(ln.pages.begin(), ln.pages.end());
  if (free_list != nullptr)
    sn.free_pages.assign(free_list->begin(), free_list->end());
  else
    sn.free_pages.clear();
  snap_of_[li] = static_cast<int>(n_snaps_++);
}

// A lane owns its part of each cell (the whole row per layer, one head's part per
// head), so saves of different lanes never overlap and restore in any order. A pooled
// row is saved when it held a cell at the start of the batch, whichever lane's page
// it was then.
template <class P, dtype::kv_element KE, dtype::kv_element VE>
void bounded<P, KE, VE>::save_row(seq_id s, std::size_t layer, std::size_t head, std::size_t slot) {
  if (!tx_open_) return;
  touch(s, layer, head);
  snapshot* sn = &snaps_[static_cast<std::size_t>(snap_of_[lane_index(s, layer, head)])];
  std::size_t j = slot;  // the row's slot in the lane that held it at the start
  if constexpr (pooled) {
    const unsigned sh = page_shift_[layer];
    const std::uint32_t page = lane_of(s, layer, head).pages[slot >> sh];
    const std::size_t off = slot & ((std::size_t{1} << sh) - 1);
    sn = nullptr;
    for (std::size_t h = 0; h < lh_ && sn == nullptr; ++h) {
      snapshot& o = snaps_[static_cast<std::size_t>(snap_of_[lane_index(s, layer, h)])];
      for (std::size_t i = 0; i < o.pages.size(); ++i)
        if (o.pages[i] == page) {
          sn = &o;
          j = (i << sh) + off;
          break;
        }
    }
    if (sn == nullptr) return;  // a free page at the start
  }
  if (j >= sn->top || sn->pos[j] < 0 || sn->saved[j]) return;  // free at the start
  sn->saved[j] = 1;
  const std::size_t kb = k_part_bytes(), vb = v_part_bytes();
  const std::size_t off = save_bytes_.size();
  save_bytes_.resize(off + kb + vb);
  std::memcpy(save_bytes_.data() + off, k_part(layer, s, slot, head), kb);
  std::memcpy(save_bytes_.data() + off + kb, v_part(layer, s, slot, head), vb);
  saves_.push_back({layer, row_of(layer, s, slot, head), off});
}

template <class P, dtype::kv_element KE, dtype::kv_element VE>
void bounded<P, KE, VE>::fit_pages(seq_id s, std::size_t layer, std::size_t head) noexcept {
  if constexpr (pooled) {
    lane& ln = mut_lane(s, layer, head);
    const unsigned sh = page_shift_[layer];
    const std::size_t need = (ln.top + (std::size_t{1} << sh) - 1) >> sh;
    std::vector<std::uint32_t>& free_list = free_pages_[pool_index(s, layer)];
    while (ln.pages.size() > need) {
      free_list.push_back(ln.pages.back());
      ln.pages.pop_back();
    }
    while (ln.pages.size() < need) {  // prepare() made sure the pool has them
      MNEMO_DASSERT(!free_list.empty());
      ln.pages.push_back(free_list.back());
      free_list.pop_back();
    }
  } else {
    (void)s, (void)layer, (void)head;
  }
}

template <class P, dtype::kv_element KE, dtype::kv_element VE>
void bounded<P, KE, VE>::commit() {
  for (std::size_t i = 0; i < n_snaps_; ++i) snap_of_[snaps_[i].lane] = -1;
  n_snaps_ = 0;
  saves_.clear();
  save_bytes_.clear();
  lane_saves_.clear();
  lane_save_floats_.clear();
  tx_open_ = false;
  plan_.clear();
}

template <class P, dtype::kv_element KE, dtype::kv_element VE>
void bounded<P, KE, VE>::rollback() {
  if (tx_open_) {
    const std::size_t kb = k_part_bytes(), vb = v_part_bytes();
    for (const row_save& r : saves_) {
      std::memcpy(kv_[r.layer].k(0, r.row), save_bytes_.data() + r.offset, kb);
      std::memcpy(kv_[r.layer].v(0, r.row), save_bytes_.data() + r.offset + kb, vb);
    }
    for (std::size_t i = 0; i < n_snaps_; ++i) {
      const snapshot& sn = snaps_[i];
      lane& ln = lanes_[sn.lane];
      std::copy(sn.pos.begin(), sn.pos.end(), ln.pos.begin());
      std::fill(ln.pos.begin() + static_cast<std::ptrdiff_t>(sn.top),
                ln.pos.begin() + static_cast<std::ptrdiff_t>(std::max(sn.top, ln.top)), -1);
      std::copy(sn.state.begin(), sn.state.end(), ln.state.begin());
      std::copy(sn.stats.begin(), sn.stats.end(), ln.stats.begin());
      ln.live = sn.live;
      ln.top = sn.top;
      if constexpr (pooled) {
        ln.pages.assign(sn.pages.begin(), sn.pages.end());
        if (sn.lane % lh_ == 0)  // the pool's first lane holds its free list
          free_pages_[sn.lane / lh_].assign(sn.free_pages.begin(), sn.free_pages.end());
      }
    }
    for (auto it = lane_saves_.rbegin(); it != lane_saves_.rend(); ++it)  // newest first
      std::copy_n(lane_save_floats_.begin() + static_cast<std::ptrdiff_t>(it->offset), it->count,
                  lanes_[it->lane].stats.begin() + static_cast<std::ptrdiff_t>(it->first));
    pos_max_ = tx_pos_max_;
    reset_readers();  // restored rows may be ones a reader had read
  }
  commit();
}

// ---- planning -------------------------------------------------------------------------

template <class P, dtype::kv_element KE, dtype::kv_element VE>
status bounded<P, KE, VE>::prepare(std::span<const ubatch_tokens> ubatches) {
  MNEMO_RETURN_IF_ERROR(check_not_in_batch(in_batch(), "prepare"));
  const std::size_t n_seq = static_cast<std::size_t>(cfg_.n_seq_max), L = cfg_.shape.n_layer;
  std::vector<std::size_t> n_of(n_seq, 0);
  // Cells held per lane, or pooled (AdaKV) per pool (its heads' cells together; each
  // token takes one cell per head), simulated over the micro-batches.
  const std::size_t per_pool = pooled ? lh_ : 1, units = lanes_.size() / per_pool;
  const std::size_t per_token = pooled ? lh_ : 1;
  std::vector<std::size_t> occ(units, 0);
  for (std::size_t i = 0; i < lanes_.size(); ++i) occ[i / per_pool] += lanes_[i].live;
  // unit i: sequence i / (L * lanes), layer (i / lanes) % L, lane i % lanes
  const std::size_t lanes_per_unit = pooled ? 1 : lh_;
  auto room_of = [&](std::size_t i) {
    const std::size_t l = i / lanes_per_unit % L;
    return pooled ? lh_ * (cfg_.budget_of(l) + cfg_.max_ubatch) : lanes_[i].pos.size();
  };
  auto kept_of = [&](std::size_t i) {
    const std::size_t l = i / lanes_per_unit % L;
    return pooled ? lh_ * cfg_.kept(l) : cfg_.kept(l, i % lh_);
  };
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
      const std::size_t per_seq = L * lanes_per_unit;
      for (std::size_t i = s * per_seq; i < (s + 1) * per_seq; ++i) {
        if (occ[i] + per_token * n_of[s] > room_of(i))
          return make_status(status_code::no_space,
                             "prepare: sequence %zu needs %zu slots in micro-batch %zu but holds "
                             "%zu of %zu (budget %zu + max_ubatch %zu); use smaller micro-batches "
                             "or a larger max_ubatch",
                             s, per_token * n_of[s], u, occ[i], room_of(i), cfg_.max_budget(),
                             cfg_.max_ubatch);
        occ[i] = std::min(occ[i] + per_token * n_of[s], kept_of(i));  // the call ends there
      }
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
      for (std::size_t h = 0; h < lh_; ++h) {
        touch(ss.seq, l, h);
        // Pooled: compact first, so the new tokens go on top and every lane needs at
        // most the pages of its cells (the pool's size assumes no holes).
        if constexpr (pooled) close_holes(ss.seq, l, h);
      }
  for (std::size_t j = 0; j < ub.size(); ++j) {
    const seq_id s = pl.seqs[pl.token_seq[j]].seq;
    for (std::size_t l = 0; l < L; ++l)
      for (std::size_t h = 0; h < lh_; ++h) {
        lane& ln = mut_lane(s, l, h);
        const std::size_t slot = first_free_slot(s, l, h, 0);  // prepare() made sure of one
        if (slot >= ln.top) {
          ln.top = slot + 1;
          fit_pages(s, l, h);
        }
        save_row(s, l, h, slot);
        ln.pos[slot] = ub.pos[j];
        ++ln.live;
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
  if (ln.live == ln.top) return;
  std::size_t i = 0, j = ln.top;
  while (true) {
    while (i < j && ln.pos[i] >= 0) ++i;
    while (j > i && ln.pos[j - 1] < 0) --j;
    if (j <= i + 1) break;
    move_slot(s, layer, head, j - 1, i);
    --j;
  }
  recount_below_top(ln);
  fit_pages(s, layer, head);
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
        recount_below_top(ln);
        fit_pages(q, l, h);
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
    const std::size_t pool_cells = lh_ * (cfg_.budget_of(l) + cfg_.max_ubatch);
    for (std::size_t h = 0; h < lh_; ++h) {
      const lane &a = lane_of(src, l, h), &b = lane_of(dst, l, h);
      std::size_t in = 0, keep = 0;
      for (pos_t p : a.pos) in += p >= 0 && r.contains(p);
      for (pos_t p : b.pos) keep += p >= 0 && !r.contains(p);
      pool += in + keep;
      const std::size_t room = pooled ? pool_cells : b.pos.size();
      if (pooled ? pool > room : in + keep > room)
        return make_status(status_code::no_space,
                           "seq_cp: sequence %d would hold %zu cells in layer %zu, capacity %zu",
                           dst, pooled ? pool : in + keep, l, room);
    }
  }
  for (std::size_t l = 0; l < L; ++l)
    for (std::size_t h = 0; h < lh_; ++h) {
      lane& b = mut_lane(dst, l, h);
      for (pos_t& p : b.pos)
        if (p >= 0 && r.contains(p)) p = -1;
      recount_below_top(b);
      if constexpr (pooled) close_holes(dst, l, h);  // the copies go on top (pages: see apply)
      fit_pages(dst, l, h);
    }
  for (std::size_t l = 0; l < L; ++l)
    for (std::size_t h = 0; h < lh_; ++h) {
      lane& b = mut_lane(dst, l, h);
      const lane& a = lane_of(src, l, h);
      b.stats = a.stats;  // the copy continues src's history (its query statistics)
      std::size_t slot = 0;
      for (std::size_t j = 0; j < a.top; ++j) {
        if (a.pos[j] < 0 || !r.contains(a.pos[j])) continue;
        slot = first_free_slot(dst, l, h, slot);
        if (slot >= b.top) {
          b.top = slot + 1;
          fit_pages(dst, l, h);
        }
        b.pos[slot] = a.pos[j];
        std::copy_n(a.state.begin() + static_cast<std::ptrdiff_t>(j * state_floats), state_floats,
                    b.state.begin() + static_cast<std::ptrdiff_t>(slot * state_floats));
        std::memcpy(k_part(l, dst, slot, h), k_part(l, src, j, h), k_part_bytes());
        key_changed(dst, l, h, slot);
        std::memcpy(v_part(l, dst, slot, h), v_part(l, src, j, h), v_part_bytes());
      }
      recount_below_top(b);
      fit_pages(dst, l, h);
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
      recount_below_top(ln);
      fit_pages(s, l, h);
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
    ln.pages.clear();
  }
  for (std::size_t g = 0; g < free_pages_.size(); ++g) reset_pool(g);
  reset_readers();
  std::fill(pos_max_.begin(), pos_max_.end(), -1);
  if (data)
    for (auto& kv : kv_) kv.zero();
}

template <class P, dtype::kv_element KE, dtype::kv_element VE>
memory_report bounded<P, KE, VE>::report() const {
  memory_report r;
  for (std::size_t l = 0; l < cfg_.shape.n_layer; ++l) {  // each layer its own rows
    const std::size_t rows = kv_[l].size();
    r.layers.push_back({l, "kv-bounded", std::string(dtype::element_traits<KE>::name),
                        std::string(dtype::element_traits<VE>::name), kv_[l].k_row_bytes() * rows,
                        kv_[l].v_row_bytes() * rows});
    r.total_bytes += (kv_[l].k_row_bytes() + kv_[l].v_row_bytes()) * rows;
  }
  r.cells = (kv_[0].size() + lh_ - 1) / lh_;  // layer 0's token cells (rows of one head each)
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
