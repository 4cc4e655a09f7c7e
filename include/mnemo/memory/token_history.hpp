// What the context's recompute mode remembers (context_params::recompute): per
// sequence, the (token, position) pairs its memory cells were computed from, kept in
// step with every decode and sequence operation, so that a window memory's forgotten
// positions can be decoded again (docs/context.md "Lost context"). It mirrors the
// memory's sequence operations on positions (pos_range), so it lives with them.
//
// A sequence's history is `complete` when it names every token the memory holds for it:
// a decode from embeddings, or a state_read, makes it incomplete until the sequence is
// removed whole (seq_rm(s, -1, -1), seq_keep of another, clear).
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

#include "mnemo/base/seq_set.hpp"
#include "mnemo/batch/batch.hpp"
#include "mnemo/memory/types.hpp"

namespace mnemo::memory {

class token_history {
 public:
  struct entry {
    token_id token;
    pos_t pos;
  };

  void reset(seq_id n_seq_max) { seqs_.assign(static_cast<std::size_t>(n_seq_max), {}); }
  bool valid(seq_id s) const noexcept {
    return s >= 0 && static_cast<std::size_t>(s) < seqs_.size();
  }
  /// [n] in position order.  @pre valid(s)
  const std::vector<entry>& entries(seq_id s) const noexcept { return at(s).items; }
  bool complete(seq_id s) const noexcept { return valid(s) && at(s).complete; }

  /// Token `t` at position p now belongs to s (kept in position order).
  void record(seq_id s, token_id t, pos_t p) {
    auto& v = at(s).items;
    if (v.empty() || v.back().pos < p) {
      v.push_back({t, p});
      return;
    }
    v.insert(
        std::upper_bound(v.begin(), v.end(), p, [](pos_t a, const entry& e) { return a < e.pos; }),
        entry{t, p});
  }
  void mark_incomplete(seq_id s) {
    if (valid(s)) at(s).complete = false;
  }
  void mark_all_incomplete() {
    for (auto& h : seqs_) h.complete = false;
  }

  /// The entries of s below p.
  std::vector<entry> prefix(seq_id s, pos_t p) const {
    std::vector<entry> out;
    for (const entry& e : at(s).items)
      if (e.pos < p) out.push_back(e);
    return out;
  }
  /// Whether every entry of s at or above p0 lies in [p0, p1) (negative: llama.cpp's
  /// open ends), i.e. removing [p0, p1) leaves a prefix.
  bool is_suffix(seq_id s, pos_t p0, pos_t p1) const {
    const pos_range r = pos_range::of(p0, p1);
    for (const entry& e : at(s).items)
      if (e.pos >= r.p0 && !r.contains(e.pos)) return false;
    return true;
  }

  /// Whether seq_cp(src, dst, p0, p1) makes dst a branch: a prefix of src (the range
  /// starts at or below src's first position) and nothing of dst's own left outside it.
  bool is_branch(seq_id src, seq_id dst, pos_t p0, pos_t p1) const {
    const pos_range r = pos_range::of(p0, p1);
    for (const entry& e : at(src).items)
      if (e.pos < r.p1 && !r.contains(e.pos)) return false;
    for (const entry& e : at(dst).items)
      if (!r.contains(e.pos)) return false;
    return true;
  }

  struct snapshot {
    std::vector<entry> items;
    bool complete = true;
  };
  snapshot save(seq_id s) const { return {at(s).items, at(s).complete}; }
  void restore(seq_id s, snapshot h) { at(s) = {std::move(h.items), h.complete}; }

  // ---- the memory's sequence operations, mirrored --------------------------------

  void seq_rm(seq_id s, pos_t p0, pos_t p1) {
    const pos_range r = pos_range::of(p0, p1);
    for_each(s, [&](seq_id q) {
      auto& h = at(q);
      std::erase_if(h.items, [&](const entry& e) { return r.contains(e.pos); });
      if (h.items.empty() && r.p0 == 0 && r.p1 == pos_range::of(0, -1).p1)
        h.complete = true;  // nothing held: nothing unknown
    });
  }
  /// dst keeps its entries outside [p0, p1) and takes src's inside it.
  void seq_cp(seq_id src, seq_id dst, pos_t p0, pos_t p1) {
    if (src == dst) return;
    const pos_range r = pos_range::of(p0, p1);
    std::vector<entry> out;
    for (const entry& e : at(dst).items)
      if (!r.contains(e.pos)) out.push_back(e);
    for (const entry& e : at(src).items)
      if (r.contains(e.pos)) out.push_back(e);
    std::stable_sort(out.begin(), out.end(),
                     [](const entry& a, const entry& b) { return a.pos < b.pos; });
    at(dst).items = std::move(out);
    at(dst).complete = at(dst).complete && at(src).complete;
  }
  void seq_keep(seq_id s) {
    for (seq_id q = 0; q < static_cast<seq_id>(seqs_.size()); ++q)
      if (q != s) at(q) = {};
  }
  /// Positions in [p0, p1) of s become new_pos(p) (seq_add, seq_div).
  template <class NewPos>
  void shift(seq_id s, pos_t p0, pos_t p1, NewPos new_pos) {
    const pos_range r = pos_range::of(p0, p1);
    for_each(s, [&](seq_id q) {
      auto& v = at(q).items;
      for (entry& e : v)
        if (r.contains(e.pos)) e.pos = new_pos(e.pos);
      std::stable_sort(v.begin(), v.end(),
                       [](const entry& a, const entry& b) { return a.pos < b.pos; });
    });
  }
  void clear() {
    for (auto& h : seqs_) h = {};
  }

 private:
  struct seq_history {
    std::vector<entry> items;
    bool complete = true;
  };
  seq_history& at(seq_id s) noexcept { return seqs_[static_cast<std::size_t>(s)]; }
  const seq_history& at(seq_id s) const noexcept { return seqs_[static_cast<std::size_t>(s)]; }
  template <class Fn>
  void for_each(seq_id s, Fn&& fn) {
    if (s >= 0) {
      if (valid(s)) fn(s);
      return;
    }
    for (seq_id q = 0; q < static_cast<seq_id>(seqs_.size()); ++q) fn(q);
  }

  std::vector<seq_history> seqs_;  // [n_seq_max]
};

}  // namespace mnemo::memory
