// Attention variants as run-time values (STYLE rule 3): scale, causality, the three
// sliding-window kinds of docs/attention.md, and the logit soft-cap.
#pragma once

#include <cstdint>
#include <limits>
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

/// The window of one layer: its kind and size (n_swa, ignored for none). The memory
/// holding the layer reports it with its views, and the mask takes it from there.
struct layer_window {
  window_kind kind = window_kind::none;
  pos_t n_swa = 0;
  friend constexpr bool operator==(const layer_window&, const layer_window&) = default;
};

/// The lowest key position a query at q keeps: the keys a window keeps for q form the
/// interval [lowest_kept, highest_kept] (causality aside), and lowest_kept does not
/// decrease with q. For window_kind::none: the lowest position there is.
constexpr pos_t lowest_kept(window_kind w, pos_t n_swa, pos_t q) noexcept {
  switch (w) {
    case window_kind::none: return std::numeric_limits<pos_t>::min();
    case window_kind::standard: return q - n_swa + 1;
    case window_kind::chunked: return q / n_swa * n_swa;
    case window_kind::symmetric: return q - n_swa / 2;
  }
  return std::numeric_limits<pos_t>::min();
}

/// The highest key position a query at q keeps, causality aside: only a symmetric
/// window reaches above q. In 64 bits, so that q + n_swa / 2 cannot overflow.
constexpr std::int64_t highest_kept(window_kind w, pos_t n_swa, pos_t q) noexcept {
  return w == window_kind::symmetric ? std::int64_t{q} + n_swa / 2
                                     : std::numeric_limits<std::int64_t>::max();
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

/// Whether the window masks the key at p_key for the query at p_query (llama.cpp's
/// is_masked_swa): it lies outside [lowest_kept, highest_kept].
constexpr bool is_masked_by_window(window_kind w, pos_t n_swa, pos_t p_key,
                                   pos_t p_query) noexcept {
  return p_key < lowest_kept(w, n_swa, p_query) || p_key > highest_kept(w, n_swa, p_query);
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
