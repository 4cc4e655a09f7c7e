// Byte-level BPE over ranked merges (tokenizer.ggml.model = "gpt2"), as llama.cpp's
// llm_tokenizer_bpe: the pre-tokenizer splits the text into words; within a word every
// byte starts as the token of its mapped character, then the adjacent pair with the
// lowest merge rank (ties: leftmost) is merged until no pair has a merge.
//
// Symbols carry token ids, not strings: a merge's sides and result are checked to be
// tokens at load, so comparing ids is the same as llama.cpp's string comparisons, and a
// merge lookup is one hash probe.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string_view>
#include <vector>

#include "mnemo/text/pretokenize.hpp"
#include "mnemo/text/vocab.hpp"

namespace mnemo::text {

/// Reusable buffers of bpe_encode.
struct bpe_scratch {
  struct symbol {
    token_id id;  // k_no_token: a byte whose mapped character is not a token
    std::int32_t prev, next;
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
  pre_tokenize_scratch pre;
  std::vector<std::size_t> word_ends;
  std::vector<symbol> symbols;
  std::vector<bigram> heap;
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

/// One pre-tokenized word (raw bytes).
inline void bpe_encode_word(const vocab& v, std::string_view word, std::vector<token_id>& out,
                            bpe_scratch& s) {
  if (word.size() == 1) {  // the commonest case in text: no merge possible
    const token_id id = v.byte_token(static_cast<std::uint8_t>(word[0]));
    if (id != k_no_token) out.push_back(id);
    return;
  }
  s.symbols.clear();
  s.heap.clear();
  const auto n = static_cast<std::int32_t>(word.size());
  for (std::int32_t i = 0; i < n; ++i)
    s.symbols.push_back({v.byte_token(static_cast<std::uint8_t>(word[static_cast<std::size_t>(i)])),
                         i - 1, i + 1 < n ? i + 1 : -1, true});
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
  // A symbol that is not a token only arises from a byte whose mapped character is not
  // in the vocabulary; llama.cpp then drops it (its per-byte lookup cannot succeed on a
  // vocabulary of valid UTF-8 texts), and so do we.
  for (std::int32_t i = 0; i >= 0; i = s.symbols[static_cast<std::size_t>(i)].next)
    if (s.symbols[static_cast<std::size_t>(i)].id != k_no_token)
      out.push_back(s.symbols[static_cast<std::size_t>(i)].id);
}

}  // namespace detail

/// Appends the tokens of one raw fragment to `out`.
inline void bpe_encode(const vocab& v, std::string_view text, std::vector<token_id>& out,
                       bpe_scratch& s) {
  pre_tokenize(v.pre(), text, s.word_ends, s.pre);
  std::size_t begin = 0;
  for (const std::size_t end : s.word_ends) {
    detail::bpe_encode_word(v, text.substr(begin, end - begin), out, s);
    begin = end;
  }
}

}  // namespace mnemo::text
