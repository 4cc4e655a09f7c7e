// The token checks of planning, once for each way a memory holds sequences: a
// unified memory (one cell array shared by every sequence) takes a token in any set of
// sequences, a memory with one stream per sequence (split streams, split windows,
// bounded lanes) exactly one. Either way a token needs a position >= 0 and ids below
// n_seq_max, because a cell without owner, at a negative position or with an id the
// state format cannot restore would corrupt the bookkeeping (docs/memory.md).
#pragma once

#include <cstddef>

#include "mnemo/base/seq_set.hpp"
#include "mnemo/base/status.hpp"
#include "mnemo/memory/types.hpp"

namespace mnemo::memory {

/// `op` and `u` name the call and micro-batch in a refusal.
inline status check_token_count(const char* op, std::size_t u, const ubatch_tokens& ub) {
  if (ub.seqs.size() == ub.pos.size()) return {};
  return make_status(status_code::invalid_argument,
                     "%s: micro-batch %zu has %zu positions but %zu sequence sets", op, u,
                     ub.pos.size(), ub.seqs.size());
}

/// Token j of a micro-batch for a unified memory: a position >= 0 and one or more
/// sequences in [0, n_seq_max).
inline status check_unified_token(const char* op, std::size_t u, std::size_t j,
                                  const ubatch_tokens& ub, seq_id n_seq_max) {
  const seq_set& o = ub.seqs[j];
  bool outside = false;  // an id >= n_seq_max
  for (int w = 0; w < k_max_seq / 64; ++w) {
    const seq_id lo = w * 64;
    if (lo >= n_seq_max)
      outside |= o.words[w] != 0;
    else if (n_seq_max - lo < 64)
      outside |= (o.words[w] >> (n_seq_max - lo)) != 0;
  }
  if (ub.pos[j] < 0 || o.empty() || outside)
    return make_status(status_code::invalid_argument,
                       "%s: token %zu of micro-batch %zu needs a position >= 0 (has %d) "
                       "and one or more sequences in [0, %d)",
                       op, j, u, ub.pos[j], n_seq_max);
  return {};
}

/// Every token of a micro-batch, as check_unified_token.
inline status check_unified_tokens(const char* op, std::size_t u, const ubatch_tokens& ub,
                                   seq_id n_seq_max) {
  MNEMO_RETURN_IF_ERROR(check_token_count(op, u, ub));
  for (std::size_t j = 0; j < ub.size(); ++j)
    MNEMO_RETURN_IF_ERROR(check_unified_token(op, u, j, ub, n_seq_max));
  return {};
}

/// Token j of a micro-batch for a memory with one stream per sequence: a position
/// >= 0 and exactly one sequence below n_seq_max, because a stream cannot share a token
/// with another. `coupled_why` completes the refusal of a token in several sequences
/// (what holds them apart, and how to share a prefix instead).
inline status check_stream_token(const char* op, std::size_t u, std::size_t j,
                                 const ubatch_tokens& ub, seq_id n_seq_max,
                                 const char* coupled_why) {
  const int n = ub.seqs[j].count();
  const seq_id s = ub.seqs[j].lowest();
  if (ub.pos[j] < 0 || n == 0)
    return make_status(status_code::invalid_argument,
                       "%s: token %zu of micro-batch %zu needs a position >= 0 (has %d) and a "
                       "sequence",
                       op, j, u, ub.pos[j]);
  if (n > 1)
    return make_status(status_code::unsupported,
                       "%s: token %zu of micro-batch %zu belongs to %d sequences (sequence %d and "
                       "others): %s",
                       op, j, u, n, s, coupled_why);
  if (s >= n_seq_max)
    return make_status(status_code::out_of_range,
                       "%s: token %zu of micro-batch %zu names sequence %d, outside [0, %d)", op, j,
                       u, s, n_seq_max);
  return {};
}

/// Every token of a micro-batch, as check_stream_token.
inline status check_stream_tokens(const char* op, std::size_t u, const ubatch_tokens& ub,
                                  seq_id n_seq_max, const char* coupled_why) {
  MNEMO_RETURN_IF_ERROR(check_token_count(op, u, ub));
  for (std::size_t j = 0; j < ub.size(); ++j)
    MNEMO_RETURN_IF_ERROR(check_stream_token(op, u, j, ub, n_seq_max, coupled_why));
  return {};
}

}  // namespace mnemo::memory
