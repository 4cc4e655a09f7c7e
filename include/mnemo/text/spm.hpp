// SentencePiece-style BPE over scores (tokenizer.ggml.model = "llama"), as llama.cpp's
// llm_tokenizer_spm: the text's spaces become U+2581, the text is split into UTF-8
// characters, then the adjacent pair whose concatenation is the highest-scoring token
// is merged (ties: leftmost) until no pair is a token. A final symbol that is not a
// token is emitted as byte-fallback tokens <0xNN>, one per byte.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "mnemo/text/vocab.hpp"

#pragma push_macro("MNEMO_TEXT_DETAIL_OK_")
#undef MNEMO_TEXT_DETAIL_OK_
#define MNEMO_TEXT_DETAIL_OK_ 1
#include "mnemo/text/detail/utf8.hpp"
#pragma pop_macro("MNEMO_TEXT_DETAIL_OK_")

namespace mnemo::text {

/// Reusable buffers of spm_encode.
struct spm_scratch {
  struct symbol {
    std::size_t begin;  // byte offset in the escaped text
    std::size_t size;   // 0 once merged into its left neighbour
    std::int64_t prev, next;
  };
  struct bigram {
    float score;
    std::int64_t left, right;
    std::size_t size;  // of the merged text: a bigram is stale once the sides changed
    // priority_queue pops the largest: higher score first, then the smaller left index
    bool operator<(const bigram& o) const noexcept {
      return score < o.score || (score == o.score && left > o.left);
    }
  };
  std::string escaped;
  std::vector<symbol> symbols;
  std::vector<bigram> heap;
};

namespace detail {

inline void spm_try_bigram(const vocab& v, spm_scratch& s, std::int64_t l, std::int64_t r) {
  if (l < 0 || r < 0) return;
  const auto& a = s.symbols[static_cast<std::size_t>(l)];
  const auto& b = s.symbols[static_cast<std::size_t>(r)];
  const std::size_t size = a.size + b.size;
  const token_id id = v.find(std::string_view(s.escaped).substr(a.begin, size));
  if (id == k_no_token) return;
  s.heap.push_back({v.score(id), l, r, size});
  std::push_heap(s.heap.begin(), s.heap.end());
}

inline void spm_emit_bytes(const vocab& v, std::string_view sym, std::vector<token_id>& out) {
  for (const char c : sym) {
    token_id id = v.byte_token(static_cast<std::uint8_t>(c));
    if (id == k_no_token) id = v.find(std::string_view(&c, 1));
    if (id == k_no_token) id = v.unk();
    if (id != k_no_token) out.push_back(id);
  }
}

/// Merges the symbols of esc[from, esc.size()) and appends their tokens.
inline void spm_merge(const vocab& v, std::string_view esc, std::size_t from,
                      std::vector<token_id>& out, spm_scratch& s) {
  s.symbols.clear();
  s.heap.clear();
  for (std::size_t i = from; i < esc.size();) {
    const std::size_t len =
        std::min(esc.size() - i, utf8_len_from_lead(static_cast<unsigned char>(esc[i])));
    const auto idx = static_cast<std::int64_t>(s.symbols.size());
    s.symbols.push_back({i, len, idx - 1, -1});
    if (idx > 0) s.symbols[static_cast<std::size_t>(idx - 1)].next = idx;
    i += len;
  }
  for (std::size_t i = 1; i < s.symbols.size(); ++i)
    spm_try_bigram(v, s, static_cast<std::int64_t>(i - 1), static_cast<std::int64_t>(i));

  while (!s.heap.empty()) {
    std::pop_heap(s.heap.begin(), s.heap.end());
    const spm_scratch::bigram b = s.heap.back();
    s.heap.pop_back();
    auto& l = s.symbols[static_cast<std::size_t>(b.left)];
    auto& r = s.symbols[static_cast<std::size_t>(b.right)];
    if (l.size == 0 || r.size == 0 || l.size + r.size != b.size) continue;
    l.size += r.size;
    r.size = 0;
    l.next = r.next;
    if (r.next >= 0) s.symbols[static_cast<std::size_t>(r.next)].prev = b.left;
    spm_try_bigram(v, s, l.prev, b.left);
    spm_try_bigram(v, s, b.left, l.next);
  }

  for (std::int64_t i = s.symbols.empty() ? -1 : 0; i >= 0;
       i = s.symbols[static_cast<std::size_t>(i)].next) {
    const auto& sym = s.symbols[static_cast<std::size_t>(i)];
    const std::string_view t = esc.substr(sym.begin, sym.size);
    const token_id id = v.find(t);
    if (id != k_no_token)
      out.push_back(id);
    else
      spm_emit_bytes(v, t, out);
  }
}

}  // namespace detail

/// Appends the tokens of one raw fragment to `out`. `prefix_space` prepends the space
/// llama.cpp adds at the start of a text and after a special token.
inline void spm_encode(const vocab& v, std::string_view text, bool prefix_space,
                       std::vector<token_id>& out, spm_scratch& s) {
  s.escaped.clear();
  if (prefix_space) s.escaped.append("\xE2\x96\x81");
  for (const char c : text) {
    if (c == ' ')
      s.escaped.append("\xE2\x96\x81");
    else
      s.escaped.push_back(c);
  }
  // Merge each run between barrier bytes on its own: same result (no merge spans a
  // barrier), but small heaps instead of one over the whole text.
  const std::string_view esc = s.escaped;
  std::size_t begin = 0;
  for (std::size_t i = 0; i < esc.size();) {
    const auto c = static_cast<unsigned char>(esc[i]);
    if (!v.is_merge_barrier(c)) {  // step by symbol, as spm_merge splits them
      i += detail::utf8_len_from_lead(c);
      continue;
    }
    if (i > begin) detail::spm_merge(v, esc.substr(0, i), begin, out, s);
    detail::spm_merge(v, esc.substr(0, i + 1), i, out, s);
    begin = ++i;
  }
  if (begin < esc.size()) detail::spm_merge(v, esc, begin, out, s);
}

}  // namespace mnemo::text
