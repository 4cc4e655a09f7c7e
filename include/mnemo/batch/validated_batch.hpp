// A batch that passed validate(): every position and output flag is filled in, and the
// data the splitters and the memory need is derived once (docs/batch.md).
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "mnemo/base/assert.hpp"
#include "mnemo/base/seq_set.hpp"
#include "mnemo/batch/batch.hpp"

namespace mnemo {

namespace batch_detail {
struct validator;
}

/// Read-only. Refers to the batch it was made from, which must outlive it and stay
/// unchanged; ubatches and splitters refer to it in turn, so do not move it while
/// they are alive. Only validate() makes one.
class validated_batch {
 public:
  /// The batch as the caller built it (positions and outputs possibly omitted there).
  const batch& source() const noexcept { return *src_; }
  std::uint32_t n_tokens() const noexcept { return n_tokens_; }
  /// The bound on sequence ids this batch was validated against.
  std::uint32_t n_seq_max() const noexcept { return n_seq_max_; }

  // ---- per token (i < n_tokens) -----------------------------------------------

  bool has_embeddings() const noexcept { return src_->has_embeddings(); }
  std::uint32_t n_embd() const noexcept { return src_->n_embd(); }
  /// [n_tokens] vocabulary ids; empty for an embedding batch.
  std::span<const token_id> tokens() const noexcept { return src_->tokens(); }
  token_id token(std::uint32_t i) const noexcept { return src_->tokens()[i]; }
  /// [n_embd] embedding row of token i.  @pre has_embeddings()
  std::span<const float> embd(std::uint32_t i) const noexcept { return src_->embd(i); }
  /// [n_tokens] positions, auto-filled ones included.
  std::span<const pos_t> positions() const noexcept { return pos_; }
  pos_t pos(std::uint32_t i) const noexcept { return pos_[i]; }
  /// The sequence ids of token i in the order given; the first is the primary id.
  std::span<const seq_id> seqs(std::uint32_t i) const noexcept { return src_->seqs(i); }
  seq_id primary(std::uint32_t i) const noexcept { return src_->primary(i); }
  /// The sequence set of token i.
  const seq_set& set_of(std::uint32_t i) const noexcept { return sets_[i]; }
  /// [n_tokens] 1 where the token produces an output (logits or an embedding).
  std::span<const std::uint8_t> outputs() const noexcept { return out_; }
  bool output(std::uint32_t i) const noexcept { return out_[i] != 0; }
  std::uint32_t n_outputs() const noexcept { return n_outputs_; }
  /// True when the context computes embeddings for all tokens but the caller flagged
  /// only some: every token was made an output (llama.cpp logs a warning here).
  bool outputs_forced() const noexcept { return outputs_forced_; }

  // ---- per sequence (0 <= s < n_seq_max) -------------------------------------

  /// The sequence ids present in the batch, sorted, unique.
  std::span<const seq_id> seq_id_unq() const noexcept { return seq_unq_; }
  /// The index of s in seq_id_unq(), or -1 when s has no token in the batch.
  std::int32_t seq_idx(seq_id s) const noexcept { return in(s) ? seq_idx_[s] : -1; }
  /// The smallest / largest position of s in this batch, -1 when absent.
  pos_t seq_pos_min(seq_id s) const noexcept { return in(s) ? pos_min_[s] : -1; }
  pos_t seq_pos_max(seq_id s) const noexcept { return in(s) ? pos_max_[s] : -1; }
  /// True when some token belongs to several sequences.
  bool has_coupled() const noexcept { return has_coupled_; }
  /// The sequences that share at least one token with s (s itself excluded).
  /// @pre 0 <= s < n_seq_max
  const seq_set& coupled(seq_id s) const noexcept {
    MNEMO_DASSERT(in(s));
    return coupled_[s];
  }

  // ---- exact sequence sets ("groups") ---------------------------------------

  /// Tokens grouped by their exact sequence set, groups numbered in order of first
  /// appearance; split_equal takes whole groups. llama.cpp: seq_set_map.
  std::uint32_t n_groups() const noexcept { return static_cast<std::uint32_t>(group_sets_.size()); }
  std::uint32_t group_of(std::uint32_t i) const noexcept { return group_of_[i]; }
  /// The tokens of group g, in batch order.
  std::span<const std::uint32_t> group_tokens(std::uint32_t g) const noexcept {
    return std::span<const std::uint32_t>(group_tok_)
        .subspan(group_off_[g], group_off_[g + 1] - group_off_[g]);
  }
  const seq_set& group_set(std::uint32_t g) const noexcept { return group_sets_[g]; }

 private:
  friend struct batch_detail::validator;
  validated_batch() = default;

  bool in(seq_id s) const noexcept { return s >= 0 && static_cast<std::uint32_t>(s) < n_seq_max_; }

  const batch* src_ = nullptr;
  std::uint32_t n_tokens_ = 0;
  std::uint32_t n_seq_max_ = 0;
  std::vector<pos_t> pos_;         // [n_tokens]
  std::vector<std::uint8_t> out_;  // [n_tokens]
  std::vector<seq_set> sets_;      // [n_tokens]
  std::uint32_t n_outputs_ = 0;
  bool outputs_forced_ = false;
  std::vector<seq_id> seq_unq_;        // [n_seq_unq]
  std::vector<std::int32_t> seq_idx_;  // [n_seq_max]
  std::vector<pos_t> pos_min_;         // [n_seq_max]
  std::vector<pos_t> pos_max_;         // [n_seq_max]
  std::vector<seq_set> coupled_;       // [n_seq_max]
  bool has_coupled_ = false;
  std::vector<std::uint32_t> group_of_;   // [n_tokens]
  std::vector<std::uint32_t> group_off_;  // [n_groups + 1]
  std::vector<std::uint32_t> group_tok_;  // [n_tokens], grouped
  std::vector<seq_set> group_sets_;       // [n_groups]
};

}  // namespace mnemo
