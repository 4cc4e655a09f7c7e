// BPE over ranked merges (tokenizer.ggml.model = "gpt2", "gemma4", "whitespace"), as
// llama.cpp's llm_tokenizer_bpe: the pre-tokenizer splits the text into words; within a
// word every byte starts as the token of its GPT-2-mapped character (or, for raw-text
// types, every UTF-8 character as its token), then the adjacent pair with the lowest
// merge rank (ties: leftmost) is merged until no pair has a merge. A raw-text symbol
// that is no token comes out as its bytes' <0xNN> tokens.
//
// Symbols carry token ids, not strings: a merge's sides and result are checked to be
// tokens at load, so comparing ids is the same as llama.cpp's string comparisons, and a
// merge lookup is one hash probe.
#pragma once

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "mnemo/text/pre_tokenizer.hpp"
#include "mnemo/text/vocab.hpp"

#pragma push_macro("MNEMO_TEXT_DETAIL_OK_")
#undef MNEMO_TEXT_DETAIL_OK_
#define MNEMO_TEXT_DETAIL_OK_ 1
#include "mnemo/text/detail/byte_map.hpp"
#include "mnemo/text/detail/code_point_props.hpp"
#include "mnemo/text/detail/merge_joints.hpp"
#include "mnemo/text/detail/utf8.hpp"
#include "mnemo/text/detail/word_cache.hpp"
#pragma pop_macro("MNEMO_TEXT_DETAIL_OK_")

namespace mnemo::text {

/// Reusable buffers of bpe_encode.
struct bpe_scratch {
  struct symbol {
    token_id id;  // k_no_token: a byte / character that is not a token
    std::int32_t prev, next;
    std::uint32_t begin, len;  // the bytes of the word it started as (raw-text fallback)
    bool alive;
  };
  struct bigram {
    std::int32_t rank;
    std::int32_t left, right;
    token_id left_id, right_id, merged;
    // priority order: lower rank first, then the smaller left index (max-heap on '<')
    bool operator<(const bigram& o) const noexcept {
      return rank > o.rank || (rank == o.rank && left > o.left);
    }
  };
  struct part {           // a symbol of the scanning merge loop
    token_id id, merged;  // merged: the token of this part and the next (when rank is set)
    std::int32_t rank;    // of the merge with the next part; int32 max: none
    std::uint32_t begin, len;
  };
  pre_tokenize_scratch pre;
  std::vector<std::size_t> word_ends;
  std::string work;    // the text after escaping / lowercasing
  std::string mapped;  // a word through the byte map (ignore_merges lookups)
  std::vector<symbol> symbols;
  std::vector<bigram> heap;
  std::vector<part> parts;
  std::vector<std::size_t> segment_ends;  // of a long word
  detail::word_cache<token_id> words;     // words met before, with their ids
  // The tokens of recent non-ASCII characters (raw-text vocabularies look every
  // character up; Gemma 4's text repeats U+2581 in every word): direct-mapped.
  struct char_cache {
    struct entry {
      std::uint32_t unit = 0;  // pack_unit; 0: empty
      token_id id = k_no_token;
    };
    std::array<entry, 1024> slots{};
    std::uint64_t serial = 0;

    void bind(std::uint64_t vocab_serial) {
      if (vocab_serial == serial) return;
      slots.fill({});
      serial = vocab_serial;
    }
    token_id find(const vocab& v, std::string_view ch) {
      const std::uint32_t unit = detail::pack_unit(ch);
      entry& e = slots[(unit * 0x9E3779B1u) >> 22];
      if (e.unit != unit || ch.size() > 3) e = {unit, v.find(ch)};
      return e.id;
    }
  } chars;
};

namespace detail {

inline void bpe_try_bigram(const vocab& v, bpe_scratch& s, std::int32_t l, std::int32_t r) {
  if (l < 0 || r < 0) return;
  const token_id a = s.symbols[static_cast<std::size_t>(l)].id;
  const token_id b = s.symbols[static_cast<std::size_t>(r)].id;
  if (a == k_no_token || b == k_no_token) return;
  const merge_index::entry* e = v.merges().find(a, b);
  if (e == nullptr) return;
  s.heap.push_back({e->rank, l, r, a, b, e->merged});
  std::push_heap(s.heap.begin(), s.heap.end());
}

/// The whole-word shortcuts: ignore_merges (a word that is a token is that token) and
/// gemma4's newline runs. The token, or k_no_token when neither applies.
inline token_id bpe_whole_word(const vocab& v, std::string_view word, bpe_scratch& s) {
  const bool raw = v.has(pre_flag::raw_text);
  if (v.has(pre_flag::ignore_merges)) {
    std::string_view key = word;
    if (!raw) {
      s.mapped.clear();
      for (const char c : word)
        append_utf8(s.mapped, k_byte_map.to_cp[static_cast<std::uint8_t>(c)]);
      key = s.mapped;
    }
    const token_id id = v.find(key);
    if (id != k_no_token) return id;
  }
  if (v.has(pre_flag::whole_newlines) && word.find_first_not_of('\n') == std::string_view::npos)
    return v.find(word);
  return k_no_token;
}

/// Emits a final symbol: its token, or for a raw-text character that is no token the
/// bytes' <0xNN> tokens (a byte-level byte without a token is dropped, as llama.cpp does:
/// its per-byte lookup cannot succeed either).
inline void bpe_emit(const vocab& v, std::string_view word, token_id id, std::uint32_t begin,
                     std::uint32_t len, std::vector<token_id>& out) {
  if (id != k_no_token) {
    out.push_back(id);
  } else if (v.has(pre_flag::raw_text)) {
    for (std::uint32_t b = begin; b < begin + len; ++b) {
      const token_id t = v.byte_token(static_cast<std::uint8_t>(word[b]));
      if (t != k_no_token) out.push_back(t);
    }
  }
}

/// Words of up to this many symbols merge by scanning an array of pair ranks for the
/// lowest (leftmost on ties) instead of through the heap: a word's handful of symbols
/// scan faster than the heap's pushes, pops and stale entries.
inline constexpr std::size_t k_scan_symbols = 64;

/// The merge loop over s.symbols (@pre at most k_scan_symbols) by scanning.
inline void bpe_merge_by_scan(const vocab& v, std::string_view word, std::vector<token_id>& out,
                              bpe_scratch& s) {
  constexpr std::int32_t k_none = std::numeric_limits<std::int32_t>::max();
  auto& parts = s.parts;
  parts.clear();
  for (const auto& sym : s.symbols)
    parts.push_back({sym.id, k_no_token, k_none, sym.begin, sym.len});
  auto rank_with_next = [&](std::size_t i) {
    bpe_scratch::part& p = parts[i];
    p.rank = k_none;
    if (i + 1 >= parts.size() || p.id == k_no_token || parts[i + 1].id == k_no_token) return;
    if (const merge_index::entry* e = v.merges().find(p.id, parts[i + 1].id)) {
      p.rank = e->rank;
      p.merged = e->merged;
    }
  };
  for (std::size_t i = 0; i < parts.size(); ++i) rank_with_next(i);
  for (;;) {
    std::size_t best = 0;
    std::int32_t best_rank = k_none;
    for (std::size_t i = 0; i + 1 < parts.size(); ++i)
      if (parts[i].rank < best_rank) best_rank = parts[i].rank, best = i;
    if (best_rank == k_none) break;
    parts[best].id = parts[best].merged;
    parts[best].len += parts[best + 1].len;
    parts.erase(parts.begin() + static_cast<std::ptrdiff_t>(best) + 1);
    rank_with_next(best);
    if (best > 0) rank_with_next(best - 1);
  }
  for (const auto& p : parts) bpe_emit(v, word, p.id, p.begin, p.len, out);
}

/// The merge loop over one word or segment (raw bytes), without the shortcuts.
inline void bpe_merge(const vocab& v, std::string_view word, std::vector<token_id>& out,
                      bpe_scratch& s) {
  const bool raw = v.has(pre_flag::raw_text);
  if (word.size() == 1 && !raw) {  // the commonest case in text: no merge possible
    const token_id id = v.byte_token(static_cast<std::uint8_t>(word[0]));
    if (id != k_no_token) out.push_back(id);
    return;
  }
  s.symbols.clear();
  s.heap.clear();
  for (std::size_t i = 0; i < word.size();) {
    std::size_t len = 1;
    token_id id = k_no_token;
    if (raw) {  // one UTF-8 character, by its lead byte as llama.cpp splits
      const auto lead = static_cast<unsigned char>(word[i]);
      len = std::min(utf8_len_from_lead(lead), word.size() - i);
      id = lead < 0x80 ? v.ascii_token(lead) : s.chars.find(v, word.substr(i, len));
    } else {
      id = v.byte_token(static_cast<std::uint8_t>(word[i]));
    }
    const auto k = static_cast<std::int32_t>(s.symbols.size());
    s.symbols.push_back(
        {id, k - 1, -1, static_cast<std::uint32_t>(i), static_cast<std::uint32_t>(len), true});
    if (k > 0) s.symbols[static_cast<std::size_t>(k - 1)].next = k;
    i += len;
  }
  if (s.symbols.size() <= k_scan_symbols) {
    bpe_merge_by_scan(v, word, out, s);
    return;
  }
  const auto n = static_cast<std::int32_t>(s.symbols.size());
  for (std::int32_t i = 1; i < n; ++i) bpe_try_bigram(v, s, i - 1, i);

  while (!s.heap.empty()) {
    std::pop_heap(s.heap.begin(), s.heap.end());
    const bpe_scratch::bigram b = s.heap.back();
    s.heap.pop_back();
    auto& l = s.symbols[static_cast<std::size_t>(b.left)];
    auto& r = s.symbols[static_cast<std::size_t>(b.right)];
    // stale: a side was merged away or has grown since the bigram was queued
    if (!l.alive || !r.alive || l.id != b.left_id || r.id != b.right_id || l.next != b.right)
      continue;
    l.id = b.merged;
    r.alive = false;
    l.next = r.next;
    if (r.next >= 0) s.symbols[static_cast<std::size_t>(r.next)].prev = b.left;
    bpe_try_bigram(v, s, l.prev, b.left);
    bpe_try_bigram(v, s, b.left, l.next);
  }
  for (std::int32_t i = 0; i >= 0; i = s.symbols[static_cast<std::size_t>(i)].next) {
    const bpe_scratch::symbol& sym = s.symbols[static_cast<std::size_t>(i)];
    bpe_emit(v, word, sym.id, sym.begin, sym.len, out);
  }
}

/// One pre-tokenized word (raw bytes).
inline void bpe_encode_word(const vocab& v, std::string_view word, std::vector<token_id>& out,
                            bpe_scratch& s) {
  if (word.size() > 1 || v.has(pre_flag::raw_text)) {
    const token_id id = bpe_whole_word(v, word, s);
    if (id != k_no_token) {
      out.push_back(id);
      return;
    }
  }
  bpe_merge(v, word, out, s);
}

/// A segment of a long word through the word cache. The cache keeps what a whole word
/// gives, so a segment that a shortcut would take as a whole word is merged uncached.
inline void bpe_encode_segment(const vocab& v, std::string_view seg, std::vector<token_id>& out,
                               bpe_scratch& s) {
  if (!s.words.cacheable(seg) || bpe_whole_word(v, seg, s) != k_no_token) {
    bpe_merge(v, seg, out, s);
  } else if (!s.words.find(seg, out)) {
    const std::size_t first = out.size();
    bpe_merge(v, seg, out, s);
    s.words.insert(seg, std::span<const token_id>(out).subspan(first));
  }
}

/// Words longer than this are cut into segments where no merge joins the units on
/// either side (the same ids, see merge_joints.hpp): Gemma 4's words are whole lines,
/// which rarely repeat, while their segments (words, mostly) do.
inline constexpr std::size_t k_segment_above = 48;

/// A word of more than k_segment_above bytes: from the cache, else after the shortcuts
/// in segments, each through the cache; a word without a cut (a run of one character,
/// say) is cached whole when the cache takes it.
inline void bpe_encode_long_word(const vocab& v, std::string_view word, std::vector<token_id>& out,
                                 bpe_scratch& s) {
  const bool cacheable = s.words.cacheable(word);
  if (cacheable && s.words.find(word, out)) return;
  const token_id id = bpe_whole_word(v, word, s);
  if (id != k_no_token) {
    out.push_back(id);
    return;
  }
  const bool raw = v.has(pre_flag::raw_text);
  auto unit_len = [&](std::size_t i) {
    return raw ? std::min(utf8_len_from_lead(static_cast<unsigned char>(word[i])), word.size() - i)
               : std::size_t{1};
  };
  s.segment_ends.clear();
  std::size_t len = unit_len(0);
  std::uint32_t left = pack_unit(word.substr(0, len));
  for (std::size_t i = len; i < word.size(); i += len) {
    len = unit_len(i);
    const std::uint32_t right = pack_unit(word.substr(i, len));
    if (!v.joints().may_join(left, right)) s.segment_ends.push_back(i);
    left = right;
  }
  if (s.segment_ends.empty()) {
    const std::size_t first = out.size();
    bpe_merge(v, word, out, s);
    if (cacheable) s.words.insert(word, std::span<const token_id>(out).subspan(first));
    return;
  }
  s.segment_ends.push_back(word.size());
  std::size_t begin = 0;
  for (const std::size_t end : s.segment_ends) {
    bpe_encode_segment(v, word.substr(begin, end - begin), out, s);
    begin = end;
  }
}

/// Splits `text` with the vocabulary's pre-tokenizer and encodes each word.
inline void bpe_encode_pieces(const vocab& v, std::string_view text, std::vector<token_id>& out,
                              bpe_scratch& s) {
  v.splitter()->split(text, s.word_ends, s.pre);
  s.words.bind(v.serial());
  s.chars.bind(v.serial());
  std::size_t begin = 0;
  for (const std::size_t end : s.word_ends) {
    const std::string_view word = text.substr(begin, end - begin);
    begin = end;
    if (word.size() > k_segment_above) {
      bpe_encode_long_word(v, word, out, s);
    } else if (!s.words.cacheable(word)) {
      bpe_encode_word(v, word, out, s);
    } else if (!s.words.find(word, out)) {
      const std::size_t first = out.size();
      bpe_encode_word(v, word, out, s);
      s.words.insert(word, std::span<const token_id>(out).subspan(first));
    }
  }
}

}  // namespace detail

/// Appends the tokens of one raw fragment to `out`.
inline void bpe_encode(const vocab& v, std::string_view text, std::vector<token_id>& out,
                       bpe_scratch& s) {
  if (v.splits_at_whitespace() || v.lowercase()) {
    // the whitespace model: segments between white space (dropped), lowercased
    const bool cut = v.splits_at_whitespace();
    std::string segment;
    auto flush = [&] {
      if (!segment.empty()) detail::bpe_encode_pieces(v, segment, out, s);
      segment.clear();
    };
    for (std::size_t i = 0; i < text.size();) {
      std::size_t len = 0;
      const std::uint32_t cp = detail::decode_utf8(text, i, len);
      if (cut && detail::is_whitespace_cp(cp)) {
        flush();
      } else if (v.lowercase() && cp != detail::k_replacement_char) {
        detail::append_utf8(segment, detail::to_lower_cp(cp));
      } else {
        segment.append(text.substr(i, len));
      }
      i += len;
    }
    flush();
    return;
  }
  if (v.has(pre_flag::escape_spaces)) {
    s.work.clear();
    for (std::size_t i = 0; i < text.size();) {
      const std::size_t sp = std::min(text.find(' ', i), text.size());
      s.work.append(text.substr(i, sp - i));
      if (sp < text.size()) s.work += "\xE2\x96\x81";
      i = sp + 1;
    }
    detail::bpe_encode_pieces(v, s.work, out, s);
    return;
  }
  detail::bpe_encode_pieces(v, text, out, s);
}

}  // namespace mnemo::text
