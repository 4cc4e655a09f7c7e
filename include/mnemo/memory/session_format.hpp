// The session file: a memory state (state_format.hpp) together with the model that
// wrote it and the tokens each sequence's cells were computed from, so a host can
// resume a conversation without decoding it again (docs/sessions.md).
//
//   u32 magic 'MNSE'  u16 version  u16 0
//   u64 model fingerprint  u16 n + architecture  u16 n + name
//   u32 n_lists, per list: i32 seq  u32 n_tokens  n_tokens x (i32 token, i32 pos)
//   u64 state bytes | the state (its own header and checksum)
//   u64 checksum64 of every byte before it
//
// A plain state file (magic 'MNMS', as state_write writes it) reads as a session with
// no model and no token lists, so states saved before session files existed still load.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "mnemo/base/result.hpp"
#include "mnemo/base/status.hpp"
#include "mnemo/memory/state_format.hpp"
#include "mnemo/memory/token_history.hpp"

namespace mnemo::memory {

inline constexpr std::uint32_t k_session_magic = 0x45534e4du;  // "MNSE" little-endian
inline constexpr std::uint16_t k_session_version = 1;
/// Longest architecture or model name a session stores (longer names are cut).
inline constexpr std::size_t k_session_name_max = 256;

/// Which model a state belongs to: model::fingerprint(file) makes one.
struct session_model {
  std::uint64_t fingerprint = 0;
  std::string architecture;  // general.architecture
  std::string name;          // general.name, may be empty

  /// "'name' (arch, fingerprint 0x...)" for messages.
  std::string describe() const {
    char hex[32];
    std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(fingerprint));
    return "'" + (name.empty() ? std::string("unnamed") : name) + "' (" + architecture +
           ", fingerprint 0x" + hex + ")";
  }
};

/// The tokens of sequence `seq` in position order.
struct session_tokens {
  seq_id seq = 0;
  std::vector<token_history::entry> tokens;

  /// Tokens at positions 0, 1, ... (a sequence decoded from its start).
  static session_tokens from_start(seq_id s, std::span<const token_id> ids) {
    session_tokens t;
    t.seq = s;
    t.tokens.reserve(ids.size());
    for (std::size_t i = 0; i < ids.size(); ++i)
      t.tokens.push_back({ids[i], static_cast<pos_t>(i)});
    return t;
  }
  std::vector<token_id> ids() const {
    std::vector<token_id> out;
    out.reserve(tokens.size());
    for (const auto& e : tokens) out.push_back(e.token);
    return out;
  }
};

/// A parsed session: `state` points into the bytes it was parsed from.
struct session_view {
  bool has_model = false;  // false: a plain state file
  session_model model;
  std::vector<session_tokens> lists;
  std::span<const std::uint8_t> state;
};

/// Encodes a session into `out` (replacing its contents).  @pre each list's positions
/// increase (session_write in mnemo/session.hpp checks this against the memory).
inline void encode_session(const session_model& m, std::span<const session_tokens> lists,
                           std::span<const std::uint8_t> state, std::vector<std::uint8_t>& out) {
  out.clear();
  byte_writer w(out);
  w.put(k_session_magic);
  w.put(k_session_version);
  w.put(std::uint16_t{0});
  w.put(m.fingerprint);
  for (const std::string* s : {&m.architecture, &m.name}) {
    const std::size_t n = std::min(s->size(), k_session_name_max);
    w.put(static_cast<std::uint16_t>(n));
    w.put_bytes(s->data(), n);
  }
  w.put(static_cast<std::uint32_t>(lists.size()));
  for (const session_tokens& l : lists) {
    w.put(static_cast<std::int32_t>(l.seq));
    w.put(static_cast<std::uint32_t>(l.tokens.size()));
    for (const auto& e : l.tokens) {
      w.put(static_cast<std::int32_t>(e.token));
      w.put(static_cast<std::int32_t>(e.pos));
    }
  }
  w.put(static_cast<std::uint64_t>(state.size()));
  w.put_bytes(state.data(), state.size());
  w.put(checksum64(out));
}

/// Parses a session file or a plain state file. Checks the magic, version, checksum,
/// every length against the bytes present, sequence ids (>= 0, each list once) and
/// that each list's positions increase; the state itself is checked when it is read
/// into a memory.
inline result<session_view> decode_session(std::span<const std::uint8_t> data) {
  session_view v;
  std::uint32_t magic = 0;
  if (data.size() >= 4) std::memcpy(&magic, data.data(), 4);
  if (magic == k_state_magic) {  // a plain state: no model, no tokens
    v.state = data;
    return v;
  }
  auto corrupt = [](const char* what) {
    return make_status(status_code::corrupt_data, "session: %s", what);
  };
  if (magic != k_session_magic)
    return make_status(status_code::corrupt_data,
                       "session: neither a session nor a state file (magic 0x%08x)", magic);
  if (data.size() < 8 + 8) return corrupt("truncated header");
  const std::size_t body = data.size() - 8;
  std::uint64_t sum = 0;
  std::memcpy(&sum, data.data() + body, 8);
  if (checksum64(data.first(body)) != sum)
    return corrupt("checksum mismatch (the file is damaged or truncated)");

  byte_reader r(data.first(body));
  std::uint16_t version = 0, pad = 0;
  r.get(magic);
  r.get(version);
  r.get(pad);
  if (version != k_session_version)
    return make_status(status_code::unsupported, "session: version %u, this build reads version %u",
                       version, k_session_version);
  if (pad != 0) return corrupt("bad header padding");
  v.has_model = true;
  r.get(v.model.fingerprint);
  for (std::string* s : {&v.model.architecture, &v.model.name}) {
    std::uint16_t n = 0;
    r.get(n);
    const std::uint8_t* p = n <= k_session_name_max ? r.get_bytes(n) : nullptr;
    if (p == nullptr) return corrupt("bad model name length");
    s->assign(reinterpret_cast<const char*>(p), n);
  }
  std::uint32_t n_lists = 0;
  r.get(n_lists);
  if (!r.ok() || n_lists > static_cast<std::uint32_t>(k_max_seq)) return corrupt("bad list count");
  for (std::uint32_t k = 0; k < n_lists; ++k) {
    std::int32_t seq = -1;
    std::uint32_t n = 0;
    r.get(seq);
    r.get(n);
    if (!r.ok() || n > r.remaining() / 8) return corrupt("token list truncated");
    if (seq < 0 || seq >= k_max_seq)
      return make_status(status_code::corrupt_data, "session: token list of sequence %d", seq);
    for (const session_tokens& l : v.lists)
      if (l.seq == seq)
        return make_status(status_code::corrupt_data, "session: two token lists for sequence %d",
                           seq);
    session_tokens l;
    l.seq = seq;
    l.tokens.resize(n);
    for (auto& e : l.tokens) {
      std::int32_t t = 0, p = 0;
      r.get(t);
      r.get(p);
      if (t < 0 || p < 0 || (&e != l.tokens.data() && p <= (&e - 1)->pos))
        return make_status(status_code::corrupt_data,
                           "session: sequence %d: bad token %d at position %d", seq, t, p);
      e = {t, p};
    }
    v.lists.push_back(std::move(l));
  }
  std::uint64_t n_state = 0;
  r.get(n_state);
  if (!r.ok() || n_state != r.remaining()) return corrupt("state length does not match the file");
  v.state = {r.get_bytes(static_cast<std::size_t>(n_state)), static_cast<std::size_t>(n_state)};
  return v;
}

}  // namespace mnemo::memory
