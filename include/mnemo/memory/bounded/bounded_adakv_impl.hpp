// bounded's AdaKV allocation (evict/adakv.hpp; the class is in bounded.hpp): after a
// call, the KV heads of one (sequence, layer) share n_head_kv x kept cells. Each head
// keeps its own top floor(alpha x kept) first, then the rest go to the global top over
// every head's remaining cells. "Top" is the eviction order reversed (unprotected
// before protected, higher score, newer position, higher slot; slots are unique in
// the pool, so the order is total and the allocation deterministic).
#pragma once

#include "mnemo/memory/bounded/bounded.hpp"

namespace mnemo::memory {

template <class P, dtype::kv_element KE, dtype::kv_element VE>
void bounded<P, KE, VE>::allocate_heads(const seq_step& ss, std::size_t layer) {
  if constexpr (pooled) {
    head_kept_.assign(lh_, 0);
    const std::size_t kept = cfg_.kept(layer), total = lh_ * kept;
    std::size_t live = 0;
    for (std::size_t h = 0; h < lh_; ++h) live += (head_kept_[h] = lane_of(ss.seq, layer, h).live);
    if (live <= total) return;  // nothing to evict: each head keeps what it holds
    struct key {
      bool prot;
      float score;
      pos_t pos;
      std::uint32_t slot, head;
      bool operator<(const key& o) const noexcept {  // lower: evicted first
        if (prot != o.prot) return !prot;
        if (score != o.score) return score < o.score;
        if (pos != o.pos) return pos < o.pos;
        return slot < o.slot;
      }
    };
    thread_local std::vector<key> all, rest;
    all.clear();
    rest.clear();
    const auto forced = static_cast<std::size_t>(policy_.alpha * static_cast<double>(kept));
    std::size_t n_forced = 0;
    for (std::size_t h = 0; h < lh_; ++h) {
      lane& ln = mut_lane(ss.seq, layer, h);
      const evict::step_info st = step(ss, layer, h);
      const evict::slot_view v = view_of(ln);
      const std::size_t first = all.size();
      for (std::size_t j = 0; j < ln.top; ++j)
        if (ln.pos[j] >= 0)
          all.push_back({static_cast<bool>(policy_.protect(st, v, j)),
                         static_cast<float>(policy_.score(st, v, j)), ln.pos[j],
                         static_cast<std::uint32_t>(j), static_cast<std::uint32_t>(h)});
      // The head's safeguard: its own top `forced` cells stay.
      const auto b = all.begin() + static_cast<std::ptrdiff_t>(first);
      const std::size_t f = std::min(forced, ln.live);
      if (f > 0 && f < ln.live)  // the head's top f first (in any order), the rest after
        std::nth_element(b, b + static_cast<std::ptrdiff_t>(f - 1), all.end(),
                         [](const key& x, const key& y) { return y < x; });
      head_kept_[h] = f;
      n_forced += f;
      rest.insert(rest.end(), b + static_cast<std::ptrdiff_t>(f), all.end());
    }
    // The global top of the rest fills the remaining total - n_forced cells.
    const std::size_t more = total > n_forced ? std::min(total - n_forced, rest.size()) : 0;
    if (more < rest.size())
      std::nth_element(rest.begin(), rest.begin() + static_cast<std::ptrdiff_t>(more), rest.end(),
                       [](const key& x, const key& y) { return y < x; });
    for (std::size_t i = 0; i < more; ++i) ++head_kept_[rest[i].head];
  }
}

}  // namespace mnemo::memory
