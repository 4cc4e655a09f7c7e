// Batch validation (docs/batch.md): every rule llama_batch_allocr::init applies,
// with the recommended deviations: an oversized batch is a status, not an abort (D-14),
// and sequence sets must nest along the batch (D-7: a subset test, not an intersection).
// A failure returns a status naming the problem, the token and the sequence; nothing is
// changed (the batch is const, the memory only queried).
#pragma once

#include <array>
#include <cstdint>

#include "mnemo/base/result.hpp"
#include "mnemo/base/seq_set.hpp"
#include "mnemo/base/status.hpp"
#include "mnemo/batch/batch.hpp"
#include "mnemo/batch/concepts.hpp"
#include "mnemo/batch/positions.hpp"
#include "mnemo/batch/validated_batch.hpp"

namespace mnemo {

/// What the context allows. n_seq_max is llama.cpp's n_seq_max': a split
/// memory passes its n_seq_max; a unified one may pass up to 256, though spec D-8
/// recommends its real n_seq_max.
struct batch_limits {
  std::uint32_t n_vocab = 0;      // token ids in [0, n_vocab); 0 = unchecked
  std::uint32_t n_embd = 0;       // floats per embedding row; 0 = unchecked
  std::uint32_t n_seq_max = 1;    // sequence ids in [0, n_seq_max); at most k_max_seq
  std::uint32_t n_batch_max = 0;  // most tokens per batch (n_batch); 0 = unlimited
  bool embeddings_all = false;    // the context computes embeddings: every token outputs
};

namespace batch_detail {

/// pos_min / pos_max of the memory for every sequence id of the batch, read once.
struct memory_snapshot {
  std::array<pos_t, k_max_seq> min;
  std::array<pos_t, k_max_seq> max;
};

struct validator {
  static result<validated_batch> run(const batch& b, const batch_limits& lim,
                                     const memory_snapshot& mem);
};

}  // namespace batch_detail

/// Validates `b` against the limits and the positions `memory` holds, fills omitted
/// positions and outputs, and derives the data splitters need.
/// @post on success the result refers to `b`: keep `b` alive and unchanged.
template <position_source Memory>
result<validated_batch> validate(const batch& b, const batch_limits& limits, const Memory& memory) {
  batch_detail::memory_snapshot snap;
  snap.min.fill(-1);
  snap.max.fill(-1);
  // Query only the ids the batch names, and only valid ones: run() reports the others.
  seq_set seen;
  const std::uint32_t n_seq = limits.n_seq_max < k_max_seq ? limits.n_seq_max : k_max_seq;
  for (seq_id s : b.seq_ids()) {
    if (s < 0 || static_cast<std::uint32_t>(s) >= n_seq || seen.contains(s)) continue;
    seen.insert(s);
    snap.min[s] = static_cast<pos_t>(memory.pos_min(s));
    snap.max[s] = static_cast<pos_t>(memory.pos_max(s));
  }
  return batch_detail::validator::run(b, limits, snap);
}

/// Validation against an empty memory.
inline result<validated_batch> validate(const batch& b, const batch_limits& limits) {
  return validate(b, limits, empty_memory{});
}

/// A validated batch refers to its batch: validating a temporary would dangle.
template <class Memory>
result<validated_batch> validate(const batch&&, const batch_limits&, const Memory&) = delete;
result<validated_batch> validate(const batch&&, const batch_limits&) = delete;

}  // namespace mnemo

#define MNEMO_BATCH_DETAIL_OK_
#include "mnemo/batch/detail/validate_impl.hpp"
#undef MNEMO_BATCH_DETAIL_OK_
