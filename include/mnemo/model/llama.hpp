// A Llama-style decoder (Touvron et al. 2023) for GGUF arch `llama`: RMSNorm, RoPE in
// normal (adjacent-pair) mode, grouped-query attention, SwiGLU FFN, tied or separate
// output, and the Mistral sliding window when the file sets one. The forward pass
// follows llama.cpp's llm_build_llama (fixtures/MODELS.md §3).
//
// The model owns its gguf::file (weights are views into the mapping; q4_0 ones also have
// tiles, q4_0_tiles.hpp) and is written against memory::kv_memory only: it writes each
// layer's K/V of the micro-batch the memory applied and attends the views the memory
// gives, whatever the strategy.
//
//   MNEMO_ASSIGN_OR_RETURN(auto m, model::llama_model::open("model.gguf"));
//   MNEMO_ASSIGN_OR_RETURN(auto ws, m.make_workspace(512));
//   ... memory.apply(u, tokens) ...
//   MNEMO_RETURN_IF_ERROR(m.forward(memory, u, ubatch, ws, n_threads));
//   // ws.logits(): [ubatch.n_outputs, n_vocab], output tokens in micro-batch order
#pragma once

#include <cmath>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

#include "mnemo/attention/attend.hpp"
#include "mnemo/base/aligned_buffer.hpp"
#include "mnemo/batch/ubatch.hpp"
#include "mnemo/evict/observe.hpp"
#include "mnemo/gguf/file.hpp"
#include "mnemo/memory/concepts.hpp"
#include "mnemo/memory/full_cache.hpp"
#include "mnemo/model/decoder_blocks.hpp"
#include "mnemo/model/forward_hooks.hpp"
#include "mnemo/model/layers.hpp"
#include "mnemo/model/llama_hparams.hpp"
#include "mnemo/model/matmul.hpp"
#include "mnemo/model/output_head.hpp"
#include "mnemo/model/tensor_binder.hpp"
#include "mnemo/model/weight.hpp"

namespace mnemo::model {

struct llama_layer {
  std::vector<float> attn_norm;  // [n_embd]
  std::vector<float> ffn_norm;   // [n_embd]
  weight wq;                     // [n_embd, n_head * d_k]  (ggml ne)
  weight wk;                     // [n_embd, n_head_kv * d_k]
  weight wv;                     // [n_embd, n_head_kv * d_v]
  weight wo;                     // [n_head * d_v, n_embd]
  weight gate, up;               // [n_embd, n_ff]
  weight down;                   // [n_ff, n_embd]
};

/// Activations of one micro-batch of up to n_ubatch tokens, reused by every call
/// (a warm decode allocates nothing).
class llama_workspace : public forward_hooks {
 public:
  std::uint32_t n_ubatch() const noexcept { return a_.n_ubatch; }
  /// [n_outputs, n_vocab] logits of the last forward(), its output tokens in
  /// micro-batch order.
  const float* logits() const noexcept { return a_.logits.data(); }
  std::uint32_t n_outputs() const noexcept { return a_.n_outputs; }

 private:
  friend class llama_model;
  decoder_activations a_;
  aligned_buffer<float> rope_;  // [n_ubatch, n_rot]: (cos, sin) per pair
};

class llama_model {
 public:
  using workspace = llama_workspace;

  /// Reads the hyper-parameters and checks every tensor's presence, shape and type.
  static result<llama_model> load(gguf::file file) {
    llama_model m;
    MNEMO_ASSIGN_OR_RETURN(m.hp_, read_llama_hparams(file));
    m.file_.emplace(std::move(file));  // tensor views stay valid: the mapping does not move
    MNEMO_RETURN_IF_ERROR(m.bind_tensors());
    return m;
  }
  static result<llama_model> open(const std::string& path,
                                  gguf::access access = gguf::access::map) {
    return open_model<llama_model>(path, access);
  }

  llama_model(llama_model&&) noexcept = default;
  llama_model& operator=(llama_model&&) noexcept = default;

  const llama_hparams& hparams() const noexcept { return hp_; }
  std::uint32_t n_vocab() const noexcept { return hp_.n_vocab; }
  std::uint32_t n_embd() const noexcept { return hp_.n_embd; }
  std::uint32_t n_layer() const noexcept { return hp_.n_layer; }
  bool tied_output() const noexcept { return head_.tied; }
  const gguf::file& file() const noexcept { return *file_; }
  /// Bytes of the q4_0 weights' tiles held besides the mapping (q4_0_tiles.hpp).
  std::size_t tile_bytes() const noexcept { return tiles_.bytes(); }

  /// The K/V geometry a memory needs for this model.
  memory::kv_shape kv_shape() const noexcept {
    return {hp_.n_layer, hp_.n_head_kv, hp_.d_k, hp_.d_v};
  }
  /// A full cache of `size` cells for this model (keys rotated as the model does).
  memory::full_cache_config full_cache_config(std::size_t size, seq_id n_seq_max) const {
    memory::full_cache_config c;
    c.shape = kv_shape();
    c.size = size;
    c.n_seq_max = n_seq_max;
    c.rope = hp_.rope();
    return c;
  }

  result<llama_workspace> make_workspace(std::uint32_t n_ubatch) const {
    if (n_ubatch == 0)
      return make_status(status_code::invalid_argument, "llama: n_ubatch must be > 0");
    llama_workspace ws;
    MNEMO_RETURN_IF_ERROR(ws.a_.allocate(n_ubatch, dims_of(hp_)));
    MNEMO_RETURN_IF_ERROR(allocate_buffers({{&ws.rope_, std::size_t{n_ubatch} * hp_.n_rot}}));
    return ws;
  }

  /// Computes micro-batch u (already applied to `mem`): writes every layer's K/V into
  /// the memory, attends, and leaves the logits of the tokens with ub.output set in
  /// ws.logits(). A status for a micro-batch larger than the workspace, a token id
  /// outside the vocabulary, or an attention error; the caller rolls the memory back.
  template <simd::isa_tag Isa = simd::native, memory::kv_memory Memory>
  status forward(Memory& mem, std::size_t u, const ubatch& ub, llama_workspace& ws,
                 int n_threads) const {
    decoder_activations& a = ws.a_;
    const decoder_dims d = dims_of(hp_);
    const std::size_t n = ub.n_tokens(), E = d.n_embd, kd = d.k_width(), vd = d.v_width();
    a.n_outputs = 0;
    if (n == 0) return {};
    if (n > a.n_ubatch)
      return make_status(status_code::invalid_argument,
                         "llama: micro-batch of %zu tokens exceeds the workspace's n_ubatch %u", n,
                         a.n_ubatch);
    float *x = a.x.data(), *h = a.h.data(), *q = a.q.data(), *k = a.k.data(), *v = a.v.data();

    MNEMO_RETURN_IF_ERROR(embed_tokens<Isa>(ub, head_.token_embd, E, hp_.n_vocab, x, "llama"));
    fill_rope(ub, ws.rope_.data());

    const attention::shape sh = d.attention_shape();
    const attention::params ap = hp_.attention_params();
    for (std::size_t l = 0; l < hp_.n_layer; ++l) {
      MNEMO_RETURN_IF_ERROR(ws.between_layers("llama", l));
      const llama_layer& L = layers_[l];
      // Attention block: h = norm(x); q, k, v = W h; rope(q, k); x += Wo attend(q, K, V).
      norm_rows<Isa>(x, L.attn_norm.data(), h, n, E, hp_.rms_eps);
      project_qkv<Isa>(L.wq, L.wk, L.wv, n, d, a, n_threads);
      for (std::size_t t = 0; t < n; ++t) {
        const float* cs = ws.rope_.data() + t * hp_.n_rot;
        for (std::size_t hd = 0; hd < hp_.n_head; ++hd)
          rotate(q + t * d.q_width() + hd * hp_.d_k, cs);
        for (std::size_t hd = 0; hd < hp_.n_head_kv; ++hd) rotate(k + t * kd + hd * hp_.d_k, cs);
        mem.template write_kv<Isa>(l, u, t, k + t * kd, v + t * vd);
      }
      MNEMO_RETURN_IF_ERROR(attend_layer<Isa>(mem, l, u, ub, sh, ap, a, n_threads, "llama"));
      project_out<Isa>(L.wo, n, d, a, n_threads);
      add_rows<Isa>(x, a.tmp.data(), n, E);

      // FFN block: x += down(silu(gate h) * up h), h = norm(x).
      norm_rows<Isa>(x, L.ffn_norm.data(), h, n, E, hp_.rms_eps);
      gated_ffn<Isa>(L.gate, L.up, L.down, n, d, a, n_threads,
                     [](float* g, const float* up, std::size_t F) { swiglu<Isa>(g, up, F); });
      add_rows<Isa>(x, a.tmp.data(), n, E);
    }

    // Output: only the rows that asked for logits go through the vocabulary product.
    const std::size_t n_out = head_.apply<Isa>(ub, x, h, E, hp_.rms_eps, a.logits.data(),
                                               hp_.n_vocab, n_threads, a.mm_ws);
    a.n_outputs = static_cast<std::uint32_t>(n_out);
    return {};
  }

 private:
  llama_model() = default;

  /// Per token, (cos, sin) of every rotated pair, computed as ggml does: the angle
  /// p * freq_scale * base^(-2i/n_rot) as a float running product (ggml_rope_cache_init).
  /// Measured (MODELS.md §2): this halves the f32 difference to llama.cpp at position
  /// 300 compared with angles in double.
  void fill_rope(const ubatch& ub, float* cs) const {
    const float theta_scale = std::pow(hp_.rope_freq_base, -2.0f / static_cast<float>(hp_.n_rot));
    for (std::uint32_t t = 0; t < ub.n_tokens(); ++t) {
      float theta = static_cast<float>(ub.pos[t]);
      float* row = cs + std::size_t{t} * hp_.n_rot;
      for (std::size_t i = 0; i < hp_.n_rot; i += 2) {
        const float a = hp_.rope_freq_scale * theta;
        row[i] = std::cos(a);
        row[i + 1] = std::sin(a);
        theta *= theta_scale;
      }
    }
  }

  /// Normal-mode RoPE on one head [d_k]: pairs (2i, 2i + 1), the rest unchanged.
  void rotate(float* x, const float* cs) const noexcept {
    for (std::size_t i = 0; i < hp_.n_rot; i += 2) {
      const float x0 = x[i], x1 = x[i + 1], c = cs[i], s = cs[i + 1];
      x[i] = x0 * c - x1 * s;
      x[i + 1] = x0 * s + x1 * c;
    }
  }

  status bind_tensors() {
    const std::size_t E = hp_.n_embd, V = hp_.n_vocab;
    const decoder_dims d = dims_of(hp_);
    const tensor_binder bind(*file_, "llama", &tiles_);
    MNEMO_RETURN_IF_ERROR(head_.bind(bind, E, V));
    layers_.resize(hp_.n_layer);
    for (std::uint32_t l = 0; l < hp_.n_layer; ++l) {
      const std::string b = "blk." + std::to_string(l) + ".";
      // Tensors this decoder would silently ignore are refused instead.
      for (const char* extra : {"attn_q.bias", "attn_k.bias", "attn_v.bias", "attn_output.bias",
                                "ffn_gate_inp.weight", "attn_q_norm.weight", "attn_k_norm.weight"})
        if (bind.has(b + extra))
          return make_status(status_code::unsupported,
                             "llama: tensor '%s%s' (biases, experts or QK-norm) is not supported",
                             b.c_str(), extra);
      llama_layer& L = layers_[l];
      MNEMO_ASSIGN_OR_RETURN(L.attn_norm, bind.norm(b + "attn_norm.weight", E));
      MNEMO_ASSIGN_OR_RETURN(L.ffn_norm, bind.norm(b + "ffn_norm.weight", E));
      MNEMO_RETURN_IF_ERROR(bind_attention_weights(bind, b, d, L.wq, L.wk, L.wv, L.wo));
      MNEMO_RETURN_IF_ERROR(bind_ffn_weights(bind, b, d, L.gate, L.up, L.down));
    }
    return {};
  }

  std::optional<gguf::file> file_;  // optional only because gguf::file has no empty state
  weight_tiles tiles_;              // the q4_0 weights' tiles (q4_0_tiles.hpp)
  llama_hparams hp_;
  output_head head_;
  std::vector<llama_layer> layers_;
};

}  // namespace mnemo::model
