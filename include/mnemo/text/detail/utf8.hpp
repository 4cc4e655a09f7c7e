// UTF-8 helpers shared by the tokenizers and the streaming decoder.
#pragma once

#if !defined(MNEMO_TEXT_DETAIL_OK_)
#error "mnemo/text/detail/* headers are internal: include mnemo/text/tokenizer.hpp"
#endif

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace mnemo::text::detail {

inline constexpr std::uint32_t k_replacement_char = 0xFFFD;

/// The length a sequence claims from its first byte alone, as llama.cpp's symbol split
/// does (a continuation or invalid lead byte counts as 1). Used by the SPM and BPE merge
/// loops so that their symbols are the same as llama.cpp's, even on invalid input.
constexpr std::size_t utf8_len_from_lead(unsigned char c) noexcept {
  constexpr unsigned char lookup[16] = {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 3, 4};
  return lookup[c >> 4];
}

/// Decodes one code point at s[i] strictly (no overlongs, no surrogates, <= U+10FFFF)
/// and returns its length, or 0 when the bytes at s[i] are not a valid sequence.
inline std::size_t decode_utf8_strict(std::string_view s, std::size_t i,
                                      std::uint32_t& cp) noexcept {
  const auto b0 = static_cast<unsigned char>(s[i]);
  if (b0 < 0x80) {
    cp = b0;
    return 1;
  }
  std::size_t n = 0;
  std::uint32_t v = 0, min = 0;
  if ((b0 & 0xE0) == 0xC0) {
    n = 2, v = b0 & 0x1Fu, min = 0x80;
  } else if ((b0 & 0xF0) == 0xE0) {
    n = 3, v = b0 & 0x0Fu, min = 0x800;
  } else if ((b0 & 0xF8) == 0xF0) {
    n = 4, v = b0 & 0x07u, min = 0x10000;
  } else {
    return 0;
  }
  if (i + n > s.size()) return 0;
  for (std::size_t k = 1; k < n; ++k) {
    const auto b = static_cast<unsigned char>(s[i + k]);
    if ((b & 0xC0) != 0x80) return 0;
    v = (v << 6) | (b & 0x3Fu);
  }
  if (v < min || v > 0x10FFFF || (v >= 0xD800 && v <= 0xDFFF)) return 0;
  cp = v;
  return n;
}

/// Decodes one code point at s[i]; an invalid or truncated sequence yields U+FFFD and a
/// length of 1, so every byte of the input belongs to exactly one decoded unit.
inline std::uint32_t decode_utf8(std::string_view s, std::size_t i, std::size_t& len) noexcept {
  std::uint32_t cp = 0;
  len = decode_utf8_strict(s, i, cp);
  if (len == 0) {
    len = 1;
    return k_replacement_char;
  }
  return cp;
}

/// Whether `s` is entirely well-formed UTF-8; `bad` receives the offending byte offset.
inline bool is_valid_utf8(std::string_view s, std::size_t* bad = nullptr) noexcept {
  for (std::size_t i = 0; i < s.size();) {
    std::uint32_t cp = 0;
    const std::size_t len = decode_utf8_strict(s, i, cp);
    if (len == 0) {
      if (bad != nullptr) *bad = i;
      return false;
    }
    i += len;
  }
  return true;
}

inline void append_utf8(std::string& out, std::uint32_t cp) {
  if (cp < 0x80) {
    out.push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    out.push_back(static_cast<char>(0xC0 | (cp >> 6)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else if (cp < 0x10000) {
    out.push_back(static_cast<char>(0xE0 | (cp >> 12)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else {
    out.push_back(static_cast<char>(0xF0 | (cp >> 18)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  }
}

/// The length of the longest prefix of `s` that does not end inside a sequence which a
/// later byte could still complete. Only such a tail (a valid lead byte followed by
/// fewer continuation bytes than it announces) is held back; bytes that can never become
/// valid UTF-8 are not, so a stream of arbitrary bytes cannot stall.
inline std::size_t utf8_complete_prefix(std::string_view s) noexcept {
  const std::size_t n = s.size();
  // A lead byte announcing k bytes can only be held back by its last k-1 bytes.
  for (std::size_t back = 1; back <= 3 && back <= n; ++back) {
    const auto b = static_cast<unsigned char>(s[n - back]);
    if ((b & 0xC0) == 0x80) continue;  // continuation byte: look further back
    std::size_t want = 0;
    if ((b & 0xE0) == 0xC0 && b >= 0xC2)
      want = 2;
    else if ((b & 0xF0) == 0xE0)
      want = 3;
    else if ((b & 0xF8) == 0xF0 && b <= 0xF4)
      want = 4;
    return want > back ? n - back : n;
  }
  return n;
}

}  // namespace mnemo::text::detail
