// The hand-written fast path of the GPT-2 pre-tokenizer (pre_tokenizer.hpp runs every
// other type through the regex engine, and tests that this path agrees with it):
//
//   gpt2:      's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
//   starcoder: first \p{N} (every digit is its own piece, the text between is a piece),
//              then the gpt2 rules inside each piece.
//
// Written as a hand-coded scanner (no regex engine): one left-to-right pass over code
// points, with the alternatives tried in the regex's order. It reproduces llama.cpp's
// behaviour, including two details of its scanner: a piece boundary (starcoder) is the
// end of the text for the look-ahead of \s+(?!\S), and any in-range code point that is
// not a letter, number or whitespace (unassigned ones included) counts as [^\s\p{L}\p{N}].
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>
#include <vector>

#include "mnemo/base/result.hpp"
#include "mnemo/base/status.hpp"

#pragma push_macro("MNEMO_TEXT_DETAIL_OK_")
#undef MNEMO_TEXT_DETAIL_OK_
#define MNEMO_TEXT_DETAIL_OK_ 1
#include "mnemo/text/detail/code_point_props.hpp"
#include "mnemo/text/detail/regex_match.hpp"
#include "mnemo/text/detail/unicode.hpp"
#include "mnemo/text/detail/utf8.hpp"
#pragma pop_macro("MNEMO_TEXT_DETAIL_OK_")

namespace mnemo::text {

enum class pre_rules : std::uint8_t {
  none,       // no split (SentencePiece-style vocabularies)
  gpt2,       // GPT-2's word regex
  starcoder,  // single digits split off first, then GPT-2's regex
  llama3,     // Llama 3's regex (numbers in threes)
  qwen2,      // Llama 3's regex with single-digit numbers
  qwen35,     // qwen2's with marks (\p{M}) counted as letters
};

constexpr std::string_view to_string(pre_rules r) noexcept {
  switch (r) {
    case pre_rules::none: return "none";
    case pre_rules::gpt2: return "gpt2";
    case pre_rules::starcoder: return "starcoder";
    case pre_rules::llama3: return "llama3";
    case pre_rules::qwen2: return "qwen2";
    case pre_rules::qwen35: return "qwen35";
  }
  return "?";
}

/// The rules for a `tokenizer.ggml.pre` name: the names llama.cpp maps to the same
/// two rule sets without further per-model changes. unsupported for any other name.
inline result<pre_rules> pre_rules_from_name(std::string_view name) {
  if (name == "gpt-2" || name == "phi-2") return pre_rules::gpt2;
  if (name == "starcoder") return pre_rules::starcoder;
  return make_status(status_code::unsupported,
                     "tokenizer: pre-tokenizer '%.*s' is not supported (supported: gpt-2, "
                     "phi-2, starcoder)",
                     static_cast<int>(name.size()), name.data());
}

/// Reusable buffers of pre_tokenize (so a long-lived caller allocates once).
struct pre_tokenize_scratch {
  std::vector<std::uint32_t> cps;     // [n_cp] code points (U+FFFD for an invalid byte)
  std::vector<std::size_t> offsets;   // [n_cp + 1] byte offset of each code point
  std::vector<detail::cp_class> cls;  // [n_cp]
  // the general engine (pre_tokenizer.hpp)
  std::vector<detail::match_unit> units[3];  // [flavour][n_cp], built on first use
  bool units_built[3] = {false, false, false};
  std::vector<std::uint32_t> cuts, next_cuts;  // piece boundaries, code point indices
  detail::regex_matcher matcher;
};

namespace detail {

/// GPT-2's rules over code points [b, e); appends the byte offset where each word ends.
inline void split_gpt2(const pre_tokenize_scratch& s, std::size_t b, std::size_t e,
                       std::vector<std::size_t>& ends) {
  constexpr std::uint8_t k_out = 0xFF;  // "past the piece": no class at all
  auto cls = [&](std::size_t p) { return p < e ? static_cast<std::uint8_t>(s.cls[p]) : k_out; };
  constexpr auto letter = static_cast<std::uint8_t>(cp_class::letter);
  constexpr auto number = static_cast<std::uint8_t>(cp_class::number);
  constexpr auto other = static_cast<std::uint8_t>(cp_class::other);
  constexpr auto space = static_cast<std::uint8_t>(cp_class::whitespace);
  auto emit = [&](std::size_t p) { ends.push_back(s.offsets[p]); };

  std::size_t pos = b;
  while (pos < e) {
    const std::uint32_t cp = s.cps[pos];
    // 's|'t|'re|'ve|'m|'ll|'d (lower case only, as in the regex)
    if (cp == '\'' && pos + 1 < e) {
      const std::uint32_t n1 = s.cps[pos + 1];
      if (n1 == 's' || n1 == 't' || n1 == 'm' || n1 == 'd') {
        emit(pos += 2);
        continue;
      }
      if (pos + 2 < e) {
        const std::uint32_t n2 = s.cps[pos + 2];
        if ((n1 == 'r' && n2 == 'e') || (n1 == 'v' && n2 == 'e') || (n1 == 'l' && n2 == 'l')) {
          emit(pos += 3);
          continue;
        }
      }
    }
    // ' ?' + a run of one class: letters, numbers, or "other" (not space/letter/number)
    const std::uint8_t c = cp == ' ' ? cls(pos + 1) : cls(pos);
    if (c == letter || c == number || c == other) {
      pos += cp == ' ' ? 1 : 0;
      while (cls(pos) == c) ++pos;
      emit(pos);
      continue;
    }
    // \s+(?!\S) leaves the last space of a run to the word that follows; \s+ otherwise
    std::size_t n = 0;
    while (cls(pos + n) == space) ++n;
    if (n > 1 && pos + n < e) {
      emit(pos += n - 1);
    } else if (n > 0) {
      emit(pos += n);
    } else {
      emit(++pos);  // unreachable for valid classes; keeps the loop total
    }
  }
}

/// The Llama 3 family over code points [b, e) (one pass, alternatives in the regex's order):
///   (?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\r\n\p{L}\p{N}]?W+|\p{N}{1,D}|
///    ?[^\s\p{L}\p{N}X]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+
/// with W = \p{L} (llama3: D = 3; qwen2: D = 1) or [\p{L}\p{M}] and X = \p{M} (qwen35).
inline void split_llama3(const pre_tokenize_scratch& s, std::size_t b, std::size_t e,
                         std::size_t max_digits, bool marks_are_letters,
                         std::vector<std::size_t>& ends) {
  auto cls = [&](std::size_t p) { return p < e ? s.cls[p] : cp_class::whitespace; };
  auto is_mark = [&](std::size_t p) {
    return marks_are_letters && p < e && (code_point_info(s.cps[p]) & prop_mark) != 0;
  };
  auto word = [&](std::size_t p) { return p < e && (s.cls[p] == cp_class::letter || is_mark(p)); };
  auto other = [&](std::size_t p) { return p < e && s.cls[p] == cp_class::other && !is_mark(p); };
  auto newline = [&](std::size_t p) { return p < e && (s.cps[p] == '\r' || s.cps[p] == '\n'); };
  auto lower = [&](std::size_t p) { return p < e && s.cps[p] < 0x80 ? s.cps[p] | 0x20u : 0u; };
  auto emit = [&](std::size_t p) { ends.push_back(s.offsets[p]); };

  std::size_t pos = b;
  while (pos < e) {
    const std::uint32_t cp = s.cps[pos];
    if (cp == '\'') {  // contractions, either case
      const std::uint32_t n1 = lower(pos + 1), n2 = lower(pos + 2);
      if (n1 == 's' || n1 == 't' || n1 == 'm' || n1 == 'd') {
        emit(pos += 2);
        continue;
      }
      if ((n1 == 'r' && n2 == 'e') || (n1 == 'v' && n2 == 'e') || (n1 == 'l' && n2 == 'l')) {
        emit(pos += 3);
        continue;
      }
    }
    // [^\r\n\p{L}\p{N}]?W+
    const cp_class c = s.cls[pos];
    std::size_t start = e;
    if (c != cp_class::letter && c != cp_class::number && !newline(pos) && word(pos + 1))
      start = pos + 1;
    else if (word(pos))
      start = pos;
    if (start != e) {
      pos = start;
      while (word(pos)) ++pos;
      emit(pos);
      continue;
    }
    if (c == cp_class::number) {
      std::size_t n = 0;
      while (n < max_digits && cls(pos + n) == cp_class::number) ++n;
      emit(pos += n);
      continue;
    }
    // ' ?[^\s\p{L}\p{N}]+[\r\n]*'
    const std::size_t q = cp == ' ' ? pos + 1 : pos;
    if (other(q)) {
      pos = q;
      while (other(pos)) ++pos;
      while (newline(pos)) ++pos;
      emit(pos);
      continue;
    }
    std::size_t n = 0, last_newline = e;
    for (; cls(pos + n) == cp_class::whitespace && pos + n < e; ++n)
      if (newline(pos + n)) last_newline = pos + n;
    if (last_newline != e) {  // \s*[\r\n]+
      emit(pos = last_newline + 1);
    } else if (n > 1 && pos + n < e) {  // \s+(?!\S) leaves the last one to the next word
      emit(pos += n - 1);
    } else if (n > 0) {
      emit(pos += n);
    } else {
      emit(++pos);  // unreachable: every code point is in one of the classes above
    }
  }
}

}  // namespace detail

/// Splits `text` into words by `rules`; `ends` receives the byte offset where each word
/// ends (the last one is text.size(); empty text gives no words). Invalid UTF-8 bytes
/// are single "other" code points, so every byte lands in exactly one word.
namespace detail {

/// Decodes `text` into s.cps / s.offsets / s.cls (and forgets the units of the last text);
/// without `classes`, s.cls stays empty (the regex engine reads units instead).
inline void decode_code_points(std::string_view text, pre_tokenize_scratch& s,
                               bool classes = true) {
  // at most one code point per byte: sized for that, written by index, then trimmed
  s.cps.resize(text.size());
  s.offsets.resize(text.size() + 1);
  s.cls.resize(classes ? text.size() : 0);
  std::size_t n = 0;
  for (std::size_t i = 0; i < text.size(); ++n) {
    std::uint32_t cp = static_cast<unsigned char>(text[i]);
    std::size_t len = 1;
    if (cp >= 0x80) cp = detail::decode_utf8(text, i, len);
    s.cps[n] = cp;
    s.offsets[n] = i;
    if (classes) s.cls[n] = detail::classify(cp);
    i += len;
  }
  s.cps.resize(n);
  s.offsets[n] = text.size();
  s.offsets.resize(n + 1);
  if (classes) s.cls.resize(n);
  s.units_built[0] = s.units_built[1] = s.units_built[2] = false;
}

}  // namespace detail

inline void pre_tokenize(pre_rules rules, std::string_view text, std::vector<std::size_t>& ends,
                         pre_tokenize_scratch& s) {
  ends.clear();
  if (text.empty()) return;
  if (rules == pre_rules::none) {
    ends.push_back(text.size());
    return;
  }
  detail::decode_code_points(text, s);
  const std::size_t n = s.cps.size();
  switch (rules) {
    case pre_rules::gpt2: detail::split_gpt2(s, 0, n, ends); return;
    case pre_rules::llama3: detail::split_llama3(s, 0, n, 3, false, ends); return;
    case pre_rules::qwen2: detail::split_llama3(s, 0, n, 1, false, ends); return;
    case pre_rules::qwen35: detail::split_llama3(s, 0, n, 1, true, ends); return;
    default: break;
  }
  // starcoder: each \p{N} code point is a piece of its own, the runs between are pieces
  std::size_t begin = 0;
  for (std::size_t i = 0; i < n; ++i) {
    if (s.cls[i] != detail::cp_class::number) continue;
    if (i > begin) detail::split_gpt2(s, begin, i, ends);
    ends.push_back(s.offsets[i + 1]);
    begin = i + 1;
  }
  if (begin < n) detail::split_gpt2(s, begin, n, ends);
}

}  // namespace mnemo::text
