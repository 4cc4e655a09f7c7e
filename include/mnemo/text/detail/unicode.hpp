// Code point classes for the BPE pre-tokenizer rules: letter (\p{L}), number (\p{N}),
// whitespace (\s) and everything else. The whitespace set is the one llama.cpp's \s
// uses (White_Space minus the 0x1C..0x1F separators): 0x09-0x0D, 0x20, 0x85, 0xA0,
// 0x1680, 0x2000-0x200A, 0x2028, 0x2029, 0x202F, 0x205F, 0x3000.
#pragma once

#if !defined(MNEMO_TEXT_DETAIL_OK_)
#error "mnemo/text/detail/* headers are internal: include mnemo/text/tokenizer.hpp"
#endif

#include <algorithm>
#include <array>
#include <cstdint>
#include <iterator>
#include <span>

#include "mnemo/text/detail/unicode_tables.hpp"

namespace mnemo::text::detail {

enum class cp_class : std::uint8_t { other = 0, letter, number, whitespace };

constexpr bool is_whitespace_cp(std::uint32_t cp) noexcept {
  return (cp >= 0x09 && cp <= 0x0D) || cp == 0x20 || cp == 0x85 || cp == 0xA0 || cp == 0x1680 ||
         (cp >= 0x2000 && cp <= 0x200A) || cp == 0x2028 || cp == 0x2029 || cp == 0x202F ||
         cp == 0x205F || cp == 0x3000;
}

constexpr bool in_ranges(std::span<const code_point_range> table, std::uint32_t cp) noexcept {
  // First range whose last >= cp; the tables are sorted and disjoint.
  auto it = std::lower_bound(table.begin(), table.end(), cp,
                             [](const code_point_range& r, std::uint32_t c) { return r.last < c; });
  return it != table.end() && it->first <= cp;
}

constexpr cp_class classify_slow(std::uint32_t cp) noexcept {
  if (is_whitespace_cp(cp)) return cp_class::whitespace;
  if (in_ranges(k_letter_ranges, cp)) return cp_class::letter;
  if (in_ranges(k_number_ranges, cp)) return cp_class::number;
  return cp_class::other;
}

/// The class of a code point. The Basic Multilingual Plane (where nearly all text lives)
/// is looked up in a 64 KiB table built once on first use; the rest binary-searches the
/// range tables. The table is a function-local static filled at run time: an initializer
/// GCC could constant-evaluate would cost every including translation unit ~10 s of
/// compile time evaluating 65,536 lookups.
inline cp_class classify(std::uint32_t cp) noexcept {
  static const auto* const bmp = [] {
    static std::array<cp_class, 0x10000> t{};
    for (std::uint32_t c = 0; c < 0x10000; ++c) t[c] = classify_slow(c);
    return &t;
  }();
  return cp < 0x10000 ? (*bmp)[cp] : classify_slow(cp);
}

}  // namespace mnemo::text::detail
