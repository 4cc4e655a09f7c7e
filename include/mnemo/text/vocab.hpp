// vocab: a tokenizer vocabulary read from a GGUF file's `tokenizer.ggml.*` metadata and
// checked once at load, so the encoders never meet a malformed table.
//
//   MNEMO_ASSIGN_OR_RETURN(auto f, gguf::file::open("model.gguf"));
//   MNEMO_ASSIGN_OR_RETURN(text::vocab v, text::vocab::from_gguf(f));
//
// Keys read (see docs/tokenizer.md): model, pre, tokens, scores, token_type, merges,
// bos/eos/unknown/padding/seperator_token_id, add_bos_token, add_eos_token,
// add_sep_token, add_space_prefix, normalizer.lowercase.
// The vocabulary copies what it needs; the gguf::file may be closed afterwards.
#pragma once

#include <algorithm>
#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "mnemo/base/result.hpp"
#include "mnemo/base/status.hpp"
#include "mnemo/gguf/file.hpp"
#include "mnemo/text/pre_tokenizer.hpp"

#pragma push_macro("MNEMO_TEXT_DETAIL_OK_")
#undef MNEMO_TEXT_DETAIL_OK_
#define MNEMO_TEXT_DETAIL_OK_ 1
#include "mnemo/text/detail/byte_map.hpp"
#include "mnemo/text/detail/hash_index.hpp"
#include "mnemo/text/detail/merge_joints.hpp"
#include "mnemo/text/detail/utf8.hpp"
#pragma pop_macro("MNEMO_TEXT_DETAIL_OK_")

namespace mnemo::text {

using token_id = std::int32_t;
inline constexpr token_id k_no_token = -1;

/// `tokenizer.ggml.token_type` values (llama.cpp's llama_token_type).
enum class token_type : std::uint8_t {
  undefined = 0,
  normal = 1,
  unknown = 2,
  control = 3,
  user_defined = 4,
  unused = 5,
  byte = 6,
};

/// `tokenizer.ggml.model`: "llama" is SentencePiece-style BPE over scores with byte
/// fallback; "gpt2", "gemma4" and "whitespace" are BPE over ranked merges after a
/// pre-tokenizer; "bert" is WordPiece.
enum class tokenizer_family : std::uint8_t { spm, bpe, wpm };

class vocab {
 public:
  /// Reads and checks the tokenizer metadata. not_found for a missing key the family
  /// needs, invalid_argument for a key of the wrong type, corrupt_data for inconsistent
  /// tables (lengths, invalid UTF-8, bad merges, bad type values), out_of_range for a
  /// special token id past the vocabulary, unsupported for an unknown model or pre name.
  static result<vocab> from_gguf(const gguf::file& f) {
    vocab v;
    status s = v.load(f);
    if (!s.is_ok()) return std::move(s).with_context("tokenizer");
    static std::atomic<std::uint64_t> loaded{0};
    v.serial_ = ++loaded;
    return v;
  }

  /// A number no other vocabulary loaded by this process has (copies share it): what
  /// caches of encoded words are keyed on.
  std::uint64_t serial() const noexcept { return serial_; }

  std::size_t size() const noexcept { return types_.size(); }
  bool contains(token_id id) const noexcept {
    return id >= 0 && static_cast<std::size_t>(id) < size();
  }
  tokenizer_family family() const noexcept { return family_; }
  /// The BPE pre-tokenizer (nullptr for SentencePiece and WordPiece vocabularies).
  const pre_tokenizer* splitter() const noexcept { return splitter_ ? &*splitter_ : nullptr; }
  /// BPE: whether a pre-tokenizer flag (pre_flag::...) is set.
  bool has(std::uint16_t flag) const noexcept { return splitter_ && splitter_->has(flag); }
  /// tokenizer.ggml.model "whitespace": the text is cut at white space (dropped) first.
  bool splits_at_whitespace() const noexcept { return whitespace_model_; }
  /// Lowercase before splitting (tokenizer.ggml.normalizer.lowercase, whitespace type).
  bool lowercase() const noexcept { return lowercase_; }
  /// The longest token text in bytes (WordPiece's match window).
  std::size_t max_token_length() const noexcept { return max_token_len_; }

  /// The token's text as stored in the file (SPM spaces as U+2581, BPE bytes mapped).
  /// @pre contains(id)
  std::string_view text(token_id id) const noexcept { return slice(text_blob_, text_off_, id); }
  /// The bytes the token stands for (see docs/tokenizer.md for each type).
  /// @pre contains(id)
  std::string_view piece(token_id id) const noexcept { return slice(piece_blob_, piece_off_, id); }
  float score(token_id id) const noexcept { return scores_[static_cast<std::size_t>(id)]; }
  token_type type(token_id id) const noexcept { return types_[static_cast<std::size_t>(id)]; }

  /// The id whose text is exactly `t`, or k_no_token.
  token_id find(std::string_view t) const noexcept {
    return index_.find(t, [this](std::size_t i) { return text(static_cast<token_id>(i)); });
  }

  token_id bos() const noexcept { return bos_; }
  token_id eos() const noexcept { return eos_; }
  token_id unk() const noexcept { return unk_; }
  token_id pad() const noexcept { return pad_; }
  token_id sep() const noexcept { return sep_; }
  bool add_bos() const noexcept { return add_bos_; }
  bool add_eos() const noexcept { return add_eos_; }
  /// WordPiece: SEP closes an encoding with add_special (BERT's [SEP]).
  bool add_sep() const noexcept { return add_sep_; }
  bool add_space_prefix() const noexcept { return add_space_prefix_; }

  /// The token for a raw byte: SPM and raw-text BPE `<0xNN>`; byte-level BPE the token
  /// of the byte's mapped character. k_no_token when the vocabulary has none.
  token_id byte_token(std::uint8_t b) const noexcept { return byte_tokens_[b]; }
  /// The token whose text is the one ASCII character `c` (find() without hashing, for
  /// the raw-text merge loop). @pre c < 0x80
  token_id ascii_token(unsigned char c) const noexcept { return ascii_tokens_[c]; }

  /// An ASCII byte that no token of more than one byte contains: no SPM merge can span
  /// it, so the merge loop may treat the text on each side separately (exactly).
  bool is_merge_barrier(unsigned char c) const noexcept { return c < 0x80 && barrier_[c]; }

  /// BPE merges: (left, right) -> rank and merged token.
  const detail::merge_index& merges() const noexcept { return merges_; }
  /// The unit pairs some BPE merge joins (detail/merge_joints.hpp).
  const detail::merge_joints& joints() const noexcept { return joints_; }

  /// Control, user-defined and unknown tokens with non-empty text, longest text first
  /// (ties by id): the order in which text is searched for them.
  std::span<const token_id> special_tokens() const noexcept { return specials_; }

 private:
  vocab() = default;

  static std::string_view slice(const std::vector<char>& blob, const std::vector<std::size_t>& off,
                                token_id id) noexcept {
    const auto i = static_cast<std::size_t>(id);
    return {blob.data() + off[i], off[i + 1] - off[i]};
  }

  static status corrupt(const char* what, std::size_t i, std::string_view detail) {
    return make_status(status_code::corrupt_data, "%s %zu: %.*s", what, i,
                       static_cast<int>(detail.size()), detail.data());
  }

  status load(const gguf::file& f);
  status load_types(const gguf::file& f);
  status load_specials(const gguf::file& f);
  status load_merges(const gguf::file& f);
  void add_joint(std::string_view l, std::string_view r);
  void build_pieces();

  std::uint64_t serial_ = 0;
  tokenizer_family family_ = tokenizer_family::spm;
  std::optional<pre_tokenizer> splitter_;
  bool whitespace_model_ = false, lowercase_ = false;
  std::size_t max_token_len_ = 0;
  std::vector<char> text_blob_;
  std::vector<std::size_t> text_off_;  // [n + 1]
  std::vector<char> piece_blob_;
  std::vector<std::size_t> piece_off_;  // [n + 1]
  std::vector<float> scores_;           // [n]
  std::vector<token_type> types_;       // [n]
  detail::text_index index_;
  detail::merge_index merges_;
  detail::merge_joints joints_;
  std::array<token_id, 256> byte_tokens_{};
  std::array<token_id, 128> ascii_tokens_{};
  std::array<bool, 128> barrier_{};
  std::vector<token_id> specials_;
  token_id bos_ = k_no_token, eos_ = k_no_token, unk_ = k_no_token, pad_ = k_no_token;
  token_id sep_ = k_no_token;
  bool add_bos_ = false, add_eos_ = false, add_sep_ = false, add_space_prefix_ = false;
};

inline status vocab::load(const gguf::file& f) {
  MNEMO_ASSIGN_OR_RETURN(const std::string_view model, f.get_string("tokenizer.ggml.model"));
  if (model == "llama") {
    family_ = tokenizer_family::spm;
  } else if (model == "gpt2" || model == "gemma4" || model == "whitespace") {
    family_ = tokenizer_family::bpe;
    whitespace_model_ = model == "whitespace";
  } else if (model == "bert") {
    family_ = tokenizer_family::wpm;
  } else {
    return make_status(status_code::unsupported,
                       "tokenizer.ggml.model '%.*s' is not supported (supported: llama, gpt2, "
                       "gemma4, whitespace, bert)",
                       static_cast<int>(model.size()), model.data());
  }
  if (family_ == tokenizer_family::bpe) {
    // As llama.cpp: the gemma4 model always splits as gemma4; no pre name means "default".
    std::string_view pre = "default";
    if (model == "gemma4") {
      pre = "gemma4";
    } else if (f.find("tokenizer.ggml.pre") != nullptr) {
      MNEMO_ASSIGN_OR_RETURN(pre, f.get_string("tokenizer.ggml.pre"));
    }
    MNEMO_ASSIGN_OR_RETURN(pre_tokenizer p, pre_tokenizer::for_name(pre));
    splitter_.emplace(std::move(p));
    if (has(pre_flag::lowercase_key) && f.find("tokenizer.ggml.normalizer.lowercase") != nullptr) {
      MNEMO_ASSIGN_OR_RETURN(lowercase_, f.get_bool("tokenizer.ggml.normalizer.lowercase"));
    }
  }

  MNEMO_ASSIGN_OR_RETURN(const auto tokens, f.get_array<std::string_view>("tokenizer.ggml.tokens"));
  const std::size_t n = tokens.size();
  if (n == 0) return make_status(status_code::corrupt_data, "tokenizer.ggml.tokens is empty");
  if (n > static_cast<std::size_t>(std::numeric_limits<token_id>::max()))
    return make_status(status_code::out_of_range, "%zu tokens do not fit a 32-bit id", n);
  text_off_.reserve(n + 1);
  text_off_.push_back(0);
  for (std::size_t i = 0; i < n; ++i) {
    const std::string_view t = tokens[i];
    std::size_t bad = 0;
    if (!detail::is_valid_utf8(t, &bad)) {
      char msg[64];
      std::snprintf(msg, sizeof msg, "text is not valid UTF-8 (byte %zu)", bad);
      return corrupt("tokenizer.ggml.tokens: token", i, msg);
    }
    text_blob_.insert(text_blob_.end(), t.begin(), t.end());
    text_off_.push_back(text_blob_.size());
    max_token_len_ = std::max(max_token_len_, t.size());
  }
  index_.build(n, [this](std::size_t i) { return text(static_cast<token_id>(i)); });

  if (f.find("tokenizer.ggml.scores") != nullptr || family_ == tokenizer_family::spm) {
    MNEMO_ASSIGN_OR_RETURN(scores_, f.get_array_as<float>("tokenizer.ggml.scores"));
    if (scores_.size() != n)
      return make_status(status_code::corrupt_data,
                         "tokenizer.ggml.scores has %zu entries for %zu tokens", scores_.size(), n);
  } else {
    scores_.assign(n, 0.0f);
  }
  MNEMO_RETURN_IF_ERROR(load_types(f));
  MNEMO_RETURN_IF_ERROR(load_specials(f));
  if (family_ == tokenizer_family::bpe &&
      !(has(pre_flag::merges_optional) && f.find("tokenizer.ggml.merges") == nullptr))
    MNEMO_RETURN_IF_ERROR(load_merges(f));

  for (unsigned b = 0; b < 256; ++b) {
    std::string t;
    if (family_ != tokenizer_family::bpe || has(pre_flag::raw_text)) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "<0x%02X>", b);
      t = buf;
    } else {
      detail::append_utf8(t, detail::k_byte_map.to_cp[b]);
    }
    byte_tokens_[b] = find(t);
    if (b < 0x80) ascii_tokens_[b] = find(std::string(1, static_cast<char>(b)));
  }
  build_pieces();
  barrier_.fill(true);
  for (std::size_t i = 0; i < n; ++i) {
    const std::string_view t = text(static_cast<token_id>(i));
    if (t.size() > 1)
      for (const char c : t)
        if (static_cast<unsigned char>(c) < 0x80) barrier_[static_cast<unsigned char>(c)] = false;
  }
  return {};
}

inline status vocab::load_types(const gguf::file& f) {
  const std::size_t n = text_off_.size() - 1;
  if (f.find("tokenizer.ggml.token_type") == nullptr) {
    types_.assign(n, token_type::normal);  // llama.cpp's default too
    return {};
  }
  MNEMO_ASSIGN_OR_RETURN(const auto raw, f.get_array_as<std::int32_t>("tokenizer.ggml.token_type"));
  if (raw.size() != n)
    return make_status(status_code::corrupt_data,
                       "tokenizer.ggml.token_type has %zu entries for %zu tokens", raw.size(), n);
  types_.resize(n);
  for (std::size_t i = 0; i < n; ++i) {
    if (raw[i] < 0 || raw[i] > 6)
      return make_status(status_code::corrupt_data,
                         "tokenizer.ggml.token_type: token %zu has type %d, not 0..6", i,
                         static_cast<int>(raw[i]));
    types_[i] = static_cast<token_type>(raw[i]);
  }
  return {};
}

inline status vocab::load_specials(const gguf::file& f) {
  const bool spm = family_ == tokenizer_family::spm;
  auto id_key = [&](const char* key, token_id& out) -> status {
    if (f.find(key) == nullptr) return {};
    MNEMO_ASSIGN_OR_RETURN(const std::uint32_t id, f.get_u32(key));
    if (id >= size())
      return make_status(status_code::out_of_range, "%s = %u is not below the %zu tokens", key,
                         static_cast<unsigned>(id), size());
    out = static_cast<token_id>(id);
    return {};
  };
  auto bool_key = [&](const char* key, bool fallback, bool& out) -> status {
    out = fallback;
    if (f.find(key) == nullptr) return {};
    MNEMO_ASSIGN_OR_RETURN(out, f.get_bool(key));
    return {};
  };
  MNEMO_RETURN_IF_ERROR(id_key("tokenizer.ggml.bos_token_id", bos_));
  MNEMO_RETURN_IF_ERROR(id_key("tokenizer.ggml.eos_token_id", eos_));
  MNEMO_RETURN_IF_ERROR(id_key("tokenizer.ggml.unknown_token_id", unk_));
  MNEMO_RETURN_IF_ERROR(id_key("tokenizer.ggml.padding_token_id", pad_));
  const bool wpm = family_ == tokenizer_family::wpm;
  if (wpm) {  // BERT's ids unless the file names others, as llama.cpp
    auto fallback = [&](token_id& id, token_id v) {
      if (id == k_no_token && static_cast<std::size_t>(v) < size()) id = v;
    };
    fallback(bos_, 101), fallback(unk_, 100), fallback(pad_, 0);
    sep_ = static_cast<std::size_t>(102) < size() ? 102 : k_no_token;
  }
  MNEMO_RETURN_IF_ERROR(id_key("tokenizer.ggml.seperator_token_id", sep_));
  // Defaults as llama.cpp: SentencePiece vocabularies add BOS and a space prefix; some BPE
  // pre-tokenizer types add BOS (gemma4 whatever the file says); WordPiece adds [CLS]
  // first and [SEP] last.
  const bool bos_default = spm || wpm || has(pre_flag::add_bos) || has(pre_flag::force_bos);
  MNEMO_RETURN_IF_ERROR(bool_key("tokenizer.ggml.add_bos_token", bos_default, add_bos_));
  if (has(pre_flag::force_bos)) add_bos_ = true;
  MNEMO_RETURN_IF_ERROR(bool_key("tokenizer.ggml.add_eos_token", false, add_eos_));
  MNEMO_RETURN_IF_ERROR(bool_key("tokenizer.ggml.add_sep_token", wpm, add_sep_));
  if (!wpm) add_sep_ = false;
  MNEMO_RETURN_IF_ERROR(bool_key("tokenizer.ggml.add_space_prefix", spm, add_space_prefix_));

  for (std::size_t i = 0; i < size(); ++i) {
    const token_type t = types_[i];
    const auto id = static_cast<token_id>(i);
    if ((t == token_type::control || t == token_type::user_defined || t == token_type::unknown) &&
        !text(id).empty())
      specials_.push_back(id);
  }
  std::stable_sort(specials_.begin(), specials_.end(),
                   [this](token_id a, token_id b) { return text(a).size() > text(b).size(); });
  return {};
}

inline status vocab::load_merges(const gguf::file& f) {
  MNEMO_ASSIGN_OR_RETURN(const auto merges, f.get_array<std::string_view>("tokenizer.ggml.merges"));
  if (merges.size() > static_cast<std::size_t>(std::numeric_limits<std::int32_t>::max()))
    return make_status(status_code::out_of_range, "%zu merges do not fit a 32-bit rank",
                       merges.size());
  merges_.reserve(merges.size());
  std::string joined;
  for (std::size_t i = 0; i < merges.size(); ++i) {
    const std::string_view m = merges[i];
    // "left right"; searched from byte 1 as llama.cpp does, so a left side may be ' '
    const std::size_t sp = m.size() > 1 ? m.find(' ', 1) : std::string_view::npos;
    if (sp == std::string_view::npos)
      return corrupt("tokenizer.ggml.merges: merge", i, "has no space between its two sides");
    const std::string_view l = m.substr(0, sp), r = m.substr(sp + 1);
    joined.assign(l).append(r);
    const token_id li = find(l), ri = find(r), mi = find(joined);
    if (li == k_no_token || ri == k_no_token || mi == k_no_token) {
      const std::string_view which = li == k_no_token ? l : ri == k_no_token ? r : joined;
      std::string msg = "names '" + std::string(which.substr(0, 64)) + "', which is not a token";
      return corrupt("tokenizer.ggml.merges: merge", i, msg);
    }
    merges_.insert(li, ri, static_cast<std::int32_t>(i), mi);
    add_joint(l, r);
  }
  return {};
}

/// Records the units a merge joins: UTF-8 characters (raw text) or the bytes of the
/// mapped characters. A side with a character outside the byte map is no symbol the
/// byte-level merge loop can make, so its merge joins nothing.
inline void vocab::add_joint(std::string_view l, std::string_view r) {
  if (l.empty() || r.empty()) return;
  std::size_t last = l.size() - 1;
  while (last > 0 && (static_cast<unsigned char>(l[last]) & 0xC0) == 0x80) --last;
  const std::string_view x = l.substr(last);
  const std::string_view y =
      r.substr(0, std::min(detail::utf8_len_from_lead(static_cast<unsigned char>(r[0])), r.size()));
  if (has(pre_flag::raw_text)) {
    joints_.add(detail::pack_unit(x), detail::pack_unit(y));
    return;
  }
  std::size_t len = 0;
  const int bx = detail::k_byte_map.to_byte(detail::decode_utf8(x, 0, len));
  const int by = detail::k_byte_map.to_byte(detail::decode_utf8(y, 0, len));
  if (bx < 0 || by < 0) return;
  const char cx = static_cast<char>(bx), cy = static_cast<char>(by);
  joints_.add(detail::pack_unit({&cx, 1}), detail::pack_unit({&cy, 1}));
}

/// What each token decodes to: normal SPM, WordPiece and space-escaping BPE tokens with
/// U+2581 turned back into spaces, raw-text BPE tokens as their text, other normal BPE
/// tokens through the inverse byte map (a character outside the map is kept
/// as its UTF-8), byte tokens as their byte, everything else as its text.
inline void vocab::build_pieces() {
  const std::size_t n = size();
  piece_off_.reserve(n + 1);
  piece_off_.push_back(0);
  std::string p;
  for (std::size_t i = 0; i < n; ++i) {
    const auto id = static_cast<token_id>(i);
    const std::string_view t = text(id);
    p.clear();
    unsigned byte = 0;
    if (types_[i] == token_type::byte && t.size() == 6 &&
        std::sscanf(std::string(t).c_str(), "<0x%2X>", &byte) == 1) {
      p.push_back(static_cast<char>(byte));
    } else if (types_[i] != token_type::normal) {
      p.assign(t);
    } else if (family_ != tokenizer_family::bpe || has(pre_flag::escape_spaces)) {
      for (std::size_t k = 0; k < t.size();) {  // U+2581 stands for a space
        if (t.substr(k, 3) == "\xE2\x96\x81") {
          p.push_back(' ');
          k += 3;
        } else {
          p.push_back(t[k++]);
        }
      }
    } else if (has(pre_flag::raw_text)) {
      p.assign(t);
    } else {
      for (std::size_t k = 0; k < t.size();) {
        std::size_t len = 0;
        const std::uint32_t cp = detail::decode_utf8(t, k, len);
        const int b = detail::k_byte_map.to_byte(cp);
        if (b >= 0) {
          p.push_back(static_cast<char>(b));
        } else {
          p.append(t.substr(k, len));
        }
        k += len;
      }
    }
    piece_blob_.insert(piece_blob_.end(), p.begin(), p.end());
    piece_off_.push_back(piece_blob_.size());
  }
}

}  // namespace mnemo::text
