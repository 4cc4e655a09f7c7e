// Counters and gauges of a serve::scheduler, written by its thread and read by anyone
// (relaxed atomics: each value is exact, a set of them is not one snapshot), and their
// Prometheus text exposition for GET /metrics.
#pragma once

#include <atomic>
#include <cstdint>
#include <string>
#include <string_view>

namespace mnemo::serve {

struct scheduler_metrics {
  // counters
  std::atomic<std::uint64_t> requests_total{0};     // admitted to the queue
  std::atomic<std::uint64_t> requests_rejected{0};  // refused by submit()
  std::atomic<std::uint64_t> requests_failed{0};    // finished with an error
  std::atomic<std::uint64_t> requests_cancelled{0};
  std::atomic<std::uint64_t> prompt_tokens{0};
  std::atomic<std::uint64_t> cached_prompt_tokens{0};  // of them, from the prefix cache
  std::atomic<std::uint64_t> generated_tokens{0};
  std::atomic<std::uint64_t> prefix_hits{0};  // requests that reused a cached prefix
  std::atomic<std::uint64_t> decode_steps{0};
  // gauges
  std::atomic<std::uint64_t> queue_depth{0};
  std::atomic<std::uint64_t> slots_busy{0};
  std::atomic<std::uint64_t> slots_total{0};
  std::atomic<std::uint64_t> cells_used{0};
  std::atomic<std::uint64_t> cells_total{0};
  std::atomic<std::uint64_t> cached_prefixes{0};      // finished prefixes kept
  std::atomic<std::uint64_t> cached_prefix_cells{0};  // cells they hold (tokens)
};

/// The Prometheus text format (version 0.0.4), every name prefixed "mnemo_".
inline std::string to_prometheus(const scheduler_metrics& m) {
  std::string out;
  auto one = [&out](std::string_view name, std::string_view type, std::string_view help,
                    const std::atomic<std::uint64_t>& v) {
    out.append("# HELP mnemo_").append(name).append(" ").append(help).append("\n");
    out.append("# TYPE mnemo_").append(name).append(" ").append(type).append("\n");
    out.append("mnemo_").append(name).append(" ");
    out.append(std::to_string(v.load(std::memory_order_relaxed))).append("\n");
  };
  one("requests_total", "counter", "Requests accepted into the queue.", m.requests_total);
  one("requests_rejected_total", "counter", "Requests refused (queue full, too long).",
      m.requests_rejected);
  one("requests_failed_total", "counter", "Requests that ended with an error.", m.requests_failed);
  one("requests_cancelled_total", "counter", "Requests whose client went away.",
      m.requests_cancelled);
  one("prompt_tokens_total", "counter", "Prompt tokens of admitted requests.", m.prompt_tokens);
  one("prompt_tokens_cached_total", "counter", "Prompt tokens taken from the prefix cache.",
      m.cached_prompt_tokens);
  one("generated_tokens_total", "counter", "Tokens generated.", m.generated_tokens);
  one("prefix_cache_hits_total", "counter", "Requests that reused a cached prefix.", m.prefix_hits);
  one("decode_steps_total", "counter", "Decode calls of the scheduler.", m.decode_steps);
  one("queue_depth", "gauge", "Requests waiting for a slot.", m.queue_depth);
  one("slots_busy", "gauge", "Slots running a request.", m.slots_busy);
  one("slots_total", "gauge", "Slots.", m.slots_total);
  one("cells_used", "gauge", "Memory cells in use.", m.cells_used);
  one("cells_total", "gauge", "Memory cells.", m.cells_total);
  one("prefix_cache_entries", "gauge", "Finished prefixes kept for reuse.", m.cached_prefixes);
  one("prefix_cache_cells", "gauge", "Cells (tokens) the kept prefixes hold.",
      m.cached_prefix_cells);
  return out;
}

}  // namespace mnemo::serve
