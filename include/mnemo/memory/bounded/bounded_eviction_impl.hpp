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
  // Head-major: streams[h * n_seq + k] is lane (sequence k, layer, head h): one
  // segment over its slots [0, top), or pooled one per run of consecutive pool pages
  // (the lane's cells only; a run is whole 64-cell kernel blocks but for its last page).
  view_first_.clear();
  for (std::size_t h = 0; h < lh_; ++h)
    for (const seq_step& ss : pl.seqs) {
      const lane& ln = lane_of(ss.seq, layer, h);
      view_first_.push_back(out.segments.size());
      attention::kv_segment g;
      g.k_stride = kv_[layer].k_row_bytes();
      g.v_stride = kv_[layer].v_row_bytes();
      g.owners = nullptr;
      std::size_t j = 0;
      while (j < ln.top) {  // one run: [j, e)
        std::size_t e = ln.top;
        if constexpr (pooled) {
          const unsigned sh = page_shift_[layer];
          std::size_t i = (j >> sh) + 1;
          while ((i << sh) < ln.top && ln.pages[i] == ln.pages[i - 1] + 1) ++i;
          e = std::min(ln.top, i << sh);
        }
        g.k = k_part(layer, ss.seq, j, h);
        g.v = v_part(layer, ss.seq, j, h);
        g.pos = ln.pos.data() + j;
        g.n_cells = e - j;
        out.segments.push_back(g);
        j = e;
      }
      if (ln.top > vstats_.max_cells) {
        vstats_.max_cells = ln.top;
        vstats_.max_new_tokens = ss.n_new;
      }
    }
  view_first_.push_back(out.segments.size());
  views_from_runs(out, view_first_);
  out.token_stream.assign(pl.token_seq.begin(), pl.token_seq.end());
}

template <class P, dtype::kv_element KE, dtype::kv_element VE>
bool bounded<P, KE, VE>::stats_sink(std::size_t layer, std::size_t u, attention::mass_sink& sink) {
  using evict::signal;
  if constexpr (!signals.per_call()) {
    (void)layer, (void)u, (void)sink;
    return false;
  } else {
    const planned& pl = plan_[u];
    const std::size_t n_seq = pl.seqs.size(), heads = cfg_.shape.n_head_kv / lh_;
    const std::size_t n_tok = pl.token_seq.size();
    // lse, logits and queries need the call's geometry (observe_call).
    const bool known = call_.known && call_.layer == layer && call_.u == u;
    want_.assign(n_seq, 0);
    sig_.assign(n_seq, {});
    evict::signal_set any;
    for (std::size_t k = 0; k < n_seq; ++k) {
      const evict::stats_request req = policy_.request(step(pl.seqs[k], layer, 0));
      evict::signal_set sg = req.signals & signals;
      if (!known) sg = sg & signal::mass;
      if (req.last_rows == 0 || sg.empty()) continue;
      want_[k] = req.last_rows;
      sig_[k] = sg;
      any = any | sg;
    }
    if (any.empty()) return false;
    // Row flags: the last want_[k] tokens of each sequence (micro-batch order), and
    // each flagged token's row within its sequence.
    rows_.assign(n_tok, 0);
    rows_of_seq_.assign(n_seq, 0);
    for (std::size_t j = n_tok; j-- > 0;) {
      const std::uint32_t k = pl.token_seq[j];
      if (rows_of_seq_[k] < want_[k]) {
        rows_[j] = 1;
        ++rows_of_seq_[k];
      }
    }
    row_of_.assign(n_tok, 0);
    std::fill(want_.begin(), want_.end(), 0);  // now: rows numbered so far
    for (std::size_t j = 0; j < n_tok; ++j)
      if (rows_[j]) row_of_[j] = static_cast<std::uint32_t>(want_[pl.token_seq[j]]++);
    sink = {};
    sink.rows = rows_.data();
    mass_ptr_.clear();
    if (any.has(signal::mass)) {  // [lanes, n_seq] buffers of [heads, top]
      std::size_t total = 0;
      mass_off_.assign(lh_ * n_seq, 0);
      for (std::size_t h = 0; h < lh_; ++h)
        for (std::size_t k = 0; k < n_seq; ++k) {
          mass_off_[h * n_seq + k] = total;
          if (sig_[k].has(signal::mass)) total += heads * lane_of(pl.seqs[k].seq, layer, h).top;
        }
      mass_.assign(total, 0.0f);
      mass_ptr_.assign(lh_ * n_seq, nullptr);
      for (std::size_t i = 0; i < mass_ptr_.size(); ++i)
        if (sig_[i % n_seq].has(signal::mass)) mass_ptr_[i] = mass_.data() + mass_off_[i];
      sink.mass = std::span<float* const>(mass_ptr_);
    }
    if (any.has(signal::lse)) {
      lse_all_.assign(n_tok * call_.sh.n_head, 0.0f);
      sink.lse = lse_all_.data();
    }
    logit_ptr_.clear();
    if (any.has(signal::logits)) {  // [lanes, n_seq] buffers of [rows, query heads, top]
      const std::size_t qh = call_.sh.n_head / lh_;
      std::size_t total = 0;
      for (std::size_t h = 0; h < lh_; ++h)
        for (std::size_t k = 0; k < n_seq; ++k)
          if (sig_[k].has(signal::logits))
            total += rows_of_seq_[k] * qh * lane_of(pl.seqs[k].seq, layer, h).top;
      logits_.assign(total, -std::numeric_limits<float>::infinity());
      logit_ptr_.assign(lh_ * n_seq, nullptr);
      std::size_t off = 0;
      for (std::size_t h = 0; h < lh_; ++h)
        for (std::size_t k = 0; k < n_seq; ++k)
          if (sig_[k].has(signal::logits)) {
            logit_ptr_[h * n_seq + k] = logits_.data() + off;
            off += rows_of_seq_[k] * qh * lane_of(pl.seqs[k].seq, layer, h).top;
          }
      sink.logits = std::span<float* const>(logit_ptr_);
      sink.logit_row = row_of_.data();
    }
    return true;
  }
}

template <class P, dtype::kv_element KE, dtype::kv_element VE>
evict::attention_signals bounded<P, KE, VE>::lane_signals(const planned& pl, std::size_t k,
                                                          std::size_t layer, std::size_t head,
                                                          const lane& ln) {
  using evict::signal;
  const std::size_t n_seq = pl.seqs.size(), n_tok = pl.token_seq.size(), L = cfg_.shape.n_layer;
  const evict::signal_set sg = sig_[k];
  evict::attention_signals m;
  m.stride = ln.top;
  m.n_head_kv = cfg_.shape.n_head_kv / lh_;
  m.rows = rows_of_seq_[k];
  if (call_.known) {
    m.group = call_.sh.group();
    m.d_k = call_.sh.d_k;
  }
  const std::size_t qh = m.n_head_kv * m.group;  // the lane's query heads
  row_pos_.clear();
  lse_lane_.clear();
  query_lane_.clear();
  for (std::size_t j = 0; j < n_tok; ++j) {
    if (pl.token_seq[j] != k || !rows_[j]) continue;
    row_pos_.push_back(ln.pos[pl.slots[(j * L + layer) * lh_ + head]]);
    if (sg.has(signal::lse)) {
      const float* src = lse_all_.data() + (j * lh_ + head) * qh;  // [n_tokens, n_head]
      lse_lane_.insert(lse_lane_.end(), src, src + qh);
    }
    if (sg.has(signal::query)) {  // q: [n_tokens, n_head, d_k]; the lane's heads
      const float* src = call_.q + (j * call_.sh.n_head + head * qh) * m.d_k;
      query_lane_.insert(query_lane_.end(), src, src + qh * m.d_k);
    }
  }
  m.row_pos = row_pos_.data();
  if (sg.has(signal::mass)) m.mass = mass_ptr_[head * n_seq + k];
  if (sg.has(signal::lse)) m.lse = lse_lane_.data();
  if (sg.has(signal::logits)) m.logits = logit_ptr_[head * n_seq + k];
  if (sg.has(signal::query)) m.query = query_lane_.data();
  return m;
}

template <class P, dtype::kv_element KE, dtype::kv_element VE>
status bounded<P, KE, VE>::after_attention(std::size_t layer, std::size_t u, bool had_stats) {
  if (u >= plan_.size())
    return make_status(status_code::invalid_argument, "bounded: micro-batch %zu is not applied", u);
  const planned& pl = plan_[u];
  const std::size_t n_seq = pl.seqs.size();
  for (std::size_t k = 0; k < n_seq; ++k) {
    const seq_step& ss = pl.seqs[k];
    for (std::size_t h = 0; h < lh_; ++h) {
      touch(ss.seq, layer, h);
      bool rescored = false;
      if constexpr (signals.per_call()) {
        if (had_stats && sig_.size() == n_seq && !sig_[k].empty() && rows_of_seq_[k] != 0) {
          lane& ln = mut_lane(ss.seq, layer, h);
          const evict::attention_signals sg = lane_signals(pl, k, layer, h, ln);
          policy_.on_attention(step(ss, layer, h), view_of(ln), sg);
          if constexpr (evict::lane_rescorer<P>) {  // a call with signals rescores with them
            policy_.rescore(step(ss, layer, h), view_of(ln), lane_keys(layer, ss.seq, h), &sg);
            rescored = true;
          }
        }
      }
      if constexpr (pooled) {
        head_rescored_[h] = rescored;
      } else {
        evict_to_budget(ss, layer, h, cfg_.kept(layer, h), rescored);
      }
    }
    if constexpr (pooled) evict_pooled(ss, layer);  // every head scored: allocate, evict
  }
  call_.known = false;
  return {};
}

template <class P, dtype::kv_element KE, dtype::kv_element VE>
void bounded<P, KE, VE>::evict_to_budget(const seq_step& ss, std::size_t layer, std::size_t head,
                                         std::size_t kept, bool rescored) {
  lane& ln = mut_lane(ss.seq, layer, head);
  if (ln.live <= kept) return;
  const std::size_t n_evict =
      std::min(ln.live, ln.live - kept + evict::evict_chunk_of(policy_) - 1);
  const evict::step_info st = step(ss, layer, head);
  const evict::slot_view v = view_of(ln);
  if constexpr (evict::lane_rescorer<P>)
    if (!rescored) policy_.rescore(st, v, lane_keys(layer, ss.seq, head), nullptr);
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
  auto key_with = [&](std::size_t j, float score) {
    return key{static_cast<bool>(policy_.protect(st, v, j)), score, ln.pos[j],
               static_cast<std::uint32_t>(j)};
  };
  auto key_of = [&](std::size_t j) {
    return key_with(j, static_cast<float>(policy_.score(st, v, j)));
  };
  if (n_evict == 1) {  // a decode step: one linear pass, no scratch
    std::size_t best = ln.top;
    key bk{};
    for (std::size_t j = 0; j < ln.top; ++j) {
      if (ln.pos[j] < 0) continue;
      // Against an unprotected best a higher score loses whatever the cell's
      // protection (protected cells rank above every unprotected one): one load and
      // compare decide most cells, without their full key.
      const auto score = static_cast<float>(policy_.score(st, v, j));
      if (best != ln.top && !bk.prot && score > bk.score) continue;
      const key kj = key_with(j, score);
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
    recount_below_top(ln);
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
    note_move(j, j, ln.pos[j], static_cast<pos_t>(r));
    ln.pos[j] = static_cast<pos_t>(r);
  }
  pos_max_[static_cast<std::size_t>(s)] = static_cast<pos_t>(cand_.size()) - 1;
  report_moves(s, layer, head);
}

}  // namespace mnemo::memory
