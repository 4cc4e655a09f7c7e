// State save/load of the recurrent strategy, in the format of state_format.hpp
// (strategy_id::recurrent; the header's d_k / d_v carry conv_floats / ssm_floats per
// layer, K/V types are ggml F32). Payload:
//   u32 count, then per sequence: i32 seq id, i32 pos,
//   then per sequence its whole state: [n_layer][conv_floats + ssm_floats] f32.
// A per-sequence state has count 0 (empty) or 1. Checkpoints are not saved: a loaded
// sequence can be rolled back no further than its loaded position.
#pragma once

#include <vector>

#include "mnemo/memory/recurrent.hpp"
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
  MNEMO_RETURN_IF_ERROR(check_seq(s, m.config().n_seq_max, "state_write", true));
  if (m.in_batch())
    return make_status(status_code::invalid_argument, "state_write: a batch is being applied");
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

inline result<std::vector<std::uint8_t>> state_write(const recurrent& m, seq_id s = -1) {
  std::vector<std::uint8_t> out;
  MNEMO_RETURN_IF_ERROR(state_write(m, s, out));
  return out;
}

/// Loads a state from state_write: a whole state into the whole memory (dest == -1),
/// or a per-sequence state into sequence dest (an empty one clears dest, T68). Every
/// check runs before any change: on failure the memory is exactly as it was.
inline status state_read(recurrent& m, std::span<const std::uint8_t> data, seq_id dest = -1) {
  const auto& cfg = m.config();
  MNEMO_RETURN_IF_ERROR(check_seq(dest, cfg.n_seq_max, "state_read", true));
  if (m.in_batch())
    return make_status(status_code::invalid_argument, "state_read: a batch is being applied");
  std::int32_t src = 0;
  MNEMO_ASSIGN_OR_RETURN(auto payload, open_state(data, detail::recurrent_header(m, -1), src));
  if ((dest < 0) != (src < 0))
    return make_status(
        status_code::invalid_argument, "state_read: a %s state cannot be loaded into %s",
        src < 0 ? "whole-memory" : "per-sequence", dest < 0 ? "the whole memory" : "a sequence");
  byte_reader r(payload);
  std::uint32_t n = 0;
  r.get(n);
  const std::uint32_t limit = dest < 0 ? static_cast<std::uint32_t>(cfg.n_seq_max) : 1;
  if (!r.ok() || n > limit)
    return make_status(status_code::corrupt_data, "state_read: %u sequences, at most %u fit", n,
                       limit);
  std::vector<seq_id> ids(n);
  std::vector<pos_t> pos(n);
  seq_set seen;
  for (std::uint32_t i = 0; i < n; ++i) {
    r.get(ids[i]);
    r.get(pos[i]);
    // A per-sequence state names its source, which dest replaces (T67).
    const seq_id id_limit = dest >= 0 ? k_max_seq : cfg.n_seq_max;
    if (!r.ok() || ids[i] < 0 || ids[i] >= id_limit || pos[i] < 0 || seen.contains(ids[i]))
      return make_status(status_code::corrupt_data,
                         "state_read: entry %u (sequence %d at %d) is malformed or repeated", i,
                         ids[i], pos[i]);
    seen.insert(ids[i]);
  }
  const std::size_t bytes = n * m.state_bytes();
  const std::uint8_t* rows = r.get_bytes(bytes);
  if (rows == nullptr || r.remaining() != 0)
    return make_status(status_code::corrupt_data,
                       "state_read: %zu bytes of state expected, %zu present", bytes,
                       r.remaining() + (rows ? bytes : 0));
  // Past this point nothing can fail.
  if (dest < 0) {
    m.clear(false);
  } else {
    MNEMO_RETURN_IF_ERROR(m.seq_rm(dest, -1, -1));
  }
  for (std::uint32_t i = 0; i < n; ++i)
    m.restore(dest >= 0 ? dest : ids[i], pos[i], rows + i * m.state_bytes());
  return {};
}

}  // namespace mnemo::memory
