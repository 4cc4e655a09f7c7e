// The prefix cache's index: which sequence of the memory holds which token ids at
// positions 0..n-1, in blocks of block_tokens ids. Each holder keeps a chained hash per
// whole block (hash of block b covers blocks 0..b), so a lookup compares one hash per
// block and checks the ids only of the holder it picks. Holders are the running
// requests (their decoded tokens so far) and the finished prefixes kept in spare
// sequences; the scheduler (serve/scheduler.hpp) copies the match with seq_cp.
//
//   prefix_index idx(16);
//   idx.assign(3, tokens, now);                // sequence 3 holds tokens at 0..n-1
//   auto m = idx.longest(prompt, prompt.size() - 1);
//   if (m.length > 0) engine.seq_cp(m.holder, slot, 0, pos_t(m.length));
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <map>
#include <span>
#include <vector>

#include "mnemo/batch/batch.hpp"

namespace mnemo::serve {

class prefix_index {
 public:
  /// @pre block_tokens > 0
  explicit prefix_index(std::uint32_t block_tokens = 16) : block_(block_tokens) {}

  std::uint32_t block_tokens() const noexcept { return block_; }

  /// Sequence `holder` now holds exactly `tokens` at positions 0..size-1.
  void assign(seq_id holder, std::span<const token_id> tokens, std::uint64_t stamp) {
    entry& e = entries_[holder];
    e.tokens.assign(tokens.begin(), tokens.end());
    e.hashes.clear();
    extend_hashes(e);
    e.stamp = stamp;
  }
  /// Sequence `holder` now also holds `more` after what it held.
  void append(seq_id holder, std::span<const token_id> more) {
    entry& e = entries_[holder];
    e.tokens.insert(e.tokens.end(), more.begin(), more.end());
    extend_hashes(e);
  }
  void erase(seq_id holder) { entries_.erase(holder); }
  void touch(seq_id holder, std::uint64_t stamp) {
    if (auto it = entries_.find(holder); it != entries_.end()) it->second.stamp = stamp;
  }

  bool contains(seq_id holder) const { return entries_.contains(holder); }
  std::size_t tokens_of(seq_id holder) const {
    auto it = entries_.find(holder);
    return it == entries_.end() ? 0 : it->second.tokens.size();
  }

  struct match {
    seq_id holder = -1;
    std::size_t length = 0;  // tokens at positions 0..length-1 equal the prompt's
  };

  /// The holder sharing the longest prefix with `prompt`, at most `max_length` tokens;
  /// only holders `eligible(holder)` accepts take part. Ties go to the most recent use.
  template <class Pred>
  match longest(std::span<const token_id> prompt, std::size_t max_length, Pred eligible) const {
    std::vector<std::uint64_t> want;
    for (std::size_t b = 0; (b + 1) * block_ <= prompt.size(); ++b)
      want.push_back(chain(want.empty() ? seed_ : want.back(), prompt.subspan(b * block_, block_)));
    match best;
    std::uint64_t best_stamp = 0;
    for (const auto& [holder, e] : entries_) {
      if (!eligible(holder)) continue;
      std::size_t blocks = 0;
      while (blocks < want.size() && blocks < e.hashes.size() && want[blocks] == e.hashes[blocks])
        ++blocks;
      // Check the ids (a hash may collide), then extend into the next block one by one.
      std::size_t n = 0;
      const std::size_t limit = std::min({prompt.size(), e.tokens.size(), max_length,
                                          (blocks + 1) * static_cast<std::size_t>(block_)});
      while (n < limit && prompt[n] == e.tokens[n]) ++n;
      if (n > best.length || (n == best.length && n > 0 && e.stamp > best_stamp)) {
        best = {holder, n};
        best_stamp = e.stamp;
      }
    }
    return best;
  }
  match longest(std::span<const token_id> prompt, std::size_t max_length) const {
    return longest(prompt, max_length, [](seq_id) { return true; });
  }

  /// The least recently used holder `eligible` accepts; -1 when there is none.
  template <class Pred>
  seq_id least_recent(Pred eligible) const {
    seq_id out = -1;
    std::uint64_t oldest = 0;
    for (const auto& [holder, e] : entries_)
      if (eligible(holder) && (out < 0 || e.stamp < oldest)) {
        out = holder;
        oldest = e.stamp;
      }
    return out;
  }

 private:
  struct entry {
    std::vector<token_id> tokens;
    std::vector<std::uint64_t> hashes;  // chained, one per whole block
    std::uint64_t stamp = 0;
  };

  static constexpr std::uint64_t seed_ = 0x9e3779b97f4a7c15ull;

  // FNV-1a over the ids, seeded by the previous block's hash.
  static std::uint64_t chain(std::uint64_t h, std::span<const token_id> ids) noexcept {
    for (token_id t : ids) {
      h ^= static_cast<std::uint32_t>(t);
      h *= 0x100000001b3ull;
    }
    return h;
  }
  void extend_hashes(entry& e) const {
    for (std::size_t b = e.hashes.size(); (b + 1) * block_ <= e.tokens.size(); ++b)
      e.hashes.push_back(chain(e.hashes.empty() ? seed_ : e.hashes.back(),
                               std::span<const token_id>(e.tokens).subspan(b * block_, block_)));
  }

  std::uint32_t block_;
  std::map<seq_id, entry> entries_;
};

}  // namespace mnemo::serve
