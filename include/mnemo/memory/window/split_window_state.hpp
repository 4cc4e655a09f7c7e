// State save/load of split_window, in the format of state_format.hpp (strategy
// split_window, n_stream = n_seq_max; the header's shape, types and RoPE are the
// streams'). Each stream's part is that stream's own sliding_window state (its
// sequence 0 standing for the stream's sequence), so every check of
// sliding_window_state.hpp applies. Payload:
//   u32 tag 'SWST', u32 n_parts (n_seq_max for a whole state, 1 for a sequence),
//   then per part: u64 bytes, the stream's state (header, checksum and all).
// Loading checks every part against its stream before any stream changes.
#pragma once

#include <span>
#include <vector>

#include "mnemo/memory/state_format.hpp"
#include "mnemo/memory/window/sliding_window_state.hpp"
#include "mnemo/memory/window/split_window.hpp"

namespace mnemo::memory {

namespace detail {

inline constexpr std::uint32_t k_split_window_tag = 0x54535753u;  // "SWST"

template <class KE, class VE>
state_header split_window_header(const split_window<KE, VE>& c, std::int32_t seq) {
  return kv_state_header<KE, VE>(strategy_id::split_window, seq, c.config().stream,
                                 static_cast<std::uint32_t>(c.config().n_seq_max));
}

/// The parts of a state, checked against c (nothing changed).
template <class KE, class VE>
result<std::vector<std::span<const std::uint8_t>>> split_window_parts(
    const split_window<KE, VE>& c, std::span<const std::uint8_t> data, seq_id dest) {
  MNEMO_ASSIGN_OR_RETURN(auto opened, open_state_into(data, split_window_header(c, -1), dest,
                                                      c.config().n_seq_max, c.in_batch()));
  byte_reader r(opened.payload);
  std::uint32_t tag = 0, n = 0;
  r.get(tag);
  r.get(n);
  const std::uint32_t want = dest < 0 ? static_cast<std::uint32_t>(c.n_streams()) : 1;
  if (!r.ok() || tag != k_split_window_tag || n != want)
    return make_status(status_code::corrupt_data,
                       "state_read: not a split-window state of %u streams", want);
  std::vector<std::span<const std::uint8_t>> parts;
  MNEMO_RETURN_IF_ERROR(get_parts(r, n, "stream", parts));
  for (std::uint32_t k = 0; k < n; ++k) {
    const seq_id s = dest < 0 ? static_cast<seq_id>(k) : dest;
    const status st = state_check(c.stream(s), parts[k], dest < 0 ? -1 : 0);
    if (!st.is_ok())
      return make_status(st.code(), "state_read: sequence %d: %s", s, st.to_string().c_str());
  }
  return parts;
}

}  // namespace detail

/// Writes sequence s (its stream's checkpoint: the window of its last token, as
/// sliding_window's per-sequence state) or every stream (s == -1) into `out`.
template <class KE, class VE>
status state_write(split_window<KE, VE>& c, seq_id s, std::vector<std::uint8_t>& out) {
  MNEMO_RETURN_IF_ERROR(check_state_write(s, c.config().n_seq_max, c.in_batch()));
  std::vector<std::vector<std::uint8_t>> blobs(s < 0 ? c.n_streams() : 1);
  for (std::size_t k = 0; k < blobs.size(); ++k) {
    const seq_id q = s < 0 ? static_cast<seq_id>(k) : s;
    MNEMO_RETURN_IF_ERROR(state_write(c.mutable_stream(q), s < 0 ? -1 : 0, blobs[k]));
  }
  state_builder b(out, detail::split_window_header(c, s), 8 + parts_bytes(blobs));
  b.payload().put(detail::k_split_window_tag);
  b.payload().put(static_cast<std::uint32_t>(blobs.size()));
  put_parts(b.payload(), blobs);
  b.seal();
  return {};
}

/// Everything state_read checks, nothing changed (the composite asks first).
template <class KE, class VE>
status state_check(const split_window<KE, VE>& c, std::span<const std::uint8_t> data, seq_id dest) {
  auto parts = detail::split_window_parts(c, data, dest);
  return parts.is_ok() ? status{} : parts.error();
}

/// Loads a state from state_write: whole (dest == -1, every stream) or into sequence
/// dest (its stream's sequence is replaced). Every check runs first.
template <class KE, class VE>
status state_read(split_window<KE, VE>& c, std::span<const std::uint8_t> data, seq_id dest = -1) {
  MNEMO_ASSIGN_OR_RETURN(auto parts, detail::split_window_parts(c, data, dest));
  status st;
  for (std::size_t k = 0; k < parts.size() && st.is_ok(); ++k) {
    const seq_id s = dest < 0 ? static_cast<seq_id>(k) : dest;
    st = state_read(c.mutable_stream(s), parts[k], dest < 0 ? -1 : 0);
  }
  if (!st.is_ok())
    return make_status(status_code::internal, "state_read: a stream failed after its check: %s",
                       st.to_string().c_str());
  return {};
}

}  // namespace mnemo::memory
