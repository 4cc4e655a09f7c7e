// WordPiece (tokenizer.ggml.model = "bert"), as llama.cpp's llm_tokenizer_wpm.
//
// Pre-split: each code point is reduced to the first code point of its NFD form (which
// strips accents: "é" -> "e"), then white space ends a word, NUL, U+FFFD and control or
// format characters are dropped, everything is lowercased, and punctuation, ASCII
// symbols and CJK ideographs become words of their own.
// Words: "▁" + word is matched greedily, longest token first from each byte position
// (tokens that start a word carry "▁", continuation pieces are bare, as llama.cpp's
// conversion writes BERT's "##" pieces); a word with a position no token covers becomes
// the unknown token as a whole.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "mnemo/text/vocab.hpp"

#pragma push_macro("MNEMO_TEXT_DETAIL_OK_")
#undef MNEMO_TEXT_DETAIL_OK_
#define MNEMO_TEXT_DETAIL_OK_ 1
#include "mnemo/text/detail/code_point_props.hpp"
#include "mnemo/text/detail/unicode.hpp"
#include "mnemo/text/detail/utf8.hpp"
#pragma pop_macro("MNEMO_TEXT_DETAIL_OK_")

namespace mnemo::text {

/// Reusable buffers of wpm_encode.
struct wpm_scratch {
  std::vector<std::string> words;
  std::string word;
};

namespace detail {

constexpr bool is_cjk_ideograph(std::uint32_t cp) noexcept {
  return (cp >= 0x4E00 && cp <= 0x9FFF) || (cp >= 0x3400 && cp <= 0x4DBF) ||
         (cp >= 0x20000 && cp <= 0x2A6DF) || (cp >= 0x2A700 && cp <= 0x2B73F) ||
         (cp >= 0x2B740 && cp <= 0x2B81F) || (cp >= 0x2B920 && cp <= 0x2CEAF) ||
         (cp >= 0xF900 && cp <= 0xFAFF) || (cp >= 0x2F800 && cp <= 0x2FA1F);
}

/// The pre-split: words of lowercased, accent-stripped text.
inline void wpm_words(std::string_view text, wpm_scratch& s) {
  s.words.clear();
  s.word.clear();
  auto finish = [&] {
    if (!s.word.empty()) s.words.push_back(s.word);
    s.word.clear();
  };
  for (std::size_t i = 0; i < text.size();) {
    std::size_t len = 0;
    const std::uint32_t cp = nfd_first_cp(decode_utf8(text, i, len));
    i += len;
    if (is_whitespace_cp(cp)) {
      finish();
      continue;
    }
    const category_group g = category_of(cp);
    if (cp == 0 || cp == k_replacement_char || g == category_group::control) continue;
    const std::uint32_t lower = to_lower_cp(cp);
    if (g == category_group::punctuation || (cp < 0x7F && g == category_group::symbol) ||
        is_cjk_ideograph(cp)) {
      finish();
      append_utf8(s.word, lower);
      finish();
    } else {
      append_utf8(s.word, lower);
    }
  }
  finish();
}

}  // namespace detail

/// Appends the tokens of one raw fragment to `out`.
inline void wpm_encode(const vocab& v, std::string_view text, std::vector<token_id>& out,
                       wpm_scratch& s) {
  detail::wpm_words(text, s);
  std::string w;
  for (const std::string& word : s.words) {
    w.assign("\xE2\x96\x81").append(word);
    const std::size_t first = out.size();
    for (std::size_t i = 0; i < w.size();) {
      token_id id = k_no_token;
      std::size_t j = std::min(w.size(), i + v.max_token_length() + 1);
      for (; j > i; --j) {
        id = v.find(std::string_view(w).substr(i, j - i));
        if (id != k_no_token) break;
      }
      if (id == k_no_token) {  // a position no token covers: the whole word is unknown
        out.resize(first);
        break;
      }
      out.push_back(id);
      i = j;
    }
    if (out.size() == first && v.unk() != k_no_token) out.push_back(v.unk());
  }
}

}  // namespace mnemo::text
