// The memory concept every strategy models: sequence operations, queries, batch
// planning with transactions, and K-shift (spec/memory.md §1). State I/O is a pair
// of free functions per strategy (state_write / state_read).
#pragma once

#include <concepts>
#include <span>

#include "mnemo/base/seq_set.hpp"
#include "mnemo/base/status.hpp"
#include "mnemo/memory/types.hpp"

namespace mnemo::memory {

template <class M>
concept sequence_memory = requires(M m, const M cm, seq_id s, pos_t p, bool b, std::size_t u,
                                   std::span<const ubatch_tokens> ubs, const ubatch_tokens& ub) {
  { m.seq_rm(s, p, p) } -> std::same_as<status>;
  { m.seq_cp(s, s, p, p) } -> std::same_as<status>;
  { m.seq_keep(s) } -> std::same_as<status>;
  { m.seq_add(s, p, p, p) } -> std::same_as<status>;
  { m.seq_div(s, p, p, 2) } -> std::same_as<status>;
  {m.clear(b)};
  { cm.seq_pos_min(s) } -> std::same_as<pos_t>;
  { cm.seq_pos_max(s) } -> std::same_as<pos_t>;
  { cm.can_shift() } -> std::same_as<bool>;
  { m.update() } -> std::same_as<status>;
  { m.prepare(ubs) } -> std::same_as<status>;
  { m.apply(u, ub) } -> std::same_as<status>;
  {m.commit()};
  {m.rollback()};
  { cm.report() } -> std::same_as<memory_report>;
};

}  // namespace mnemo::memory
