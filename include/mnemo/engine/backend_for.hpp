// engine_backend_for<Model, Memory>: the engine's interface implemented by one
// compile-time context<Model, Memory>. Every call forwards to the context once; the
// context's decode runs fully static from there.
//
// The engine's own combinations are compiled once, in the mnemo::engine library
// (src/engine/*.cpp); a host program includes this header only to wrap a context of
// its own (its model or memory) in an engine. The strategy's *_state.hpp must be
// included before an instantiation, so the context finds state_write / state_read.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "mnemo/context.hpp"
#include "mnemo/engine/backend.hpp"
#include "mnemo/text/tokenizer.hpp"

namespace mnemo {

template <class Model, class Memory>
class engine_backend_for final : public engine_backend {
 public:
  using context_type = context<Model, Memory>;

  /// The model moves in first, so the memory is built from the model's final address
  /// (the context keeps a pointer to it): make_memory(const Model&) -> result<Memory>.
  template <class MakeMemory>
  static result<std::unique_ptr<engine_backend>> make(Model model,
                                                      std::optional<text::tokenizer> tok,
                                                      std::string_view arch,
                                                      const context_params& p,
                                                      MakeMemory&& make_memory) {
    std::unique_ptr<engine_backend_for> b(
        new engine_backend_for(std::move(model), std::move(tok), arch));
    MNEMO_ASSIGN_OR_RETURN(Memory mem, make_memory(b->model_));
    MNEMO_ASSIGN_OR_RETURN(context_type ctx, context_type::make(b->model_, std::move(mem), p));
    b->ctx_.emplace(std::move(ctx));
    return std::unique_ptr<engine_backend>(std::move(b));
  }

  std::string_view architecture() const noexcept override { return arch_; }
  std::uint32_t n_vocab() const noexcept override { return model_.n_vocab(); }
  std::uint32_t n_embd() const noexcept override { return model_.n_embd(); }

  const text::tokenizer* tokenizer() const noexcept override { return tok_ ? &*tok_ : nullptr; }
  result<std::vector<token_id>> tokenize(std::string_view text, bool add_special,
                                         bool parse_special) const override {
    MNEMO_RETURN_IF_ERROR(need_tokenizer());
    text::encode_options o;
    o.add_special = add_special;
    o.parse_special = parse_special;
    return tok_->encode(text, o);
  }
  result<std::string> detokenize(std::span<const token_id> ids, bool render_special,
                                 bool text_start) const override {
    MNEMO_RETURN_IF_ERROR(need_tokenizer());
    text::decode_options o;
    o.render_special = render_special;
    o.text_start = text_start;
    return tok_->decode(ids, o);
  }
  token_id bos() const noexcept override { return tok_ ? tok_->bos() : -1; }
  token_id eos() const noexcept override { return tok_ ? tok_->eos() : -1; }

  status decode(const batch& b) override { return ctx_->decode(b); }
  std::uint32_t n_outputs() const noexcept override { return ctx_->n_outputs(); }
  std::span<const float> logits() const noexcept override { return ctx_->logits(); }
  std::span<const float> logits_ith(std::int32_t i) const noexcept override {
    return ctx_->logits_ith(i);
  }

  status seq_rm(seq_id s, pos_t p0, pos_t p1) override { return ctx_->seq_rm(s, p0, p1); }
  status seq_cp(seq_id src, seq_id dst, pos_t p0, pos_t p1) override {
    return ctx_->seq_cp(src, dst, p0, p1);
  }
  status seq_keep(seq_id s) override { return ctx_->seq_keep(s); }
  status seq_add(seq_id s, pos_t p0, pos_t p1, pos_t delta) override {
    return ctx_->seq_add(s, p0, p1, delta);
  }
  status seq_div(seq_id s, pos_t p0, pos_t p1, int d) override {
    return ctx_->seq_div(s, p0, p1, d);
  }
  pos_t seq_pos_min(seq_id s) const override { return ctx_->seq_pos_min(s); }
  pos_t seq_pos_max(seq_id s) const override { return ctx_->seq_pos_max(s); }
  void clear(bool data) override { ctx_->clear(data); }

  status state_write(seq_id s, std::vector<std::uint8_t>& out) override {
    return ctx_->state_write(s, out);
  }
  status state_read(std::span<const std::uint8_t> data, seq_id dest) override {
    return ctx_->state_read(data, dest);
  }

  memory::memory_report report() const override { return ctx_->memory().report(); }
  void set_threads(int n_threads, int n_threads_batch) override {
    ctx_->set_threads(n_threads, n_threads_batch);
  }
  int n_threads() const noexcept override { return ctx_->params().n_threads; }
  int n_threads_batch() const noexcept override { return ctx_->params().n_threads_batch; }
  void set_hooks(const context_hooks& h) override { ctx_->set_hooks(h); }

  context_type& context_ref() noexcept { return *ctx_; }

 private:
  engine_backend_for(Model m, std::optional<text::tokenizer> tok, std::string_view arch)
      : model_(std::move(m)), tok_(std::move(tok)), arch_(arch) {}

  status need_tokenizer() const {
    if (tok_) return {};
    return make_status(status_code::not_found, "%s: the model file has no tokenizer",
                       arch_.c_str());
  }

  Model model_;  // before ctx_: the context points at it
  std::optional<text::tokenizer> tok_;
  std::string arch_;
  std::optional<context_type> ctx_;
};

}  // namespace mnemo
