// mnemo/text/utf8.hpp, the public face of the tokenizers' UTF-8 routines: every code
// point survives append + decode, and what is not UTF-8 is refused.
#include <cstdint>
#include <string>

#include <gtest/gtest.h>

#include "mnemo/text/utf8.hpp"

namespace {

namespace text = mnemo::text;

TEST(PublicUtf8, ScalarValuesRoundTrip) {
  // Every value of the 1- to 3-byte forms, then the 4-byte form in steps that end on
  // U+10FFFF (a full sweep takes seconds under the sanitizers).
  for (std::uint32_t cp = 0; cp <= 0x10FFFF; cp += cp < 0x10000 ? 1 : 15) {
    if (cp >= 0xD800 && cp <= 0xDFFF) continue;  // surrogates are not scalar values
    std::string s;
    text::append_utf8(s, cp);
    const std::size_t want = cp < 0x80 ? 1 : cp < 0x800 ? 2 : cp < 0x10000 ? 3 : 4;
    ASSERT_EQ(s.size(), want) << "cp U+" << std::hex << cp;
    std::size_t len = 0;
    ASSERT_EQ(text::decode_utf8(s, 0, len), cp) << "cp U+" << std::hex << cp;
    ASSERT_EQ(len, want) << "cp U+" << std::hex << cp;
    ASSERT_TRUE(text::is_valid_utf8(s)) << "cp U+" << std::hex << cp;
    ASSERT_EQ(text::utf8_complete_prefix(s.substr(0, want - 1)), 0u) << "cp U+" << std::hex << cp;
  }
}

TEST(PublicUtf8, InvalidSequencesAreRefused) {
  const char* bad[] = {"\xC0\x80", "\xE0\x80\x80", "\xED\xA0\x80", "\xF4\x90\x80\x80",
                       "\x80",     "\xE2\x82",     "\xFF"};
  for (const char* b : bad) {
    std::size_t off = 99;
    EXPECT_FALSE(text::is_valid_utf8(b, &off)) << b;
    EXPECT_EQ(off, 0u) << b;
    std::size_t len = 0;
    EXPECT_EQ(text::decode_utf8(b, 0, len), text::k_replacement_char) << b;
    EXPECT_EQ(len, 1u) << b;
  }
  std::size_t off = 0;
  EXPECT_FALSE(text::is_valid_utf8("ab\xC3(", &off));
  EXPECT_EQ(off, 2u);
}

}  // namespace
