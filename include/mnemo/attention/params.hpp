// Attention variants as run-time values (STYLE rule 3): scale, causality, the three
// sliding-window kinds of docs/attention.md, and the logit soft-cap.
#pragma once

#include <cstdint>
#include <string_view>

#include "mnemo/base/seq_set.hpp"
#include "mnemo/base/status.hpp"

namespace mnemo::attention {

enum class window_kind : std::uint8_t {
  none,       // every causal (or, without causality, every) cell of the sequence
  standard,   // keeps the n_swa positions ending at the query: masked when p_q - p_k >= n_swa
  chunked,    // Llama-4 chunks: masked when p_k < floor(p_q / n_swa) * n_swa
  symmetric,  // bidirectional: masked when |p_q - p_k| > floor(n_swa / 2)
};

constexpr std::string_view to_string(window_kind w) noexcept {
  switch (w) {
    case window_kind::none: return "none";
    case window_kind::standard: return "standard";
    case window_kind::chunked: return "chunked";
    case window_kind::symmetric: return "symmetric";
  }
  return "?";
}

struct params {
  float scale = 1.0f;    // logits are scale * (q . k)
  float softcap = 0.0f;  // > 0: logits become softcap * tanh(logit / softcap); 0 = off
  bool causal = true;    // false: encoder-style, no causal mask
  window_kind window = window_kind::none;
  pos_t n_swa = 0;  // the window size; ignored when window == none

  /// A status naming the first inconsistent field.
  status validate() const {
    if (!(scale == scale) || !(softcap >= 0.0f))
      return make_status(status_code::invalid_argument,
                         "attention params: scale must be a number and softcap >= 0 (got %g, %g)",
                         static_cast<double>(scale), static_cast<double>(softcap));
    if (window != window_kind::none && n_swa <= 0)
      return make_status(status_code::invalid_argument,
                         "attention params: a %s window needs n_swa > 0 (got %d)",
                         to_string(window).data(), n_swa);
    return {};
  }
};

/// llama.cpp's is_masked_swa(n_swa, type, p0 = key position, p1 = query position).
constexpr bool is_masked_by_window(window_kind w, pos_t n_swa, pos_t p_key,
                                   pos_t p_query) noexcept {
  switch (w) {
    case window_kind::none: return false;
    case window_kind::standard: return p_query - p_key >= n_swa;
    case window_kind::chunked: return p_key < (p_query / n_swa) * n_swa;
    case window_kind::symmetric: {
      const pos_t d = p_query > p_key ? p_query - p_key : p_key - p_query;
      return d > n_swa / 2;
    }
  }
  return false;
}

/// The position part of the mask: causality and the window. For a fixed query the
/// kept key positions form an interval, so a block whose lowest and highest key
/// positions are kept is kept whole.
constexpr bool keeps_position(const params& a, pos_t p_key, pos_t p_query) noexcept {
  if (a.causal && p_key > p_query) return false;
  return !is_masked_by_window(a.window, a.n_swa, p_key, p_query);
}

/// Whether a query (position p_query, primary sequence s) attends a cell holding
/// position p_key (< 0: empty) owned by `owners` (null: owned by s).
constexpr bool keeps(const params& a, pos_t p_query, seq_id s, pos_t p_key,
                     const seq_set* owners) noexcept {
  if (p_key < 0) return false;
  if (owners != nullptr && !owners->contains(s)) return false;
  return keeps_position(a, p_key, p_query);
}

}  // namespace mnemo::attention
