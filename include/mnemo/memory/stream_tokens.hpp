// The token check of the strategies that hold each sequence in a stream of its own
// (split_stream, split_window): every token needs a position >= 0 and exactly one
// sequence below n_seq_max, because a stream cannot share a token with another.
#pragma once

#include <cstddef>

#include "mnemo/base/seq_set.hpp"
#include "mnemo/base/status.hpp"
#include "mnemo/memory/types.hpp"

namespace mnemo::memory {

/// `op` and `u` name the call and micro-batch in a refusal; `holder` ("split streams")
/// and `share_hint` (how to share a prefix instead) complete the coupled-token status.
inline status check_stream_tokens(const char* op, std::size_t u, const ubatch_tokens& ub,
                                  seq_id n_seq_max, const char* holder, const char* share_hint) {
  if (ub.seqs.size() != ub.pos.size())
    return make_status(status_code::invalid_argument,
                       "%s: micro-batch %zu has %zu positions but %zu sequence sets", op, u,
                       ub.pos.size(), ub.seqs.size());
  for (std::size_t j = 0; j < ub.size(); ++j) {
    const int n = ub.seqs[j].count();
    const seq_id s = ub.seqs[j].lowest();
    if (ub.pos[j] < 0 || n == 0)
      return make_status(status_code::invalid_argument,
                         "%s: token %zu of micro-batch %zu needs a position >= 0 (has %d) and a "
                         "sequence",
                         op, j, u, ub.pos[j]);
    if (n > 1)
      return make_status(status_code::unsupported,
                         "%s: token %zu of micro-batch %zu belongs to %d sequences (sequence %d "
                         "and others): %s hold each sequence in a stream of its own; %s, or use "
                         "a unified memory",
                         op, j, u, n, s, holder, share_hint);
    if (s >= n_seq_max)
      return make_status(status_code::out_of_range,
                         "%s: token %zu of micro-batch %zu names sequence %d, outside [0, %d) "
                         "(one stream per sequence)",
                         op, j, u, s, n_seq_max);
  }
  return {};
}

}  // namespace mnemo::memory
