// The concepts of the batch layer: what validation needs from a memory (its position
// range per sequence) and what a micro-batch split strategy is.
#pragma once

#include <concepts>

#include "mnemo/base/result.hpp"
#include "mnemo/base/seq_set.hpp"

namespace mnemo {

struct ubatch;
class batch_splitter;

/// Anything that reports, per sequence, the smallest and largest position it holds, or
/// -1 for both when it holds nothing (llama.cpp's seq_pos_min / seq_pos_max). Every
/// memory strategy models it; validate() takes it as a template parameter, so the
/// memory is queried without virtual calls, once per sequence of the batch.
template <class M>
concept position_source = requires(const M& m, seq_id s) {
  { m.pos_min(s) } -> std::convertible_to<pos_t>;
  { m.pos_max(s) } -> std::convertible_to<pos_t>;
};

/// A micro-batch split strategy (docs/batch.md): `next` consumes unused tokens of the
/// splitter's batch and returns the next ubatch, an empty ubatch when every token is
/// used, or a status when the batch cannot be split this way (nothing consumed then).
/// Models: simple_split, equal_split, seq_split, any_split (split.hpp).
template <class S>
concept split_strategy = std::copy_constructible<S> && requires(const S& s, batch_splitter& sp) {
  { s.next(sp) } -> std::same_as<result<ubatch>>;
};

}  // namespace mnemo
