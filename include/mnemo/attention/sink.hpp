// Statistics sinks: what an eviction policy can ask the kernel to export
// (docs/eviction.md). The null sink is a compile-time no-op, so the fast path
// is the same code as a kernel without export.
#pragma once

#include <concepts>
#include <cstdint>
#include <span>

namespace mnemo::attention {

/// A sink says at compile time whether the kernel exports statistics.
template <class S>
concept stats_sink = requires {
  { S::enabled } -> std::convertible_to<bool>;
};

/// Exports nothing.
struct null_sink {
  static constexpr bool enabled = false;
};
static_assert(stats_sink<null_sink>);

/// Exports what an eviction policy asked for, each part only when its pointer is
/// set: per KV head and cell the attention mass, summed over the group's query heads
/// and the requested query rows (E1); each row's log-sum-exp (E2); the requested
/// rows' pre-softmax logits (E3). For mass and logits the attention pass keeps the
/// contributing rows' logits (workspace::max_stored_logits) and one pass over them
/// after the merge applies the final log-sum-exp; lse costs a copy.
struct mass_sink {
  static constexpr bool enabled = true;
  /// Per stream: [n_head_kv, n_cells of that stream] f32, accumulated into (+=).
  /// Empty: no mass; a null entry skips that stream.
  std::span<float* const> mass = {};
  /// [n_tokens]: nonzero where a query row contributes mass / logits; null = every row.
  const std::uint8_t* rows = nullptr;
  /// [n_tokens, n_head]: log sum_j e^(logit_j) of every row (-inf when it attends
  /// nothing); null = not wanted.
  float* lse = nullptr;
  /// Per stream: [rows of that stream, n_head, n_cells] f32, the logits (scaled,
  /// soft-capped) of the contributing rows; cells a row does not attend are left as
  /// they were (fill with -inf). Empty: no logits; a null entry skips that stream.
  std::span<float* const> logits = {};
  /// [n_tokens]: the row of token t in its stream's logits buffer (read only where
  /// row_contributes(t)); required when logits is not empty.
  const std::uint32_t* logit_row = nullptr;

  bool row_contributes(std::size_t t) const noexcept { return rows == nullptr || rows[t] != 0; }
  /// Whether stream st needs the export pass (mass or logits).
  bool exports(std::size_t st) const noexcept {
    return (!mass.empty() && mass[st] != nullptr) || (!logits.empty() && logits[st] != nullptr);
  }
};
static_assert(stats_sink<mass_sink>);

}  // namespace mnemo::attention
