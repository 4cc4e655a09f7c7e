// The pre-tokenizer regex engine against matches worked out by hand (ECMAScript order:
// first alternative wins, greedy quantifiers backtrack, lazy ones extend), the three
// flavours' class rules, statuses for patterns outside the subset, and bounded work on
// hostile patterns and inputs.
#include <chrono>
#include <cstdint>
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

using mnemo::status_code;
using mnemo::text::regex_flavour;
namespace detail = mnemo::text::detail;

constexpr auto U = regex_flavour::unicode;
constexpr auto K = regex_flavour::collapsed;
constexpr auto W = regex_flavour::wide;

std::vector<detail::match_unit> units_of(std::string_view text, regex_flavour f) {
  std::vector<detail::match_unit> out;
  for (std::size_t i = 0; i < text.size();) {
    std::size_t len = 0;
    out.push_back(detail::make_unit(detail::decode_utf8(text, i, len), f));
    i += len;
  }
  return out;
}

detail::regex_program compile(std::string_view pattern, regex_flavour f) {
  auto p = detail::regex_compiler::compile(pattern, f);
  EXPECT_TRUE(p.is_ok()) << pattern << ": " << p.error().to_string();
  return p.is_ok() ? std::move(p).value() : detail::regex_program{};
}

/// The end (in code points) of the match anchored at the start, or -1.
std::int64_t prefix(std::string_view pattern, std::string_view text, regex_flavour f = U) {
  const auto prog = compile(pattern, f);
  const auto units = units_of(text, f);
  detail::regex_matcher m;
  return m.match_prefix(prog, units, 0, units.size());
}

/// The pieces one rule cuts `text` into (code point text).
std::vector<std::string> split(std::string_view pattern, std::string_view text,
                               regex_flavour f = U) {
  const mnemo::text::split_rule rule{pattern, f};
  auto p = mnemo::text::pre_tokenizer::from_rules({&rule, 1});
  EXPECT_TRUE(p.is_ok()) << p.error().to_string();
  std::vector<std::size_t> ends;
  mnemo::text::pre_tokenize_scratch s;
  p->split(text, ends, s);
  std::vector<std::string> out;
  std::size_t b = 0;
  for (auto e : ends) out.emplace_back(text.substr(b, e - b)), b = e;
  return out;
}

using list = std::vector<std::string>;

TEST(RegexMatch, AlternationIsOrderedNotLongest) {
  EXPECT_EQ(prefix("a|ab", "ab"), 1);
  EXPECT_EQ(prefix("ab|a", "ab"), 2);
  EXPECT_EQ(prefix("(?:x|xy)z", "xyz"), 3);  // backtracks into the second alternative
  EXPECT_EQ(prefix("b|c", "a"), -1);
}

TEST(RegexMatch, QuantifiersGreedyLazyCounted) {
  EXPECT_EQ(prefix("a*ab", "aaab"), 4);
  EXPECT_EQ(prefix("a+?", "aaa"), 1);
  EXPECT_EQ(prefix("a{2,3}?b", "aaab"), 4);
  EXPECT_EQ(prefix("\\d{2,3}", "12345"), 3);
  EXPECT_EQ(prefix("x{3}", "xx"), -1);
  EXPECT_EQ(prefix("x{2,}", "xxxxy"), 4);
  EXPECT_EQ(prefix("(?:ab){2}c?", "ababab"), 4);
  EXPECT_EQ(prefix("(?:ab)*?c", "ababc"), 5);
  EXPECT_EQ(prefix("a{", "a{"), 2);  // a '{' that starts no count is a literal
}

TEST(RegexMatch, Lookaheads) {
  EXPECT_EQ(prefix("\\s+(?!\\S)", "   a"), 2);
  EXPECT_EQ(prefix("\\s+(?!\\S)", "   "), 3);  // the piece's end is not \S
  EXPECT_EQ(prefix("(?=ab)a", "ab"), 1);
  EXPECT_EQ(prefix("a(?!b)", "ab"), -1);
  EXPECT_EQ(prefix("\\d{1,3}(?=(?:\\d{3})*(?!\\d))", "1234567"), 1);
  EXPECT_EQ(prefix("\\d{1,3}(?=(?:\\d{3})*(?!\\d))", "123456"), 3);
  EXPECT_EQ(prefix("((?=[a-z])([^x]))+", "abxc"), 2);
}

TEST(RegexMatch, AssertionsAndCase) {
  EXPECT_EQ(prefix("(?i:'re)", "'RE"), 3);
  EXPECT_EQ(prefix("(?i)ab|c", "AB"), 2);
  EXPECT_EQ(prefix("(?i:'re)", "'rx"), -1);
  EXPECT_EQ(prefix("^a", "a"), 1);
  EXPECT_EQ(prefix("a$", "ab"), -1);
  EXPECT_EQ(prefix("foo\\b", "foo bar"), 3);
  EXPECT_EQ(prefix("foo\\b", "food"), -1);
  EXPECT_EQ(prefix(".+", "ab\ncd"), 2);
  EXPECT_EQ(prefix("[\\s\\S]+", "ab\ncd"), 5);
}

TEST(RegexFlavours, ClassesFollowLlamaCpp) {
  // unicode: real categories; '~' is a symbol, U+0301 a mark, U+00A0 white space
  EXPECT_EQ(prefix("[^\\s\\p{L}\\p{N}]+", "!?\xC3\xA9"), 2);
  EXPECT_EQ(prefix("\\p{S}", "~"), 1);
  EXPECT_EQ(prefix("\\p{M}", "\xCC\x81"), 1);
  EXPECT_EQ(prefix("\\s", "\xC2\xA0"), 1);
  EXPECT_EQ(prefix("\\s", "\xE2\x80\x8B"), -1);  // U+200B is not white space
  EXPECT_EQ(prefix("\\p{Han}+",
                   "\xE6\x88\x91\xE6\x83\xB3"
                   "a"),
            2);
  // collapsed: every \p{L*} is \p{L}, '~' is neither P nor S, no literal matches non-ASCII
  EXPECT_EQ(prefix("\\p{Lu}+", "a\xC3\x89", K), 2);
  EXPECT_EQ(prefix("[\\p{P}\\p{S}]", "~", K), -1);
  EXPECT_EQ(prefix("[\\p{P}\\p{S}]", "$", K), 1);
  EXPECT_EQ(prefix("[^a-z]", "\xC3\xA9", K), 1);
  EXPECT_EQ(prefix("[^\\r\\n\\p{L}\\p{N}]", "\xC2\x85", K), 1);  // U+0085 is \v there
  // wide: non-ASCII white space is \v, so a literal range holding it does not match
  EXPECT_EQ(prefix("[\xE3\x80\x80-\xE3\x80\x82]", "\xE3\x80\x80", W), -1);
  EXPECT_EQ(prefix("[\xE3\x80\x80-\xE3\x80\x82]", "\xE3\x80\x81", W), 1);
  EXPECT_EQ(prefix("\\s", "\xE3\x80\x80", W), 1);
  EXPECT_EQ(prefix("\\d", "\xEF\xBC\x91", W), -1);  // fullwidth 1: \d is ASCII
  EXPECT_EQ(prefix("[^(\\s|.)]+", "ab(c", W), 2);   // '(' '|' ')' are members
}

TEST(RegexSplit, PiecesAndEmptyMatches) {
  EXPECT_EQ(split("\\p{N}", "ab12c"), (list{"ab", "1", "2", "c"}));
  EXPECT_EQ(split("\\s+$", "a  ", W), (list{"a", "  "}));
  EXPECT_EQ(split("(?=(\\d{3})+(?!\\d))", "1234567", W), (list{"1", "234", "567"}));
  EXPECT_EQ(split("x*", "ab"), (list{"a", "b"}));
  EXPECT_EQ(split("\\P{N}*\\p{N}{1,3}(?=(?:\\p{N}{3})*(?!\\p{N}))", "x  1234 y"),
            (list{"x  1", "234", " y"}));
  EXPECT_EQ(split("z", ""), list{});
}

TEST(RegexCompile, RefusesWithStatus) {
  struct bad {
    const char* pattern;
    status_code code;
  };
  for (const bad& b :
       {bad{"(", status_code::invalid_argument}, bad{"[a", status_code::invalid_argument},
        bad{"a)", status_code::invalid_argument}, bad{"a{2,1}", status_code::invalid_argument},
        bad{"*a", status_code::invalid_argument}, bad{"\\", status_code::invalid_argument},
        bad{"(a)\\1", status_code::unsupported}, bad{"(a*)*", status_code::unsupported},
        bad{"(?:a|)+", status_code::unsupported}, bad{"a{5000}", status_code::unsupported},
        bad{"\\p{Foo}", status_code::unsupported}, bad{"(?<n>a)", status_code::unsupported},
        bad{"a++", status_code::unsupported}, bad{"(?=a)*", status_code::unsupported},
        bad{"\xFF", status_code::invalid_argument}}) {
    auto p = detail::regex_compiler::compile(b.pattern, U);
    ASSERT_FALSE(p.is_ok()) << "compiled: " << b.pattern;
    EXPECT_EQ(p.error().code(), b.code) << b.pattern << ": " << p.error().to_string();
  }
  std::string deep(100, '(');
  deep += std::string(100, ')');
  EXPECT_EQ(detail::regex_compiler::compile(deep, U).error().code(), status_code::unsupported);
}

/// Patterns that take exponential or quadratic time in a plain backtracker: linear here
/// (a bounded number of steps per instruction and position).
TEST(RegexBounds, HostilePatternsStayLinear) {
  struct hostile {
    const char* pattern;
    std::string text;
    regex_flavour f;
  };
  const std::string as(20000, 'a'), digits(20000, '7'), spaces(20000, ' ');
  for (const hostile& h : {hostile{"(?:a|aa)+c", as, U}, hostile{"(?:a|a)*b", as, U},
                           hostile{"a*b|a", as, U}, hostile{"(?=(\\d{3})+(?!\\d))", digits, W},
                           hostile{"\\s+$|x", spaces, W}, hostile{"(?:ab|a)*c|a", as, U}}) {
    const auto prog = compile(h.pattern, h.f);
    const auto units = units_of(h.text, h.f);
    detail::regex_matcher m;
    std::vector<std::uint32_t> cuts;
    m.split(prog, units, 0, units.size(), cuts);
    const std::size_t bound = 8 * (prog.code.size() + 4) * (units.size() + 1) + 4096;
    EXPECT_LE(m.steps(), bound) << h.pattern << " on " << h.text.size() << " units";
  }
}

/// Nested runs that overlap are polynomial, not exponential: (a+)+b on 3000 a's.
TEST(RegexBounds, NestedRunsStayPolynomial) {
  const std::string as(3000, 'a');
  for (const char* pattern : {"(?:a+)+b", "(?:a+a+)+b|a", "(?:\\s+\\s+)+x"}) {
    const std::string text = pattern[3] == '\\' ? std::string(3000, ' ') : as;
    const auto prog = compile(pattern, U);
    const auto units = units_of(text, U);
    detail::regex_matcher m;
    std::vector<std::uint32_t> cuts;
    m.split(prog, units, 0, units.size(), cuts);
    const std::size_t n = units.size() + 1;
    EXPECT_LE(m.steps(), 4 * (prog.code.size() + 4) * n * n) << pattern;
  }
}

/// Every pre-tokenizer type on long runs of the characters its rules treat specially
/// finishes quickly and keeps every byte.
TEST(RegexBounds, PreTokenizersOnHostileInputs) {
  // 20,000 code units per input: linear work finishes in seconds even under the
  // sanitizers, quadratic work (4e8 steps per input and type) would take hours.
  constexpr std::size_t n = 20000;
  const std::vector<std::string> inputs = {std::string(n, ' '),
                                           std::string(n, '7'),
                                           std::string(n, '\''),
                                           std::string(n, '\n'),
                                           std::string(n / 2, 'a') + std::string(n / 2, '1'),
                                           [] {
                                             std::string s;
                                             for (std::size_t i = 0; i < n / 5; ++i)
                                               s += "a'\xC2\xA0 1\xE6\x88\x91";
                                             return s;
                                           }(),
                                           std::string(n, '\xFF')};
  const auto start = std::chrono::steady_clock::now();
  for (const auto& t : mnemo::text::k_pre_tokenizer_types) {
    auto p = mnemo::text::pre_tokenizer::from_type(t);
    ASSERT_TRUE(p.is_ok());
    mnemo::text::pre_tokenize_scratch s;
    std::vector<std::size_t> ends;
    for (const auto& text : inputs) {
      p->split_general(text, ends, s);
      ASSERT_FALSE(ends.empty());
      EXPECT_EQ(ends.back(), text.size()) << t.type;
    }
  }
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  // ~8 MB through the engine
  EXPECT_LT(seconds, 120.0);
}

}  // namespace
