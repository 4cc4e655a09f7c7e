// Command-line parsing shared by the examples: a cursor over argv, number and list
// parsers that print what was wrong, and the options every runtime example takes
// (--memory, --kv, --threads, --ctx, --ubatch, --batch), with engine_options_of() to
// open a mnemo::engine from them.
//
//   mnemo_examples::arg_cursor args("generate", argc, argv);
//   while (!args.done()) {
//     switch (mnemo_examples::parse_runtime_option(args, o.rt)) {
//       case option_parse::taken: continue;
//       case option_parse::bad: return usage();   // exit code 2
//       case option_parse::not_mine: break;
//     }
//     ...
//   }
//
// Errors go to stderr prefixed with the program name; callers print their usage
// and exit with code 2 (the examples' convention for bad arguments).
#pragma once

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "mnemo/attention/product_precision.hpp"
#include "mnemo/engine/options.hpp"
#include "mnemo/gguf/file.hpp"
#include "mnemo/model/weight_tiles.hpp"
#include "mnemo/simd/prefetch.hpp"

namespace mnemo_examples {

/// Walks argv[1..argc); value() takes the argument after an option.
class arg_cursor {
 public:
  arg_cursor(const char* prog, int argc, char** argv) : prog_(prog), argc_(argc), argv_(argv) {}

  const char* prog() const noexcept { return prog_; }
  bool done() const noexcept { return i_ >= argc_; }
  /// The current argument (an option name or a positional argument).
  std::string_view peek() const noexcept { return done() ? std::string_view{} : argv_[i_]; }
  /// Moves past the current argument and returns it.
  std::string_view take() noexcept { return done() ? std::string_view{} : argv_[i_++]; }
  /// The argument after option `opt` (already taken); nullptr and a message if none.
  const char* value(std::string_view opt) noexcept {
    if (done()) {
      std::fprintf(stderr, "%s: %.*s needs a value\n", prog_, static_cast<int>(opt.size()),
                   opt.data());
      return nullptr;
    }
    return argv_[i_++];
  }
  /// Prints "PROG: message" for an argument that cannot be used.
  void complain(const char* what, std::string_view arg) const noexcept {
    std::fprintf(stderr, "%s: %s '%.*s'\n", prog_, what, static_cast<int>(arg.size()), arg.data());
  }

 private:
  const char* prog_;
  int argc_;
  char** argv_;
  int i_ = 1;
};

/// An unsigned integer in [lo, hi]; whole string, decimal.
inline bool parse_u64(const char* s, std::uint64_t& out, std::uint64_t lo = 0,
                      std::uint64_t hi = UINT64_MAX) {
  if (s == nullptr || *s == '\0' || *s == '-' || *s == '+') return false;
  char* end = nullptr;
  errno = 0;
  const unsigned long long v = std::strtoull(s, &end, 10);
  if (errno != 0 || *end != '\0' || v < lo || v > hi) return false;
  out = v;
  return true;
}

inline bool parse_u32(const char* s, std::uint32_t& out, std::uint32_t lo = 0,
                      std::uint32_t hi = 1u << 30) {
  std::uint64_t v = 0;
  if (!parse_u64(s, v, lo, hi)) return false;
  out = static_cast<std::uint32_t>(v);
  return true;
}

/// A finite float; whole string.
inline bool parse_f32(const char* s, float& out) {
  if (s == nullptr || *s == '\0') return false;
  char* end = nullptr;
  const float v = std::strtof(s, &end);
  if (*end != '\0' || !(v == v) || v > 3.4e38f || v < -3.4e38f) return false;
  out = v;
  return true;
}

/// "1,2,4": comma-separated unsigned integers in [lo, hi], at least one.
inline bool parse_u32_list(const char* s, std::vector<std::uint32_t>& out, std::uint32_t lo = 0,
                           std::uint32_t hi = 1u << 30) {
  if (s == nullptr) return false;
  out.clear();
  std::string item;
  for (const char* p = s;; ++p) {
    if (*p == ',' || *p == '\0') {
      std::uint32_t v = 0;
      if (!parse_u32(item.c_str(), v, lo, hi)) return false;
      out.push_back(v);
      item.clear();
      if (*p == '\0') break;
    } else {
      item += *p;
    }
  }
  return !out.empty();
}

/// What the runtime examples share: the memory strategy, the K/V element type and the
/// context sizes. n_ctx == 0 lets each example pick a size that fits its work.
struct runtime_options {
  std::string memory = "auto";  // an engine memory kind: auto | full | split | iswa | ...
  std::string kv = "f16";       // f32 | f16 | bf16 | q8_0 | q4_0
  int threads = 0;              // 0: default_thread_count()
  std::uint32_t n_ctx = 0;      // cells (full) or cells of all streams together (split)
  std::uint32_t n_ubatch = 512;
  std::uint32_t n_batch = 2048;
  std::string prefetch;  // "" (the CPU's default) | l1 | l2: simd::prefetch_target
  bool no_mmap = false;  // read the model into memory (gguf::access::read) instead of mapping it
  bool no_weight_tiles = false;    // keep q4_0 / k-quant weights only as rows (weight_tiles.hpp)
  bool bf16_products = false;      // decode attention in bf16 products (product_precision.hpp)
  std::string policy = "none";     // an engine eviction policy: none | h2o | ... | quest
  std::uint32_t evict_budget = 0;  // cells per (sequence, layer); quest: read per decode row
};

/// How the runtime examples open their model file.
inline mnemo::gguf::access file_access(const runtime_options& o) noexcept {
  return o.no_mmap ? mnemo::gguf::access::read : mnemo::gguf::access::map;
}

inline constexpr const char* k_runtime_usage =
    "       [--memory auto|full|split|iswa|iswa-split|recurrent|hybrid|hybrid-split]\n"
    "       [--kv f32|f16|bf16|q8_0|q4_0] [--threads N]\n"
    "       [--ctx N] [--ubatch N] [--batch N] [--prefetch l1|l2] [--no-mmap]\n"
    "       [--no-weight-tiles] [--bf16-products]\n"
    "       [--policy none|h2o|tova|snapkv|streaming_llm|quest] [--evict-budget N]\n";

inline bool is_memory_name(std::string_view v) { return mnemo::parse_memory_kind(v).is_ok(); }
inline bool is_kv_name(std::string_view v) { return mnemo::parse_kv_type(v).is_ok(); }

/// The engine options the runtime options name, for n_seq sequences in n_ctx cells
/// (memory and kv must have passed parse_runtime_option).
inline mnemo::engine_options engine_options_of(const runtime_options& o, mnemo::seq_id n_seq,
                                               std::uint32_t n_ctx) {
  mnemo::engine_options e;
  e.memory = mnemo::parse_memory_kind(o.memory).value_or(mnemo::memory_kind::automatic);
  e.kv = mnemo::parse_kv_type(o.kv).value_or(mnemo::kv_type::f16);
  e.n_ctx = n_ctx;
  e.n_seq_max = n_seq;
  e.n_ubatch = o.n_ubatch;
  e.n_batch = o.n_batch;
  e.n_threads = e.n_threads_batch = o.threads;
  e.use_mmap = !o.no_mmap;
  e.policy = mnemo::parse_evict_policy(o.policy).value_or(mnemo::evict_policy::none);
  e.evict_budget = o.evict_budget;
  return e;
}

enum class option_parse { not_mine, taken, bad };

/// Consumes one runtime option at the cursor, if the current argument is one.
inline option_parse parse_runtime_option(arg_cursor& args, runtime_options& o) {
  const std::string_view a = args.peek();
  // The runtime options without a value.
  static constexpr std::pair<std::string_view, bool runtime_options::*> flags[] = {
      {"--no-mmap", &runtime_options::no_mmap},
      {"--no-weight-tiles", &runtime_options::no_weight_tiles},
      {"--bf16-products", &runtime_options::bf16_products}};
  for (const auto& [name, flag] : flags)
    if (a == name) {
      args.take();
      o.*flag = true;
      return option_parse::taken;
    }
  // The runtime options that take a count (--ctx may be 0: sized by the example).
  static constexpr std::pair<std::string_view, std::uint32_t runtime_options::*> counts[] = {
      {"--ctx", &runtime_options::n_ctx},
      {"--ubatch", &runtime_options::n_ubatch},
      {"--batch", &runtime_options::n_batch},
      {"--evict-budget", &runtime_options::evict_budget}};
  std::uint32_t runtime_options::*count = nullptr;
  for (const auto& [name, member] : counts)
    if (a == name) count = member;
  const bool mine = count != nullptr || a == "--memory" || a == "--kv" || a == "--threads" ||
                    a == "--prefetch" || a == "--policy";
  if (!mine) return option_parse::not_mine;
  args.take();
  const char* v = args.value(a);
  if (v == nullptr) return option_parse::bad;
  std::uint32_t u = 0;
  if (a == "--memory") {
    if (!is_memory_name(v))
      return args.complain("--memory takes an engine memory kind (auto, full, split, ...), not", v),
             option_parse::bad;
    o.memory = v;
  } else if (a == "--kv") {
    if (!is_kv_name(v))
      return args.complain("--kv takes f32, f16, bf16, q8_0 or q4_0, not", v), option_parse::bad;
    o.kv = v;
  } else if (a == "--policy") {
    if (!mnemo::parse_evict_policy(v).is_ok())
      return args.complain("--policy takes none, h2o, tova, snapkv, streaming_llm or quest, not",
                           v),
             option_parse::bad;
    o.policy = v;
  } else if (a == "--prefetch") {
    if (std::string_view(v) != "l1" && std::string_view(v) != "l2")
      return args.complain("--prefetch takes l1 or l2, not", v), option_parse::bad;
    o.prefetch = v;
  } else if (a == "--threads") {
    if (!parse_u32(v, u, 0, 1024))
      return args.complain("--threads takes a count, not", v), option_parse::bad;
    o.threads = static_cast<int>(u);
  } else {
    if (!parse_u32(v, u, a == "--ctx" ? 0 : 1))
      return args.complain("expected a positive number, got", v), option_parse::bad;
    o.*count = u;
  }
  return option_parse::taken;
}

/// Applies the options that are process-wide settings of the library (the software
/// prefetch target, weight tiles, the attention's product precision); the others go to
/// the context. Call before loading.
inline void apply_process_settings(const runtime_options& o) {
  if (o.prefetch == "l1") mnemo::simd::set_prefetch_target(mnemo::simd::prefetch_target::l1);
  if (o.prefetch == "l2") mnemo::simd::set_prefetch_target(mnemo::simd::prefetch_target::l2);
  if (o.no_weight_tiles) mnemo::model::set_weight_tiles_enabled(false);
  if (o.bf16_products)
    mnemo::attention::set_product_precision(mnemo::attention::product_precision::bf16);
}

/// "l1" or "l2": the prefetch target calls use now.
inline const char* prefetch_target_name() {
  return mnemo::simd::current_prefetch_target() == mnemo::simd::prefetch_target::l2 ? "l2" : "l1";
}

}  // namespace mnemo_examples
