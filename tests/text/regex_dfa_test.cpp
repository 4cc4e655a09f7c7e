// The lazy DFA (detail/regex_dfa.hpp) against the backtracker: every shipped rule the
// DFA takes, and patterns that stress priorities (lazy runs, counts, empty matches,
// anchors, one-class lookaheads), cut random strings and long runs exactly where the
// backtracker cuts them; a pattern whose states overflow the cache still does.
#include <algorithm>
#include <cstdint>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include <gtest/gtest.h>

#include "mnemo/text/pre_tokenizer.hpp"

#define MNEMO_TEXT_DETAIL_OK_ 1
#include "mnemo/text/detail/regex_compile.hpp"
#include "mnemo/text/detail/regex_match.hpp"
#undef MNEMO_TEXT_DETAIL_OK_

namespace {

using mnemo::text::regex_flavour;
namespace detail = mnemo::text::detail;

struct case_t {
  std::string pattern;
  regex_flavour flavour;
};

std::vector<case_t> all_cases() {
  std::vector<case_t> out;
  for (const auto& t : mnemo::text::k_pre_tokenizer_types)
    for (const auto& r : t.rules) {
      const bool seen = std::any_of(out.begin(), out.end(), [&](const case_t& c) {
        return c.pattern == r.pattern && c.flavour == r.flavour;
      });  // types share rules: each once
      if (!seen) out.push_back({std::string(r.pattern), r.flavour});
    }
  for (const char* extra : {
           R"re(a*?b|a{2,5}?|x*|^\s+|\s+$|(?:ab|a)(?:c|bc)|.)re",
           R"re((?:a|ab)(?:c|bcd)?|[ab]{1,3}?b|\S+?(?!\S)|\s)re",
           R"re(^a+|a{3}|(?:'s|'S)?\p{L}+?(?=\s)|[\s\S])re",
           R"re(\p{N}{1,3}|[^\r\n\p{L}\p{N}]?\p{L}+(?i:'s|'t)?|\s*[\r\n]+|\s+(?!\S)|\s+|$)re",
           R"re((IMGIMG)((A|B|C){1,4})Z|a?|b+?$)re",
       }) {
    out.push_back({extra, regex_flavour::unicode});
    out.push_back({extra, regex_flavour::wide});
  }
  return out;
}

detail::regex_program compile(const case_t& c) {
  auto p = detail::regex_compiler::compile(c.pattern, c.flavour);
  EXPECT_TRUE(p.is_ok()) << c.pattern << ": " << p.error().to_string();
  return p.is_ok() ? std::move(p).value() : detail::regex_program{};
}

// Code points the rules treat differently (as in regex_fold_test), and the letters of
// the patterns above.
const std::uint32_t k_alphabet[] = {
    'a',    'b',     'c',    'd',    'x',    'y',    'A',    'B',    'I',    'M',    'G',
    'Z',    's',     'S',    '0',    '7',    ' ',    '\n',   '\r',   '\t',   '\'',   '.',
    '/',    '$',     '_',    '!',    0xE9,   0xC9,   0xDF,   0x0301, 0x4E2D, 0x3042, 0x00A0,
    0x2028, 0x1F600, 0x0663, 0xFF01, 0xAC00, 0x2581, 0x30A2, 0x0E01};

std::vector<detail::match_unit> units_of(const std::vector<std::uint32_t>& cps, regex_flavour f) {
  std::vector<detail::match_unit> out;
  for (std::uint32_t cp : cps) out.push_back(detail::make_unit(cp, f));
  return out;
}

std::string show(const std::vector<std::uint32_t>& cps) {
  std::string s;
  for (std::uint32_t cp : cps) s += (cp >= 0x20 && cp < 0x7F) ? char(cp) : '?';
  return s;
}

/// The cuts of the DFA and of the backtracker, with the first difference on failure.
void expect_same_cuts(const case_t& c, const detail::regex_program& p, detail::regex_matcher& dfa,
                      const std::vector<std::uint32_t>& cps, std::uint64_t seed) {
  const auto units = units_of(cps, c.flavour);
  detail::regex_matcher plain;
  plain.use_lazy_dfa(false);
  std::vector<std::uint32_t> a, b;
  dfa.split(p, units, 0, units.size(), a);
  plain.split(p, units, 0, units.size(), b);
  if (a == b) return;
  std::size_t i = 0;
  while (i < a.size() && i < b.size() && a[i] == b[i]) ++i;
  FAIL() << c.pattern << " seed " << seed << " text '" << show(cps) << "': first difference at cut "
         << i << ": dfa " << (i < a.size() ? std::to_string(a[i]) : "none") << ", backtracker "
         << (i < b.size() ? std::to_string(b[i]) : "none");
}

TEST(RegexDfa, TakesTheShippedRules) {
  // all but the digit-grouping lookaheads (AFMoE, Tiny Aya, SuperBPE)
  std::size_t ok = 0, total = 0;
  for (const case_t& c : all_cases()) {
    ok += compile(c).dfa_ok;
    ++total;
  }
  EXPECT_GE(ok + 4, total);
  EXPECT_TRUE(compile({std::string(mnemo::text::pre_rules_data::k_rules_18[0].pattern),
                       regex_flavour::collapsed})
                  .dfa_ok);
  EXPECT_FALSE(compile({"a\\b", regex_flavour::unicode}).dfa_ok);
  EXPECT_FALSE(compile({"a(?=bc)", regex_flavour::unicode}).dfa_ok);
}

TEST(RegexDfa, SameCutsOnRandomStrings) {
  for (const case_t& c : all_cases()) {
    const auto p = compile(c);
    if (!p.dfa_ok) continue;
    detail::regex_matcher dfa;  // one cache over all strings, as a scratch keeps it
    for (std::uint64_t seed = 0; seed < 200; ++seed) {
      std::mt19937_64 rng(seed);
      std::vector<std::uint32_t> cps(rng() % 48);
      // a few letters per string, so that runs and repeats form
      std::uint32_t pick[4];
      for (auto& q : pick) q = k_alphabet[rng() % std::size(k_alphabet)];
      for (auto& cp : cps)
        cp = rng() % 3 == 0 ? k_alphabet[rng() % std::size(k_alphabet)] : pick[rng() % 4];
      expect_same_cuts(c, p, dfa, cps, seed);
      if (HasFatalFailure() || HasFailure()) return;
    }
  }
}

TEST(RegexDfa, SameCutsOnLongRuns) {
  for (const case_t& c : all_cases()) {
    const auto p = compile(c);
    if (!p.dfa_ok) continue;
    detail::regex_matcher dfa;
    for (std::uint32_t cp : k_alphabet)
      for (std::uint32_t other : {std::uint32_t{'a'}, std::uint32_t{'\n'}}) {
        std::vector<std::uint32_t> cps(600, cp);  // past jais-2's \s{512}
        cps[540] = other;
        expect_same_cuts(c, p, dfa, cps, cp);
        if (HasFailure()) return;
      }
  }
}

TEST(RegexDfa, OverflowingTheStateCacheFallsBack) {
  // one state per count of each run: 3000 states, past the cache's bound
  const case_t c{"a{0,1024}b{0,1024}c{0,1024}|.", regex_flavour::unicode};
  const auto p = compile(c);
  ASSERT_TRUE(p.dfa_ok);
  std::vector<std::uint32_t> cps;
  for (std::uint32_t ch : {'a', 'b', 'c'}) cps.insert(cps.end(), 1000, ch);
  cps.insert(cps.end(), 1100, 'a');
  detail::regex_matcher dfa;
  expect_same_cuts(c, p, dfa, cps, 0);
  expect_same_cuts(c, p, dfa, cps, 1);  // again, with whatever the cache kept
}

TEST(RegexDfa, PreTokenizersAgreeWithTheBacktracker) {
  // whole pre-tokenizers (several rules, pieces) through the public entry point
  std::mt19937_64 rng(7);
  std::string text;
  const char* words[] = {"Hello",
                         " world",
                         "'s",
                         " 123",
                         "4567",
                         "  ",
                         "\n\n",
                         " \xC3\xA9t\xC3\xA9",
                         " \xE4\xB8\xAD\xE6\x96\x87",
                         "!!",
                         " x",
                         "\t",
                         "ABCdef",
                         " \xE2\x96\x81"};
  for (int i = 0; i < 3000; ++i) text += words[rng() % std::size(words)];
  for (const auto& t : mnemo::text::k_pre_tokenizer_types) {
    auto p = mnemo::text::pre_tokenizer::from_type(t);
    ASSERT_TRUE(p.is_ok()) << t.type;
    mnemo::text::pre_tokenize_scratch fast, slow;
    slow.matcher.use_lazy_dfa(false);
    std::vector<std::size_t> a, b;
    p->split_general(text, a, fast);
    p->split_general(text, b, slow);
    ASSERT_EQ(a, b) << t.type;
  }
}

}  // namespace
