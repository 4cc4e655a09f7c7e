// Planning, applying and cross-stream copies of memory::split_window: tokens are
// routed to the streams of their sequences; every window decision is the stream's.
#pragma once

#include <algorithm>
#include <cstring>
#include <vector>

#include "mnemo/memory/window/split_window.hpp"

namespace mnemo::memory {

template <dtype::kv_element KE, dtype::kv_element VE>
status split_window<KE, VE>::prepare(std::span<const ubatch_tokens> ubatches) {
  if (applied_)
    return make_status(status_code::invalid_argument,
                       "prepare: a batch is being applied; commit() or rollback() first");
  rollback();  // an unapplied plan is replaced
  std::size_t widest = 0;
  for (std::size_t u = 0; u < ubatches.size(); ++u) {
    MNEMO_RETURN_IF_ERROR(
        check_stream_tokens("prepare", u, ubatches[u], cfg_.n_seq_max, k_coupled));
    widest = std::max(widest, ubatches[u].size());
  }
  if (seq0_.size() < widest) seq0_.assign(widest, seq_set::of(0));
  plan_.resize(ubatches.size());
  std::vector<std::uint32_t> count(streams_.size(), 0);
  for (std::size_t u = 0; u < ubatches.size(); ++u) {
    ubatch_plan& p = plan_[u];
    std::fill(count.begin(), count.end(), 0);
    for (std::size_t j = 0; j < ubatches[u].size(); ++j) {
      const seq_id s = ubatches[u].seqs[j].lowest();
      p.stream.push_back(static_cast<std::uint32_t>(s));
      p.local.push_back(count[idx(s)]++);
    }
    for (seq_id s = 0; s < cfg_.n_seq_max; ++s)
      if (count[idx(s)] != 0) p.ids.push_back(s);
    touched_.insert(touched_.end(), p.ids.begin(), p.ids.end());
  }
  std::sort(touched_.begin(), touched_.end());
  touched_.erase(std::unique(touched_.begin(), touched_.end()), touched_.end());
  // Each touched stream plans every micro-batch: its own tokens as its sequence 0.
  std::vector<std::vector<pos_t>> pos(ubatches.size());
  std::vector<ubatch_tokens> sub(ubatches.size());
  for (std::size_t k = 0; k < touched_.size(); ++k) {
    const seq_id s = touched_[k];
    for (std::size_t u = 0; u < ubatches.size(); ++u) {
      pos[u].clear();
      for (std::size_t j = 0; j < ubatches[u].size(); ++j)
        if (plan_[u].stream[j] == static_cast<std::uint32_t>(s))
          pos[u].push_back(ubatches[u].pos[j]);
      sub[u] = {pos[u], std::span<const seq_set>(seq0_).first(pos[u].size())};
    }
    if (status st = at(s).prepare(sub); !st.is_ok()) {
      rollback();
      return st;
    }
  }
  return {};
}

template <dtype::kv_element KE, dtype::kv_element VE>
status split_window<KE, VE>::apply(std::size_t u, const ubatch_tokens& ub) {
  if (u >= plan_.size() || plan_[u].stream.size() != ub.size())
    return make_status(status_code::invalid_argument,
                       "apply: micro-batch %zu does not match the prepared plan", u);
  MNEMO_RETURN_IF_ERROR(check_stream_tokens("apply", u, ub, cfg_.n_seq_max, k_coupled));
  const ubatch_plan& p = plan_[u];
  for (std::size_t j = 0; j < ub.size(); ++j)
    if (ub.seqs[j].lowest() != static_cast<seq_id>(p.stream[j]))
      return make_status(status_code::invalid_argument,
                         "apply: token %zu of micro-batch %zu names another sequence than planned",
                         j, u);
  for (seq_id s : touched_) {
    pos_scratch_.clear();
    for (std::size_t j = 0; j < ub.size(); ++j)
      if (p.stream[j] == static_cast<std::uint32_t>(s)) pos_scratch_.push_back(ub.pos[j]);
    const ubatch_tokens sub{pos_scratch_,
                            std::span<const seq_set>(seq0_).first(pos_scratch_.size())};
    if (status st = at(s).apply(u, sub); !st.is_ok()) {
      rollback();  // the whole batch, in every stream (as sliding_window and layered)
      return st;
    }
  }
  applied_ = true;
  return {};
}

template <dtype::kv_element KE, dtype::kv_element VE>
status split_window<KE, VE>::seq_cp(seq_id src, seq_id dst, pos_t p0, pos_t p1) {
  MNEMO_RETURN_IF_ERROR(check_seq_cp(src, dst, p0, p1));
  if (src == dst) return {};
  const pos_range r = pos_range::of(p0, p1);
  const pos_t h = copied_horizon(src, dst, r);
  struct cell_ref {
    const window_type* w;
    std::size_t i;
  };
  std::vector<cell_ref> keep;
  const window_type& a = stream(src);
  window_type& b = at(dst);
  for (std::size_t i = 0; i < b.cells().size(); ++i)
    if (!b.cells().empty(i) && !r.contains(b.cells().pos(i))) keep.push_back({&b, i});
  for (std::size_t i = 0; i < a.cells().size(); ++i)
    if (!a.cells().empty(i) && r.contains(a.cells().pos(i))) keep.push_back({&a, i});
  // Rows first: packing dst from cell 0 may overwrite rows it keeps.
  const auto& kv = b.storage();
  const std::size_t n_layer = cfg_.stream.shape.n_layer, kb = kv.k_row_bytes(),
                    vb = kv.v_row_bytes();
  std::vector<std::uint8_t> rows(keep.size() * n_layer * (kb + vb));
  std::vector<std::pair<pos_t, pos_t>> meta;  // (pos, pending shift)
  std::uint8_t* o = rows.data();
  for (const cell_ref& c : keep) {
    meta.push_back({c.w->cells().pos(c.i), c.w->cells().shift(c.i)});
    for (std::size_t l = 0; l < n_layer; ++l, o += kb + vb) {
      std::memcpy(o, c.w->storage().k(l, c.i), kb);
      std::memcpy(o + kb, c.w->storage().v(l, c.i), vb);
    }
  }
  b.clear(false);
  cell_array& cells = b.mutable_cells();
  bool shifted = false;
  const std::uint8_t* in = rows.data();
  for (std::size_t i = 0; i < keep.size(); ++i) {
    cells.restore(i, meta[i].first, seq_set::of(0), meta[i].second);
    shifted = shifted || meta[i].second != 0;
    for (std::size_t l = 0; l < n_layer; ++l, in += kb + vb) {
      std::memcpy(b.storage().k(l, i), in, kb);
      std::memcpy(b.storage().v(l, i), in + kb, vb);
    }
  }
  cells.set_has_shift(shifted);
  b.set_horizon(0, h);
  b.reset_head();
  return {};
}

}  // namespace mnemo::memory
