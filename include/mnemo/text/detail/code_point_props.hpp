// Code point properties for the pre-tokenizer regexes, and the three ways llama.cpp
// presents text to a regex (a "flavour"), as sequences of match units.
//
//   unicode:   each code point with its real classes (llama.cpp's hand-written splitters)
//   collapsed: std::regex over bytes where every code point >= 128 became one placeholder
//              per class (white space -> \v), for regexes that use \p{..}
//   wide:      std::wregex over code points, non-ASCII white space replaced by \v
#pragma once

#if !defined(MNEMO_TEXT_DETAIL_OK_)
#error "mnemo/text/detail/* headers are internal: include mnemo/text/tokenizer.hpp"
#endif

#include <algorithm>
#include <array>
#include <cstdint>

#include "mnemo/text/detail/unicode.hpp"
#include "mnemo/text/detail/unicode_category_tables.hpp"

namespace mnemo::text::detail {

/// Class bits a unit can carry; a regex class matches a unit that has one of its bits.
enum prop : std::uint16_t {
  prop_letter = 1u << 0,       // \p{L}
  prop_number = 1u << 1,       // \p{N}
  prop_punctuation = 1u << 2,  // \p{P}
  prop_symbol = 1u << 3,       // \p{S}
  prop_mark = 1u << 4,         // \p{M}
  prop_space = 1u << 5,        // \s (llama.cpp's white space list)
  prop_han = 1u << 6,          // \p{Han} (the CJK ideograph blocks of Kimi-K2's splitter)
};

enum class regex_flavour : std::uint8_t { unicode, collapsed, wide };

/// One position of the matched text: the value literals and ranges compare against (a
/// collapsed placeholder is above U+10FFFF, so it equals no literal) and its class bits.
struct match_unit {
  std::uint32_t value;
  std::uint16_t props;
};

inline constexpr std::uint32_t k_placeholder_base = 0x110000;

constexpr category_group category_of_slow(std::uint32_t cp) noexcept {
  if (cp >= 0x110000) return category_group::undefined;
  auto it = std::upper_bound(std::begin(k_category_runs), std::end(k_category_runs), cp,
                             [](std::uint32_t c, const category_run& r) { return c < r.start; });
  return (it - 1)->group;
}

constexpr bool is_han_cp(std::uint32_t cp) noexcept {
  return (cp >= 0x4E00 && cp <= 0x9FFF) || (cp >= 0x3400 && cp <= 0x4DBF) ||
         (cp >= 0xF900 && cp <= 0xFAFF) || (cp >= 0x20000 && cp <= 0x2A6DF) ||
         (cp >= 0x2A700 && cp <= 0x2EBEF) || (cp >= 0x2F800 && cp <= 0x2FA1F);
}

/// Packed: class bits in the low byte, the category group in bits 8..10.
constexpr std::uint16_t code_point_info_slow(std::uint32_t cp) noexcept {
  const category_group g = category_of_slow(cp);
  std::uint16_t p = 0;
  switch (g) {
    case category_group::letter: p = prop_letter; break;
    case category_group::number: p = prop_number; break;
    case category_group::punctuation: p = prop_punctuation; break;
    case category_group::symbol: p = prop_symbol; break;
    case category_group::mark: p = prop_mark; break;
    default: break;
  }
  if (is_whitespace_cp(cp)) p |= prop_space;
  if (is_han_cp(cp)) p |= prop_han;
  return static_cast<std::uint16_t>(p | (static_cast<unsigned>(g) << 8));
}

/// code_point_info_slow through a table for the Basic Multilingual Plane (built once).
inline std::uint16_t code_point_info(std::uint32_t cp) noexcept {
  static const auto bmp = [] {
    static std::array<std::uint16_t, 0x10000> t{};
    for (std::uint32_t c = 0; c < 0x10000; ++c) t[c] = code_point_info_slow(c);
    return &t;
  }();
  return cp < 0x10000 ? (*bmp)[cp] : code_point_info_slow(cp);
}

inline category_group category_of(std::uint32_t cp) noexcept {
  return static_cast<category_group>(code_point_info(cp) >> 8);
}

/// The class bits std::regex gives an ASCII byte in collapsed text: llama.cpp's rewrite
/// of \p{P} and \p{S} lists ASCII members explicitly, and '~' is in neither.
constexpr std::uint16_t collapsed_ascii_props(std::uint32_t c) noexcept {
  if ((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z')) return prop_letter;
  if (c >= '0' && c <= '9') return prop_number;
  if ((c >= 0x09 && c <= 0x0D) || c == ' ') return prop_space;
  switch (c) {
    case '!':
    case '"':
    case '#':
    case '%':
    case '&':
    case '\'':
    case '(':
    case ')':
    case '*':
    case ',':
    case '-':
    case '.':
    case '/':
    case ':':
    case ';':
    case '?':
    case '@':
    case '[':
    case '\\':
    case ']':
    case '_':
    case '{':
    case '}': return prop_punctuation;
    case '$':
    case '+':
    case '<':
    case '=':
    case '>':
    case '^':
    case '`':
    case '|': return prop_symbol;
    default: return 0;
  }
}

/// The unit a code point becomes under a flavour.
inline match_unit make_unit(std::uint32_t cp, regex_flavour f) noexcept {
  const std::uint16_t info = code_point_info(cp);
  const auto props = static_cast<std::uint16_t>(info & 0xFF);
  switch (f) {
    case regex_flavour::unicode: return {cp, props};
    case regex_flavour::collapsed:
      if (cp < 0x80) return {cp, collapsed_ascii_props(cp)};
      if (props & prop_space) return {0x0B, prop_space};
      return {k_placeholder_base + (info >> 8u),
              static_cast<std::uint16_t>(props & ~(prop_space | prop_han))};
    case regex_flavour::wide:
      if (props & prop_space) return {cp < 0x80 ? cp : 0x0B, prop_space};
      return {cp, 0};
  }
  return {cp, 0};
}

/// Simple lowercase mapping (llama.cpp's unicode_tolower).
inline std::uint32_t to_lower_cp(std::uint32_t cp) noexcept {
  if (cp < 0x80) return cp >= 'A' && cp <= 'Z' ? cp + 32 : cp;
  auto it = std::lower_bound(std::begin(k_lowercase), std::end(k_lowercase), cp,
                             [](const code_point_pair& p, std::uint32_t c) { return p.cp < c; });
  return it != std::end(k_lowercase) && it->cp == cp ? it->mapped : cp;
}

/// The first code point of the NFD form (llama.cpp's unicode_cpts_normalize_nfd, which
/// keeps only that one: "é" -> "e").
inline std::uint32_t nfd_first_cp(std::uint32_t cp) noexcept {
  if (cp < 0xC0) return cp;
  auto it =
      std::lower_bound(std::begin(k_nfd_first), std::end(k_nfd_first), cp,
                       [](const code_point_range_map& r, std::uint32_t c) { return r.last < c; });
  return it != std::end(k_nfd_first) && it->first <= cp ? it->mapped : cp;
}

}  // namespace mnemo::text::detail
