// State save/load of the composite memory (layered.hpp), in the format of
// state_format.hpp (strategy_id::composite; n_layer = the model's layers, n_stream =
// the number of parts, other shape fields 0). Payload:
//   u32 n_parts, then per part: u64 bytes, the part's own complete state (header,
//   checksum and all).
// Loading checks every part's state against its part (state_check) before any part
// changes, so a damaged or incompatible part leaves every part as it was (llama.cpp
// loads part by part and can leave them disagreeing, #27530).
#pragma once

#include <span>
#include <vector>

#include "mnemo/memory/full/full_cache_state.hpp"
#include "mnemo/memory/layered/layered.hpp"
#include "mnemo/memory/recurrent/recurrent_state.hpp"
#include "mnemo/memory/state_format.hpp"
#include "mnemo/memory/stream/split_stream_state.hpp"
#include "mnemo/memory/window/sliding_window_state.hpp"
#include "mnemo/memory/window/split_window_state.hpp"

namespace mnemo::memory {

namespace detail {

/// Parts whose state the composite can check before it changes any part.
template <class M>
concept state_checked = requires(const M& m, std::span<const std::uint8_t> d, seq_id s) {
  { state_check(m, d, s) } -> std::same_as<status>;
};

template <class... P>
state_header layered_header(const layered<P...>& m, std::int32_t seq) {
  state_header h;
  h.strategy = static_cast<std::uint16_t>(strategy_id::composite);
  h.seq = seq;
  h.n_layer = static_cast<std::uint32_t>(m.n_layer());
  h.n_stream = sizeof...(P);
  return h;
}
}  // namespace detail

/// Writes sequence s (or everything, s == -1) of every part into one state.
template <class... P>
status state_write(layered<P...>& m, seq_id s, std::vector<std::uint8_t>& out) {
  std::vector<std::vector<std::uint8_t>> blobs(sizeof...(P));
  status st;
  m.each([&](auto& p, std::size_t k) {
    if (st.is_ok()) st = state_write(p, s, blobs[k]);
  });
  if (!st.is_ok()) return st;
  state_builder b(out, detail::layered_header(m, s), 4 + parts_bytes(blobs));
  b.payload().put(static_cast<std::uint32_t>(sizeof...(P)));
  put_parts(b.payload(), blobs);
  b.seal();
  return {};
}

/// Loads a state from state_write into every part: whole (dest == -1) or into
/// sequence dest. Every part's state is checked first; on failure nothing changed.
template <class... P>
status state_read(layered<P...>& m, std::span<const std::uint8_t> data, seq_id dest = -1) {
  std::int32_t src = 0;
  MNEMO_ASSIGN_OR_RETURN(auto payload, open_state(data, detail::layered_header(m, -1), src));
  byte_reader r(payload);
  std::uint32_t n = 0;
  r.get(n);
  if (!r.ok() || n != sizeof...(P))
    return make_status(status_code::corrupt_data, "state_read: %u parts, this memory has %zu", n,
                       sizeof...(P));
  std::vector<std::span<const std::uint8_t>> blobs;
  MNEMO_RETURN_IF_ERROR(get_parts(r, n, "part", blobs));
  // At most one part without a check (split_stream: its reader checks everything
  // before it changes anything): it is read after the others are checked and before
  // they change, so its refusal leaves every part as it was.
  static_assert((0 + ... + (detail::state_checked<P> ? 0 : 1)) <= 1,
                "state_read(layered<P...>) can keep at most one part without a "
                "state_check() overload all-or-nothing: add one for your strategy");
  status st;
  m.each([&](const auto& p, std::size_t k) {
    if constexpr (detail::state_checked<std::decay_t<decltype(p)>>) {
      if (!st.is_ok()) return;
      st = state_check(p, blobs[k], dest);
      if (!st.is_ok())
        st = make_status(st.code(), "state_read: part %zu: %s", k, st.to_string().c_str());
    }
  });
  if (!st.is_ok()) return st;
  m.each([&](auto& p, std::size_t k) {
    if constexpr (!detail::state_checked<std::decay_t<decltype(p)>>) {
      if (!st.is_ok()) return;
      st = state_read(p, blobs[k], dest);
      if (!st.is_ok())
        st = make_status(st.code(), "state_read: part %zu: %s", k, st.to_string().c_str());
    }
  });
  if (!st.is_ok()) return st;
  m.each([&](auto& p, std::size_t k) {
    if constexpr (!detail::state_checked<std::decay_t<decltype(p)>>) return;
    status r2 = state_read(p, blobs[k], dest);
    if (!r2.is_ok() && st.is_ok())
      st = make_status(status_code::internal,
                       "state_read: part %zu failed after its check passed: %s", k,
                       r2.to_string().c_str());
  });
  return st;
}

}  // namespace mnemo::memory
