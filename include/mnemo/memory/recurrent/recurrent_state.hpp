// State save/load of the recurrent strategy, in the format of state_format.hpp
// (strategy_id::recurrent; the header's d_k / d_v carry conv_floats / ssm_floats per
// layer, K/V types are ggml F32). Payload:
//   u32 count, then per sequence: i32 seq id, i32 pos,
//   then per sequence its whole state: [n_layer][conv_floats + ssm_floats] f32.
// A per-sequence state has count 0 (empty) or 1. Checkpoints are not saved: a loaded
// sequence can be rolled back no further than its loaded position.
#pragma once

#include <span>
#include <vector>

#include "mnemo/memory/recurrent/recurrent.hpp"
#include "mnemo/memory/state_format.hpp"

namespace mnemo::memory {

namespace detail {

inline state_header recurrent_header(const recurrent& m, std::int32_t seq) {
  const auto& cfg = m.config();
  state_header h;
  h.strategy = static_cast<std::uint16_t>(strategy_id::recurrent);
  h.seq = seq;
  h.n_layer = static_cast<std::uint32_t>(cfg.n_layer);
  h.d_k = static_cast<std::uint32_t>(cfg.conv_floats);
  h.d_v = static_cast<std::uint32_t>(cfg.ssm_floats);
  return h;  // k_type = v_type = 0: ggml F32
}

}  // namespace detail

/// Writes sequence s's state, or every sequence's (s == -1), into `out`.
inline status state_write(const recurrent& m, seq_id s, std::vector<std::uint8_t>& out) {
  MNEMO_RETURN_IF_ERROR(check_state_write(s, m.config().n_seq_max, m.in_batch()));
  std::vector<seq_id> picked;
  for (seq_id o = 0; o < m.config().n_seq_max; ++o)
    if ((s < 0 || o == s) && m.seq_pos_max(o) >= 0) picked.push_back(o);
  state_builder b(out, detail::recurrent_header(m, s), 4 + picked.size() * (8 + m.state_bytes()));
  byte_writer& w = b.payload();
  w.put(static_cast<std::uint32_t>(picked.size()));
  for (seq_id o : picked) {
    w.put(o);
    w.put(m.seq_pos_max(o));
  }
  for (seq_id o : picked) w.put_bytes(m.slot(o).data(), m.state_bytes());
  b.seal();
  return {};
}

namespace detail {

/// A parsed, fully checked recurrent state; `rows` points into the payload.
struct recurrent_state {
  std::vector<seq_id> ids;
  std::vector<pos_t> pos;
  const std::uint8_t* rows = nullptr;
};

inline status recurrent_parse(const recurrent& m, std::span<const std::uint8_t> data, seq_id dest,
                              recurrent_state& st) {
  const auto& cfg = m.config();
  MNEMO_ASSIGN_OR_RETURN(auto opened, open_state_into(data, recurrent_header(m, -1), dest,
                                                      cfg.n_seq_max, m.in_batch()));
  byte_reader r(opened.payload);
  std::uint32_t n = 0;
  r.get(n);
  const std::uint32_t limit = dest < 0 ? static_cast<std::uint32_t>(cfg.n_seq_max) : 1;
  if (!r.ok() || n > limit)
    return make_status(status_code::corrupt_data, "state_read: %u sequences, at most %u fit", n,
                       limit);
  st.ids.assign(n, -1);
  st.pos.assign(n, -1);
  seq_set seen;
  // A per-sequence state names its source, which dest replaces.
  const seq_id id_limit = dest >= 0 ? k_max_seq : cfg.n_seq_max;
  for (std::uint32_t i = 0; i < n; ++i) {
    r.get(st.ids[i]);
    r.get(st.pos[i]);
    if (!r.ok() || st.ids[i] < 0 || st.ids[i] >= id_limit || st.pos[i] < 0 ||
        seen.contains(st.ids[i]))
      return make_status(status_code::corrupt_data,
                         "state_read: entry %u (sequence %d at %d) is malformed or repeated", i,
                         st.ids[i], st.pos[i]);
    seen.insert(st.ids[i]);
  }
  const std::size_t bytes = n * m.state_bytes();
  st.rows = r.get_bytes(bytes);
  if (st.rows == nullptr || r.remaining() != 0)
    return make_status(status_code::corrupt_data,
                       "state_read: %zu bytes of state expected, %zu present", bytes,
                       r.remaining() + (st.rows ? bytes : 0));
  return {};
}

}  // namespace detail

/// Everything state_read checks, nothing changed (the composite asks every part first).
inline status state_check(const recurrent& m, std::span<const std::uint8_t> data, seq_id dest) {
  detail::recurrent_state st;
  return detail::recurrent_parse(m, data, dest, st);
}

/// Loads a state from state_write: a whole state into the whole memory (dest == -1),
/// or a per-sequence state into sequence dest (an empty one clears dest). Every
/// check runs before any change: on failure the memory is exactly as it was.
inline status state_read(recurrent& m, std::span<const std::uint8_t> data, seq_id dest = -1) {
  detail::recurrent_state st;
  MNEMO_RETURN_IF_ERROR(detail::recurrent_parse(m, data, dest, st));
  // Past this point nothing can fail.
  if (dest < 0) {
    m.clear(false);
  } else {
    MNEMO_RETURN_IF_ERROR(m.seq_rm(dest, -1, -1));
  }
  for (std::size_t i = 0; i < st.ids.size(); ++i)
    m.restore(dest >= 0 ? dest : st.ids[i], st.pos[i], st.rows + i * m.state_bytes());
  return {};
}

}  // namespace mnemo::memory
