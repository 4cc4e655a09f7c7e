// A micro-batch (docs/batch.md): the tokens of a validated batch that the memory places and
// the model computes in one step, in ubatch order, with the group structure the memory
// strategies rely on (equal splits: n_seqs groups of n_seq_tokens tokens each).
#pragma once

#include <algorithm>
#include <cstdint>
#include <span>
#include <vector>

#include "mnemo/base/assert.hpp"
#include "mnemo/base/seq_set.hpp"
#include "mnemo/batch/validated_batch.hpp"

namespace mnemo {

/// A view into a validated batch (which must outlive it) plus a few gathered arrays
/// that kernels take as spans. Made by batch_splitter; an empty ubatch (n_tokens() == 0)
/// means "every token is used".
///
/// Layout: token j of the ubatch is batch token idx[j]. With equal_seqs, tokens
/// [k * n_seq_tokens, (k + 1) * n_seq_tokens) form group k, whose tokens all carry the
/// sequence set seq_sets[k] (split_equal) or subsets of it (split_seq). Without
/// equal_seqs (split_simple) every token is its own group: n_seqs = n_tokens,
/// n_seq_tokens = 1, seq_sets[j] = the set of token j.
struct ubatch {
  const validated_batch* source = nullptr;
  std::vector<std::uint32_t> idx;    // [n_tokens] batch indices
  std::vector<pos_t> pos;            // [n_tokens] positions
  std::vector<seq_id> seq;           // [n_tokens] primary sequence ids
  std::vector<std::uint8_t> output;  // [n_tokens] 1: the token produces an output
  std::uint32_t n_seq_tokens = 0;    // tokens per group
  std::uint32_t n_seqs = 0;          // groups
  bool equal_seqs = false;           // every group has n_seq_tokens tokens (equal / seq)
  std::vector<seq_set> seq_sets;     // [n_seqs] the sequence set of each group
  std::vector<seq_id> seq_id_unq;    // sorted unique sequence ids of all tokens
  std::uint32_t n_outputs = 0;

  std::uint32_t n_tokens() const noexcept { return static_cast<std::uint32_t>(idx.size()); }
  bool empty() const noexcept { return idx.empty(); }

  /// The batch indices of group k.  @pre k < n_seqs
  std::span<const std::uint32_t> group(std::uint32_t k) const noexcept {
    MNEMO_DASSERT(k < n_seqs);
    return std::span<const std::uint32_t>(idx).subspan(std::size_t{k} * n_seq_tokens, n_seq_tokens);
  }
  /// The index of s in seq_id_unq, or -1 when no token of the ubatch belongs to s.
  std::int32_t unq_index(seq_id s) const noexcept {
    const auto it = std::lower_bound(seq_id_unq.begin(), seq_id_unq.end(), s);
    return it != seq_id_unq.end() && *it == s ? static_cast<std::int32_t>(it - seq_id_unq.begin())
                                              : -1;
  }

  // Per token j of the ubatch, read through the batch.  @pre j < n_tokens()
  std::span<const seq_id> seqs(std::uint32_t j) const noexcept { return source->seqs(idx[j]); }
  const seq_set& set_of(std::uint32_t j) const noexcept { return source->set_of(idx[j]); }
  token_id token(std::uint32_t j) const noexcept { return source->token(idx[j]); }
  std::span<const float> embd(std::uint32_t j) const noexcept { return source->embd(idx[j]); }
};

}  // namespace mnemo
