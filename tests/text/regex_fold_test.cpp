// The compiler's folding of a one-class lookahead into the class after it ((?=A)B and
// (?!A)B become one class): the folded program cuts every string exactly where the
// unfolded one does, on random strings and on runs of the units the rules single out.
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
#include "mnemo/text/detail/utf8.hpp"
#undef MNEMO_TEXT_DETAIL_OK_

namespace {

using mnemo::text::regex_flavour;
namespace detail = mnemo::text::detail;

struct case_t {
  std::string_view pattern;
  regex_flavour flavour;
};

// Tekken's, GPT-4o's and Kimi-K2's rules, and patterns that chain, negate and nest.
const case_t k_cases[] = {
    {mnemo::text::pre_rules_data::k_rules_18[0].pattern, regex_flavour::collapsed},
    {mnemo::text::pre_rules_data::k_rules_21[0].pattern, regex_flavour::collapsed},
    {mnemo::text::pre_rules_data::k_rules_22[0].pattern, regex_flavour::collapsed},
    {mnemo::text::pre_rules_data::k_rules_27[0].pattern, regex_flavour::unicode},
    {R"re(((?=[\p{L}])([^a-z]))*((?=[\p{L}])([^A-Z]))+)re", regex_flavour::unicode},
    {R"re((?=\p{L})(?!\p{Han})[^A-Z]+|(?:(?!\s)(?=[^x])\S)+y?|.)re", regex_flavour::unicode},
    {R"re(x(?![a-c])(?=[\w])[^d]{1,3}|(?:(?=\p{L})a|(?!\d)\d|.)+)re", regex_flavour::wide},
};

detail::regex_program compile(const case_t& c, bool fold) {
  auto p = detail::regex_compiler::compile(c.pattern, c.flavour, {.fold_class_lookaheads = fold});
  EXPECT_TRUE(p.is_ok()) << c.pattern << ": " << p.error().to_string();
  return p.is_ok() ? std::move(p).value() : detail::regex_program{};
}

/// The look instructions the pattern itself runs (lookahead bodies follow the pattern).
std::size_t looks_in_pattern(const detail::regex_program& p) {
  std::size_t n = 0;
  for (const auto& in : p.code) {
    if (in.op == detail::regex_op::match) break;
    n += in.op == detail::regex_op::look;
  }
  return n;
}

/// Code points the shipped rules treat differently: both cases, digits, white space,
/// newlines, apostrophes, punctuation, accented letters, marks, Han, kana, symbols.
const std::uint32_t k_alphabet[] = {'a',    'b',    'd',    'x',    'y',     'A',    'Z',   's',
                                    'S',    '0',    '7',    ' ',    '\n',    '\r',   '\t',  '\'',
                                    '.',    '/',    '$',    '_',    0xE9,    0xC9,   0xDF,  0x0301,
                                    0x4E2D, 0x3042, 0x00A0, 0x2028, 0x1F600, 0x0663, 0xFF01};

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

void expect_same_cuts(const case_t& c, const detail::regex_program& folded,
                      const detail::regex_program& plain, const std::vector<std::uint32_t>& cps,
                      std::uint32_t seed) {
  const auto units = units_of(cps, c.flavour);
  detail::regex_matcher m;
  std::vector<std::uint32_t> a, b;
  m.split(folded, units, 0, units.size(), a);
  m.split(plain, units, 0, units.size(), b);
  ASSERT_EQ(a, b) << c.pattern << " seed " << seed << " text '" << show(cps) << "'";
  for (std::size_t start = 0; start <= units.size(); ++start)
    ASSERT_EQ(m.match_prefix(folded, units, start, units.size()),
              m.match_prefix(plain, units, start, units.size()))
        << c.pattern << " seed " << seed << " start " << start << " text '" << show(cps) << "'";
}

TEST(RegexFold, LookaheadClassPairsBecomeRuns) {
  for (const case_t& c : k_cases) {
    const auto folded = compile(c, true), plain = compile(c, false);
    EXPECT_GT(looks_in_pattern(plain), 0u) << c.pattern;
    EXPECT_LT(looks_in_pattern(folded), looks_in_pattern(plain)) << c.pattern;
  }
  // Tekken: every lookahead of the pattern is folded away
  EXPECT_EQ(looks_in_pattern(compile(k_cases[0], true)), 1u);  // only \s+(?!\S) is left
}

TEST(RegexFold, SameCutsOnRandomStrings) {
  for (const case_t& c : k_cases) {
    const auto folded = compile(c, true), plain = compile(c, false);
    for (std::uint32_t seed = 0; seed < 300; ++seed) {
      std::mt19937 rng(seed);
      std::vector<std::uint32_t> cps(rng() % 40);
      for (auto& cp : cps) cp = k_alphabet[rng() % std::size(k_alphabet)];
      expect_same_cuts(c, folded, plain, cps, seed);
      if (HasFatalFailure()) return;
    }
  }
}

TEST(RegexFold, SameCutsOnRunsOfOneUnit) {
  for (const case_t& c : k_cases) {
    const auto folded = compile(c, true), plain = compile(c, false);
    for (std::uint32_t cp : k_alphabet)
      for (std::uint32_t other : {std::uint32_t{'a'}, std::uint32_t{'A'}, std::uint32_t{' '}}) {
        std::vector<std::uint32_t> cps(96, cp);
        cps[48] = other;
        expect_same_cuts(c, folded, plain, cps, cp);
        if (HasFatalFailure()) return;
      }
  }
}

}  // namespace
