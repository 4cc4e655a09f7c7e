// From a batch to a memory's plan: validate against the memory's positions, split
// the way the strategy needs (its split_strategy), and find room for every micro-batch
// before anything changes, so that a batch that does not fit changes nothing
// (docs/memory.md, "Planning and transactions").
#pragma once

#include <vector>

#include "mnemo/batch/split.hpp"
#include "mnemo/batch/validate.hpp"
#include "mnemo/memory/types.hpp"

namespace mnemo::memory {

/// The batch layer's view of a memory's positions (batch::position_source).
template <class Memory>
struct positions_of {
  const Memory& m;
  pos_t pos_min(seq_id s) const { return m.seq_pos_min(s); }
  pos_t pos_max(seq_id s) const { return m.seq_pos_max(s); }
};

/// Micro-batches with the per-token data a memory reads (ubatch_tokens views point
/// into `sets` and the ubatches, so a planned_batch is not copied).
struct planned_batch {
  std::vector<ubatch> ubatches;
  std::vector<std::vector<seq_set>> sets;  // per micro-batch, per token
  std::vector<ubatch_tokens> tokens;

  planned_batch() = default;
  planned_batch(const planned_batch&) = delete;
  planned_batch& operator=(const planned_batch&) = delete;
  planned_batch(planned_batch&&) = default;
  planned_batch& operator=(planned_batch&&) = default;
};

/// Splits `vb` with the memory's strategy and reserves cells for every micro-batch
/// (Memory::prepare). On failure nothing in the memory changed.
template <class Memory>
result<planned_batch> plan_batch(Memory& m, const validated_batch& vb, std::uint32_t n_ubatch) {
  batch_splitter sp(vb);
  MNEMO_ASSIGN_OR_RETURN(auto ubs, sp.split_all(m.split_strategy(n_ubatch)));
  planned_batch pb;
  pb.ubatches = std::move(ubs);
  for (const ubatch& u : pb.ubatches) {
    std::vector<seq_set> s(u.n_tokens());
    for (std::uint32_t j = 0; j < u.n_tokens(); ++j) s[j] = u.set_of(j);
    pb.sets.push_back(std::move(s));
  }
  for (std::size_t i = 0; i < pb.ubatches.size(); ++i)
    pb.tokens.push_back({pb.ubatches[i].pos, pb.sets[i]});
  MNEMO_RETURN_IF_ERROR(m.prepare(pb.tokens));
  return pb;
}

}  // namespace mnemo::memory
