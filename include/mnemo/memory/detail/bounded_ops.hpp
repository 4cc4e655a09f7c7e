// bounded's planning, transactions, eviction and sequence operations (the class
// and its documentation are in memory/bounded.hpp).
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
void bounded<P, KE, VE>::touch(seq_id s, std::size_t layer) {
  const std::size_t li = static_cast<std::size_t>(s) * cfg_.shape.n_layer + layer;
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

template <class P, dtype::kv_element KE, dtype::kv_element VE>
void bounded<P, KE, VE>::save_row(seq_id s, std::size_t layer, std::size_t slot) {
  if (!tx_open_) return;
  touch(s, layer);
  snapshot& sn = snaps_[static_cast<std::size_t>(
      snap_of_[static_cast<std::size_t>(s) * cfg_.shape.n_layer + layer])];
  if (sn.pos[slot] < 0 || sn.saved[slot]) return;  // free at the start: nothing to keep
  sn.saved[slot] = 1;
  const std::size_t c = cell_of(s, slot), kb = kv_.k_row_bytes(), vb = kv_.v_row_bytes();
  const std::size_t off = save_bytes_.size();
  save_bytes_.resize(off + kb + vb);
  std::memcpy(save_bytes_.data() + off, kv_.k(layer, c), kb);
  std::memcpy(save_bytes_.data() + off + kb, kv_.v(layer, c), vb);
  saves_.push_back({layer, c, off});
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
    const std::size_t kb = kv_.k_row_bytes(), vb = kv_.v_row_bytes();
    for (const row_save& r : saves_) {
      std::memcpy(kv_.k(r.layer, r.cell), save_bytes_.data() + r.offset, kb);
      std::memcpy(kv_.v(r.layer, r.cell), save_bytes_.data() + r.offset + kb, vb);
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
      occ[static_cast<std::size_t>(s)] =
          std::max(occ[static_cast<std::size_t>(s)], lane_of(s, l).live);
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
      occ[s] = std::min(occ[s] + n_of[s], cfg_.budget);  // the call ends at the budget
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
    pl.slots.assign(ub.size() * cfg_.shape.n_layer, 0);
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
    for (std::size_t l = 0; l < L; ++l) touch(ss.seq, l);
  for (std::size_t j = 0; j < ub.size(); ++j) {
    const seq_id s = pl.seqs[pl.token_seq[j]].seq;
    for (std::size_t l = 0; l < L; ++l) {
      lane& ln = mut_lane(s, l);
      std::size_t slot = 0;
      while (ln.pos[slot] >= 0) ++slot;  // prepare() made sure one is free
      save_row(s, l, slot);
      ln.pos[slot] = ub.pos[j];
      ++ln.live;
      ln.top = std::max(ln.top, slot + 1);
      pl.slots[j * L + l] = static_cast<std::uint32_t>(slot);
    }
    auto& pm = pos_max_[static_cast<std::size_t>(s)];
    pm = std::max(pm, ub.pos[j]);
  }
  for (const seq_step& ss : pl.seqs)
    for (std::size_t l = 0; l < L; ++l) close_holes(ss.seq, l);
  // New tokens took the lowest free slots, so close_holes moves only older cells
  // and the slots in pl.slots stay valid.
  return {};
}

template <class P, dtype::kv_element KE, dtype::kv_element VE>
void bounded<P, KE, VE>::move_slot(seq_id s, std::size_t layer, std::size_t from, std::size_t to) {
  save_row(s, layer, to);
  lane& ln = mut_lane(s, layer);
  const std::size_t cf = cell_of(s, from), ct = cell_of(s, to);
  std::memcpy(kv_.k(layer, ct), kv_.k(layer, cf), kv_.k_row_bytes());
  std::memcpy(kv_.v(layer, ct), kv_.v(layer, cf), kv_.v_row_bytes());
  ln.pos[to] = ln.pos[from];
  for (std::size_t i = 0; i < state_floats; ++i)
    ln.state[to * state_floats + i] = ln.state[from * state_floats + i];
  ln.pos[from] = -1;
}

template <class P, dtype::kv_element KE, dtype::kv_element VE>
void bounded<P, KE, VE>::close_holes(seq_id s, std::size_t layer) {
  lane& ln = mut_lane(s, layer);
  if (ln.live == ln.top) return;
  std::size_t i = 0, j = ln.top;
  while (true) {
    while (i < j && ln.pos[i] >= 0) ++i;
    while (j > i && ln.pos[j - 1] < 0) --j;
    if (j <= i + 1) break;
    move_slot(s, layer, j - 1, i);
    --j;
  }
  recount(ln);
}

// ---- attention statistics and eviction --------------------------------------------------

template <class P, dtype::kv_element KE, dtype::kv_element VE>
void bounded<P, KE, VE>::views(std::size_t layer, std::size_t u, layer_views& out) const {
  out.segments.clear();
  out.streams.clear();
  out.token_stream.clear();
  if (u >= plan_.size()) return;
  const planned& pl = plan_[u];
  ++vstats_.calls;
  for (const seq_step& ss : pl.seqs) {
    const lane& ln = lane_of(ss.seq, layer);
    const std::size_t c = cell_of(ss.seq, 0);
    attention::kv_segment g;
    g.k = kv_.k(layer, c);
    g.v = kv_.v(layer, c);
    g.k_stride = kv_.k_row_bytes();
    g.v_stride = kv_.v_row_bytes();
    g.pos = ln.pos.data();
    g.owners = nullptr;
    g.n_cells = ln.top;
    out.segments.push_back(g);
    if (ln.top > vstats_.max_cells) {
      vstats_.max_cells = ln.top;
      vstats_.max_new_tokens = ss.n_new;
    }
  }
  for (std::size_t k = 0; k < pl.seqs.size(); ++k)
    out.streams.push_back(
        attention::kv_view{std::span<const attention::kv_segment>(out.segments).subspan(k, 1)});
  for (std::uint32_t t : pl.token_seq) out.token_stream.push_back(t);
}

template <class P, dtype::kv_element KE, dtype::kv_element VE>
bool bounded<P, KE, VE>::stats_sink(std::size_t layer, std::size_t u, attention::mass_sink& sink) {
  if constexpr (!P::uses_attention) {
    (void)layer, (void)u, (void)sink;
    return false;
  } else {
    const planned& pl = plan_[u];
    const std::size_t H = cfg_.shape.n_head_kv;
    mass_off_.assign(pl.seqs.size(), std::numeric_limits<std::size_t>::max());
    std::size_t total = 0;
    std::vector<std::size_t> want(pl.seqs.size(), 0);
    for (std::size_t k = 0; k < pl.seqs.size(); ++k) {
      want[k] = policy_.request(step(pl.seqs[k], layer)).last_rows;
      if (want[k] == 0) continue;
      mass_off_[k] = total;
      total += H * lane_of(pl.seqs[k].seq, layer).top;
    }
    if (total == 0) return false;
    mass_.assign(total, 0.0f);
    mass_ptr_.assign(pl.seqs.size(), nullptr);
    for (std::size_t k = 0; k < pl.seqs.size(); ++k)
      if (want[k] != 0) mass_ptr_[k] = mass_.data() + mass_off_[k];
    // Row flags: the last want[k] tokens of each sequence (micro-batch order).
    rows_.assign(pl.token_seq.size(), 0);
    std::vector<std::size_t> seen(pl.seqs.size(), 0);
    for (std::size_t j = pl.token_seq.size(); j-- > 0;) {
      const std::uint32_t k = pl.token_seq[j];
      if (seen[k] < want[k]) {
        rows_[j] = 1;
        ++seen[k];
      }
    }
    sink.mass = std::span<float* const>(mass_ptr_);
    sink.rows = rows_.data();
    sink.lse = nullptr;
    return true;
  }
}

template <class P, dtype::kv_element KE, dtype::kv_element VE>
status bounded<P, KE, VE>::after_attention(std::size_t layer, std::size_t u, bool had_stats) {
  if (u >= plan_.size())
    return make_status(status_code::invalid_argument, "bounded: micro-batch %zu is not applied", u);
  const planned& pl = plan_[u];
  for (std::size_t k = 0; k < pl.seqs.size(); ++k) {
    const seq_step& ss = pl.seqs[k];
    touch(ss.seq, layer);
    if constexpr (P::uses_attention) {
      if (had_stats && mass_ptr_.size() == pl.seqs.size() && mass_ptr_[k] != nullptr) {
        lane& ln = mut_lane(ss.seq, layer);
        std::size_t rows = 0;
        for (std::size_t j = 0; j < pl.token_seq.size(); ++j)
          rows += pl.token_seq[j] == k && rows_[j] != 0;
        const evict::attention_mass m{mass_ptr_[k], ln.top, cfg_.shape.n_head_kv, rows};
        policy_.on_attention(step(ss, layer), view_of(ln), m);
      }
    }
    evict_to_budget(ss, layer);
  }
  return {};
}

template <class P, dtype::kv_element KE, dtype::kv_element VE>
void bounded<P, KE, VE>::evict_to_budget(const seq_step& ss, std::size_t layer) {
  lane& ln = mut_lane(ss.seq, layer);
  if (ln.live <= cfg_.budget) return;
  const std::size_t n_evict = ln.live - cfg_.budget;
  const evict::step_info st = step(ss, layer);
  const evict::slot_view v = view_of(ln);
  // Order: unprotected before protected, lower score, older position, lower slot.
  struct key {
    bool prot;
    float score;
    pos_t pos;
    std::uint32_t slot;
    bool operator<(const key& o) const noexcept {
      if (prot != o.prot) return !prot;
      if (score != o.score) return score < o.score;
      if (pos != o.pos) return pos < o.pos;
      return slot < o.slot;
    }
  };
  auto key_of = [&](std::size_t j) {
    return key{static_cast<bool>(policy_.protect(st, v, j)),
               static_cast<float>(policy_.score(st, v, j)), ln.pos[j],
               static_cast<std::uint32_t>(j)};
  };
  if (n_evict == 1) {  // a decode step: one linear pass, no scratch
    std::size_t best = ln.top;
    key bk{};
    for (std::size_t j = 0; j < ln.top; ++j) {
      if (ln.pos[j] < 0) continue;
      const key kj = key_of(j);
      if (best == ln.top || kj < bk) {
        best = j;
        bk = kj;
      }
    }
    free_slot(ln, best);
  } else {
    thread_local std::vector<key> keys;
    keys.clear();
    for (std::size_t j = 0; j < ln.top; ++j)
      if (ln.pos[j] >= 0) keys.push_back(key_of(j));
    std::nth_element(keys.begin(), keys.begin() + static_cast<std::ptrdiff_t>(n_evict - 1),
                     keys.end());
    for (std::size_t i = 0; i < n_evict; ++i) ln.pos[keys[i].slot] = -1;
    recount(ln);
  }
  if (cfg_.positions == position_mode::compact) renumber(ss.seq, layer);
}

template <class P, dtype::kv_element KE, dtype::kv_element VE>
void bounded<P, KE, VE>::rotate_key(std::size_t layer, std::size_t cell,
                                    const attention::rope_table& t) {
  const auto& sh = cfg_.shape;
  row_f32_.resize(sh.n_head_kv * sh.d_k);
  dtype::decode_row<simd::scalar>(kv_.k(layer, cell), row_f32_.data(), row_f32_.size());
  for (std::size_t h = 0; h < sh.n_head_kv; ++h)
    attention::rope_apply(cfg_.rope, t, row_f32_.data() + h * sh.d_k);
  dtype::encode_row<simd::scalar>(row_f32_.data(), kv_.k(layer, cell), row_f32_.size());
}

template <class P, dtype::kv_element KE, dtype::kv_element VE>
void bounded<P, KE, VE>::renumber(seq_id s, std::size_t layer) {
  lane& ln = mut_lane(s, layer);
  cand_.clear();
  for (std::size_t j = 0; j < ln.top; ++j)
    if (ln.pos[j] >= 0) cand_.push_back(static_cast<std::uint32_t>(j));
  std::sort(cand_.begin(), cand_.end(),
            [&](std::uint32_t a, std::uint32_t b) { return ln.pos[a] < ln.pos[b]; });
  pos_t last_delta = 0;
  std::vector<attention::rope_table> table;  // the current delta's angles
  for (std::size_t r = 0; r < cand_.size(); ++r) {
    const std::uint32_t j = cand_[r];
    const pos_t delta = static_cast<pos_t>(r) - ln.pos[j];
    if (delta == 0) continue;
    if (cfg_.rope.layout != attention::rope_layout::none) {
      if (table.empty() || delta != last_delta) {
        table.clear();
        table.emplace_back(cfg_.rope, static_cast<double>(delta));
        last_delta = delta;
      }
      save_row(s, layer, j);
      rotate_key(layer, cell_of(s, j), table.front());
    }
    ln.pos[j] = static_cast<pos_t>(r);
  }
  pos_max_[static_cast<std::size_t>(s)] = static_cast<pos_t>(cand_.size()) - 1;
}

// ---- sequence operations ------------------------------------------------------------------

template <class P, dtype::kv_element KE, dtype::kv_element VE>
status bounded<P, KE, VE>::seq_rm(seq_id s, pos_t p0, pos_t p1) {
  MNEMO_RETURN_IF_ERROR(check_seq(s, cfg_.n_seq_max, "seq_rm", true));
  MNEMO_RETURN_IF_ERROR(no_open_batch("seq_rm"));
  const pos_range r = pos_range::of(p0, p1);
  for (seq_id q = 0; q < cfg_.n_seq_max; ++q) {
    if (s >= 0 && q != s) continue;
    for (std::size_t l = 0; l < cfg_.shape.n_layer; ++l) {
      lane& ln = mut_lane(q, l);
      for (std::size_t j = 0; j < ln.top; ++j)
        if (ln.pos[j] >= 0 && r.contains(ln.pos[j])) ln.pos[j] = -1;
      recount(ln);
    }
    pos_t& pm = pos_max_[static_cast<std::size_t>(q)];
    if (pm >= 0 && r.p0 <= pm && pm < r.p1) pm = r.p0 - 1;  // the history now ends at p0
  }
  return {};
}

template <class P, dtype::kv_element KE, dtype::kv_element VE>
status bounded<P, KE, VE>::seq_cp(seq_id src, seq_id dst, pos_t p0, pos_t p1) {
  MNEMO_RETURN_IF_ERROR(check_seq(src, cfg_.n_seq_max, "seq_cp"));
  MNEMO_RETURN_IF_ERROR(check_seq(dst, cfg_.n_seq_max, "seq_cp"));
  MNEMO_RETURN_IF_ERROR(no_open_batch("seq_cp"));
  if (src == dst) return {};
  const pos_range r = pos_range::of(p0, p1);
  const std::size_t L = cfg_.shape.n_layer;
  for (std::size_t l = 0; l < L; ++l) {  // check first: nothing changes on no_space
    const lane &a = lane_of(src, l), &b = lane_of(dst, l);
    std::size_t in = 0, keep = 0;
    for (pos_t p : a.pos) in += p >= 0 && r.contains(p);
    for (pos_t p : b.pos) keep += p >= 0 && !r.contains(p);
    if (in + keep > capacity())
      return make_status(status_code::no_space,
                         "seq_cp: sequence %d would hold %zu cells in layer %zu, capacity %zu", dst,
                         in + keep, l, capacity());
  }
  pos_t copied_max = -1;
  for (std::size_t l = 0; l < L; ++l) {
    lane& b = mut_lane(dst, l);
    for (pos_t& p : b.pos)
      if (p >= 0 && r.contains(p)) p = -1;
    const lane& a = lane_of(src, l);
    std::size_t slot = 0;
    for (std::size_t j = 0; j < a.top; ++j) {
      if (a.pos[j] < 0 || !r.contains(a.pos[j])) continue;
      while (b.pos[slot] >= 0) ++slot;
      b.pos[slot] = a.pos[j];
      std::copy_n(a.state.begin() + static_cast<std::ptrdiff_t>(j * state_floats), state_floats,
                  b.state.begin() + static_cast<std::ptrdiff_t>(slot * state_floats));
      std::memcpy(kv_.k(l, cell_of(dst, slot)), kv_.k(l, cell_of(src, j)), kv_.k_row_bytes());
      std::memcpy(kv_.v(l, cell_of(dst, slot)), kv_.v(l, cell_of(src, j)), kv_.v_row_bytes());
      copied_max = std::max(copied_max, a.pos[j]);
    }
    recount(b);
  }
  pos_t& pd = pos_max_[static_cast<std::size_t>(dst)];
  if (pd >= 0 && r.p0 <= pd && pd < r.p1) pd = r.p0 - 1;
  const pos_t ps = pos_max_[static_cast<std::size_t>(src)];
  pd = std::max(pd, r.contains(ps) ? ps : copied_max);
  return {};
}

template <class P, dtype::kv_element KE, dtype::kv_element VE>
status bounded<P, KE, VE>::seq_keep(seq_id s) {
  MNEMO_RETURN_IF_ERROR(check_seq(s, cfg_.n_seq_max, "seq_keep"));
  MNEMO_RETURN_IF_ERROR(no_open_batch("seq_keep"));
  for (seq_id q = 0; q < cfg_.n_seq_max; ++q)
    if (q != s) MNEMO_RETURN_IF_ERROR(seq_rm(q, -1, -1));
  return {};
}

template <class P, dtype::kv_element KE, dtype::kv_element VE>
template <class NewPos>
status bounded<P, KE, VE>::shift_positions(seq_id s, pos_t p0, pos_t p1, const char* op,
                                           NewPos new_pos) {
  MNEMO_RETURN_IF_ERROR(check_seq(s, cfg_.n_seq_max, op));
  MNEMO_RETURN_IF_ERROR(no_open_batch(op));
  if (!cfg_.shift_supported)
    return make_status(status_code::unsupported, "%s: this memory's model cannot shift positions",
                       op);
  const pos_range r = pos_range::of(p0, p1);
  for (std::size_t l = 0; l < cfg_.shape.n_layer; ++l) {
    lane& ln = mut_lane(s, l);
    for (std::size_t j = 0; j < ln.top; ++j) {
      const pos_t p = ln.pos[j];
      if (p < 0 || !r.contains(p)) continue;
      const pos_t q = new_pos(p);
      if (q < 0) {
        ln.pos[j] = -1;
        continue;
      }
      if (q != p && cfg_.rope.layout != attention::rope_layout::none)
        rotate_key(l, cell_of(s, j), attention::rope_table(cfg_.rope, static_cast<double>(q - p)));
      ln.pos[j] = q;
    }
    recount(ln);
  }
  pos_t& pm = pos_max_[static_cast<std::size_t>(s)];
  if (pm >= 0 && r.contains(pm)) pm = std::max<pos_t>(-1, new_pos(pm));
  return {};
}

template <class P, dtype::kv_element KE, dtype::kv_element VE>
status bounded<P, KE, VE>::seq_add(seq_id s, pos_t p0, pos_t p1, pos_t delta) {
  const pos_t top = seq_pos_max(s);
  if (delta > 0 && top >= 0 && top > std::numeric_limits<pos_t>::max() - delta &&
      pos_range::of(p0, p1).p0 <= top)
    return make_status(status_code::out_of_range,
                       "seq_add: position %d + %d of sequence %d overflows the position type", top,
                       delta, s);
  if (delta == 0) return check_seq(s, cfg_.n_seq_max, "seq_add");
  return shift_positions(s, p0, p1, "seq_add", [delta](pos_t p) { return p + delta; });
}

template <class P, dtype::kv_element KE, dtype::kv_element VE>
status bounded<P, KE, VE>::seq_div(seq_id s, pos_t p0, pos_t p1, int d) {
  if (d <= 0)
    return make_status(status_code::invalid_argument, "seq_div: divisor %d must be > 0", d);
  if (d == 1) return check_seq(s, cfg_.n_seq_max, "seq_div");
  return shift_positions(s, p0, p1, "seq_div", [d](pos_t p) { return p / d; });
}

template <class P, dtype::kv_element KE, dtype::kv_element VE>
void bounded<P, KE, VE>::clear(bool data) {
  rollback();
  for (lane& ln : lanes_) {
    std::fill(ln.pos.begin(), ln.pos.end(), -1);
    ln.live = ln.top = 0;
  }
  std::fill(pos_max_.begin(), pos_max_.end(), -1);
  if (data) kv_.zero();
}

template <class P, dtype::kv_element KE, dtype::kv_element VE>
memory_report bounded<P, KE, VE>::report() const {
  memory_report r;
  const std::size_t cells = kv_.size();
  for (std::size_t l = 0; l < cfg_.shape.n_layer; ++l) {
    r.layers.push_back({l, "kv-bounded", std::string(dtype::element_traits<KE>::name),
                        std::string(dtype::element_traits<VE>::name), kv_.k_row_bytes() * cells,
                        kv_.v_row_bytes() * cells});
    r.total_bytes += (kv_.k_row_bytes() + kv_.v_row_bytes()) * cells;
  }
  r.cells = cells;
  for (seq_id s = 0; s < cfg_.n_seq_max; ++s) {
    const std::size_t n = lane_of(s, 0).live;  // layer 0 stands for all
    r.cells_used += n;
    if (n) r.cells_per_seq.push_back({s, n});
  }
  return r;
}

}  // namespace mnemo::memory
