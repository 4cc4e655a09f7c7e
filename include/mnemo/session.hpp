// Session files through a context: the memory's state, the model that wrote it and
// each sequence's tokens (memory/session_format.hpp), so a host can save a
// conversation and resume it later without decoding its prompt again
// (docs/sessions.md). Context is a mnemo::context or a mnemo::engine.
//
//   const memory::session_model me = model::fingerprint(model.file());
//   std::vector<std::uint8_t> bytes;
//   auto tokens = memory::session_tokens::from_start(0, history);
//   MNEMO_RETURN_IF_ERROR(session_write(ctx, me, 0, {&tokens, 1}, bytes));
//   ...
//   MNEMO_ASSIGN_OR_RETURN(loaded_session s, session_read(ctx, bytes, me, 0));
//   // s.lists[0].tokens: what sequence 0 now holds
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "mnemo/base/result.hpp"
#include "mnemo/base/status.hpp"
#include "mnemo/memory/session_format.hpp"

namespace mnemo {

/// What session_read loaded besides the state.
struct loaded_session {
  bool has_model = false;  // false: a plain state file (no model, no tokens)
  memory::session_model model;
  /// The token lists, with sequence ids as they are now in the memory (a sequence's
  /// session loaded into `dest` has its list under `dest`).
  std::vector<memory::session_tokens> lists;
};

namespace session_detail {
inline status check_list(const memory::session_tokens& l, seq_id n_seq_max, std::uint32_t n_vocab,
                         const char* op) {
  if (l.seq < 0 || l.seq >= n_seq_max)
    return make_status(status_code::out_of_range, "%s: token list of sequence %d (n_seq_max %d)",
                       op, l.seq, n_seq_max);
  for (std::size_t i = 0; i < l.tokens.size(); ++i) {
    const auto& e = l.tokens[i];
    if (e.token < 0 || static_cast<std::uint32_t>(e.token) >= n_vocab || e.pos < 0 ||
        (i > 0 && e.pos <= l.tokens[i - 1].pos))
      return make_status(status_code::invalid_argument,
                         "%s: sequence %d, entry %zu: token %d at position %d (the vocabulary "
                         "has %u tokens; positions must increase)",
                         op, l.seq, i, e.token, e.pos, n_vocab);
  }
  return {};
}
}  // namespace session_detail

/// Writes the session of sequence s (s == -1: the whole memory) into `out`: the
/// context's state_write(s), `model`, and `lists` (for s >= 0 at most one, of s). Each
/// list must end at the position the memory's sequence ends (seq_pos_max), so a list
/// cannot silently describe other cells; a sequence without a list is saved without
/// tokens. On failure `out` holds nothing useful and the context is unchanged.
template <class Context>
status session_write(Context& ctx, const memory::session_model& model, seq_id s,
                     std::span<const memory::session_tokens> lists,
                     std::vector<std::uint8_t>& out) {
  const seq_id n_seq_max = ctx.n_seq_max();
  for (std::size_t k = 0; k < lists.size(); ++k) {
    const memory::session_tokens& l = lists[k];
    MNEMO_RETURN_IF_ERROR(session_detail::check_list(l, n_seq_max, ctx.n_vocab(), "session_write"));
    if (s >= 0 && l.seq != s)
      return make_status(status_code::invalid_argument,
                         "session_write: saving sequence %d with a token list of sequence %d", s,
                         l.seq);
    for (std::size_t j = 0; j < k; ++j)
      if (lists[j].seq == l.seq)
        return make_status(status_code::invalid_argument,
                           "session_write: two token lists for sequence %d", l.seq);
    const pos_t last = l.tokens.empty() ? -1 : l.tokens.back().pos;
    if (last != ctx.seq_pos_max(l.seq))
      return make_status(status_code::invalid_argument,
                         "session_write: sequence %d's token list ends at position %d, the "
                         "memory's sequence at %d",
                         l.seq, last, ctx.seq_pos_max(l.seq));
  }
  std::vector<std::uint8_t> state;
  MNEMO_RETURN_IF_ERROR(ctx.state_write(s, state).with_context("session_write"));
  memory::encode_session(model, lists, state, out);
  return {};
}

/// Loads a session (or a plain state file) into sequence dest (-1: the whole memory)
/// of a context over the model `expect` describes. A session of another model is
/// refused with invalid_argument naming both; a plain state file has no model to
/// compare and loads with no token lists (its header still checks the shapes).
/// Everything is checked before the memory changes; on failure it is as it was.
template <class Context>
result<loaded_session> session_read(Context& ctx, std::span<const std::uint8_t> data,
                                    const memory::session_model& expect, seq_id dest = -1) {
  MNEMO_ASSIGN_OR_RETURN(memory::session_view v, memory::decode_session(data));
  if (v.has_model && v.model.fingerprint != expect.fingerprint)
    return make_status(status_code::invalid_argument,
                       "session: written by model %s, this context runs model %s",
                       v.model.describe().c_str(), expect.describe().c_str());
  if (dest >= 0 && v.lists.size() > 1)
    return make_status(status_code::invalid_argument,
                       "session: %zu token lists cannot be loaded into one sequence",
                       v.lists.size());
  for (memory::session_tokens& l : v.lists) {
    if (dest >= 0) l.seq = dest;
    MNEMO_RETURN_IF_ERROR(session_detail::check_list(l, ctx.n_seq_max(), ctx.n_vocab(), "session"));
  }
  MNEMO_RETURN_IF_ERROR(ctx.state_read(v.state, dest).with_context("session"));
  loaded_session out;
  out.has_model = v.has_model;
  out.model = std::move(v.model);
  out.lists = std::move(v.lists);
  return out;
}

}  // namespace mnemo
