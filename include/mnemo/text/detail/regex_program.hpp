// The compiled form of a pre-tokenizer regex: character classes over match units and a
// small instruction list that the backtracking matcher (regex_match.hpp) runs.
#pragma once

#if !defined(MNEMO_TEXT_DETAIL_OK_)
#error "mnemo/text/detail/* headers are internal: include mnemo/text/tokenizer.hpp"
#endif

#include <algorithm>
#include <array>
#include <cstdint>
#include <utility>
#include <vector>

#include "mnemo/text/detail/code_point_props.hpp"

namespace mnemo::text::detail {

/// A set of units: ASCII values by bitmap, other values by ranges, plus class bits.
/// `without` holds bits whose absence makes a member (\S, \P{L} inside brackets).
/// `also` narrows the set to the units every one of those classes holds too: the
/// compiler folds a one-class lookahead into the class it guards (`(?=[\p{L}])[^a-z]`,
/// `(?!\p{Han})\p{L}`), so a starred group of such pairs becomes a run.
struct char_class {
  std::array<std::uint64_t, 2> ascii{};
  // membership of the unit of each ASCII code point under the program's flavour (those
  // units never change), so that ASCII text is one bit test: set by regex_compiler
  std::array<std::uint64_t, 2> ascii_units{};
  std::vector<std::pair<std::uint32_t, std::uint32_t>> ranges;  // sorted, >= 0x80
  std::uint16_t props = 0;
  std::uint16_t without = 0;
  bool negated = false;
  std::vector<char_class> also;

  bool contains(const match_unit& u) const noexcept {
    if (u.value < 0x80) return (ascii_units[u.value >> 6] >> (u.value & 63)) & 1u;
    return contains_slow(u);
  }

  bool contains_slow(const match_unit& u) const noexcept {
    bool in = false;
    if (u.value < 0x80) {
      in = (ascii[u.value >> 6] >> (u.value & 63)) & 1u;
    } else if (!ranges.empty()) {
      auto it = std::lower_bound(ranges.begin(), ranges.end(), u.value,
                                 [](const auto& r, std::uint32_t v) { return r.second < v; });
      in = it != ranges.end() && it->first <= u.value;
    }
    in = in || (u.props & props) != 0 || (without != 0 && (u.props & without) == 0);
    if (in == negated) return false;
    for (const char_class& c : also)
      if (!c.contains_slow(u)) return false;
    return true;
  }

  /// The units outside this class (for a class without `also`).
  char_class complement() const {
    char_class c = *this;
    c.negated = !negated;
    return c;
  }

  /// The units in both classes. The result's own fields stay one operand's (a superset
  /// of the intersection), which keeps the compiler's start-unit analysis sound; the
  /// operand that is not negated is kept there, as it is the narrower description.
  static char_class intersect(char_class a, char_class b) {
    if (a.negated && !b.negated) std::swap(a, b);
    a.also.push_back(std::move(b));
    return a;
  }

  void add(std::uint32_t lo, std::uint32_t hi) {
    for (std::uint32_t c = lo; c <= std::min<std::uint32_t>(hi, 0x7F); ++c)
      ascii[c >> 6] |= std::uint64_t{1} << (c & 63);
    if (hi >= 0x80) ranges.emplace_back(std::max<std::uint32_t>(lo, 0x80), hi);
  }

  /// Sorts and merges the ranges (after the last add).
  void finish() {
    std::sort(ranges.begin(), ranges.end());
    std::vector<std::pair<std::uint32_t, std::uint32_t>> merged;
    for (const auto& r : ranges) {
      if (!merged.empty() && r.first <= merged.back().second + 1)
        merged.back().second = std::max(merged.back().second, r.second);
      else
        merged.push_back(r);
    }
    ranges = std::move(merged);
  }
};

enum class regex_op : std::uint8_t {
  match,      // success (of the pattern, or of a lookahead body)
  one,        // consume one unit of class `arg`
  run,        // consume min..max units of class `arg` (x = min, y = max), greedy or lazy
  split,      // try x, then y
  jump,       // continue at x
  assertion,  // arg: an assertion_kind
  look,       // lookahead `arg` holds (or not, with negate)
};

enum class assertion_kind : std::uint8_t { begin, end, word_boundary, not_word_boundary };

inline constexpr std::uint32_t k_unbounded = 0xFFFFFFFFu;

struct regex_inst {
  regex_op op;
  bool lazy_or_negate = false;  // run: lazy; look: negative lookahead
  std::uint32_t arg = 0;
  std::uint32_t x = 0, y = 0;
  // run: nothing after it can start inside the run, so giving units back cannot help
  // (set by the compiler)
  bool possessive = false;
};

/// What can start a match from an instruction: ASCII units by bitmap, any non-ASCII unit
/// when `non_ascii`, anything when `nullable` (the rest may match empty). The matcher
/// skips a branch whose first unit cannot start it.
struct first_units {
  std::array<std::uint64_t, 2> ascii{};
  bool non_ascii = false;
  bool nullable = false;
  bool end_only = false;  // may match empty, but only at the piece's end ('$')
  // a non-ASCII unit that starts a match has one of these class bits (all: unknown)
  std::uint16_t non_ascii_props = 0;

  void merge(const first_units& o) noexcept {
    non_ascii_props |= o.non_ascii_props;
    ascii[0] |= o.ascii[0], ascii[1] |= o.ascii[1];
    non_ascii = non_ascii || o.non_ascii;
    nullable = nullable || o.nullable;
    end_only = end_only || o.end_only;
  }
};

/// A lookahead: its body starts at `entry` and ends with a match instruction. A body of
/// one class (`(?!\S)`, `(?=[\p{L}])`) is tested directly: `single_class` >= 0.
struct regex_lookahead {
  std::uint32_t entry = 0, end = 0;  // the body's code: [entry, end)
  std::int32_t single_class = -1;
};

struct regex_program {
  regex_flavour flavour = regex_flavour::unicode;
  std::vector<regex_inst> code;  // code[0..] is the pattern; bodies of lookaheads follow
  std::vector<char_class> classes;
  std::vector<regex_lookahead> lookaheads;
  std::vector<first_units> first;  // [code.size()]
  // Set by the compiler for the matcher's lazy DFA (regex_dfa.hpp):
  std::uint64_t serial = 0;  // tells programs apart (a DFA cache belongs to one)
  bool dfa_ok = false;       // no lookahead of more than one class, no \b or \B
  bool props_only = false;   // class bits alone decide a non-ASCII unit's membership
};

}  // namespace mnemo::text::detail
