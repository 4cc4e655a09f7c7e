// Window arithmetic of the sliding-window memory: for the three window kinds of
// attention/params.hpp the keys a causal query at q keeps form the interval
// [lowest_kept(q), q] (symmetric windows also keep keys up to q + n_swa / 2 when the
// attention is not causal), and lowest_kept is non-decreasing in q. So a token is
// needed by no later query of its sequence once it is masked for the next one, and a
// sequence that forgot every position below h can resume at q exactly when
// lowest_kept(q) >= h.
#pragma once

#include <algorithm>
#include <limits>

#include "mnemo/attention/params.hpp"
#include "mnemo/base/seq_set.hpp"
#include "mnemo/memory/types.hpp"

namespace mnemo::memory {

/// The lowest key position a query at q keeps: the window geometry is the attention
/// mask's (attention/params.hpp), defined once.
using attention::lowest_kept;

/// The smallest query position q >= 0 with lowest_kept(q) >= h: the earliest a query
/// needs nothing below h (0 when h <= 0).
constexpr pos_t first_unneeding(attention::window_kind w, pos_t n_swa, pos_t h) noexcept {
  if (h <= 0) return 0;
  switch (w) {
    case attention::window_kind::none: return std::numeric_limits<pos_t>::max();
    case attention::window_kind::standard: return h + n_swa - 1;
    case attention::window_kind::chunked: return (h + n_swa - 1) / n_swa * n_swa;
    case attention::window_kind::symmetric: return h + n_swa / 2;
  }
  return std::numeric_limits<pos_t>::max();
}

/// Where a sequence that forgot everything below h can resume at the earliest (0 when
/// h <= 0): a query that needs nothing below h, above a position the window still
/// holds (h at least), because the window keeps the sequence's last position: a
/// sequence cut down to forgotten positions only would hold nothing to resume from.
constexpr pos_t first_resumable(attention::window_kind w, pos_t n_swa, pos_t h) noexcept {
  if (h <= 0) return 0;
  const pos_t q = first_unneeding(w, n_swa, h);
  return q == std::numeric_limits<pos_t>::max() ? q : std::max<pos_t>(q, h + 1);
}

/// Whether a sequence that forgot every position below `horizon` (0: nothing) can
/// resume at q (q = 0 is a fresh start and always possible): first_resumable <= q.
constexpr bool resumable(attention::window_kind w, pos_t n_swa, pos_t horizon, pos_t q) noexcept {
  return horizon <= 0 || q == 0 || (q > horizon && lowest_kept(w, n_swa, q) >= horizon);
}

/// dst's horizon after seq_cp(src, dst, r): above src's forgotten positions
/// in the range (horizon hs) and dst's own forgotten positions outside it (hd).
constexpr pos_t copied_horizon(pos_t hs, pos_t hd, pos_range r) noexcept {
  const pos_t from_src = r.p0 < hs ? std::min(r.p1, hs) : 0;
  const pos_t from_dst = hd <= 0 ? 0 : r.contains(hd - 1) ? std::min(r.p0, hd) : hd;
  return std::max(from_src, from_dst);
}

/// A sequence's horizon h after its positions in r move by new_pos (seq_add, seq_div):
/// one above every forgotten position (all below h) where it lands. Forgotten positions
/// outside the range stay (the highest is h - 1, or p0 - 1 when h - 1 moves); those
/// inside land at most at new_pos(min(p1, h) - 1), new_pos being non-decreasing.
template <class NewPos>
constexpr pos_t moved_horizon(pos_t h, pos_range r, NewPos new_pos) {
  if (h <= 0) return h;
  pos_t h2 = r.contains(h - 1) ? r.p0 : h;
  if (r.p0 < h) h2 = std::max<pos_t>(h2, new_pos(std::min(r.p1, h) - 1) + 1);
  return std::max<pos_t>(0, h2);
}

}  // namespace mnemo::memory
