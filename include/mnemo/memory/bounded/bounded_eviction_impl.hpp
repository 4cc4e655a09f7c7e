// bounded's attention side: the views handed to attention, the mass buffers of the
// statistics export, and eviction down to the kept size after attention (the class
// and its documentation are in bounded.hpp).
#pragma once

#include "mnemo/memory/bounded/bounded.hpp"

namespace mnemo::memory {

template <class P, dtype::kv_element KE, dtype::kv_element VE>
void bounded<P, KE, VE>::views(std::size_t layer, std::size_t u, layer_views& out) const {
  start_views(out, layer_window(layer));  // a window model's window masks as on a full cache
  if (u >= plan_.size()) return;
  const planned& pl = plan_[u];
  ++vstats_.calls;
  // Head-major: segments[h * n_seq + k] is lane (sequence k, layer, head h).
  for (std::size_t h = 0; h < lh_; ++h)
    for (const seq_step& ss : pl.seqs) {
      const lane& ln = lane_of(ss.seq, layer, h);
      attention::kv_segment g;
      g.k = k_part(layer, ss.seq, 0, h);
      g.v = v_part(layer, ss.seq, 0, h);
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
  view_per_segment(out);
  out.token_stream.assign(pl.token_seq.begin(), pl.token_seq.end());
}

template <class P, dtype::kv_element KE, dtype::kv_element VE>
bool bounded<P, KE, VE>::stats_sink(std::size_t layer, std::size_t u, attention::mass_sink& sink) {
  if constexpr (!P::uses_attention) {
    (void)layer, (void)u, (void)sink;
    return false;
  } else {
    const planned& pl = plan_[u];
    const std::size_t n_seq = pl.seqs.size(), heads = cfg_.shape.n_head_kv / lh_;
    std::size_t total = 0;
    thread_local std::vector<std::size_t> want, seen;
    want.assign(n_seq, 0);
    mass_off_.assign(lh_ * n_seq, std::numeric_limits<std::size_t>::max());
    for (std::size_t k = 0; k < n_seq; ++k) {
      want[k] = policy_.request(step(pl.seqs[k], layer, 0)).last_rows;
      if (want[k] == 0) continue;
      for (std::size_t h = 0; h < lh_; ++h) {  // [lanes, n_seq] buffers of [heads, top]
        mass_off_[h * n_seq + k] = total;
        total += heads * lane_of(pl.seqs[k].seq, layer, h).top;
      }
    }
    if (total == 0) return false;
    mass_.assign(total, 0.0f);
    mass_ptr_.assign(lh_ * n_seq, nullptr);
    for (std::size_t i = 0; i < mass_ptr_.size(); ++i)
      if (want[i % n_seq] != 0) mass_ptr_[i] = mass_.data() + mass_off_[i];
    // Row flags: the last want[k] tokens of each sequence (micro-batch order).
    rows_.assign(pl.token_seq.size(), 0);
    seen.assign(n_seq, 0);
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
  const std::size_t n_seq = pl.seqs.size();
  for (std::size_t k = 0; k < n_seq; ++k) {
    const seq_step& ss = pl.seqs[k];
    [[maybe_unused]] std::size_t rows = 0;
    if constexpr (P::uses_attention)
      if (had_stats && mass_ptr_.size() == lh_ * n_seq)
        for (std::size_t j = 0; j < pl.token_seq.size(); ++j)
          rows += pl.token_seq[j] == k && rows_[j] != 0;
    for (std::size_t h = 0; h < lh_; ++h) {
      touch(ss.seq, layer, h);
      if constexpr (P::uses_attention) {
        if (rows != 0 && mass_ptr_[h * n_seq + k] != nullptr) {
          lane& ln = mut_lane(ss.seq, layer, h);
          const evict::attention_mass m{mass_ptr_[h * n_seq + k], ln.top,
                                        cfg_.shape.n_head_kv / lh_, rows};
          policy_.on_attention(step(ss, layer, h), view_of(ln), m);
        }
      }
      evict_to_budget(ss, layer, h);
    }
  }
  return {};
}

template <class P, dtype::kv_element KE, dtype::kv_element VE>
void bounded<P, KE, VE>::evict_to_budget(const seq_step& ss, std::size_t layer, std::size_t head) {
  lane& ln = mut_lane(ss.seq, layer, head);
  const std::size_t kept = cfg_.kept();
  if (ln.live <= kept) return;
  const std::size_t n_evict = ln.live - kept;
  const evict::step_info st = step(ss, layer, head);
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
  if (cfg_.positions == position_mode::compact) renumber(ss.seq, layer, head);
}

template <class P, dtype::kv_element KE, dtype::kv_element VE>
void bounded<P, KE, VE>::renumber(seq_id s, std::size_t layer, std::size_t head) {
  lane& ln = mut_lane(s, layer, head);
  cand_.clear();
  for (std::size_t j = 0; j < ln.top; ++j)
    if (ln.pos[j] >= 0) cand_.push_back(static_cast<std::uint32_t>(j));
  std::sort(cand_.begin(), cand_.end(),
            [&](std::uint32_t a, std::uint32_t b) { return ln.pos[a] < ln.pos[b]; });
  for (std::size_t r = 0; r < cand_.size(); ++r) {
    const std::uint32_t j = cand_[r];
    const pos_t delta = static_cast<pos_t>(r) - ln.pos[j];
    if (delta == 0) continue;
    if (cfg_.rope.layout != attention::rope_layout::none) {
      save_row(s, layer, head, j);
      rotate_key(layer, s, j, head, delta);
    }
    ln.pos[j] = static_cast<pos_t>(r);
  }
  pos_max_[static_cast<std::size_t>(s)] = static_cast<pos_t>(cand_.size()) - 1;
}

}  // namespace mnemo::memory
