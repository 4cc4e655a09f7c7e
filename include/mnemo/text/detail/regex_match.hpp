// Runs a regex_program the way llama.cpp's std::regex does (ECMAScript: at each position
// the alternatives in order, greedy quantifiers backtracking), and splits a piece at its
// matches like std::regex_iterator (an empty match cuts; the next search after it must
// be non-empty at the same place or starts one further).
//
// Bounded work: the backtracker counts its steps; past 64 per unit of the piece (plus a
// constant) it switches on a memo of failed (instruction, position) states, after which
// every state is expanded at most once per piece (twice at a match end, whose marks are
// cleared): no pattern backtracks exponentially. A greedy run still offers each shorter
// length to what follows it, so nested runs that overlap (`(?:a+)+b`) cost O(length^2)
// per piece; runs whose continuation cannot start inside them (`a*b`, `\s+$`, and every
// run of the shipped rules that searches can restart in) keep no such state, and the
// last maximal run of each class is remembered, so those stay linear.
// A failed state stays failed for later searches because a state's fate depends only on
// its position (assertions and lookaheads look at the piece, never at where the search
// began). Lookaheads of more than one class are answered per position with a memo of
// both outcomes (whether the body matches at all), so nested quantifiers inside them do
// not multiply either.
#pragma once

#if !defined(MNEMO_TEXT_DETAIL_OK_)
#error "mnemo/text/detail/* headers are internal: include mnemo/text/tokenizer.hpp"
#endif

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "mnemo/text/detail/regex_dfa.hpp"
#include "mnemo/text/detail/regex_program.hpp"

namespace mnemo::text::detail {

class regex_matcher {
 public:
  /// Appends to `cuts` the boundaries of every match in units[b, e) (match starts and
  /// ends, in order, possibly repeated; the caller deduplicates).
  void split(const regex_program& p, std::span<const match_unit> units, std::size_t b,
             std::size_t e, std::vector<std::uint32_t>& cuts) {
    prog_ = &p;
    units_ = units;
    b_ = b;
    e_ = e;
    steps_ = 0;
    lazy_dfa* dfa = use_dfa_ && p.dfa_ok ? &dfa_for(p) : nullptr;
    // The DFA forgets failures between searches, so a pattern whose failing searches
    // scan to the piece's end (`a*b|a` on a run of a's) would cost O(length^2); past a
    // linear budget of steps the backtracker, whose memo bounds it, takes over.
    const std::size_t dfa_budget_total = 4 * (e - b + 1) + 1024;
    std::size_t dfa_budget = dfa_budget_total;
    // the backtracker's state is set up when it is first needed (rules split many
    // small pieces, most of them by the DFA alone)
    bool backtracker_ready = false;
    auto backtrack = [&](std::size_t start, bool nn) {
      if (!backtracker_ready) {
        budget_ = 64 * (e - b + 1) + 4096;
        memo_.clear();
        words_per_pos_ = (p.code.size() + 63) / 64;
        reset_caches(p);
        backtracker_ready = true;
      }
      return match_at(start, nn);
    };
    std::size_t from = b;
    bool not_null = false;
    while (from <= e) {
      std::size_t start = from, end = 0;
      bool found = false;
      for (; start <= e; ++start) {
        const bool nn = not_null && start == from;
        std::int64_t r =
            dfa ? dfa->match_at(units, b, e, start, nn, dfa_budget) : lazy_dfa::k_gave_up;
        if (r == lazy_dfa::k_gave_up) {
          if (dfa_budget == 0) dfa = nullptr;  // searches that rescan far: backtrack
          r = backtrack(start, nn);
        }
        if (r >= 0) {
          end = static_cast<std::size_t>(r);
          found = true;
          break;
        }
      }
      if (!found) break;
      cuts.push_back(static_cast<std::uint32_t>(start));
      cuts.push_back(static_cast<std::uint32_t>(end));
      if (backtracker_ready) clear_memo_at(end);
      not_null = end == start;
      from = end;
    }
    steps_ += dfa_budget_total - dfa_budget;
  }

  /// Whether the pattern matches units[b, e) from `b` (anchored; for tests): the end, or -1.
  std::int64_t match_prefix(const regex_program& p, std::span<const match_unit> units,
                            std::size_t b, std::size_t e) {
    prog_ = &p;
    units_ = units;
    b_ = b;
    e_ = e;
    steps_ = 0;
    budget_ = 64 * (e - b + 1) + 4096;
    memo_.clear();
    words_per_pos_ = (p.code.size() + 63) / 64;
    reset_caches(p);
    return match_at(b, false);
  }

  /// Steps (backtracking and DFA) taken by the last call (for the bounded-work tests).
  std::size_t steps() const noexcept { return steps_; }

  /// Whether split() runs programs that allow it through the lazy DFA (on by default;
  /// tests compare both engines).
  void use_lazy_dfa(bool on) noexcept { use_dfa_ = on; }

 private:
  enum class frame_kind : std::uint8_t { state, greedy_run, lazy_run };
  // Positions are code point indices, which the callers keep in 32 bits (the cuts): a
  // 20-byte frame instead of 40 halves the stack traffic of alternations.
  struct frame {
    frame_kind kind;
    std::uint32_t pc;
    std::uint32_t pos;
    std::uint32_t limit;  // greedy: lowest end; lazy: highest end
    std::uint32_t cls;
  };
  void push(frame_kind k, std::uint32_t pc, std::size_t pos, std::size_t limit, std::uint32_t cls) {
    stack_.push_back(
        {k, pc, static_cast<std::uint32_t>(pos), static_cast<std::uint32_t>(limit), cls});
  }

  bool member(std::uint32_t cls, std::size_t pos) const noexcept {
    return pos < e_ && prog_->classes[cls].contains(units_[pos]);
  }

  void reset_caches(const regex_program& p) {
    for (auto& v : look_state_) v.clear();
    for (auto& v : look_marks_) v.clear();
    look_state_.resize(p.lookaheads.size());
    look_marks_.resize(p.lookaheads.size());
    run_begin_.assign(p.classes.size(), 0);
    run_end_.assign(p.classes.size(), 0);
  }

  /// The number of units of class `cls` from `pos` on, at most `max`. The last maximal
  /// run per class is remembered: a start inside it ends where it ends, so rescanning a
  /// long run from every start (a search that fails and moves on) costs nothing.
  std::size_t run_length(std::uint32_t cls, std::size_t pos, std::size_t max) {
    if (!(run_begin_[cls] <= pos && pos < run_end_[cls])) {
      std::size_t end = pos;
      while (member(cls, end)) ++end;
      steps_ += (end - pos) / 8;
      run_begin_[cls] = pos;
      run_end_[cls] = end;
    }
    return std::min(max, run_end_[cls] - pos);
  }

  /// Whether the unit at `pos` can start a match of the code at `pc` (a cheap filter).
  bool may_start(std::uint32_t pc, std::size_t pos) const noexcept {
    const first_units& f = prog_->first[pc];
    if (f.nullable) return true;
    if (pos >= e_) return f.end_only;
    const std::uint32_t v = units_[pos].value;
    return v < 0x80 ? ((f.ascii[v >> 6] >> (v & 63)) & 1u) != 0 : f.non_ascii;
  }

  static bool is_word(const match_unit& u) noexcept {
    const std::uint32_t c = u.value;
    return (c >= '0' && c <= '9') || (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || c == '_';
  }

  bool assertion_holds(assertion_kind k, std::size_t pos) const noexcept {
    switch (k) {
      case assertion_kind::begin: return pos == b_;
      case assertion_kind::end: return pos == e_;
      case assertion_kind::word_boundary:
      case assertion_kind::not_word_boundary: {
        const bool before = pos > b_ && is_word(units_[pos - 1]);
        const bool after = pos < e_ && is_word(units_[pos]);
        return (before != after) == (k == assertion_kind::word_boundary);
      }
    }
    return false;
  }

  // --- failure memo of the main pattern ----------------------------------------------

  /// true when (pc, pos) was seen before (and so cannot lead to a match).
  bool seen(std::uint32_t pc, std::size_t pos) {
    if (memo_.empty()) {
      if (++steps_ <= budget_) return false;
      memo_.assign((e_ - b_ + 1) * words_per_pos_, 0);
    }
    ++steps_;
    std::uint64_t& w = memo_[(pos - b_) * words_per_pos_ + pc / 64];
    const std::uint64_t bit = std::uint64_t{1} << (pc % 64);
    if (w & bit) return true;
    w |= bit;
    return false;
  }

  void clear_memo_at(std::size_t pos) {
    if (memo_.empty()) return;
    for (std::size_t i = 0; i < words_per_pos_; ++i) memo_[(pos - b_) * words_per_pos_ + i] = 0;
  }

  /// The end of the highest-priority match starting at `start`, or -1.
  std::int64_t match_at(std::size_t start, bool not_null) {
    const std::vector<regex_inst>& code = prog_->code;
    if (!may_start(0, start)) return -1;
    stack_.clear();
    push(frame_kind::state, 0, start, 0, 0);
    while (!stack_.empty()) {
      frame f = stack_.back();
      stack_.pop_back();
      std::uint32_t pc = f.pc;
      std::size_t pos = f.pos;
      if (f.kind == frame_kind::greedy_run) {  // give one unit back
        if (f.pos == 0 || f.pos - 1 < f.limit) continue;
        pos = f.pos - 1;
        if (pos > f.limit) push(frame_kind::greedy_run, pc, pos, f.limit, 0);
      } else if (f.kind == frame_kind::lazy_run) {  // take one unit more
        if (f.pos >= f.limit || !member(f.cls, f.pos)) continue;
        pos = f.pos + 1;
        push(frame_kind::lazy_run, pc, pos, f.limit, f.cls);
      }
      for (;;) {
        if (seen(pc, pos)) break;
        const regex_inst& in = code[pc];
        bool ok = true;
        switch (in.op) {
          case regex_op::match:
            if (!(not_null && pos == start)) return static_cast<std::int64_t>(pos);
            ok = false;
            break;
          case regex_op::one:
            ok = member(in.arg, pos);
            if (ok) ++pc, ++pos;
            break;
          case regex_op::run: {
            const std::size_t room = e_ - pos;
            const std::size_t max = in.y == k_unbounded ? room : std::min<std::size_t>(in.y, room);
            if (in.lazy_or_negate) {
              std::size_t n = 0;
              while (n < in.x && n < max && member(in.arg, pos + n)) ++n;
              ok = n == in.x;
              if (!ok) break;
              if (in.y > in.x) push(frame_kind::lazy_run, pc + 1, pos + n, pos + max, in.arg);
              pos += n, ++pc;
              break;
            }
            const std::size_t n = run_length(in.arg, pos, max);
            ok = n >= in.x;
            if (!ok) break;
            if (n > in.x && !in.possessive)
              push(frame_kind::greedy_run, pc + 1, pos + n, pos + in.x, 0);
            pos += n, ++pc;
            break;
          }
          case regex_op::split: {
            const bool x = may_start(in.x, pos), y = may_start(in.y, pos);
            if (x && y) push(frame_kind::state, in.y, pos, 0, 0);
            ok = x || y;
            pc = x ? in.x : in.y;
            break;
          }
          case regex_op::jump: pc = in.x; break;
          case regex_op::assertion:
            ok = assertion_holds(static_cast<assertion_kind>(in.arg), pos);
            if (ok) ++pc;
            break;
          case regex_op::look:
            ok = lookahead(in.arg, pos) != in.lazy_or_negate;
            if (ok) ++pc;
            break;
        }
        if (!ok) break;
      }
    }
    return -1;
  }

  // --- lookaheads ----------------------------------------------------------------------

  bool lookahead(std::uint32_t i, std::size_t pos) {
    const regex_lookahead& la = prog_->lookaheads[i];
    if (la.single_class >= 0) return member(static_cast<std::uint32_t>(la.single_class), pos);
    std::vector<std::uint8_t>& state = look_state_[i];  // 0 unknown, 1 false, 2 true
    if (state.empty()) state.assign(e_ - b_ + 1, 0);
    std::uint8_t& s = state[pos - b_];
    if (s == 0) s = body_matches(i, pos) ? 2 : 1;
    return s == 2;
  }

  /// Whether lookahead i's body matches at `pos` in any way. Marks per (pc, pos): 1 seen
  /// (failed, or an ancestor on the current path), 2 leads to a match.
  bool body_matches(std::uint32_t i, std::size_t start) {
    const regex_lookahead& la = prog_->lookaheads[i];
    const std::size_t width = la.end - la.entry;
    std::vector<std::uint8_t>& marks = look_marks_[i];
    if (marks.empty()) marks.assign(width * (e_ - b_ + 1), 0);
    auto mark = [&](std::uint32_t pc, std::size_t pos) -> std::uint8_t& {
      return marks[(pos - b_) * width + (pc - la.entry)];
    };
    struct trail_entry {
      std::uint32_t pc;
      std::size_t pos;
      std::int64_t parent;
    };
    std::vector<trail_entry> trail;
    struct pending {
      std::uint32_t pc;
      std::size_t pos;
      std::int64_t parent;
    };
    std::vector<pending> todo{{la.entry, start, -1}};
    auto succeed = [&](std::int64_t t) {
      for (; t >= 0; t = trail[static_cast<std::size_t>(t)].parent)
        mark(trail[static_cast<std::size_t>(t)].pc, trail[static_cast<std::size_t>(t)].pos) = 2;
      return true;
    };
    const std::vector<regex_inst>& code = prog_->code;
    while (!todo.empty()) {
      pending p = todo.back();
      todo.pop_back();
      std::uint32_t pc = p.pc;
      std::size_t pos = p.pos;
      std::int64_t parent = p.parent;
      for (;;) {
        std::uint8_t& m = mark(pc, pos);
        if (m == 2) return succeed(parent);
        if (m == 1) break;
        m = 1;
        ++steps_;
        trail.push_back({pc, pos, parent});
        parent = static_cast<std::int64_t>(trail.size() - 1);
        const regex_inst& in = code[pc];
        bool ok = true;
        switch (in.op) {
          case regex_op::match: return succeed(parent);
          case regex_op::one:
            ok = member(in.arg, pos);
            if (ok) ++pc, ++pos;
            break;
          case regex_op::run: {
            const std::size_t room = e_ - pos;
            const std::size_t max = in.y == k_unbounded ? room : std::min<std::size_t>(in.y, room);
            const std::size_t n = run_length(in.arg, pos, max);
            ok = n >= in.x;
            if (!ok) break;
            if (!in.possessive)
              for (std::size_t k = in.x; k < n; ++k) todo.push_back({pc + 1, pos + k, parent});
            pos += n, ++pc;
            break;
          }
          case regex_op::split:
            todo.push_back({in.y, pos, parent});
            pc = in.x;
            break;
          case regex_op::jump: pc = in.x; break;
          case regex_op::assertion:
            ok = assertion_holds(static_cast<assertion_kind>(in.arg), pos);
            if (ok) ++pc;
            break;
          case regex_op::look:
            ok = lookahead(in.arg, pos) != in.lazy_or_negate;
            if (ok) ++pc;
            break;
        }
        if (!ok) break;
      }
    }
    return false;
  }

  /// The DFA cache of `p` (one per program recently split with; the oldest is reused).
  lazy_dfa& dfa_for(const regex_program& p) {
    for (lazy_dfa& d : dfas_)
      if (d.serial() == p.serial) {
        d.bind(p);
        return d;
      }
    constexpr std::size_t k_max_programs = 8;
    if (dfas_.size() < k_max_programs) dfas_.emplace_back();
    std::rotate(dfas_.begin(), dfas_.end() - 1, dfas_.end());  // newest first
    dfas_.front().bind(p);
    return dfas_.front();
  }

  bool use_dfa_ = true;
  std::vector<lazy_dfa> dfas_;
  const regex_program* prog_ = nullptr;
  std::span<const match_unit> units_;
  std::size_t b_ = 0, e_ = 0;
  std::size_t steps_ = 0, budget_ = 0;
  std::size_t words_per_pos_ = 1;
  std::vector<std::uint64_t> memo_;  // [piece length + 1][words_per_pos_] seen bits
  std::vector<frame> stack_;
  std::vector<std::size_t> run_begin_, run_end_;       // [class] the last maximal run scanned
  std::vector<std::vector<std::uint8_t>> look_state_;  // [lookahead][position]
  std::vector<std::vector<std::uint8_t>> look_marks_;  // [lookahead][position][body pc]
};

}  // namespace mnemo::text::detail
