// bounded's sequence operations, clear and report (the class and its documentation
// are in memory/bounded.hpp). Every operation runs over all lanes of a sequence:
// one per layer, or one per (layer, KV head).
#pragma once

#if !defined(MNEMO_MEMORY_DETAIL_OK_)
#error "mnemo/memory/detail/ headers are internal: include mnemo/memory/bounded.hpp"
#endif

namespace mnemo::memory {

template <class P, dtype::kv_element KE, dtype::kv_element VE>
status bounded<P, KE, VE>::seq_rm(seq_id s, pos_t p0, pos_t p1) {
  MNEMO_RETURN_IF_ERROR(check_seq(s, cfg_.n_seq_max, "seq_rm", true));
  MNEMO_RETURN_IF_ERROR(no_open_batch("seq_rm"));
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
  for (std::size_t l = 0; l < L; ++l)  // check first: nothing changes on no_space
    for (std::size_t h = 0; h < lh_; ++h) {
      const lane &a = lane_of(src, l, h), &b = lane_of(dst, l, h);
      std::size_t in = 0, keep = 0;
      for (pos_t p : a.pos) in += p >= 0 && r.contains(p);
      for (pos_t p : b.pos) keep += p >= 0 && !r.contains(p);
      if (in + keep > capacity())
        return make_status(status_code::no_space,
                           "seq_cp: sequence %d would hold %zu cells in layer %zu, capacity %zu",
                           dst, in + keep, l, capacity());
    }
  pos_t copied_max = -1;
  for (std::size_t l = 0; l < L; ++l)
    for (std::size_t h = 0; h < lh_; ++h) {
      lane& b = mut_lane(dst, l, h);
      for (pos_t& p : b.pos)
        if (p >= 0 && r.contains(p)) p = -1;
      const lane& a = lane_of(src, l, h);
      std::size_t slot = 0;
      for (std::size_t j = 0; j < a.top; ++j) {
        if (a.pos[j] < 0 || !r.contains(a.pos[j])) continue;
        while (b.pos[slot] >= 0) ++slot;
        b.pos[slot] = a.pos[j];
        std::copy_n(a.state.begin() + static_cast<std::ptrdiff_t>(j * state_floats), state_floats,
                    b.state.begin() + static_cast<std::ptrdiff_t>(slot * state_floats));
        std::memcpy(k_part(l, dst, slot, h), k_part(l, src, j, h), k_part_bytes());
        std::memcpy(v_part(l, dst, slot, h), v_part(l, src, j, h), v_part_bytes());
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
          rotate_key(l, s, j, h, attention::rope_table(cfg_.rope, static_cast<double>(q - p)));
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
  r.cells = cells / lh_;  // token cells (per KV head: rows of one head each)
  for (seq_id s = 0; s < cfg_.n_seq_max; ++s) {
    std::size_t n = 0;  // layer 0 stands for all; per head: its fullest lane
    for (std::size_t h = 0; h < lh_; ++h) n = std::max(n, lane_of(s, 0, h).live);
    r.cells_used += n;
    if (n) r.cells_per_seq.push_back({s, n});
  }
  return r;
}

}  // namespace mnemo::memory
