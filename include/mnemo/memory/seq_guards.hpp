// The guards every strategy's sequence operations share, stated once so that every
// memory refuses the same calls with the same status: no operation while a batch is
// open, positions that stay representable, a positive divisor, and shifts only where
// the model can re-rotate its keys (docs/memory.md, "Errors are statuses").
#pragma once

#include <limits>

#include "mnemo/base/status.hpp"
#include "mnemo/memory/types.hpp"

namespace mnemo::memory {

/// Between prepare() and commit()/rollback() a sequence operation, update(),
/// defragment() or state I/O could take the planned cells: refused.
inline status check_not_in_batch(bool in_batch, const char* op) {
  if (!in_batch) return {};
  return make_status(status_code::invalid_argument,
                     "%s: a batch is prepared or being applied; commit() or rollback() first", op);
}

/// seq_add(s, p0, p1, delta) must not carry s's highest position `top` (-1: none) past
/// the largest pos_t; results below 0 are fine (those cells are freed).
inline status check_add_overflow(seq_id s, pos_t top, pos_t p0, pos_t p1, pos_t delta) {
  if (delta > 0 && top >= 0 && top > std::numeric_limits<pos_t>::max() - delta &&
      pos_range::of(p0, p1).p0 <= top)
    return make_status(status_code::out_of_range,
                       "seq_add: position %d + %d of sequence %d overflows the position type", top,
                       delta, s);
  return {};
}

/// seq_div divides by d > 0.
inline status check_divisor(int d) {
  if (d > 0) return {};
  return make_status(status_code::invalid_argument, "seq_div: divisor %d must be > 0", d);
}

/// What seq_add / seq_div need before anything else: a sequence id, no open batch, and
/// a model whose cached keys can be re-rotated (K-shift; false for M-RoPE-like models).
inline status check_shift_allowed(seq_id s, seq_id n_seq_max, bool in_batch, bool shift_supported,
                                  const char* op) {
  MNEMO_RETURN_IF_ERROR(check_seq(s, n_seq_max, op));
  MNEMO_RETURN_IF_ERROR(check_not_in_batch(in_batch, op));
  if (!shift_supported)
    return make_status(status_code::unsupported,
                       "%s: this model's positions cannot be shifted (no K-shift)", op);
  return {};
}

}  // namespace mnemo::memory
