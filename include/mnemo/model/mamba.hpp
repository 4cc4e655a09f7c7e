// A Mamba-1 decoder (Gu & Dao 2023) for GGUF arch `mamba`: per layer
// x += mixer(RMSNorm(x) attn_norm) with no FFN, then the final RMSNorm and the output
// (tied to token_embd when output.weight is absent). The forward pass follows
// llama.cpp's llama_model_mamba::graph (docs/hybrid.md); the mixer is
// mamba_mixer.hpp.
//
// The model owns its gguf::file and is written against recurrent_state_memory only:
// memory::recurrent, or a composite whose every layer is recurrent.
//
//   MNEMO_ASSIGN_OR_RETURN(auto m, model::mamba_model::open("mamba.gguf"));
//   MNEMO_ASSIGN_OR_RETURN(auto mem, memory::recurrent::make(m.recurrent_config(4)));
//   auto ctx = context<model::mamba_model, memory::recurrent>::make(m, std::move(mem), p);
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "mnemo/base/aligned_buffer.hpp"
#include "mnemo/batch/ubatch.hpp"
#include "mnemo/gguf/file.hpp"
#include "mnemo/memory/recurrent/recurrent.hpp"
#include "mnemo/model/forward_hooks.hpp"
#include "mnemo/model/layers.hpp"
#include "mnemo/model/mamba_hparams.hpp"
#include "mnemo/model/mamba_mixer.hpp"
#include "mnemo/model/matmul.hpp"
#include "mnemo/model/output_head.hpp"
#include "mnemo/model/tensor_binder.hpp"
#include "mnemo/model/weight.hpp"

namespace mnemo::model {

/// Activations of one micro-batch of up to n_ubatch tokens, reused by every call.
class mamba_workspace : public forward_hooks {
 public:
  std::uint32_t n_ubatch() const noexcept { return n_ubatch_; }
  /// [n_outputs, n_vocab] logits of the last forward(), output tokens in micro-batch order.
  const float* logits() const noexcept { return logits_.data(); }
  std::uint32_t n_outputs() const noexcept { return n_outputs_; }

 private:
  friend class mamba_model;
  std::uint32_t n_ubatch_ = 0, n_outputs_ = 0;
  aligned_buffer<float> x_, h_, tmp_;  // [n_ubatch, n_embd]
  aligned_buffer<float> logits_;       // [n_ubatch, n_vocab]
  mamba_mixer_buffers mixer_;
  matmul_workspace mm_ws_;
};

class mamba_model {
 public:
  using workspace = mamba_workspace;

  /// Reads the hyper-parameters and checks every tensor's presence, shape and type.
  static result<mamba_model> load(gguf::file file) {
    mamba_model m;
    MNEMO_ASSIGN_OR_RETURN(m.hp_, read_mamba_hparams(file));
    m.file_.emplace(std::move(file));
    MNEMO_RETURN_IF_ERROR(m.bind_tensors().with_context("mamba"));
    return m;
  }
  static result<mamba_model> open(const std::string& path,
                                  gguf::access access = gguf::access::map) {
    return open_model<mamba_model>(path, access);
  }

  mamba_model(mamba_model&&) noexcept = default;
  mamba_model& operator=(mamba_model&&) noexcept = default;

  const mamba_hparams& hparams() const noexcept { return hp_; }
  std::uint32_t n_vocab() const noexcept { return hp_.n_vocab; }
  std::uint32_t n_embd() const noexcept { return hp_.n_embd; }
  std::uint32_t n_layer() const noexcept { return hp_.n_layer; }
  bool tied_output() const noexcept { return head_.tied; }
  const gguf::file& file() const noexcept { return *file_; }
  /// Bytes of the q4_0 and k-quant weights' tiles held besides the mapping
  /// (weight_tiles.hpp).
  std::size_t tile_bytes() const noexcept { return tiles_.bytes(); }

  /// A recurrent memory for this model: one slot per sequence id in [0, n_seq_max),
  /// optionally with checkpoints for suffix removal (docs/recurrent.md).
  memory::recurrent_config recurrent_config(seq_id n_seq_max, std::size_t n_checkpoints = 0,
                                            std::size_t checkpoint_bytes = 0) const {
    return {.n_layer = hp_.n_layer,
            .conv_floats = hp_.ssm.conv_floats(),
            .ssm_floats = hp_.ssm.ssm_floats(),
            .n_seq_max = n_seq_max,
            .n_checkpoints = n_checkpoints,
            .checkpoint_bytes = checkpoint_bytes};
  }

  result<mamba_workspace> make_workspace(std::uint32_t n_ubatch) const {
    if (n_ubatch == 0)
      return make_status(status_code::invalid_argument, "mamba: n_ubatch must be > 0");
    mamba_workspace ws;
    ws.n_ubatch_ = n_ubatch;
    const std::size_t n = n_ubatch, E = hp_.n_embd;
    MNEMO_RETURN_IF_ERROR(allocate_buffers(
        {{&ws.x_, n * E}, {&ws.h_, n * E}, {&ws.tmp_, n * E}, {&ws.logits_, n * hp_.n_vocab}}));
    MNEMO_ASSIGN_OR_RETURN(ws.mixer_, mamba_mixer_buffers::make(hp_.ssm, n_ubatch));
    return ws;
  }

  /// Computes micro-batch u (already applied to `mem`): updates every layer's state of
  /// the micro-batch's sequences and leaves the logits of the tokens with ub.output set
  /// in ws.logits(). A status for a micro-batch larger than the workspace or a token
  /// outside the vocabulary; the caller rolls the memory back.
  template <simd::isa_tag Isa = simd::native, recurrent_state_memory Memory>
  status forward(Memory& mem, std::size_t u, const ubatch& ub, mamba_workspace& ws,
                 int n_threads) const {
    // One parallel region for the micro-batch: the products share its threads.
    return run_team(n_threads, [&]() -> status {
      const std::size_t n = ub.n_tokens(), E = hp_.n_embd;
      ws.n_outputs_ = 0;
      if (n == 0) return {};
      if (n > ws.n_ubatch_)
        return make_status(status_code::invalid_argument,
                           "mamba: micro-batch of %zu tokens exceeds the workspace's n_ubatch %u",
                           n, ws.n_ubatch_);
      float *x = ws.x_.data(), *h = ws.h_.data(), *tmp = ws.tmp_.data();
      MNEMO_RETURN_IF_ERROR(embed_tokens<Isa>(ub, head_.token_embd, E, hp_.n_vocab, x, "mamba"));
      for (std::size_t l = 0; l < hp_.n_layer; ++l) {
        MNEMO_RETURN_IF_ERROR(ws.between_layers("mamba", l));
        for (std::size_t t = 0; t < n; ++t)
          rms_norm<Isa>(x + t * E, attn_norm_[l].data(), h + t * E, E, hp_.rms_eps);
        MNEMO_RETURN_IF_ERROR(mamba_mixer_forward<Isa>(mixers_[l], hp_.ssm, hp_.rms_eps, mem, l, u,
                                                       n, h, tmp, ws.mixer_, n_threads, ws.mm_ws_));
        for (std::size_t t = 0; t < n; ++t) add_to<Isa>(x + t * E, tmp + t * E, E);
      }
      const std::size_t n_out = head_.apply<Isa>(ub, x, h, E, hp_.rms_eps, ws.logits_.data(),
                                                 hp_.n_vocab, n_threads, ws.mm_ws_);
      ws.n_outputs_ = static_cast<std::uint32_t>(n_out);
      return {};
    });
  }

 private:
  mamba_model() = default;

  status bind_tensors() {
    const gguf::file& f = *file_;
    const tensor_binder bind(f, {}, &tiles_);  // load() puts "mamba" on every binding error
    const std::size_t E = hp_.n_embd, V = hp_.n_vocab;
    MNEMO_RETURN_IF_ERROR(head_.bind(bind, E, V));
    for (std::uint32_t l = 0; l < hp_.n_layer; ++l) {
      const std::string b = "blk." + std::to_string(l) + ".";
      for (const char* extra : {"ffn_norm.weight", "ffn_up.weight", "attn_q.weight"})
        if (bind.has(b + extra))
          return make_status(status_code::unsupported,
                             "tensor '%s%s': a mamba layer has no attention or FFN (is this a "
                             "hybrid such as jamba?)",
                             b.c_str(), extra);
      MNEMO_ASSIGN_OR_RETURN(auto norm, bind.norm(b + "attn_norm.weight", E));
      attn_norm_.push_back(std::move(norm));
      MNEMO_ASSIGN_OR_RETURN(
          auto mx, bind_mamba_mixer(f, b, hp_.ssm, hp_.n_embd, mixer_norms::none, &tiles_));
      mixers_.push_back(std::move(mx));
    }
    return {};
  }

  std::optional<gguf::file> file_;  // optional only because gguf::file has no empty state
  weight_tiles tiles_;              // the q4_0 and k-quant weights' tiles (weight_tiles.hpp)
  mamba_hparams hp_;
  output_head head_;
  std::vector<std::vector<float>> attn_norm_;  // [n_layer][n_embd]
  std::vector<mamba_mixer> mixers_;
};

}  // namespace mnemo::model
