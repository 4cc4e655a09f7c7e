// The body of validate(): the rules of docs/batch.md in llama.cpp's order, so the first error a
// caller sees is the one llama.cpp would log, followed by the derived data.
#pragma once

#if !defined(MNEMO_BATCH_DETAIL_OK_)
#error "mnemo/batch/detail/ headers are internal: include mnemo/batch/validate.hpp"
#endif

#include <algorithm>
#include <array>
#include <cstdint>
#include <limits>
#include <string>
#include <unordered_map>
#include <vector>

#include "mnemo/batch/detail/seq_set_util.hpp"

namespace mnemo::batch_detail {

inline status check_inputs(const batch& b, const batch_limits& lim) {
  if (lim.n_seq_max == 0 || lim.n_seq_max > static_cast<std::uint32_t>(k_max_seq))
    return make_status(status_code::invalid_argument, "n_seq_max = %u is outside [1, %d]",
                       lim.n_seq_max, k_max_seq);
  if (b.empty()) return make_status(status_code::invalid_argument, "the batch is empty");
  if (lim.n_batch_max != 0 && b.size() > lim.n_batch_max)
    return make_status(status_code::out_of_range,
                       "the batch holds %u tokens but n_batch is %u: split it over several calls",
                       b.size(), lim.n_batch_max);
  if (b.mixed_at() != batch::k_none)
    return make_status(status_code::invalid_argument,
                       "token %u: tokens and embeddings are mixed (token 0 is %s)", b.mixed_at(),
                       b.has_embeddings() ? "an embedding row" : "a token id");
  if (b.has_embeddings()) {
    if (b.bad_row_at() != batch::k_none)
      return make_status(status_code::invalid_argument,
                         "token %u: embedding rows differ in length (token 0 has %u floats)",
                         b.bad_row_at(), b.n_embd());
    if (b.n_embd() == 0 || (lim.n_embd != 0 && b.n_embd() != lim.n_embd))
      return make_status(status_code::invalid_argument,
                         "token 0: an embedding row of %u floats, but the model takes n_embd = %u",
                         b.n_embd(), lim.n_embd);
  } else {
    const auto tokens = b.tokens();
    for (std::uint32_t i = 0; i < tokens.size(); ++i) {
      if (tokens[i] < 0 ||
          (lim.n_vocab != 0 && static_cast<std::uint32_t>(tokens[i]) >= lim.n_vocab))
        return make_status(status_code::invalid_argument,
                           "token %u: invalid token id %d (the vocabulary is [0, %u))", i,
                           tokens[i], lim.n_vocab);
    }
  }
  for (std::uint32_t i = 0; i < b.size(); ++i) {
    const auto ids = b.seqs(i);
    if (ids.empty())
      return make_status(status_code::invalid_argument, "token %u: no sequence id", i);
    seq_set set;
    for (seq_id s : ids) {
      if (s < 0 || static_cast<std::uint32_t>(s) >= lim.n_seq_max)
        return make_status(status_code::invalid_argument,
                           "token %u: invalid sequence id %d (n_seq_max = %u allows [0, %u))", i, s,
                           lim.n_seq_max, lim.n_seq_max);
      if (set.contains(s))
        return make_status(status_code::invalid_argument, "token %u: sequence %d is listed twice",
                           i, s);
      set.insert(s);
    }
  }
  return {};
}

/// Positions as given, or continuing the memory (docs/batch.md): the first id decides
/// the token's position, then every id of the token advances past it.
inline status fill_positions(const batch& b, const memory_snapshot& mem, std::vector<pos_t>& pos) {
  const auto given = b.positions();
  const bool auto_pos = given[0] == batch::k_auto_pos;
  for (std::uint32_t i = 0; i < b.size(); ++i) {
    if ((given[i] == batch::k_auto_pos) != auto_pos)
      return make_status(status_code::invalid_argument,
                         "token %u %s a position but token 0 %s: give positions for every token "
                         "or for none",
                         i, auto_pos ? "has" : "lacks", auto_pos ? "lacks one" : "has one");
    if (!auto_pos && given[i] < 0)
      return make_status(status_code::out_of_range, "token %u: negative position %d", i, given[i]);
  }
  if (!auto_pos) {
    pos.assign(given.begin(), given.end());
    return {};
  }
  std::array<std::int64_t, k_max_seq> next;
  for (int s = 0; s < k_max_seq; ++s) next[s] = std::int64_t{mem.max[s]} + 1;
  pos.resize(b.size());
  for (std::uint32_t i = 0; i < b.size(); ++i) {
    const std::int64_t p = std::max<std::int64_t>(next[b.primary(i)], 0);
    if (p > std::numeric_limits<pos_t>::max())
      return make_status(status_code::out_of_range,
                         "token %u: sequence %d has no position left after %d", i, b.primary(i),
                         std::numeric_limits<pos_t>::max());
    pos[i] = static_cast<pos_t>(p);
    for (seq_id s : b.seqs(i)) next[s] = p + 1;
  }
  return {};
}

/// Omitted flags: the last token, or all with embeddings_all. Explicit flags win over
/// omitted ones; embeddings_all overrides explicit "no" (forced, as llama.cpp warns).
inline void fill_outputs(const batch& b, bool all, std::vector<std::uint8_t>& out, bool& forced) {
  const auto given = b.outputs();
  const bool any_given = std::any_of(given.begin(), given.end(),
                                     [](output_flag f) { return f != output_flag::unset; });
  out.assign(b.size(), 0);
  forced = false;
  if (!any_given) {
    if (all)
      std::fill(out.begin(), out.end(), 1);
    else
      out.back() = 1;
    return;
  }
  for (std::uint32_t i = 0; i < b.size(); ++i) out[i] = given[i] == output_flag::yes;
  if (all && std::find(out.begin(), out.end(), 0) != out.end()) {
    std::fill(out.begin(), out.end(), 1);
    forced = true;
  }
}

/// The first token of sequence s at position p (for messages).
inline std::uint32_t token_at(const batch& b, const std::vector<pos_t>& pos, seq_id s, pos_t p) {
  for (std::uint32_t i = 0; i < b.size(); ++i)
    if (pos[i] == p && seq_set_contains(b.seqs(i), s)) return i;
  return 0;
}

/// Continuity with the memory (item 5) and no gaps (item 6), per sequence in id order;
/// also the per-sequence position range of the batch.
inline status check_continuity(const batch& b, const std::vector<pos_t>& pos,
                               const memory_snapshot& mem, std::vector<pos_t>& seq_min,
                               std::vector<pos_t>& seq_max) {
  // (seq, pos) pairs, sorted: one pass gives min, max and the distinct positions.
  std::vector<std::uint64_t> keys;
  keys.reserve(b.seq_ids().size());
  for (std::uint32_t i = 0; i < b.size(); ++i)
    for (seq_id s : b.seqs(i))
      keys.push_back(std::uint64_t(std::uint32_t(s)) << 32 | std::uint32_t(pos[i]));
  std::sort(keys.begin(), keys.end());
  keys.erase(std::unique(keys.begin(), keys.end()), keys.end());
  for (std::size_t k = 0; k < keys.size();) {
    const auto s = static_cast<seq_id>(keys[k] >> 32);
    std::size_t e = k;
    while (e < keys.size() && (keys[e] >> 32) == keys[k] >> 32) ++e;
    const auto lo = static_cast<pos_t>(keys[k] & 0xffffffffu);
    const auto hi = static_cast<pos_t>(keys[e - 1] & 0xffffffffu);
    seq_min[s] = lo;
    seq_max[s] = hi;
    const pos_t x = mem.max[s];
    if (x >= 0 && lo != x + 1)
      return make_status(status_code::invalid_argument,
                         "token %u: sequence %d continues at position %d but the memory holds up "
                         "to %d (expected %d)",
                         token_at(b, pos, s, lo), s, lo, x, x + 1);
    for (std::size_t j = k + 1; j < e; ++j) {
      const auto p0 = static_cast<pos_t>(keys[j - 1] & 0xffffffffu);
      const auto p1 = static_cast<pos_t>(keys[j] & 0xffffffffu);
      if (p1 != p0 + 1)
        return make_status(status_code::invalid_argument,
                           "token %u: sequence %d jumps from position %d to %d (position %d is "
                           "missing)",
                           token_at(b, pos, s, p1), s, p0, p1, p0 + 1);
    }
    k = e;
  }
  return {};
}

/// Coupled sequences must agree in the memory (item 7).
inline status check_coupling(const batch& b, const memory_snapshot& mem) {
  for (std::uint32_t i = 0; i < b.size(); ++i) {
    const auto ids = b.seqs(i);
    for (std::size_t k = 1; k < ids.size(); ++k) {
      const seq_id a = ids[0], c = ids[k];
      if (mem.min[a] != mem.min[c] || mem.max[a] != mem.max[c])
        return make_status(status_code::invalid_argument,
                           "token %u couples sequences %d and %d, but they have diverged in the "
                           "memory: sequence %d holds [%d, %d], sequence %d holds [%d, %d]",
                           i, a, c, a, mem.min[a], mem.max[a], c, mem.min[c], mem.max[c]);
    }
  }
  return {};
}

/// Along the batch, the set of the tokens holding s may only shrink (item 9, D-7: a
/// subset test), and the positions of s may not decrease (item 8).
inline status check_order(const batch& b, const std::vector<pos_t>& pos,
                          const std::vector<seq_set>& sets) {
  constexpr std::uint32_t none = batch::k_none;
  std::array<std::uint32_t, k_max_seq> last;
  last.fill(none);
  for (std::uint32_t i = 0; i < b.size(); ++i) {
    for (seq_id s : b.seqs(i)) {
      const std::uint32_t j = last[s];
      if (j != none && !is_subset(sets[i], sets[j]))
        return make_status(status_code::invalid_argument,
                           "token %u puts sequence %d in the set %s after token %u put it in %s: "
                           "sequence sets may split along a batch, never merge",
                           i, s, format_set(sets[i]).c_str(), j, format_set(sets[j]).c_str());
      if (j != none && pos[i] < pos[j])
        return make_status(status_code::invalid_argument,
                           "token %u: sequence %d goes back from position %d (token %u) to %d; "
                           "positions may not decrease within a sequence",
                           i, s, pos[j], j, pos[i]);
      last[s] = i;
    }
  }
  return {};
}

inline result<validated_batch> validator::run(const batch& b, const batch_limits& lim,
                                              const memory_snapshot& mem) {
  MNEMO_RETURN_IF_ERROR(check_inputs(b, lim));
  validated_batch v;
  v.src_ = &b;
  v.n_tokens_ = b.size();
  v.n_seq_max_ = lim.n_seq_max;
  MNEMO_RETURN_IF_ERROR(fill_positions(b, mem, v.pos_));
  fill_outputs(b, lim.embeddings_all, v.out_, v.outputs_forced_);
  v.sets_.resize(b.size());
  for (std::uint32_t i = 0; i < b.size(); ++i)
    for (seq_id s : b.seqs(i)) v.sets_[i].insert(s);

  v.pos_min_.assign(lim.n_seq_max, -1);
  v.pos_max_.assign(lim.n_seq_max, -1);
  MNEMO_RETURN_IF_ERROR(check_continuity(b, v.pos_, mem, v.pos_min_, v.pos_max_));
  MNEMO_RETURN_IF_ERROR(check_coupling(b, mem));
  MNEMO_RETURN_IF_ERROR(check_order(b, v.pos_, v.sets_));

  // Derived data.
  v.n_outputs_ = static_cast<std::uint32_t>(std::count(v.out_.begin(), v.out_.end(), 1));
  v.seq_idx_.assign(lim.n_seq_max, -1);
  v.coupled_.assign(lim.n_seq_max, seq_set{});
  for (std::uint32_t i = 0; i < b.size(); ++i) {
    const auto ids = b.seqs(i);
    for (std::size_t k = 1; k < ids.size(); ++k) {
      v.coupled_[ids[0]].insert(ids[k]);
      v.coupled_[ids[k]].insert(ids[0]);
      v.has_coupled_ = true;
    }
  }
  for (std::uint32_t s = 0; s < lim.n_seq_max; ++s) {
    if (v.pos_min_[s] < 0) continue;
    v.seq_idx_[s] = static_cast<std::int32_t>(v.seq_unq_.size());
    v.seq_unq_.push_back(static_cast<seq_id>(s));
  }
  // Group tokens by exact set, groups numbered by first appearance (counting sort).
  std::unordered_map<seq_set, std::uint32_t, seq_set_hash> index;
  v.group_of_.resize(b.size());
  std::vector<std::uint32_t> count;
  for (std::uint32_t i = 0; i < b.size(); ++i) {
    auto [it, fresh] = index.try_emplace(v.sets_[i], static_cast<std::uint32_t>(count.size()));
    if (fresh) {
      count.push_back(0);
      v.group_sets_.push_back(v.sets_[i]);
    }
    v.group_of_[i] = it->second;
    ++count[it->second];
  }
  v.group_off_.assign(count.size() + 1, 0);
  for (std::size_t g = 0; g < count.size(); ++g) v.group_off_[g + 1] = v.group_off_[g] + count[g];
  v.group_tok_.resize(b.size());
  std::vector<std::uint32_t> fill(v.group_off_.begin(), v.group_off_.end() - 1);
  for (std::uint32_t i = 0; i < b.size(); ++i) v.group_tok_[fill[v.group_of_[i]]++] = i;
  return v;
}

}  // namespace mnemo::batch_detail
