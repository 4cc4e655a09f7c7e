// What mnemo::engine is opened with: the memory strategy, the K/V element type, an
// eviction policy and budget, the sizes and the threads, each a run-time value that
// engine::open maps once onto the compile-time context<Model, Memory>. Every choice
// also has a name (the examples' and the C API's spelling), parsed here.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "mnemo/base/hooks.hpp"
#include "mnemo/base/result.hpp"
#include "mnemo/base/seq_set.hpp"
#include "mnemo/base/status.hpp"

namespace mnemo {

/// The memory of the model's layers. Which kinds an architecture takes:
///   llama   full (default), split, bounded (with an eviction policy)
///   gemma3  iswa (default: global layers on a full cache, local on a window),
///           iswa-split (both on per-sequence streams), full (the window a mask only)
///   mamba   recurrent (default)
///   jamba   hybrid (default: attention layers on a full cache, Mamba layers on
///           recurrent state), hybrid-split (attention on split streams)
enum class memory_kind : std::uint8_t {
  automatic,  // the architecture's default
  full,
  split,
  iswa,
  iswa_split,
  recurrent,
  hybrid,
  hybrid_split,
  bounded,
};

/// K/V element type of the attention layers.
enum class kv_type : std::uint8_t { f32, f16, bf16, q8_0, q4_0 };

/// The eviction policy of a bounded memory (docs/eviction.md). quest evicts nothing
/// below n_ctx / n_seq_max tokens per sequence: each decode row reads the evict_budget
/// cells of its top pages, rounded up to whole pages (evict::quest_reads, pages of 16).
enum class evict_policy : std::uint8_t { none, h2o, tova, snapkv, streaming_llm, quest };

struct engine_options {
  memory_kind memory = memory_kind::automatic;
  kv_type kv = kv_type::f16;
  /// A policy other than none makes the memory bounded: at most evict_budget cells per
  /// (sequence, layer) between calls (quest: read per decode row).
  evict_policy policy = evict_policy::none;
  std::size_t evict_budget = 0;
  /// Cells of all sequences together, as llama.cpp's n_ctx: split streams and
  /// iswa-split get n_ctx / n_seq_max (rounded up) per sequence.
  std::uint32_t n_ctx = 4096;
  seq_id n_seq_max = 1;          // sequence ids in [0, n_seq_max)
  std::uint32_t n_ubatch = 512;  // most tokens per micro-batch
  std::uint32_t n_batch = 0;     // most tokens per decode call; 0 = unlimited
  int n_threads = 0;             // single-token micro-batches; 0: physical cores
  int n_threads_batch = 0;       // multi-token micro-batches; 0: n_threads
  bool recompute = false;        // context_params::recompute (docs/context.md)
  bool use_mmap = true;          // map the GGUF file; false reads it into memory
  context_hooks hooks;           // abort, progress (load and long prompts), log
};

// ---- names -------------------------------------------------------------------------

namespace engine_names {
inline constexpr std::string_view memory[] = {"auto",   "full",         "split",
                                              "iswa",   "iswa-split",   "recurrent",
                                              "hybrid", "hybrid-split", "bounded"};
inline constexpr std::string_view kv[] = {"f32", "f16", "bf16", "q8_0", "q4_0"};
inline constexpr std::string_view policy[] = {"none",   "h2o",           "tova",
                                              "snapkv", "streaming_llm", "quest"};

/// "a, b, c" for messages.
inline std::string list(std::span<const std::string_view> names) {
  std::string s;
  for (std::string_view n : names) s.append(s.empty() ? "" : ", ").append(n);
  return s;
}
template <class E>
result<E> parse(std::string_view v, std::span<const std::string_view> names, const char* what) {
  for (std::size_t i = 0; i < names.size(); ++i)
    if (names[i] == v) return static_cast<E>(i);
  return make_status(status_code::invalid_argument, "unknown %s '%.*s' (%s)", what,
                     static_cast<int>(v.size()), v.data(), list(names).c_str());
}
}  // namespace engine_names

inline std::string_view to_string(memory_kind k) noexcept {
  return engine_names::memory[static_cast<std::size_t>(k)];
}
inline std::string_view to_string(kv_type t) noexcept {
  return engine_names::kv[static_cast<std::size_t>(t)];
}
inline std::string_view to_string(evict_policy p) noexcept {
  return engine_names::policy[static_cast<std::size_t>(p)];
}
inline result<memory_kind> parse_memory_kind(std::string_view v) {
  return engine_names::parse<memory_kind>(v, engine_names::memory, "memory kind");
}
inline result<kv_type> parse_kv_type(std::string_view v) {
  return engine_names::parse<kv_type>(v, engine_names::kv, "K/V type");
}
inline result<evict_policy> parse_evict_policy(std::string_view v) {
  return engine_names::parse<evict_policy>(v, engine_names::policy, "eviction policy");
}

}  // namespace mnemo
