// The finished prefixes the prefix cache keeps: n_cached spare sequences of the engine,
// after the slots' ones, each holding the tokens of a request that finished (its cells
// shared with seq_cp, nothing computed). They hold at most `budget` tokens together and
// go least recently used first. Their entries live in the scheduler's prefix_index
// beside the running slots', so one lookup sees both.
//
//   kept_prefixes kept(eng, index, n_slots, n_cached, budget, block_tokens);
//   kept.keep(slot_seq, slot_tokens, ++clock);   // when a request finishes
//   while (decode(b) is no_space && kept.drop_least_recent()) ...
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

#include "mnemo/batch/batch.hpp"
#include "mnemo/engine/engine.hpp"
#include "mnemo/serve/prefix_index.hpp"

namespace mnemo::serve {

class kept_prefixes {
 public:
  /// `e` and `index` must outlive this; sequences [first, first + n) are the spares.
  kept_prefixes(engine& e, prefix_index& index, seq_id first, seq_id n, std::size_t budget,
                std::size_t min_tokens)
      : e_(&e),
        index_(&index),
        first_(first),
        end_(first + n),
        budget_(budget),
        min_tokens_(min_tokens) {}

  bool holds(seq_id s) const noexcept { return s >= first_ && s < end_; }

  /// Copies what sequence `from` holds (`tokens`) into a spare sequence, dropping kept
  /// prefixes that it extends and then the least recently used ones to stay under the
  /// budget. Does nothing for fewer than min_tokens or more than the budget.
  void keep(seq_id from, std::span<const token_id> tokens, std::uint64_t stamp) {
    if (first_ == end_ || tokens.size() < min_tokens_ || tokens.size() > budget_) return;
    // A kept prefix that this sequence extends says nothing more: drop it.
    for (seq_id c = first_; c < end_; ++c)
      if (index_->contains(c) && index_->tokens_of(c) <= tokens.size() &&
          index_->longest(tokens, tokens.size(), [c](seq_id h) { return h == c; }).length ==
              index_->tokens_of(c))
        drop(c);
    while (tokens_held() + tokens.size() > budget_)
      if (!drop_least_recent()) return;
    seq_id dst = spare();
    if (dst < 0) {
      if (!drop_least_recent()) return;
      dst = spare();
    }
    if (dst < 0 || !e_->seq_cp(from, dst, 0, static_cast<pos_t>(tokens.size())).is_ok()) {
      if (dst >= 0) (void)e_->seq_rm(dst, -1, -1);
      return;
    }
    index_->assign(dst, tokens, stamp);
  }

  /// Frees the least recently used kept prefix; false when none is kept.
  bool drop_least_recent() {
    const seq_id c = index_->least_recent([this](seq_id h) { return holds(h); });
    if (c < 0) return false;
    drop(c);
    return true;
  }

  std::size_t count() const {
    std::size_t n = 0;
    for (seq_id c = first_; c < end_; ++c) n += index_->contains(c);
    return n;
  }
  std::size_t tokens_held() const {
    std::size_t n = 0;
    for (seq_id c = first_; c < end_; ++c) n += index_->tokens_of(c);
    return n;
  }

 private:
  seq_id spare() const {
    for (seq_id c = first_; c < end_; ++c)
      if (!index_->contains(c)) return c;
    return -1;
  }
  void drop(seq_id c) {
    (void)e_->seq_rm(c, -1, -1);
    index_->erase(c);
  }

  engine* e_;
  prefix_index* index_;
  seq_id first_, end_;
  std::size_t budget_, min_tokens_;
};

}  // namespace mnemo::serve
