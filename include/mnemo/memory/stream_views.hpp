// The attention views of a memory that holds each sequence apart (split streams, split
// windows, bounded lanes): one kv_view per stream a micro-batch touches, by increasing
// stream id, and per token the index of its stream's view, so that one attend() call
// covers every stream and no query scores another sequence's keys.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <span>

#include "mnemo/attention/kv_view.hpp"
#include "mnemo/memory/concepts.hpp"

namespace mnemo::memory {

/// Empties out for a micro-batch's views and sets the layer's window.
inline void start_views(layer_views& out, attention::layer_window window) {
  out.segments.clear();
  out.streams.clear();
  out.token_stream.clear();
  out.window = window;
}

/// out.segments holds the segments of each stream in turn, stream k's in
/// [first[k], first[k + 1]): one view per stream. @pre first.size() = streams + 1
inline void views_from_runs(layer_views& out, std::span<const std::size_t> first) {
  out.streams.clear();
  const std::span<const attention::kv_segment> all(out.segments);
  for (std::size_t k = 0; k + 1 < first.size(); ++k)
    out.streams.push_back(attention::kv_view{all.subspan(first[k], first[k + 1] - first[k])});
}

/// One view per segment of out.segments (streams of one segment each).
inline void view_per_segment(layer_views& out) {
  out.streams.clear();
  const std::span<const attention::kv_segment> all(out.segments);
  for (std::size_t k = 0; k < all.size(); ++k)
    out.streams.push_back(attention::kv_view{all.subspan(k, 1)});
}

/// out.token_stream[j] = the index of id_of(tokens[j]) among the sorted `ids`.
template <class Id, class Tokens, class IdOf>
void token_views(layer_views& out, std::span<const Id> ids, const Tokens& tokens, IdOf id_of) {
  out.token_stream.clear();
  for (const auto& t : tokens)
    out.token_stream.push_back(static_cast<std::uint32_t>(
        std::lower_bound(ids.begin(), ids.end(), static_cast<Id>(id_of(t))) - ids.begin()));
}

}  // namespace mnemo::memory
