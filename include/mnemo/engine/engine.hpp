// mnemo::engine: a model, its tokenizer, a memory and a context chosen at run time from
// a GGUF file and engine_options. It dispatches once per call to the compile-time
// context<Model, Memory> that open() picked (the templates stay the fast path and the
// extension point), so this header includes no model and no memory strategy.
//
//   engine_options o;
//   o.n_seq_max = 4;
//   o.kv = kv_type::q8_0;
//   MNEMO_ASSIGN_OR_RETURN(engine e, engine::open("model.gguf", o));
//   MNEMO_ASSIGN_OR_RETURN(auto ids, e.tokenize("Hello"));
//   batch b;
//   for (std::size_t i = 0; i < ids.size(); ++i) b.add(ids[i], pos_t(i), {0}, i + 1 == ids.size());
//   MNEMO_RETURN_IF_ERROR(e.decode(b));
//   token_id next = sample_greedy(e.logits_ith(-1));
//
// open() and its instantiations are compiled once, in the mnemo::engine library
// (src/engine/*.cpp); link it to use the engine (docs/engine.md).
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "mnemo/base/result.hpp"
#include "mnemo/base/status.hpp"
#include "mnemo/batch/batch.hpp"
#include "mnemo/engine/backend.hpp"
#include "mnemo/engine/options.hpp"
#include "mnemo/sampling.hpp"

namespace mnemo {

class engine {
 public:
  /// Opens the GGUF file, picks the model by general.architecture and builds the
  /// memory the options name. invalid_argument / unsupported name a memory kind, K/V
  /// type or policy the architecture or this build does not offer.
  static result<engine> open(const std::string& path, const engine_options& options = {});

  engine(engine&&) noexcept = default;
  engine& operator=(engine&&) noexcept = default;

  /// The options as opened, with `memory` and the thread counts resolved.
  const engine_options& options() const noexcept { return o_; }
  std::string_view architecture() const noexcept { return b_->architecture(); }
  std::uint32_t n_vocab() const noexcept { return b_->n_vocab(); }
  std::uint32_t n_embd() const noexcept { return b_->n_embd(); }

  // ---- text ------------------------------------------------------------------------

  /// Whether the file carries a tokenizer (tokenizer.ggml.*); tokenize / detokenize
  /// return not_found without one.
  bool has_tokenizer() const noexcept { return b_->tokenizer() != nullptr; }
  /// The tokenizer itself (null without one), e.g. for a text::stream_decoder; include
  /// mnemo/text/tokenizer.hpp to use it.
  const text::tokenizer* tokenizer() const noexcept { return b_->tokenizer(); }
  /// add_special: BOS/EOS as the vocabulary asks; parse_special: "<s>" and the like
  /// become their ids.
  result<std::vector<token_id>> tokenize(std::string_view text, bool add_special = true,
                                         bool parse_special = false) const {
    return b_->tokenize(text, add_special, parse_special);
  }
  /// text_start = false for a continuation (no SentencePiece leading-space strip).
  result<std::string> detokenize(std::span<const token_id> ids, bool render_special = false,
                                 bool text_start = true) const {
    return b_->detokenize(ids, render_special, text_start);
  }
  token_id bos() const noexcept { return b_->bos(); }
  token_id eos() const noexcept { return b_->eos(); }

  // ---- decoding (context<Model, Memory>::decode and its failure guarantee) ---------

  status decode(const batch& b) { return b_->decode(b); }
  std::uint32_t n_outputs() const noexcept { return b_->n_outputs(); }
  /// [n_outputs, n_vocab], the output tokens in batch order.
  std::span<const float> logits() const noexcept { return b_->logits(); }
  /// The row of batch token i; i < 0 counts outputs from the end (-1: the last).
  std::span<const float> logits_ith(std::int32_t i) const noexcept { return b_->logits_ith(i); }
  /// s.sample(logits_ith(i)); -1 when token i has no logits.
  token_id sample(sampler& s, std::int32_t i = -1) const { return s.sample(logits_ith(i)); }

  // ---- sequences: the memory's answer, `unsupported` where it has none ------------

  status seq_rm(seq_id s, pos_t p0, pos_t p1) { return b_->seq_rm(s, p0, p1); }
  status seq_cp(seq_id src, seq_id dst, pos_t p0, pos_t p1) { return b_->seq_cp(src, dst, p0, p1); }
  status seq_keep(seq_id s) { return b_->seq_keep(s); }
  status seq_add(seq_id s, pos_t p0, pos_t p1, pos_t delta) {
    return b_->seq_add(s, p0, p1, delta);
  }
  status seq_div(seq_id s, pos_t p0, pos_t p1, int d) { return b_->seq_div(s, p0, p1, d); }
  pos_t seq_pos_min(seq_id s) const { return b_->seq_pos_min(s); }
  pos_t seq_pos_max(seq_id s) const { return b_->seq_pos_max(s); }
  void clear(bool data = false) { b_->clear(data); }

  // ---- state: the memory's state file (s / dest == -1: all sequences) --------------

  status state_write(seq_id s, std::vector<std::uint8_t>& out) { return b_->state_write(s, out); }
  status state_read(std::span<const std::uint8_t> data, seq_id dest = -1) {
    return b_->state_read(data, dest);
  }

  // ---- the memory, threads and hooks ----------------------------------------------

  memory::memory_report report() const { return b_->report(); }
  /// 0: the defaults (physical cores; n_threads_batch = n_threads).
  void set_threads(int n_threads, int n_threads_batch) {
    b_->set_threads(n_threads, n_threads_batch);
    o_.n_threads = b_->n_threads();
    o_.n_threads_batch = b_->n_threads_batch();
  }
  void set_hooks(const context_hooks& h) {
    b_->set_hooks(h);
    o_.hooks = h;
  }

  /// For open(): wraps a backend built from `o`.
  engine(std::unique_ptr<engine_backend> b, const engine_options& o) : b_(std::move(b)), o_(o) {
    o_.n_threads = b_->n_threads();
    o_.n_threads_batch = b_->n_threads_batch();
  }

 private:
  std::unique_ptr<engine_backend> b_;
  engine_options o_;
};

}  // namespace mnemo
