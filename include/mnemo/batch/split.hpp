// Micro-batch splitters (docs/batch.md): split_simple, split_equal and split_seq
// over a validated batch, consuming its tokens, plus the output order (docs/batch.md).
//
// Deviations from llama.cpp, as the spec recommends: split_equal never emits more than
// n_ubatch tokens (D-10), and every misuse llama.cpp asserts on (n_keep_tail >= n_ubatch,
// n_ubatch = 0) or reports as "no slot" (sequential split of coupled tokens, #18117) is
// a status with a message.
#pragma once

#include <algorithm>
#include <cstdint>
#include <span>
#include <utility>
#include <vector>

#include "mnemo/base/assert.hpp"
#include "mnemo/base/result.hpp"
#include "mnemo/base/status.hpp"
#include "mnemo/batch/concepts.hpp"
#include "mnemo/batch/ubatch.hpp"
#include "mnemo/batch/validated_batch.hpp"

#define MNEMO_BATCH_DETAIL_OK_
#include "mnemo/batch/detail/seq_set_util.hpp"
#undef MNEMO_BATCH_DETAIL_OK_

namespace mnemo {

/// Consumes the tokens of one validated batch (which must outlive it) ubatch by
/// ubatch. Each split_* call takes unused tokens only and records their outputs in
/// out_ids(); split_reset() makes every token unused again. A call that returns a status
/// consumes nothing. An empty ubatch means every token is used.
class batch_splitter {
 public:
  explicit batch_splitter(const validated_batch& vb)
      : vb_(&vb),
        used_(vb.n_tokens(), 0),
        group_unused_(vb.n_groups()),
        group_first_(vb.n_groups(), 0) {
    split_reset();
  }
  explicit batch_splitter(const validated_batch&&) = delete;

  const validated_batch& source() const noexcept { return *vb_; }
  std::uint32_t n_tokens() const noexcept { return vb_->n_tokens(); }
  std::uint32_t n_used() const noexcept { return n_used_; }
  bool done() const noexcept { return n_used_ == vb_->n_tokens(); }
  bool used(std::uint32_t i) const noexcept { return used_[i] != 0; }

  /// Every token unused again; out_ids() cleared.
  void split_reset() noexcept {
    std::fill(used_.begin(), used_.end(), 0);
    n_used_ = 0;
    first_free_ = 0;
    for (std::uint32_t g = 0; g < vb_->n_groups(); ++g) {
      group_unused_[g] = static_cast<std::uint32_t>(vb_->group_tokens(g).size());
      group_first_[g] = 0;
    }
    out_ids_.clear();
  }

  /// The next <= n_ubatch unused tokens in batch order, with no constraint.
  /// equal_seqs = false, n_seqs = n_tokens, n_seq_tokens = 1.
  result<ubatch> split_simple(std::uint32_t n_ubatch) {
    if (n_ubatch == 0) return zero_ubatch("split_simple");
    std::vector<std::uint32_t> idx;
    for (std::uint32_t i = first_free_; i < n_tokens() && idx.size() < n_ubatch; ++i)
      if (!used_[i]) idx.push_back(i);
    for (std::uint32_t i : idx) take(i);
    std::vector<seq_set> sets;
    sets.reserve(idx.size());
    for (std::uint32_t i : idx) sets.push_back(vb_->set_of(i));
    const auto n = static_cast<std::uint32_t>(idx.size());
    return emit(std::move(idx), n, 1, false, std::move(sets));
  }

  /// Up to n_ubatch pairwise disjoint sequence sets, the same number of tokens from
  /// each, emitted set by set (docs/batch.md). With `sequential` the primary ids of the sets are
  /// consecutive (split streams) and coupled tokens are refused. With
  /// n_keep_tail > 0 the last n_keep_tail tokens of a set never straddle two ubatches
  /// (recurrent rollback snapshots).
  result<ubatch> split_equal(std::uint32_t n_ubatch, bool sequential,
                             std::uint32_t n_keep_tail = 0);

  /// Tokens of one sequence set: from the first unused token, every later unused token
  /// whose set is a subset of the current set, which then shrinks to it, up to n_ubatch.
  /// equal_seqs = true, n_seqs = 1.
  result<ubatch> split_seq(std::uint32_t n_ubatch) {
    if (n_ubatch == 0) return zero_ubatch("split_seq");
    std::uint32_t i = first_free_;
    while (i < n_tokens() && used_[i]) ++i;
    if (i == n_tokens()) return ubatch{};
    std::vector<std::uint32_t> idx{i};
    seq_set cur = vb_->set_of(i);
    const seq_set first = cur;
    for (++i; i < n_tokens() && idx.size() < n_ubatch; ++i) {
      if (used_[i] || !batch_detail::is_subset(vb_->set_of(i), cur)) continue;
      idx.push_back(i);
      cur = vb_->set_of(i);
    }
    for (std::uint32_t t : idx) take(t);
    const auto n = static_cast<std::uint32_t>(idx.size());
    return emit(std::move(idx), 1, n, true, {first});
  }

  /// Splits the whole batch from the start (split_reset() first), or returns the status
  /// of the first ubatch that cannot be made, with nothing consumed.
  template <split_strategy S>
  result<std::vector<ubatch>> split_all(const S& strategy) {
    split_reset();
    std::vector<ubatch> out;
    while (!done()) {
      result<ubatch> u = strategy.next(*this);
      if (!u.is_ok() || u->empty()) {
        split_reset();
        if (!u.is_ok()) return u.error();
        return make_status(status_code::internal,
                           "a split strategy stopped with %u of %u tokens used", n_used_,
                           n_tokens());
      }
      out.push_back(std::move(u).value());
    }
    return out;
  }

  /// The batch index of every output, in the order the ubatches emit them: output row r
  /// of the decode belongs to batch token out_ids()[r] (docs/batch.md).
  std::span<const std::uint32_t> out_ids() const noexcept { return out_ids_; }

  /// The inverse of out_ids(): [n_tokens] the output row of each batch token, or -1
  /// for a token without output (what logits_ith(i) reads through).
  std::vector<std::int32_t> output_rows() const {
    std::vector<std::int32_t> rows(n_tokens(), -1);
    for (std::size_t r = 0; r < out_ids_.size(); ++r)
      rows[out_ids_[r]] = static_cast<std::int32_t>(r);
    return rows;
  }

 private:
  static status zero_ubatch(const char* who) {
    return make_status(status_code::invalid_argument, "%s: n_ubatch must be > 0", who);
  }

  void take(std::uint32_t i) noexcept {
    MNEMO_DASSERT(!used_[i]);
    used_[i] = 1;
    ++n_used_;
    --group_unused_[vb_->group_of(i)];
  }
  void give_back(std::uint32_t i) noexcept {
    MNEMO_DASSERT(used_[i]);
    used_[i] = 0;
    --n_used_;
    ++group_unused_[vb_->group_of(i)];
    first_free_ = std::min(first_free_, i);
  }

  ubatch emit(std::vector<std::uint32_t> idx, std::uint32_t n_seqs, std::uint32_t n_seq_tokens,
              bool equal, std::vector<seq_set> sets) {
    ubatch u;
    u.source = vb_;
    u.n_seqs = n_seqs;
    u.n_seq_tokens = n_seq_tokens;
    u.equal_seqs = equal;
    u.seq_sets = std::move(sets);
    u.pos.reserve(idx.size());
    u.seq.reserve(idx.size());
    u.output.reserve(idx.size());
    seq_set all;
    for (std::uint32_t i : idx) {
      u.pos.push_back(vb_->pos(i));
      u.seq.push_back(vb_->primary(i));
      u.output.push_back(vb_->output(i) ? 1 : 0);
      if (vb_->output(i)) {
        out_ids_.push_back(i);
        ++u.n_outputs;
      }
      batch_detail::merge_into(all, vb_->set_of(i));
    }
    for (seq_id s = 0; s < k_max_seq; ++s)
      if (all.contains(s)) u.seq_id_unq.push_back(s);
    u.idx = std::move(idx);
    while (first_free_ < n_tokens() && used_[first_free_]) ++first_free_;
    MNEMO_DASSERT(u.n_tokens() == u.n_seqs * u.n_seq_tokens);
    return u;
  }

  const validated_batch* vb_;
  std::vector<std::uint8_t> used_;  // [n_tokens]
  std::uint32_t n_used_ = 0;
  std::uint32_t first_free_ = 0;             // no unused token before it
  std::vector<std::uint32_t> group_unused_;  // [n_groups] unused tokens per group
  std::vector<std::uint32_t> group_first_;   // [n_groups] no unused token of g before it
  std::vector<std::uint32_t> out_ids_;
};

}  // namespace mnemo

#define MNEMO_BATCH_DETAIL_OK_
#include "mnemo/batch/detail/split_equal.hpp"
#undef MNEMO_BATCH_DETAIL_OK_

#include "mnemo/batch/strategies.hpp"
