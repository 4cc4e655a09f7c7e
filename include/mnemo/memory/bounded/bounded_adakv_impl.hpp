// bounded's AdaKV allocation (evict/adakv.hpp; the class is in bounded.hpp): after a
// call, the KV heads of one (sequence, layer) share n_head_kv x kept cells. Each head
// keeps its own top floor(alpha x kept) first, then the rest go to the global top over
// every head's remaining cells. "Top" is the eviction order reversed (unprotected
// before protected, higher score, newer position, higher slot, higher head), a total
// order, so the allocation is deterministic.
//
// The cells that go are the global bottom `excess` (= held - n_head_kv x kept) of the
// heads' remaining cells, and a head's share of them is its own bottom ones: so each
// head contributes at most its `excess` lowest cells as candidates (one pass over its
// cells, scoring each once, as a per-head lane's eviction does), and one partial
// selection over those candidates decides. A decode step (excess = n_head_kv) keeps a
// handful of candidates per head and allocates nothing.
#pragma once

#include "mnemo/memory/bounded/bounded.hpp"

namespace mnemo::memory {

namespace detail {
/// A pooled cell in eviction order (lower: evicted first).
struct pooled_key {
  bool prot;
  float score;
  pos_t pos;
  std::uint32_t slot, head;
  bool operator<(const pooled_key& o) const noexcept {
    if (prot != o.prot) return !prot;
    if (score != o.score) return score < o.score;
    if (pos != o.pos) return pos < o.pos;
    if (slot != o.slot) return slot < o.slot;
    return head < o.head;
  }
};
}  // namespace detail

template <class P, dtype::kv_element KE, dtype::kv_element VE>
void bounded<P, KE, VE>::evict_pooled(const seq_step& ss, std::size_t layer) {
  if constexpr (pooled) {
    using key = detail::pooled_key;
    const std::size_t kept = cfg_.kept(layer), total = lh_ * kept;
    std::size_t live = 0;
    for (std::size_t h = 0; h < lh_; ++h) live += lane_of(ss.seq, layer, h).live;
    if (live <= total) return;  // nothing to evict: each head keeps what it holds
    const std::size_t excess = live - total;
    const auto forced = static_cast<std::size_t>(policy_.alpha * static_cast<double>(kept));
    // Up to this many cells per head are kept in order as they are found; more are
    // buffered and cut back by partial selection.
    constexpr std::size_t k_sorted_cells = 16;
    thread_local std::vector<key> cand, sample;
    cand.clear();
    for (std::size_t h = 0; h < lh_; ++h) {
      lane& ln = mut_lane(ss.seq, layer, h);
      const evict::step_info st = step(ss, layer, h);
      const evict::slot_view v = view_of(ln);
      if constexpr (evict::lane_rescorer<P>)  // fresh scores before anything is chosen
        if (!head_rescored_[h]) policy_.rescore(st, v, lane_keys(layer, ss.seq, h), nullptr);
      // The head's safeguard keeps its top min(forced, live) cells: at most the rest
      // can go, and at most `excess` of them.
      const std::size_t m = std::min(excess, ln.live - std::min(forced, ln.live));
      if (m == 0) continue;
      auto key_with = [&](std::size_t j, float score) {
        return key{static_cast<bool>(policy_.protect(st, v, j)), score, ln.pos[j],
                   static_cast<std::uint32_t>(j), static_cast<std::uint32_t>(h)};
      };
      auto key_of = [&](std::size_t j) {
        return key_with(j, static_cast<float>(policy_.score(st, v, j)));
      };
      // The head's m lowest cells, whatever the slot order. Cells at or below a bound
      // are buffered, and a full buffer is cut back to its m lowest, whose highest is
      // the new bound. The first bound is the m-th lowest of 8m evenly spaced cells
      // (at least the head's m-th lowest), so about live / 8 cells are buffered even
      // when scores fall with the slot, as H2O's do (a dense lane holds its older
      // cells, with more mass, lower): a bound that starts open there buffers every
      // cell and its partial selections were most of adakv<h2o>'s bookkeeping.
      const auto first = static_cast<std::ptrdiff_t>(cand.size());
      const std::size_t cap = cand.size() + std::max<std::size_t>(4 * m, 64);
      bool full = false;
      key bound{};
      if (32 * m <= ln.live) {
        sample.clear();
        const std::size_t n_s = 8 * m;
        for (std::size_t i = 0; i < n_s; ++i) {
          const std::size_t j = i * ln.top / n_s;
          if (ln.pos[j] >= 0) sample.push_back(key_of(j));
        }
        if (sample.size() >= m) {
          std::nth_element(sample.begin(), sample.begin() + static_cast<std::ptrdiff_t>(m - 1),
                           sample.end());
          bound = sample[m - 1];
          full = true;
        }
      }
      auto cut = [&] {
        std::nth_element(cand.begin() + first,
                         cand.begin() + first + static_cast<std::ptrdiff_t>(m - 1), cand.end());
        cand.resize(static_cast<std::size_t>(first) + m);
        bound = cand.back();
        full = true;
      };
      for (std::size_t j = 0; j < ln.top; ++j) {
        if (ln.pos[j] < 0) continue;
        // Under an unprotected bound a higher score is enough to pass a cell over
        // (protected cells rank above every unprotected one): most cells are decided by
        // one load and compare, without their full key.
        const auto score = static_cast<float>(policy_.score(st, v, j));
        if (full && !bound.prot && score > bound.score) continue;
        const key kj = key_with(j, score);
        if (full && bound < kj) continue;
        if (m > k_sorted_cells) {
          cand.push_back(kj);
          if (cand.size() == cap) cut();
          continue;
        }
        // Few cells (a decode step's: one per head): held in order, each insertion
        // drops the highest once m are held, which is then the bound.
        const std::size_t held = cand.size() - static_cast<std::size_t>(first);
        if (held < m) cand.push_back(kj);
        std::size_t i = cand.size() - 1;
        for (; i > static_cast<std::size_t>(first) && kj < cand[i - 1]; --i) cand[i] = cand[i - 1];
        cand[i] = kj;
        if (cand.size() - static_cast<std::size_t>(first) == m) {
          bound = cand.back();
          full = true;
        }
      }
      if (cand.size() - static_cast<std::size_t>(first) > m) cut();
    }
    // The global bottom `excess` of the candidates go.
    if (excess < cand.size())
      std::nth_element(cand.begin(), cand.begin() + static_cast<std::ptrdiff_t>(excess - 1),
                       cand.end());
    const std::size_t n_go = std::min(excess, cand.size());
    if (evict::evict_chunk_of(policy_) > 1) {  // chunked: each head evicts from its share
      head_kept_.resize(lh_);
      for (std::size_t h = 0; h < lh_; ++h) head_kept_[h] = lane_of(ss.seq, layer, h).live;
      for (std::size_t i = 0; i < n_go; ++i) --head_kept_[cand[i].head];
      for (std::size_t h = 0; h < lh_; ++h) {
        evict_to_budget(ss, layer, h, head_kept_[h], true);
        fit_pages(ss.seq, layer, h);
      }
      return;
    }
    head_kept_.assign(lh_, 0);  // now: cells evicted per head
    for (std::size_t i = 0; i < n_go; ++i) {
      lane& ln = mut_lane(ss.seq, layer, cand[i].head);
      ln.pos[cand[i].slot] = -1;
      --ln.live;
      ++head_kept_[cand[i].head];
    }
    for (std::size_t h = 0; h < lh_; ++h) {
      if (head_kept_[h] == 0) continue;
      lane& ln = mut_lane(ss.seq, layer, h);
      while (ln.top > 0 && ln.pos[ln.top - 1] < 0) --ln.top;
      fit_pages(ss.seq, layer, h);
      if (cfg_.positions == position_mode::compact) renumber(ss.seq, layer, h);
    }
  }
}

}  // namespace mnemo::memory
