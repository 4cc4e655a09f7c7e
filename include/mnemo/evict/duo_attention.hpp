// DuoAttention (Xiao et al. 2024, arXiv 2410.10819): a few "retrieval" heads need the
// whole context, the other "streaming" heads only attention sinks and recent tokens.
// The head profile is data (the paper learns it offline and thresholds a gate per
// head): per (layer, KV head) 1 = retrieval, 0 = streaming. It becomes per-KV-head
// budgets for memory::bounded_config::head_budgets (per_kv_head lanes), with
// streaming_llm as the policy: retrieval heads keep `budget` cells, streaming heads
// n_sink + recent; a streaming head's decode step reads only those.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

namespace mnemo::evict {

/// head_budgets for a DuoAttention profile [n_layer, n_head_kv] (nonzero: retrieval).
inline std::vector<std::size_t> duo_attention_budgets(std::span<const std::uint8_t> profile,
                                                      std::size_t budget, std::size_t n_sink,
                                                      std::size_t recent) {
  std::vector<std::size_t> b(profile.size());
  for (std::size_t i = 0; i < profile.size(); ++i) b[i] = profile[i] ? budget : n_sink + recent;
  return b;
}

}  // namespace mnemo::evict
