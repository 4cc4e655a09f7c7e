// Splitting text at special-token text before it is tokenized: "<s>Hello" -> [<s>] "Hello".
// Follows llama.cpp's partition: special tokens are tried longest first; each one splits
// every remaining raw fragment at all its (non-overlapping, left-to-right) occurrences.
// User-defined tokens are always matched; control and unknown tokens only when the
// caller asks to parse special text (otherwise "<s>" is just three characters).
#pragma once

#include <cstddef>
#include <string_view>
#include <vector>

#include "mnemo/text/vocab.hpp"

namespace mnemo::text {

/// A raw text range [offset, offset + length) of the input, or a token (token >= 0).
struct text_fragment {
  std::size_t offset = 0;
  std::size_t length = 0;
  token_id token = k_no_token;
};

/// Replaces `out` by the fragments of `text`, in order. Raw fragments are never empty.
inline void split_special(const vocab& v, std::string_view text, bool parse_special,
                          std::vector<text_fragment>& out) {
  out.clear();
  if (text.empty()) return;
  out.push_back({0, text.size(), k_no_token});
  std::vector<text_fragment> next;
  for (const token_id id : v.special_tokens()) {
    const token_type t = v.type(id);
    if (!parse_special && t != token_type::user_defined) continue;
    const std::string_view needle = v.text(id);
    bool found = false;
    next.clear();
    for (const text_fragment& f : out) {
      if (f.token != k_no_token) {
        next.push_back(f);
        continue;
      }
      const std::string_view raw = text.substr(f.offset, f.length);
      std::size_t from = 0;
      for (std::size_t at; (at = raw.find(needle, from)) != std::string_view::npos;) {
        if (at > from) next.push_back({f.offset + from, at - from, k_no_token});
        next.push_back({f.offset + at, needle.size(), id});
        from = at + needle.size();
        found = true;
      }
      if (from < raw.size()) next.push_back({f.offset + from, raw.size() - from, k_no_token});
    }
    if (found) out.swap(next);
  }
}

}  // namespace mnemo::text
