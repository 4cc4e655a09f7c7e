// The input of one decode call (docs/batch.md): per token a vocabulary id or an
// embedding row, a position, one or more sequence ids and an output flag. An owning
// value type stored as structure of arrays, so kernels and the memory read spans.
//
// Building never fails: misuse (mixed tokens and embeddings, bad ids, missing positions
// for some tokens only) is recorded and reported by validate() (validate.hpp) with the
// token index, so a caller gets one status at the boundary instead of a surprise here.
#pragma once

#include <algorithm>
#include <cstdint>
#include <initializer_list>
#include <limits>
#include <span>
#include <vector>

#include "mnemo/base/assert.hpp"
#include "mnemo/base/seq_set.hpp"

namespace mnemo {

/// A vocabulary id.
using token_id = std::int32_t;

/// What a batch carries per token. Tokens and embeddings are never mixed in one batch.
enum class batch_input : std::uint8_t { none, tokens, embeddings };

/// The output request of one token: explicit no/yes, or "decide for me" (docs/batch.md:
/// the last token only, or every token when the context computes embeddings).
enum class output_flag : std::uint8_t { no = 0, yes = 1, unset = 2 };

class batch {
 public:
  /// Marks a token whose position is to be filled in by validate().
  static constexpr pos_t k_auto_pos = std::numeric_limits<pos_t>::min();
  static constexpr std::uint32_t k_none = std::numeric_limits<std::uint32_t>::max();

  batch() = default;

  // ---- builders -------------------------------------------------------------------
  // `seqs` lists the token's sequences; the first is its primary id. Omitting the
  // position (or the output flag) asks validate() to fill it in.
  using seq_list = std::initializer_list<seq_id>;

  /// A token at an explicit position with an explicit output flag, like llama.cpp's
  /// common_batch_add.
  batch& add(token_id token, pos_t pos, std::span<const seq_id> seqs, bool output) {
    return push_token(token, pos, seqs, flag(output));
  }
  batch& add(token_id token, pos_t pos, seq_list seqs, bool output) {
    return push_token(token, pos, span_of(seqs), flag(output));
  }
  /// A token whose position (and output flag, when not given) validate() fills in.
  batch& add(token_id token, seq_list seqs = {0}) {
    return push_token(token, k_auto_pos, span_of(seqs), output_flag::unset);
  }
  batch& add(token_id token, seq_list seqs, bool output) {
    return push_token(token, k_auto_pos, span_of(seqs), flag(output));
  }
  batch& add(token_id token, std::span<const seq_id> seqs) {
    return push_token(token, k_auto_pos, seqs, output_flag::unset);
  }
  batch& add(token_id token, std::span<const seq_id> seqs, bool output) {
    return push_token(token, k_auto_pos, seqs, flag(output));
  }

  /// An embedding row [n_embd] instead of a token id; the first row fixes n_embd.
  batch& add_embd(std::span<const float> row, pos_t pos, std::span<const seq_id> seqs,
                  bool output) {
    return push_row(row, pos, seqs, flag(output));
  }
  batch& add_embd(std::span<const float> row, pos_t pos, seq_list seqs, bool output) {
    return push_row(row, pos, span_of(seqs), flag(output));
  }
  batch& add_embd(std::span<const float> row, seq_list seqs = {0}) {
    return push_row(row, k_auto_pos, span_of(seqs), output_flag::unset);
  }
  batch& add_embd(std::span<const float> row, seq_list seqs, bool output) {
    return push_row(row, k_auto_pos, span_of(seqs), flag(output));
  }
  batch& add_embd(std::span<const float> row, std::span<const seq_id> seqs) {
    return push_row(row, k_auto_pos, seqs, output_flag::unset);
  }
  batch& add_embd(std::span<const float> row, std::span<const seq_id> seqs, bool output) {
    return push_row(row, k_auto_pos, seqs, flag(output));
  }

  /// Like llama_batch_get_one: every token in `seq`, positions continue the memory,
  /// output on the last token (or on all tokens when the context computes embeddings).
  static batch one(std::span<const token_id> tokens, seq_id seq = 0) {
    batch b;
    b.reserve(static_cast<std::uint32_t>(tokens.size()));
    for (token_id t : tokens) b.add(t, {seq});
    return b;
  }
  /// The embedding form of one(): `rows` is [n_tokens, n_embd], row-major.
  /// @pre n_embd > 0 and rows.size() % n_embd == 0
  static batch one_embd(std::span<const float> rows, std::uint32_t n_embd, seq_id seq = 0) {
    batch b;
    if (n_embd == 0) return b;
    const std::size_t n = rows.size() / n_embd;
    b.reserve(static_cast<std::uint32_t>(n), n_embd);
    for (std::size_t i = 0; i < n; ++i) b.add_embd(rows.subspan(i * n_embd, n_embd), {seq});
    return b;
  }

  /// Removes every token; keeps the allocations for the next call.
  void clear() noexcept {
    tokens_.clear();
    embd_.clear();
    pos_.clear();
    seq_off_.assign(1, 0);
    seq_ids_.clear();
    output_.clear();
    input_ = batch_input::none;
    n_embd_ = 0;
    have_row_ = false;
    mixed_at_ = k_none;
    bad_row_at_ = k_none;
  }

  void reserve(std::uint32_t n_tokens, std::uint32_t n_embd = 0) {
    if (n_embd == 0)
      tokens_.reserve(n_tokens);
    else
      embd_.reserve(std::size_t{n_tokens} * n_embd);
    pos_.reserve(n_tokens);
    seq_off_.reserve(std::size_t{n_tokens} + 1);
    seq_ids_.reserve(n_tokens);
    output_.reserve(n_tokens);
  }

  // ---- reading --------------------------------------------------------------------

  std::uint32_t size() const noexcept { return static_cast<std::uint32_t>(pos_.size()); }
  bool empty() const noexcept { return pos_.empty(); }
  batch_input input() const noexcept { return input_; }
  bool has_embeddings() const noexcept { return input_ == batch_input::embeddings; }

  /// [n_tokens] vocabulary ids (empty for an embedding batch).
  std::span<const token_id> tokens() const noexcept { return tokens_; }
  /// [n_tokens, n_embd] embedding rows (empty for a token batch).
  std::span<const float> embeddings() const noexcept { return embd_; }
  std::uint32_t n_embd() const noexcept { return n_embd_; }
  /// @pre has_embeddings() and i < size()
  std::span<const float> embd(std::uint32_t i) const noexcept {
    MNEMO_DASSERT(has_embeddings() && i < size());
    return std::span<const float>(embd_).subspan(std::size_t{i} * n_embd_, n_embd_);
  }

  /// [n_tokens] positions as given, k_auto_pos where omitted.
  std::span<const pos_t> positions() const noexcept { return pos_; }
  /// The sequence ids of token i, in the order given: the first is the primary id.
  std::span<const seq_id> seqs(std::uint32_t i) const noexcept {
    MNEMO_DASSERT(i < size());
    return std::span<const seq_id>(seq_ids_).subspan(seq_off_[i], seq_off_[i + 1] - seq_off_[i]);
  }
  /// The primary (first) sequence id of token i.  @pre !seqs(i).empty()
  seq_id primary(std::uint32_t i) const noexcept {
    MNEMO_DASSERT(seq_off_[i + 1] > seq_off_[i]);
    return seq_ids_[seq_off_[i]];
  }
  /// [n_tokens + 1] offsets into seq_ids(): token i owns seq_ids()[off[i], off[i+1]).
  std::span<const std::uint32_t> seq_offsets() const noexcept { return seq_off_; }
  std::span<const seq_id> seq_ids() const noexcept { return seq_ids_; }
  /// [n_tokens] output requests as given.
  std::span<const output_flag> outputs() const noexcept { return output_; }

  /// The first token whose kind differs from token 0's (k_none: not mixed).
  std::uint32_t mixed_at() const noexcept { return mixed_at_; }
  /// The first embedding row whose length differs from the first row's (k_none: none).
  std::uint32_t bad_row_at() const noexcept { return bad_row_at_; }

 private:
  static constexpr output_flag flag(bool output) noexcept {
    return output ? output_flag::yes : output_flag::no;
  }
  static std::span<const seq_id> span_of(seq_list seqs) noexcept {
    return {seqs.begin(), seqs.size()};
  }

  void push_kind(batch_input kind) {
    if (input_ == batch_input::none)
      input_ = kind;
    else if (input_ != kind && mixed_at_ == k_none)
      mixed_at_ = size();
  }

  batch& push_token(token_id token, pos_t pos, std::span<const seq_id> seqs, output_flag out) {
    push_kind(batch_input::tokens);
    tokens_.push_back(token);
    return push_meta(pos, seqs, out);
  }

  batch& push_row(std::span<const float> row, pos_t pos, std::span<const seq_id> seqs,
                  output_flag out) {
    push_kind(batch_input::embeddings);
    if (!have_row_) n_embd_ = static_cast<std::uint32_t>(row.size());
    have_row_ = true;
    if (row.size() != n_embd_ && bad_row_at_ == k_none) bad_row_at_ = size();
    // Keep the [n_tokens, n_embd] layout even for a bad row; validate() rejects it.
    const std::size_t n = std::min<std::size_t>(row.size(), n_embd_);
    embd_.insert(embd_.end(), row.begin(), row.begin() + static_cast<std::ptrdiff_t>(n));
    embd_.resize(embd_.size() + (n_embd_ - n), 0.0f);
    return push_meta(pos, seqs, out);
  }

  batch& push_meta(pos_t pos, std::span<const seq_id> seqs, output_flag out) {
    pos_.push_back(pos);
    seq_ids_.insert(seq_ids_.end(), seqs.begin(), seqs.end());
    seq_off_.push_back(static_cast<std::uint32_t>(seq_ids_.size()));
    output_.push_back(out);
    return *this;
  }

  std::vector<token_id> tokens_;              // [n_tokens] when input_ == tokens
  std::vector<float> embd_;                   // [n_tokens, n_embd_] when input_ == embeddings
  std::vector<pos_t> pos_;                    // [n_tokens]
  std::vector<std::uint32_t> seq_off_ = {0};  // [n_tokens + 1]
  std::vector<seq_id> seq_ids_;               // [sum of set sizes]
  std::vector<output_flag> output_;           // [n_tokens]
  batch_input input_ = batch_input::none;
  std::uint32_t n_embd_ = 0;
  bool have_row_ = false;
  std::uint32_t mixed_at_ = k_none;
  std::uint32_t bad_row_at_ = k_none;
};

}  // namespace mnemo
