// State save/load of the composite memory (layered.hpp), in the format of
// state_format.hpp (strategy_id::composite; n_layer = the model's layers, n_stream =
// the number of parts, other shape fields 0). Payload:
//   u32 n_parts, then per part: u64 bytes, the part's own complete state (header,
//   checksum and all).
// Loading checks every part's state against its part (state_check) before any part
// changes, so a damaged or incompatible part leaves every part as it was (spec §6.2,
// §8.3 step 4, #27530). The checks for full_cache and recurrent restate their
// readers' checks (full_cache_state.hpp, recurrent_state.hpp) without changing them.
#pragma once

#include <span>
#include <vector>

#include "mnemo/memory/full_cache_state.hpp"
#include "mnemo/memory/layered.hpp"
#include "mnemo/memory/recurrent_state.hpp"
#include "mnemo/memory/sliding_window_state.hpp"
#include "mnemo/memory/split_stream_state.hpp"
#include "mnemo/memory/split_window_state.hpp"
#include "mnemo/memory/state_format.hpp"

namespace mnemo::memory {

/// full_cache: everything state_read(full_cache) checks, nothing changed.
template <class KE, class VE>
status state_check(const full_cache<KE, VE>& c, std::span<const std::uint8_t> data, seq_id dest) {
  const auto& cfg = c.config();
  MNEMO_RETURN_IF_ERROR(check_seq(dest, cfg.n_seq_max, "state_read", true));
  if (c.in_batch())
    return make_status(status_code::invalid_argument, "state_read: a batch is being applied");
  std::int32_t src = 0;
  MNEMO_ASSIGN_OR_RETURN(auto payload, open_state(data, detail::full_cache_header(c, -1), src));
  if ((dest < 0) != (src < 0))
    return make_status(status_code::invalid_argument, "state_read: whole and per-sequence mixed");
  byte_reader r(payload);
  std::uint32_t n = 0;
  r.get(n);
  if (!r.ok() || n > c.size())
    return make_status(status_code::corrupt_data, "state_read: %u cells do not fit", n);
  for (std::uint32_t i = 0; i < n; ++i) {
    pos_t p = -1;
    std::uint32_t k = 0;
    r.get(p);
    r.get(k);
    if (!r.ok() || p < 0 || k == 0 || k > static_cast<std::uint32_t>(cfg.n_seq_max) ||
        (dest >= 0 && k != 1))
      return make_status(status_code::corrupt_data, "state_read: cell %u is malformed", i);
    const seq_id limit = dest >= 0 ? k_max_seq : cfg.n_seq_max;
    for (std::uint32_t j = 0; j < k; ++j) {
      seq_id o = -1;
      r.get(o);
      if (!r.ok() || o < 0 || o >= limit)
        return make_status(status_code::corrupt_data, "state_read: cell %u has a bad owner", i);
    }
  }
  const auto& kv = c.storage();
  const std::size_t rows = cfg.shape.n_layer * n * (kv.k_row_bytes() + kv.v_row_bytes());
  if (r.get_bytes(rows) == nullptr || r.remaining() != 0)
    return make_status(status_code::corrupt_data, "state_read: K/V data of %zu bytes expected",
                       rows);
  if (dest >= 0) {
    std::size_t avail = 0;
    for (std::size_t i = 0; i < c.cells().size(); ++i)
      avail += c.cells().empty(i) || c.cells().owners(i) == seq_set::of(dest);
    if (avail < n)
      return make_status(status_code::no_space, "state_read: %u cells needed, %zu available", n,
                         avail);
  }
  return {};
}

/// recurrent: everything state_read(recurrent) checks, nothing changed.
inline status state_check(const recurrent& m, std::span<const std::uint8_t> data, seq_id dest) {
  const auto& cfg = m.config();
  MNEMO_RETURN_IF_ERROR(check_seq(dest, cfg.n_seq_max, "state_read", true));
  if (m.in_batch())
    return make_status(status_code::invalid_argument, "state_read: a batch is being applied");
  std::int32_t src = 0;
  MNEMO_ASSIGN_OR_RETURN(auto payload, open_state(data, detail::recurrent_header(m, -1), src));
  if ((dest < 0) != (src < 0))
    return make_status(status_code::invalid_argument, "state_read: whole and per-sequence mixed");
  byte_reader r(payload);
  std::uint32_t n = 0;
  r.get(n);
  const std::uint32_t limit = dest < 0 ? static_cast<std::uint32_t>(cfg.n_seq_max) : 1;
  if (!r.ok() || n > limit)
    return make_status(status_code::corrupt_data, "state_read: %u sequences", n);
  seq_set seen;
  for (std::uint32_t i = 0; i < n; ++i) {
    seq_id id = -1;
    pos_t p = -1;
    r.get(id);
    r.get(p);
    const seq_id id_limit = dest >= 0 ? k_max_seq : cfg.n_seq_max;
    if (!r.ok() || id < 0 || id >= id_limit || p < 0 || seen.contains(id))
      return make_status(status_code::corrupt_data, "state_read: entry %u is malformed", i);
    seen.insert(id);
  }
  if (r.get_bytes(n * m.state_bytes()) == nullptr || r.remaining() != 0)
    return make_status(status_code::corrupt_data, "state_read: state bytes missing");
  return {};
}

namespace detail {

template <class M>
requires requires(const M& m, std::span<const std::uint8_t> d, seq_id s) {
  { state_check(m, d, s) } -> std::same_as<status>;
}
status part_state_check(const M& m, std::span<const std::uint8_t> data, seq_id dest) {
  return state_check(m, data, dest);
}
template <class KE, class VE>
status part_state_check(const sliding_window<KE, VE>& c, std::span<const std::uint8_t> data,
                        seq_id dest) {
  auto r = state_check(c, data, dest, nullptr);
  return r.is_ok() ? status{} : r.error();
}

/// Parts whose state the composite can check before it changes any part.
template <class M>
concept state_checked = requires(const M& m, std::span<const std::uint8_t> d, seq_id s) {
  { part_state_check(m, d, s) } -> std::same_as<status>;
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
  std::size_t bytes = 4;
  for (const auto& b : blobs) bytes += 8 + b.size();
  state_builder b(out, detail::layered_header(m, s), bytes);
  b.payload().put(static_cast<std::uint32_t>(sizeof...(P)));
  for (const auto& blob : blobs) {
    b.payload().put(static_cast<std::uint64_t>(blob.size()));
    b.payload().put_bytes(blob.data(), blob.size());
  }
  b.seal();
  return {};
}

template <class... P>
result<std::vector<std::uint8_t>> state_write(layered<P...>& m, seq_id s = -1) {
  std::vector<std::uint8_t> out;
  MNEMO_RETURN_IF_ERROR(state_write(m, s, out));
  return out;
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
  for (std::uint32_t k = 0; k < n; ++k) {
    std::uint64_t len = 0;
    r.get(len);
    const std::uint8_t* p = r.ok() && len <= r.remaining() ? r.get_bytes(len) : nullptr;
    if (p == nullptr)
      return make_status(status_code::corrupt_data, "state_read: part %u is truncated", k);
    blobs.emplace_back(p, len);
  }
  if (r.remaining() != 0)
    return make_status(status_code::corrupt_data, "state_read: %zu trailing bytes", r.remaining());
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
      st = detail::part_state_check(p, blobs[k], dest);
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
