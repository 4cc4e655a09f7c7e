// The BPE pre-tokenizer rules, code point classes and UTF-8 hold-back, against
// expectations worked out by hand from the regexes and the Unicode categories.
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <gtest/gtest.h>

#include "mnemo/text/text.hpp"

namespace {

using mnemo::text::pre_rules;
using mnemo::text::detail::cp_class;

std::vector<std::string> words(pre_rules r, std::string_view text) {
  std::vector<std::size_t> ends;
  mnemo::text::pre_tokenize_scratch s;
  mnemo::text::pre_tokenize(r, text, ends, s);
  std::vector<std::string> out;
  std::size_t begin = 0;
  for (const std::size_t e : ends) {
    out.emplace_back(text.substr(begin, e - begin));
    begin = e;
  }
  return out;
}

using list = std::vector<std::string>;

TEST(PreTokenizeGpt2, WordsAndSpaces) {
  EXPECT_EQ(words(pre_rules::gpt2, ""), list{});
  EXPECT_EQ(words(pre_rules::gpt2, "Hello world"), (list{"Hello", " world"}));
  // \s+(?!\S): the last space of a run goes with the next word
  EXPECT_EQ(words(pre_rules::gpt2, "  Hello"), (list{" ", " Hello"}));
  EXPECT_EQ(words(pre_rules::gpt2, "a  \n\n b"), (list{"a", "  \n\n", " b"}));
  // ... but a run at the end of the text stays whole
  EXPECT_EQ(words(pre_rules::gpt2, "x  "), (list{"x", "  "}));
  EXPECT_EQ(words(pre_rules::gpt2, "\t\n"), (list{"\t\n"}));
}

TEST(PreTokenizeGpt2, ContractionsAndPunctuation) {
  // lower-case contractions only; "'RE" is punctuation then letters
  EXPECT_EQ(words(pre_rules::gpt2, "I've 'RE"), (list{"I", "'ve", " '", "RE"}));
  EXPECT_EQ(words(pre_rules::gpt2, "y'all!!"), (list{"y", "'", "all", "!!"}));
  EXPECT_EQ(words(pre_rules::gpt2, "3.14 \xC2\xBD"), (list{"3", ".", "14", " \xC2\xBD"}));
  // letters of other scripts are letters: Cyrillic and CJK runs stay whole
  EXPECT_EQ(words(pre_rules::gpt2, "\xD0\xBD\xD0\xB0 \xE6\x88\x91\xE6\x83\xB3!"),
            (list{"\xD0\xBD\xD0\xB0", " \xE6\x88\x91\xE6\x83\xB3", "!"}));
  // an emoji is neither letter nor number: it runs with punctuation
  EXPECT_EQ(words(pre_rules::gpt2, "a \xF0\x9F\x9A\x80."), (list{"a", " \xF0\x9F\x9A\x80."}));
}

TEST(PreTokenizeStarcoder, DigitsAreSplitFirst) {
  EXPECT_EQ(words(pre_rules::starcoder, "abc123 x"), (list{"abc", "1", "2", "3", " x"}));
  // the digit is a piece boundary, so the space before it is the end of its piece
  EXPECT_EQ(words(pre_rules::starcoder, "a  3"), (list{"a", "  ", "3"}));
  EXPECT_EQ(words(pre_rules::gpt2, "a  3"), (list{"a", " ", " 3"}));
}

TEST(PreTokenize, InvalidUtf8KeepsEveryByte) {
  const std::string text = "ab\xFF\xC3 cd";
  std::string joined;
  for (const auto& w : words(pre_rules::gpt2, text)) joined += w;
  EXPECT_EQ(joined, text);
}

TEST(CodePointClass, SpotChecks) {
  using mnemo::text::detail::classify;
  struct item {
    std::uint32_t cp;
    cp_class want;
  };
  const item items[] = {
      {'A', cp_class::letter},        {0xE9, cp_class::letter},       {0xDF, cp_class::letter},
      {0x436, cp_class::letter},      {0x4E00, cp_class::letter},     {0xAC00, cp_class::letter},
      {0x17A0, cp_class::letter},     {0x20000, cp_class::letter},    {0x2C6, cp_class::letter},
      {'7', cp_class::number},        {0xBD, cp_class::number},       {0x663, cp_class::number},
      {0x216B, cp_class::number},     {0x1D7CE, cp_class::number},    {0xFF13, cp_class::number},
      {' ', cp_class::whitespace},    {'\n', cp_class::whitespace},   {0xA0, cp_class::whitespace},
      {0x3000, cp_class::whitespace}, {0x2028, cp_class::whitespace}, {0x1C, cp_class::other},
      {'!', cp_class::other},         {0x301, cp_class::other},       {0x17B6, cp_class::other},
      {0x1F600, cp_class::other},     {0x10FFFF, cp_class::other},    {0xE000, cp_class::other},
  };
  for (const item& i : items)
    EXPECT_EQ(static_cast<int>(classify(i.cp)), static_cast<int>(i.want))
        << "code point U+" << std::hex << i.cp;
}

TEST(CodePointClass, TablesAreSortedAndDisjoint) {
  using range_span = std::span<const mnemo::text::detail::code_point_range>;
  for (const range_span table : {range_span(mnemo::text::detail::k_letter_ranges),
                                 range_span(mnemo::text::detail::k_number_ranges)}) {
    ASSERT_FALSE(table.empty());
    for (std::size_t i = 0; i < table.size(); ++i) {
      EXPECT_LE(table[i].first, table[i].last);
      if (i > 0) {
        EXPECT_GT(table[i].first, table[i - 1].last + 1) << "ranges touch at " << table[i].first;
      }
    }
  }
}

TEST(Utf8HoldBack, OnlyCompletableTailsAreHeld) {
  using mnemo::text::detail::utf8_complete_prefix;
  EXPECT_EQ(utf8_complete_prefix(""), 0u);
  EXPECT_EQ(utf8_complete_prefix("abc"), 3u);
  EXPECT_EQ(utf8_complete_prefix("a\xE2\x82"), 1u);      // 2 of 3 bytes of '€'
  EXPECT_EQ(utf8_complete_prefix("a\xE2\x82\xAC"), 4u);  // '€' complete
  EXPECT_EQ(utf8_complete_prefix("\xF0\x9F\x9A"), 0u);   // 3 of 4 bytes of an emoji
  EXPECT_EQ(utf8_complete_prefix("\xF0\x9F\x9A\x80"), 4u);
  EXPECT_EQ(utf8_complete_prefix("a\xFF"), 2u);     // never valid: passed through
  EXPECT_EQ(utf8_complete_prefix("a\xC0"), 2u);     // overlong lead: never valid
  EXPECT_EQ(utf8_complete_prefix("\x80\x80"), 2u);  // stray continuation bytes
}

}  // namespace
