// tokenizer: text <-> token ids for a vocabulary read from GGUF metadata; dispatches on
// tokenizer.ggml.model ("llama": SentencePiece-style; "gpt2", "gemma4", "whitespace":
// BPE after a pre-tokenizer; "bert": WordPiece).
//
//   MNEMO_ASSIGN_OR_RETURN(auto f, gguf::file::open("model.gguf"));
//   MNEMO_ASSIGN_OR_RETURN(text::tokenizer tok, text::tokenizer::from_gguf(f));
//   std::vector<text::token_id> ids = tok.encode("Hello world");   // BOS as the file asks
//   MNEMO_ASSIGN_OR_RETURN(std::string s, tok.decode(ids));       // "Hello world"
//
// For generation, text::stream_decoder (decoder.hpp) turns ids into text one at a time.
// Encoding reproduces llama.cpp's llama_tokenize; docs/tokenizer.md lists what is and is
// not covered.
#pragma once

#include <cstddef>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "mnemo/base/result.hpp"
#include "mnemo/base/status.hpp"
#include "mnemo/gguf/file.hpp"
#include "mnemo/text/bpe.hpp"
#include "mnemo/text/special.hpp"
#include "mnemo/text/spm.hpp"
#include "mnemo/text/vocab.hpp"
#include "mnemo/text/wordpiece.hpp"

namespace mnemo::text {

struct encode_options {
  /// Add BOS/EOS as the vocabulary asks (tokenizer.ggml.add_bos_token / add_eos_token).
  /// false: never add them, whatever the overrides say.
  bool add_special = true;
  /// Override the vocabulary's add_bos / add_eos when set (only with add_special).
  std::optional<bool> add_bos = std::nullopt;
  std::optional<bool> add_eos = std::nullopt;
  /// Turn the text of control and unknown tokens ("<s>", "<|endoftext|>") into their ids.
  /// false: such text is tokenized as plain characters. User-defined tokens are always
  /// matched, as in llama.cpp.
  bool parse_special = false;
};

struct decode_options {
  /// Render control and unknown tokens as their text; false renders them as nothing.
  bool render_special = false;
  /// The ids start a text as encode() produced it: drop the space that a SentencePiece
  /// vocabulary with add_space_prefix put at the start and after each special token.
  /// Set false to decode a continuation (e.g. generated tokens after a prompt).
  bool text_start = true;
};

/// Buffers reused across encode calls (one per thread); encode() makes its own.
struct encode_scratch {
  std::vector<text_fragment> fragments;
  spm_scratch spm;
  bpe_scratch bpe;
  wpm_scratch wpm;
};

class tokenizer {
 public:
  /// See vocab::from_gguf for the statuses.
  static result<tokenizer> from_gguf(const gguf::file& f) {
    MNEMO_ASSIGN_OR_RETURN(text::vocab v, text::vocab::from_gguf(f));
    return tokenizer(std::move(v));
  }

  /// Opens a GGUF file, reads its tokenizer and closes the file again.
  static result<tokenizer> open(const std::string& path) {
    MNEMO_ASSIGN_OR_RETURN(gguf::file f, gguf::file::open(path));
    return from_gguf(f);
  }

  const text::vocab& vocab() const noexcept { return vocab_; }
  std::size_t size() const noexcept { return vocab_.size(); }
  token_id bos() const noexcept { return vocab_.bos(); }
  token_id eos() const noexcept { return vocab_.eos(); }

  /// The ids of `text` (any bytes: invalid UTF-8 is tokenized byte-wise, never refused).
  std::vector<token_id> encode(std::string_view text, const encode_options& o = {}) const {
    std::vector<token_id> out;
    encode_scratch s;
    encode_append(text, out, s, o);
    return out;
  }

  /// Appends the ids of `text` to `out`, with the caller's buffers.
  void encode_append(std::string_view text, std::vector<token_id>& out, encode_scratch& s,
                     const encode_options& o = {}) const {
    const bool add_bos = o.add_special && o.add_bos.value_or(vocab_.add_bos());
    const bool add_eos = o.add_special && o.add_eos.value_or(vocab_.add_eos());
    if (add_bos && vocab_.bos() != k_no_token) out.push_back(vocab_.bos());
    split_special(vocab_, text, o.parse_special, s.fragments);
    bool after_special = true;  // the start of the text counts as "after a special token"
    for (const text_fragment& f : s.fragments) {
      if (f.token != k_no_token) {
        out.push_back(f.token);
        after_special = true;
        continue;
      }
      const std::string_view raw = text.substr(f.offset, f.length);
      switch (vocab_.family()) {
        case tokenizer_family::spm:
          spm_encode(vocab_, raw, vocab_.add_space_prefix() && after_special, out, s.spm);
          break;
        case tokenizer_family::bpe: bpe_encode(vocab_, raw, out, s.bpe); break;
        case tokenizer_family::wpm: wpm_encode(vocab_, raw, out, s.wpm); break;
      }
      after_special = false;
    }
    if (add_eos && vocab_.eos() != k_no_token) out.push_back(vocab_.eos());
    if (o.add_special && vocab_.add_sep() && vocab_.sep() != k_no_token)
      out.push_back(vocab_.sep());
  }

  /// The bytes of one token as decode() renders it in the middle of a text (no space
  /// dropped). out_of_range for an id outside the vocabulary.
  result<std::string_view> piece(token_id id, bool render_special = false) const {
    MNEMO_RETURN_IF_ERROR(check(id));
    return piece_unchecked(id, render_special);
  }

  /// The text of `ids` (bytes; UTF-8 when the tokens form it). out_of_range names the
  /// first id outside the vocabulary.
  result<std::string> decode(std::span<const token_id> ids, const decode_options& o = {}) const {
    std::string out;
    bool strip = o.text_start;
    for (const token_id id : ids) {
      MNEMO_RETURN_IF_ERROR(check(id));
      append_piece(id, o.render_special, strip, out);
    }
    return out;
  }

  /// decode()'s step: appends the piece of `id` to `out`; `strip_space` is the state
  /// "drop one leading space from the next text piece" (set after special tokens).
  /// @pre vocab().contains(id)
  void append_piece(token_id id, bool render_special, bool& strip_space, std::string& out) const {
    const token_type t = vocab_.type(id);
    std::string_view p = piece_unchecked(id, render_special);
    // SentencePiece's added space and WordPiece's word-start "▁" are not part of the text
    const bool spm_prefix =
        (vocab_.family() == tokenizer_family::spm && vocab_.add_space_prefix()) ||
        vocab_.family() == tokenizer_family::wpm;
    if (t == token_type::control || t == token_type::unknown || t == token_type::user_defined) {
      strip_space = spm_prefix;  // encode() put a space after it
    } else if (!p.empty()) {
      if (strip_space && spm_prefix && t == token_type::normal && p.front() == ' ')
        p.remove_prefix(1);
      strip_space = false;
    }
    out.append(p);
  }

 private:
  explicit tokenizer(text::vocab v) : vocab_(std::move(v)) {}

  status check(token_id id) const {
    if (vocab_.contains(id)) return {};
    return make_status(status_code::out_of_range, "tokenizer: token id %d is not below %zu",
                       static_cast<int>(id), vocab_.size());
  }

  std::string_view piece_unchecked(token_id id, bool render_special) const noexcept {
    const token_type t = vocab_.type(id);
    if (!render_special &&
        (t == token_type::control || t == token_type::unknown || t == token_type::unused))
      return {};
    return vocab_.piece(id);
  }

  text::vocab vocab_;
};

}  // namespace mnemo::text
