// String helpers of the chat formatters, each the exact counterpart of one in llama.cpp's
// src/llama-chat.cpp, so that formatted prompts match byte for byte.
#pragma once

#if !defined(MNEMO_TEXT_DETAIL_OK_)
#error "mnemo/text/detail/* headers are internal: include mnemo/text/chat_template.hpp"
#endif

#include <cstddef>
#include <string>
#include <string_view>

namespace mnemo::text::detail {

/// isspace() in the C locale: space, \t, \n, \v, \f, \r (never a UTF-8 byte).
constexpr bool is_c_space(char c) noexcept { return c == ' ' || (c >= '\t' && c <= '\r'); }

/// `s` without leading and trailing C-locale white space.
constexpr std::string_view trim(std::string_view s) noexcept {
  std::size_t b = 0, e = s.size();
  while (b < e && is_c_space(s[b])) ++b;
  while (e > b && is_c_space(s[e - 1])) --e;
  return s.substr(b, e - b);
}

/// toupper() in the C locale: ASCII letters only, other bytes unchanged.
constexpr char to_upper_ascii(char c) noexcept {
  return c >= 'a' && c <= 'z' ? static_cast<char>(c - 'a' + 'A') : c;
}

/// DeepSeek-OCR wants its images before the prompt: moves every media marker
/// ("<__media__>", or the server's "<__media_HEX__>") to the front, each followed by one
/// newline, and strips the newlines around the remaining text. A "<__media" without its
/// closing "__>" is text. Content without markers comes back unchanged.
inline std::string media_markers_first(std::string_view content) {
  constexpr std::string_view prefix = "<__media";
  constexpr std::string_view suffix = "__>";
  std::string markers, text;
  text.reserve(content.size());
  std::size_t i = 0;
  while (i < content.size()) {
    if (content.substr(i).starts_with(prefix)) {
      const std::size_t e = content.find(suffix, i + prefix.size());
      if (e != std::string_view::npos) {
        const std::size_t end = e + suffix.size();
        markers.append(content.substr(i, end - i)).push_back('\n');
        i = end;
        if (i < content.size() && content[i] == '\n') ++i;  // the marker's own line break
        continue;
      }
    }
    text.push_back(content[i++]);
  }
  if (markers.empty()) return std::string(content);
  const std::size_t start = text.find_first_not_of('\n');
  if (start == std::string::npos) return markers;
  text.erase(0, start);
  while (!text.empty() && text.back() == '\n') text.pop_back();
  return markers + text;
}

}  // namespace mnemo::text::detail
