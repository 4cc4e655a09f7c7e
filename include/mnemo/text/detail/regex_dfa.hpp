// A lazy DFA that gives the same anchored matches as the backtracker (regex_match.hpp)
// for programs without multi-class lookaheads or word boundaries (regex_program::dfa_ok),
// which is every shipped pre-tokenizer rule but the digit-grouping ones.
//
// Leftmost-first semantics without backtracking, as a Pike VM keeps them: a state is
// the ordered list of threads (instruction, units a run has taken) waiting for the next
// unit, highest priority first. A step takes the threads' closure in priority order (an
// alternation tries its first branch first, a greedy run prefers one more unit), keeps
// only the first copy of a thread, and drops every thread after a `match`: those are
// lower-priority paths that backtracking would never reach. The last position where a
// step matched is the backtracker's match end. One-class lookaheads and `^` `$` only
// look at the unit being stepped over (or the piece's end), so they fold into the step.
//
// Steps are computed on first use and kept per (state, unit symbol). A symbol is the unit's
// ASCII value, its class bits (when no class of the program lists non-ASCII ranges, class bits
// alone decide membership), or a slot per distinct membership pattern otherwise. On the 1 MiB
// bench text Tekken's rule takes 58 ms (CPU) through the backtracker, which interprets and
// pushes a frame per alternative and run at each match, and 19 ms here (a table lookup per
// unit). Bounded memory: past k_max_states the cache is emptied and the match falls back to
// the backtracker.
#pragma once

#if !defined(MNEMO_TEXT_DETAIL_OK_)
#error "mnemo/text/detail/* headers are internal: include mnemo/text/tokenizer.hpp"
#endif

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "mnemo/text/detail/regex_program.hpp"

namespace mnemo::text::detail {

class lazy_dfa {
 public:
  static constexpr std::int64_t k_no_match = -1;
  static constexpr std::int64_t k_gave_up = -2;  // the cache overflowed: ask the backtracker

  /// Makes this the cache of `p` (emptied when it held another program's states).
  void bind(const regex_program& p) {
    prog_ = &p;
    if (serial_ == p.serial) return;
    serial_ = p.serial;
    reset();
  }
  std::uint64_t serial() const noexcept { return serial_; }

  /// The end of the highest-priority match of units[start, e) anchored at `start` (the
  /// piece begins at b), -1 for none; with `not_null` an empty match does not count.
  /// k_gave_up when the state cache overflowed (the caller asks the backtracker).
  /// Each unit stepped over takes one of `budget` (k_gave_up when it runs out).
  std::int64_t match_at(std::span<const match_unit> units, std::size_t b, std::size_t e,
                        std::size_t start, bool not_null, std::size_t& budget) {
    const std::uint8_t flags =
        static_cast<std::uint8_t>((start == b ? k_at_begin : 0) | (not_null ? k_not_null : 0));
    std::uint32_t s = start_[flags];
    if (s == k_unknown) {
      if (states() >= k_max_states) reset();
      const std::uint32_t entry = 0;
      s = intern(std::span<const std::uint32_t>(&entry, 1), flags);
      if (s == k_unknown) return k_gave_up;
      start_[flags] = s;
    }
    // the walk keeps a state as its row's offset in trans_ (no multiply per unit)
    std::size_t row = static_cast<std::size_t>(s) * k_symbols;
    std::size_t left = budget;
    std::int64_t last = k_no_match;
    for (std::size_t pos = start;; ++pos) {
      if (left == 0) break;
      --left;
      std::uint32_t sym = k_end;
      if (pos < e) {
        const match_unit& u = units[pos];
        sym = u.value < 0x80 ? u.value : symbol_of(u);
        if (sym == k_unknown) break;
      }
      std::int32_t t = trans_[row + sym];
      if (t < 0) {
        t = step(static_cast<std::uint32_t>(row / k_symbols), sym);
        if (t < 0) break;
      }
      if (t & 1) last = static_cast<std::int64_t>(pos);
      row = static_cast<std::uint32_t>(t) >> 1;
      if (row == 0 || pos >= e) {  // row 0: the dead state
        budget = left;
        return last;
      }
    }
    budget = left;
    return k_gave_up;
  }

  std::size_t states() const noexcept { return flags_.size(); }

 private:
  static constexpr std::uint32_t k_unknown = 0xFFFFFFFFu;
  static constexpr std::uint32_t k_dead = 0;
  static constexpr std::uint8_t k_at_begin = 1, k_not_null = 2;
  // symbols: 0..127 ASCII values, 128..255 non-ASCII by class bits, the end, then slots
  static constexpr std::uint32_t k_end = 256;
  static constexpr std::uint32_t k_slots = 64;
  static constexpr std::uint32_t k_symbols = 257 + k_slots;
  static constexpr std::size_t k_max_states = 2048;
  // a thread: instruction << 11 | units its run has taken (counts are at most 1024)
  static constexpr std::uint32_t k_count_bits = 11;

  void reset() {
    threads_.clear();
    thread_begin_.clear();
    flags_.clear();
    trans_.clear();
    index_.clear();
    slot_of_.clear();
    slot_units_.clear();
    recent_.fill({0, 0});  // value 0 is ASCII: never looked up here
    for (auto& s : start_) s = k_unknown;
    intern({}, 0);  // state 0: no thread left
  }

  std::uint32_t symbol_of(const match_unit& u) {
    if (u.value < 0x80) return u.value;
    if (prog_->props_only) return 128 + (u.props & 0x7F);
    std::pair<std::uint32_t, std::uint32_t>& recent = recent_[u.value & 0xFF];
    if (recent.first == u.value) return recent.second;
    const std::uint32_t sym = slot_for(u);
    if (sym != k_unknown) recent = {u.value, sym};
    return sym;
  }

  std::uint32_t slot_for(const match_unit& u) {
    std::string key(prog_->classes.size(), '0');
    for (std::size_t c = 0; c < key.size(); ++c)
      if (prog_->classes[c].contains(u)) key[c] = '1';
    auto it = slot_of_.find(key);
    if (it != slot_of_.end()) return it->second;
    if (slot_units_.size() >= k_slots) return k_unknown;
    const auto sym = static_cast<std::uint32_t>(257 + slot_units_.size());
    slot_units_.push_back(u);
    slot_of_.emplace(std::move(key), sym);
    return sym;
  }

  /// A unit that stands for `sym` (membership in every class is what matters).
  match_unit unit_of(std::uint32_t sym) const {
    if (sym < 128) return {sym, 0};
    if (sym < 256) return {k_placeholder_base + 0x100, static_cast<std::uint16_t>(sym - 128)};
    return slot_units_[sym - 257];
  }

  std::uint32_t intern(std::span<const std::uint32_t> threads, std::uint8_t flags) {
    std::string key(1, static_cast<char>(flags));
    key.append(reinterpret_cast<const char*>(threads.data()), threads.size_bytes());
    auto it = index_.find(key);
    if (it != index_.end()) return it->second;
    if (flags_.size() >= k_max_states) return k_unknown;
    const auto id = static_cast<std::uint32_t>(flags_.size());
    thread_begin_.push_back(static_cast<std::uint32_t>(threads_.size()));
    threads_.insert(threads_.end(), threads.begin(), threads.end());
    flags_.push_back(flags);
    trans_.resize(trans_.size() + k_symbols, -1);
    index_.emplace(std::move(key), id);
    return id;
  }

  /// The step from state `s` over symbol `sym`: the next state's row (next * k_symbols)
  /// * 2 + (a match ends here),
  /// or -1 when the cache is full (it is then emptied).
  std::int32_t step(std::uint32_t s, std::uint32_t sym) {
    const std::vector<regex_inst>& code = prog_->code;
    const bool at_end = sym == k_end;
    const match_unit u = at_end ? match_unit{0, 0} : unit_of(sym);
    auto member = [&](std::uint32_t cls) { return !at_end && prog_->classes[cls].contains(u); };
    const std::uint8_t flags = flags_[s];
    const std::size_t tb = thread_begin_[s];
    const std::size_t te = s + 1 < thread_begin_.size() ? thread_begin_[s + 1] : threads_.size();
    seen_.clear();
    next_.clear();
    next_seen_.clear();
    bool matched = false;
    auto emit = [&](std::uint32_t t) {
      if (next_seen_.insert(t).second) next_.push_back(t);
    };
    // depth first in priority order: a stack of (thread, emit-only) items, pushed in
    // reverse priority order
    todo_.clear();
    for (std::size_t i = te; i-- > tb;) todo_.push_back({threads_[i], false});
    while (!todo_.empty()) {
      const item it = todo_.back();
      todo_.pop_back();
      if (it.emit_only) {
        emit(it.thread);
        continue;
      }
      if (!seen_.insert(it.thread).second) continue;
      const std::uint32_t pc = it.thread >> k_count_bits;
      const std::uint32_t n = it.thread & ((1u << k_count_bits) - 1);
      const regex_inst& in = code[pc];
      const std::uint32_t after = (pc + 1) << k_count_bits;
      switch (in.op) {
        case regex_op::match:
          if ((flags & k_not_null) != 0 && (flags & k_first_step_done) == 0) break;
          matched = true;
          todo_.clear();  // every later thread has lower priority
          break;
        case regex_op::one:
          if (member(in.arg)) emit(after);
          break;
        case regex_op::run: {
          const bool more = (in.y == k_unbounded || n < in.y) && member(in.arg);
          // past the minimum of an unbounded run the count no longer matters
          const std::uint32_t taken =
              in.y == k_unbounded ? std::min<std::uint32_t>(n + 1, in.x) : n + 1;
          const std::uint32_t again = (pc << k_count_bits) | taken;
          if (in.lazy_or_negate) {
            if (more) todo_.push_back({again, true});
            if (n >= in.x) todo_.push_back({after, false});
          } else {
            if (n >= in.x) todo_.push_back({after, false});
            if (more) todo_.push_back({again, true});
          }
          break;
        }
        case regex_op::split:
          todo_.push_back({in.y << k_count_bits, false});
          todo_.push_back({in.x << k_count_bits, false});
          break;
        case regex_op::jump: todo_.push_back({in.x << k_count_bits, false}); break;
        case regex_op::assertion: {
          const auto k = static_cast<assertion_kind>(in.arg);
          const bool ok = k == assertion_kind::begin
                              ? (flags & k_at_begin) != 0 && (flags & k_first_step_done) == 0
                              : at_end;  // dfa_ok: no word boundaries
          if (ok) todo_.push_back({after, false});
          break;
        }
        case regex_op::look: {
          const regex_lookahead& la = prog_->lookaheads[in.arg];  // dfa_ok: one class
          const bool holds = member(static_cast<std::uint32_t>(la.single_class));
          if (holds != in.lazy_or_negate) todo_.push_back({after, false});
          break;
        }
      }
    }
    const std::uint32_t next = at_end || next_.empty() ? k_dead : intern(next_, k_first_step_done);
    if (next == k_unknown) {
      reset();
      return -1;
    }
    const auto t = static_cast<std::int32_t>(next * k_symbols * 2 + (matched ? 1 : 0));
    trans_[static_cast<std::size_t>(s) * k_symbols + sym] = t;
    return t;
  }

  // A state's flags: where its threads stand. Start states carry at_begin / not_null
  // for their first step; every later state is marked first_step_done.
  static constexpr std::uint8_t k_first_step_done = 4;

  struct item {
    std::uint32_t thread;
    bool emit_only;  // a run's "one more unit", queued behind its exit (lazy runs)
  };

  const regex_program* prog_ = nullptr;
  std::uint64_t serial_ = 0;
  std::vector<std::uint32_t> threads_;       // every state's threads, back to back
  std::vector<std::uint32_t> thread_begin_;  // [state] first thread
  std::vector<std::uint8_t> flags_;          // [state]
  std::vector<std::int32_t> trans_;          // [state][symbol] next row * 2 + matched, -1 unknown
  std::unordered_map<std::string, std::uint32_t> index_;    // flags + threads -> state
  std::unordered_map<std::string, std::uint32_t> slot_of_;  // membership pattern -> symbol
  std::vector<match_unit> slot_units_;
  std::array<std::pair<std::uint32_t, std::uint32_t>, 256> recent_{};  // value -> symbol
  std::uint32_t start_[4] = {k_unknown, k_unknown, k_unknown, k_unknown};
  // step() buffers
  std::vector<item> todo_;
  std::vector<std::uint32_t> next_;
  std::unordered_set<std::uint32_t> seen_, next_seen_;
};

}  // namespace mnemo::text::detail
