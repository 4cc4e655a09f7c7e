// Small types shared by every memory strategy.
#pragma once

#include <cstddef>
#include <cstdint>
#include <limits>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "mnemo/attention/params.hpp"
#include "mnemo/base/seq_set.hpp"
#include "mnemo/base/status.hpp"

namespace mnemo::memory {

/// What a memory needs to know of one micro-batch: per token its position and
/// the set of sequences it belongs to.
struct ubatch_tokens {
  std::span<const pos_t> pos;
  std::span<const seq_set> seqs;
  std::size_t size() const noexcept { return pos.size(); }
};

/// A half-open position range [p0, p1) with llama.cpp's conventions: a negative p0
/// means 0 and a negative p1 means "to the end" (docs/memory.md, "Ranges").
struct pos_range {
  pos_t p0, p1;
  static constexpr pos_range of(pos_t p0, pos_t p1) noexcept {
    return {p0 < 0 ? 0 : p0, p1 < 0 ? std::numeric_limits<pos_t>::max() : p1};
  }
  constexpr bool contains(pos_t p) const noexcept { return p >= p0 && p < p1; }
  constexpr bool empty() const noexcept { return p0 >= p1; }
};

/// Checks a sequence id against a memory's n_seq_max (any_ok: -1 means "every").
inline status check_seq(seq_id s, seq_id n_seq_max, const char* op, bool any_ok = false) {
  if ((any_ok && s == -1) || (s >= 0 && s < n_seq_max)) return {};
  return make_status(status_code::out_of_range, "%s: sequence id %d is outside [0, %d)%s", op, s,
                     n_seq_max, any_ok ? " (or -1 for every sequence)" : "");
}

/// Checks a memory's n_seq_max: sequence ids live in [0, n_seq_max), n_seq_max in
/// [1, k_max_seq]. `who` names the memory in the refusal.
inline status check_n_seq_max(const char* who, seq_id n_seq_max) {
  if (n_seq_max >= 1 && n_seq_max <= k_max_seq) return {};
  return make_status(status_code::invalid_argument, "%s: n_seq_max %d is outside [1, %d]", who,
                     n_seq_max, k_max_seq);
}

/// Checks per-layer windows: none, or one per layer, each none or of n_swa > 0.
inline status check_layer_windows(const char* who, const std::vector<attention::layer_window>& w,
                                  std::size_t n_layer) {
  if (!w.empty() && w.size() != n_layer)
    return make_status(status_code::invalid_argument, "%s: %zu layer windows for %zu layers", who,
                       w.size(), n_layer);
  for (std::size_t l = 0; l < w.size(); ++l)
    if (w[l].kind != attention::window_kind::none && w[l].n_swa <= 0)
      return make_status(status_code::invalid_argument,
                         "%s: layer %zu has a %s window of n_swa %d (needs > 0)", who, l,
                         attention::to_string(w[l].kind).data(), w[l].n_swa);
  return {};
}

/// Bytes a memory holds, per layer and element type, and cells per sequence.
struct memory_report {
  struct layer {
    std::size_t index;
    std::string kind;  // "kv", "recurrent", ...
    std::string k_type, v_type;
    std::size_t k_bytes, v_bytes;
  };
  std::vector<layer> layers;
  std::size_t total_bytes = 0;
  std::size_t cells = 0, cells_used = 0;
  std::vector<std::pair<seq_id, std::size_t>> cells_per_seq;  // sequences holding any cell

  std::string to_string() const;
};

/// Appends n_layer layers of one kind holding k_bytes / v_bytes each to a report (the
/// K/V strategies' common part of report()).
inline void add_kv_layers(memory_report& r, std::size_t n_layer, std::string_view kind,
                          std::string_view k_type, std::string_view v_type, std::size_t k_bytes,
                          std::size_t v_bytes) {
  for (std::size_t l = 0; l < n_layer; ++l)
    r.layers.push_back(
        {l, std::string(kind), std::string(k_type), std::string(v_type), k_bytes, v_bytes});
  r.total_bytes += n_layer * (k_bytes + v_bytes);
}

inline std::string memory_report::to_string() const {
  std::string s;
  char line[256];
  for (const auto& l : layers) {
    std::snprintf(line, sizeof line, "layer %zu %s: K %s %zu B, V %s %zu B\n", l.index,
                  l.kind.c_str(), l.k_type.c_str(), l.k_bytes, l.v_type.c_str(), l.v_bytes);
    s += line;
  }
  std::snprintf(line, sizeof line, "total %zu B, cells %zu used of %zu\n", total_bytes, cells_used,
                cells);
  s += line;
  for (const auto& [seq, n] : cells_per_seq) {
    std::snprintf(line, sizeof line, "  seq %d: %zu cells\n", seq, n);
    s += line;
  }
  return s;
}

}  // namespace mnemo::memory
