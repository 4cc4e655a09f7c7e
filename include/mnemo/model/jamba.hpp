// A Jamba-style hybrid decoder (Lieber et al. 2024) for GGUF arch `jamba` with dense
// FFN layers: per layer h = RMSNorm(x) attn_norm; x += mixer(h), the mixer being
// either Mamba-1 (mamba_mixer.hpp, with dt/B/C norms) or causal GQA attention without
// RoPE; then x += down(silu(gate h2) * up h2), h2 = RMSNorm(x) ffn_norm. The forward
// pass follows llama.cpp's llama_model_jamba::graph (docs/hybrid.md).
//
// The memory routes layers: attention layers to a KV strategy (full_cache,
// split_stream, ...) and Mamba layers to memory::recurrent, through memory::layered,
// whose transactions and sequence operations keep both parts coherent:
//
//   using kv = memory::full_cache<float>;
//   using mem_t = memory::layered<kv, memory::recurrent>;
//   auto mem = mem_t::make(m.layer_parts(0, 1), kv::make(m.full_cache_config(4096, 4)).value(),
//                          memory::recurrent::make(m.recurrent_config(4)).value());
//   auto ctx = context<model::jamba_model, mem_t>::make(m, std::move(*mem), p);
#pragma once

#include <algorithm>
#include <optional>
#include <string>
#include <vector>

#include "mnemo/attention/attend.hpp"
#include "mnemo/base/aligned_buffer.hpp"
#include "mnemo/batch/ubatch.hpp"
#include "mnemo/gguf/file.hpp"
#include "mnemo/memory/concepts.hpp"
#include "mnemo/memory/full/full_cache_fwd.hpp"
#include "mnemo/memory/recurrent/recurrent.hpp"
#include "mnemo/memory/stream/split_stream_fwd.hpp"
#include "mnemo/model/decoder_blocks.hpp"
#include "mnemo/model/forward_hooks.hpp"
#include "mnemo/model/jamba_hparams.hpp"
#include "mnemo/model/layers.hpp"
#include "mnemo/model/mamba_mixer.hpp"
#include "mnemo/model/matmul.hpp"
#include "mnemo/model/output_head.hpp"
#include "mnemo/model/tensor_binder.hpp"
#include "mnemo/model/weight.hpp"

namespace mnemo::model {

/// One layer: the norms and FFN every layer has, and either attention or a mixer.
struct jamba_layer {
  std::vector<float> attn_norm, ffn_norm;  // [n_embd]
  weight wq, wk, wv, wo;                   // attention layers only (llama_layer shapes)
  std::optional<mamba_mixer> mixer;        // Mamba layers only
  weight gate, up, down;                   // [n_embd, n_ff], [n_ff, n_embd]
};

class jamba_workspace : public forward_hooks {
 public:
  std::uint32_t n_ubatch() const noexcept { return a_.n_ubatch; }
  const float* logits() const noexcept { return a_.logits.data(); }
  std::uint32_t n_outputs() const noexcept { return a_.n_outputs; }

 private:
  friend class jamba_model;
  decoder_activations a_;
  mamba_mixer_buffers mixer_;
};

class jamba_model {
 public:
  using workspace = jamba_workspace;

  static result<jamba_model> load(gguf::file file) {
    jamba_model m;
    MNEMO_ASSIGN_OR_RETURN(m.hp_, read_jamba_hparams(file));
    m.file_.emplace(std::move(file));
    MNEMO_RETURN_IF_ERROR(m.bind_tensors().with_context("jamba"));
    return m;
  }
  static result<jamba_model> open(const std::string& path,
                                  gguf::access access = gguf::access::map) {
    return open_model<jamba_model>(path, access);
  }

  jamba_model(jamba_model&&) noexcept = default;
  jamba_model& operator=(jamba_model&&) noexcept = default;

  const jamba_hparams& hparams() const noexcept { return hp_; }
  std::uint32_t n_vocab() const noexcept { return hp_.n_vocab; }
  std::uint32_t n_embd() const noexcept { return hp_.n_embd; }
  std::uint32_t n_layer() const noexcept { return hp_.n_layer; }
  const gguf::file& file() const noexcept { return *file_; }
  /// Bytes of the q4_0 and k-quant weights' tiles held besides the mapping
  /// (weight_tiles.hpp).
  std::size_t tile_bytes() const noexcept { return tiles_.bytes(); }

  /// layered::make's route: attention layers to part `attention_part`, Mamba layers to
  /// part `recurrent_part`.
  std::vector<std::uint8_t> layer_parts(std::uint8_t attention_part,
                                        std::uint8_t recurrent_part) const {
    std::vector<std::uint8_t> r;
    for (auto rec : hp_.recurrent) r.push_back(rec ? recurrent_part : attention_part);
    return r;
  }
  /// The K/V geometry of the attention layers (their count, not the model's).
  memory::kv_shape kv_shape() const noexcept {
    return {hp_.n_attention_layers(), hp_.n_head_kv, hp_.d_k, hp_.d_v};
  }
  memory::full_cache_config full_cache_config(std::size_t size, seq_id n_seq_max) const {
    memory::full_cache_config c;
    c.shape = kv_shape();
    c.size = size;
    c.n_seq_max = n_seq_max;
    c.rope.layout = attention::rope_layout::none;  // no RoPE: a shift rotates nothing
    return c;
  }
  memory::split_stream_config split_stream_config(std::size_t size_per_stream,
                                                  seq_id n_seq_max) const {
    memory::split_stream_config c;
    c.shape = kv_shape();
    c.size_per_stream = size_per_stream;
    c.n_seq_max = n_seq_max;
    c.rope.layout = attention::rope_layout::none;
    return c;
  }
  memory::recurrent_config recurrent_config(seq_id n_seq_max, std::size_t n_checkpoints = 0,
                                            std::size_t checkpoint_bytes = 0) const {
    return {.n_layer = hp_.n_recurrent_layers(),
            .conv_floats = hp_.ssm.conv_floats(),
            .ssm_floats = hp_.ssm.ssm_floats(),
            .n_seq_max = n_seq_max,
            .n_checkpoints = n_checkpoints,
            .checkpoint_bytes = checkpoint_bytes};
  }

  result<jamba_workspace> make_workspace(std::uint32_t n_ubatch) const {
    if (n_ubatch == 0)
      return make_status(status_code::invalid_argument, "jamba: n_ubatch must be > 0");
    jamba_workspace ws;
    MNEMO_RETURN_IF_ERROR(ws.a_.allocate(n_ubatch, dims_of(hp_)));
    MNEMO_ASSIGN_OR_RETURN(ws.mixer_, mamba_mixer_buffers::make(hp_.ssm, n_ubatch));
    return ws;
  }

  /// Computes micro-batch u (already applied to `mem`): K/V of the attention layers
  /// into the memory, Mamba states updated, logits of the output tokens in ws.logits().
  /// Layer indices passed to the memory are the model's (the composite routes them).
  template <simd::isa_tag Isa = simd::native, class Memory>
  requires memory::kv_memory<Memory> && recurrent_state_memory<Memory> status
  forward(Memory& mem, std::size_t u, const ubatch& ub, jamba_workspace& ws, int n_threads)
  const {
    // One parallel region for the micro-batch: the products share its threads.
    return run_team(n_threads, [&]() -> status {
      decoder_activations& a = ws.a_;
      const decoder_dims d = dims_of(hp_);
      const std::size_t n = ub.n_tokens(), E = d.n_embd, kd = d.k_width(), vd = d.v_width();
      a.n_outputs = 0;
      if (n == 0) return {};
      if (n > a.n_ubatch)
        return make_status(status_code::invalid_argument,
                           "jamba: micro-batch of %zu tokens exceeds the workspace's n_ubatch %u",
                           n, a.n_ubatch);
      float *x = a.x.data(), *h = a.h.data(), *tmp = a.tmp.data();
      MNEMO_RETURN_IF_ERROR(embed_tokens<Isa>(ub, head_.token_embd, E, hp_.n_vocab, x, "jamba"));

      const attention::shape sh = d.attention_shape();
      const attention::params ap = hp_.attention_params();
      for (std::size_t l = 0; l < hp_.n_layer; ++l) {
        MNEMO_RETURN_IF_ERROR(ws.between_layers("jamba", l));
        const jamba_layer& L = layers_[l];
        norm_rows<Isa>(x, L.attn_norm.data(), h, n, E, hp_.rms_eps);
        if (L.mixer) {
          MNEMO_RETURN_IF_ERROR(mamba_mixer_forward<Isa>(*L.mixer, hp_.ssm, hp_.rms_eps, mem, l, u,
                                                         n, h, tmp, ws.mixer_, n_threads, a.mm_ws));
        } else {
          project_qkv<Isa>(L.wq, L.wk, L.wv, n, d, a, n_threads);
          for (std::size_t t = 0; t < n; ++t)  // no RoPE
            mem.template write_kv<Isa>(l, u, t, a.k.data() + t * kd, a.v.data() + t * vd);
          MNEMO_RETURN_IF_ERROR(attend_layer<Isa>(mem, l, u, ub, sh, ap, a, n_threads, "jamba"));
          project_out<Isa>(L.wo, n, d, a, n_threads);
        }
        add_rows<Isa>(x, tmp, n, E);

        norm_rows<Isa>(x, L.ffn_norm.data(), h, n, E, hp_.rms_eps);
        gated_ffn<Isa>(L.gate, L.up, L.down, n, d, a, n_threads,
                       [](float* g, const float* up, std::size_t F) { swiglu<Isa>(g, up, F); });
        add_rows<Isa>(x, tmp, n, E);
      }

      const std::size_t n_out = head_.apply<Isa>(ub, x, h, E, hp_.rms_eps, a.logits.data(),
                                                 hp_.n_vocab, n_threads, a.mm_ws);
      a.n_outputs = static_cast<std::uint32_t>(n_out);
      return {};
    });
  }

 private:
  jamba_model() = default;

  status bind_tensors() {
    const gguf::file& f = *file_;
    const std::size_t E = hp_.n_embd, V = hp_.n_vocab;
    const decoder_dims d = dims_of(hp_);
    const tensor_binder bind(f, {}, &tiles_);  // load() puts "jamba" on every binding error
    MNEMO_RETURN_IF_ERROR(head_.bind(bind, E, V));
    layers_.resize(hp_.n_layer);
    for (std::uint32_t l = 0; l < hp_.n_layer; ++l) {
      const std::string b = "blk." + std::to_string(l) + ".";
      const bool rec = hp_.recurrent[l] != 0;
      // Tensors this decoder would silently ignore are refused instead: experts, biases,
      // and the other kind of mixer's tensors on a layer.
      for (const char* extra :
           {"ffn_gate_inp.weight", "attn_q.bias", "attn_k.bias", "attn_v.bias", "attn_output.bias"})
        if (bind.has(b + extra))
          return make_status(status_code::unsupported,
                             "tensor '%s%s' (experts or attention biases) is not supported",
                             b.c_str(), extra);
      const char* wrong = rec ? "attn_q.weight" : "ssm_in.weight";
      if (bind.has(b + wrong))
        return make_status(status_code::invalid_argument,
                           "layer %u is %s (head_count_kv %s 0) but has tensor '%s%s'", l,
                           rec ? "Mamba" : "attention", rec ? "==" : "!=", b.c_str(), wrong);
      jamba_layer& L = layers_[l];
      MNEMO_ASSIGN_OR_RETURN(L.attn_norm, bind.norm(b + "attn_norm.weight", E));
      MNEMO_ASSIGN_OR_RETURN(L.ffn_norm, bind.norm(b + "ffn_norm.weight", E));
      if (rec) {
        MNEMO_ASSIGN_OR_RETURN(
            auto mx, bind_mamba_mixer(f, b, hp_.ssm, hp_.n_embd, mixer_norms::required, &tiles_));
        L.mixer.emplace(std::move(mx));
      } else {
        MNEMO_RETURN_IF_ERROR(bind_attention_weights(bind, b, d, L.wq, L.wk, L.wv, L.wo));
      }
      MNEMO_RETURN_IF_ERROR(bind_ffn_weights(bind, b, d, L.gate, L.up, L.down));
    }
    return {};
  }

  std::optional<gguf::file> file_;
  weight_tiles tiles_;  // the q4_0 and k-quant weights' tiles (weight_tiles.hpp)
  jamba_hparams hp_;
  output_head head_;
  std::vector<jamba_layer> layers_;
};

}  // namespace mnemo::model
