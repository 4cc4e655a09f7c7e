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

/// Exports per KV head and cell the attention mass, summed over the group's query
/// heads and the requested query rows, and each row's log-sum-exp.
struct mass_sink {
  static constexpr bool enabled = true;
  /// Per stream: [n_head_kv, n_cells of that stream] f32, accumulated into (+=).
  /// A null entry skips that stream.
  std::span<float* const> mass;
  /// [n_tokens]: nonzero where a query row contributes mass; null = every row.
  const std::uint8_t* rows = nullptr;
  /// [n_tokens, n_head]: log sum_j e^(logit_j) of every row (-inf when it attends
  /// nothing); null = not wanted.
  float* lse = nullptr;

  bool row_contributes(std::size_t t) const noexcept { return rows == nullptr || rows[t] != 0; }
};
static_assert(stats_sink<mass_sink>);

}  // namespace mnemo::attention
