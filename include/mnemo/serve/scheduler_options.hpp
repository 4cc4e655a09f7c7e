// What a serve::scheduler is sized with, and the engine options that give it room:
// n_slots running requests (sequences 0..n_slots-1) plus n_cached spare sequences that
// keep finished prefixes (n_slots..n_slots+n_cached-1).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "mnemo/batch/batch.hpp"
#include "mnemo/engine/options.hpp"

namespace mnemo::serve {

struct scheduler_options {
  seq_id n_slots = 4;               // requests decoded at once, one sequence each
  seq_id n_cached = 4;              // spare sequences for finished prefixes; 0: no cache
  std::uint32_t n_ctx_slot = 2048;  // most tokens of one request, prompt and reply
  std::uint32_t step_tokens = 256;  // tokens per decode step (generation first, then prompts)
  std::size_t queue_max = 64;       // waiting beyond the free slots; more are refused (503)
  std::uint32_t block_tokens = 16;  // the prefix index's block
  /// Tokens the finished prefixes may hold together (their bounded share); least
  /// recently used ones go first. 0: n_cached * n_ctx_slot.
  std::size_t cache_tokens_max = 0;
  /// Tokens that end a reply besides the vocabulary's end-of-sequence token.
  std::vector<token_id> end_tokens = {};

  std::size_t cache_budget() const noexcept {
    return cache_tokens_max ? cache_tokens_max : static_cast<std::size_t>(n_cached) * n_ctx_slot;
  }
};

/// `base` with the sequences and cells the scheduler needs. Split streams (split,
/// iswa-split, hybrid-split) give every sequence n_ctx_slot cells of its own, so a kept
/// prefix never takes a running request's cells; any other memory is one pool with
/// n_slots * n_ctx_slot cells for the running requests plus the cache's share.
inline engine_options engine_options_for(const scheduler_options& s, engine_options base) {
  base.n_seq_max = s.n_slots + s.n_cached;
  const bool unified = base.memory != memory_kind::split &&
                       base.memory != memory_kind::iswa_split &&
                       base.memory != memory_kind::hybrid_split;
  base.n_ctx = unified
                   ? static_cast<std::uint32_t>(static_cast<std::size_t>(s.n_slots) * s.n_ctx_slot +
                                                (s.n_cached ? s.cache_budget() : 0))
                   : s.n_ctx_slot * static_cast<std::uint32_t>(base.n_seq_max);
  if (base.n_ubatch < s.step_tokens) base.n_ubatch = s.step_tokens;
  return base;
}

}  // namespace mnemo::serve
