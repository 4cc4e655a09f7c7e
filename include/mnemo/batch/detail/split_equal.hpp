// batch_splitter::split_equal (docs/batch.md), the split every split-stream, recurrent and
// hybrid memory uses. Steps as in the spec: 1. refuse coupled tokens when sequential;
// 2. pick disjoint sets in batch order (at most n_ubatch: D-10); 3. take one token per
// set round-robin while all sets have one left and the next round fits; 4. with
// n_keep_tail, keep the longest prefix of sets that end here or keep >= n_keep_tail
// tokens for later; 5. emit set by set.
#pragma once

#if !defined(MNEMO_BATCH_DETAIL_OK_)
#error "mnemo/batch/detail/ headers are internal: include mnemo/batch/split.hpp"
#endif

#include <cstdint>
#include <vector>

namespace mnemo {

inline result<ubatch> batch_splitter::split_equal(std::uint32_t n_ubatch, bool sequential,
                                                  std::uint32_t n_keep_tail) {
  if (n_ubatch == 0) return zero_ubatch("split_equal");
  if (n_keep_tail != 0 && n_keep_tail >= n_ubatch)
    return make_status(status_code::invalid_argument,
                       "split_equal: n_keep_tail = %u needs n_ubatch > n_keep_tail (n_ubatch = %u)",
                       n_keep_tail, n_ubatch);
  if (sequential && vb_->has_coupled()) {
    std::uint32_t i = 0;
    while (i + 1 < n_tokens() && vb_->seqs(i).size() < 2) ++i;
    return make_status(status_code::unsupported,
                       "token %u belongs to sequences %s: a sequential split (one stream per "
                       "sequence) cannot place coupled tokens; use a unified memory, or decode "
                       "the shared prefix on one sequence and copy it with seq_cp",
                       i, batch_detail::format_set(vb_->set_of(i)).c_str());
  }

  // 2. The participating sets (groups), in order of their first unused token.
  struct pick {
    std::uint32_t g;
    std::uint32_t cur;                 // position in group_tokens(g): next candidate
    std::vector<std::uint32_t> taken;  // positions in group_tokens(g) taken this call
  };
  std::vector<pick> picks;
  seq_set taken_ids;
  seq_id last = -1;
  for (std::uint32_t i = first_free_; i < n_tokens() && picks.size() < n_ubatch; ++i) {
    if (used_[i]) continue;
    const std::uint32_t g = vb_->group_of(i);
    if (!batch_detail::is_disjoint(vb_->group_set(g), taken_ids)) continue;
    if (sequential && !picks.empty() && vb_->primary(i) != last + 1) continue;
    picks.push_back({g, group_first_[g], {}});
    batch_detail::merge_into(taken_ids, vb_->group_set(g));
    last = vb_->primary(i);
  }
  if (picks.empty()) return ubatch{};
  const auto n_sets = static_cast<std::uint32_t>(picks.size());

  const auto take_next = [&](pick& p) {
    const auto toks = vb_->group_tokens(p.g);
    while (used_[toks[p.cur]]) ++p.cur;
    take(toks[p.cur]);
    p.taken.push_back(p.cur++);
  };
  const auto give_back_last = [&](pick& p) {
    const std::uint32_t k = p.taken.back();
    p.taken.pop_back();
    give_back(vb_->group_tokens(p.g)[k]);
    p.cur = k;
  };
  const auto remaining = [&](const pick& p) { return group_unused_[p.g]; };

  // 3. Round-robin, at least once (n_sets <= n_ubatch, so the first round fits).
  for (std::uint32_t per = 1;; ++per) {
    for (auto& p : picks) take_next(p);
    bool can_expand = (std::uint64_t{per} + 1) * n_sets <= n_ubatch;
    for (const auto& p : picks) can_expand = can_expand && remaining(p) > 0;
    if (!can_expand) break;
  }

  // 4. Keep whole tails together.
  std::uint32_t n_keep = n_sets;
  if (n_keep_tail > 0) {
    n_keep = 0;
    while (n_keep < n_sets &&
           (remaining(picks[n_keep]) == 0 || remaining(picks[n_keep]) >= n_keep_tail))
      ++n_keep;
    if (n_keep == 0) {
      // No set qualifies: resolve the first alone, by finishing it when the rest fits,
      // else by leaving exactly enough for a later ubatch to hold the whole tail.
      pick& p = picks[0];
      if (p.taken.size() + remaining(p) <= n_ubatch) {
        while (remaining(p) > 0) take_next(p);
      } else {
        while (remaining(p) < n_keep_tail) give_back_last(p);
      }
      n_keep = 1;
    }
    for (std::uint32_t s = n_keep; s < n_sets; ++s)
      while (!picks[s].taken.empty()) give_back_last(picks[s]);
  }

  // 5. Emit set by set.
  std::vector<std::uint32_t> idx;
  std::vector<seq_set> sets;
  idx.reserve(std::size_t{n_keep} * picks[0].taken.size());
  for (std::uint32_t s = 0; s < n_keep; ++s) {
    const auto toks = vb_->group_tokens(picks[s].g);
    for (std::uint32_t k : picks[s].taken) idx.push_back(toks[k]);
    sets.push_back(vb_->group_set(picks[s].g));
    group_first_[picks[s].g] = picks[s].cur;
  }
  const auto per = static_cast<std::uint32_t>(picks[0].taken.size());
  MNEMO_DASSERT(idx.size() == std::size_t{per} * n_keep);
  return emit(std::move(idx), n_keep, per, true, std::move(sets));
}

}  // namespace mnemo
