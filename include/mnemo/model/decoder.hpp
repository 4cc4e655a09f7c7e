// The attention decoder every attention-family architecture runs (llama, qwen2, qwen3,
// phi3, gemma2, gemma3): RMSNorm, RoPE, grouped-query attention, a gated FFN and a tied
// or separate output, with what a recipe (decoder_recipe.hpp) switches on: biases,
// fused Q|K|V and gate|up, q/k norms, post-norms, soft-caps, the embedding scale and
// sliding-window layers. The forward pass follows llama.cpp's graphs
// (docs/model.md).
//
// It owns its gguf::file (weights are views into the mapping; q4_0 and k-quant ones
// also have tiles, weight_tiles.hpp) and is written against memory::kv_memory only: it
// writes each layer's K/V of the applied micro-batch and attends the views the memory
// gives, so it runs on a full cache, split streams, or the interleaved composite of
// window and global layers (decoder_memory.hpp).
//
//   MNEMO_ASSIGN_OR_RETURN(auto m, model::qwen2_model::open("qwen2.gguf"));
//   MNEMO_ASSIGN_OR_RETURN(auto ws, m.make_workspace(512));
//   ... memory.apply(u, tokens) ...
//   MNEMO_RETURN_IF_ERROR(m.forward(memory, u, ubatch, ws, n_threads));
//   // ws.logits(): [ubatch.n_outputs, n_vocab], output tokens in micro-batch order
#pragma once

#include <cstring>
#include <optional>
#include <string>
#include <vector>

#include "mnemo/base/aligned_buffer.hpp"
#include "mnemo/base/parallel.hpp"
#include "mnemo/batch/ubatch.hpp"
#include "mnemo/gguf/file.hpp"
#include "mnemo/memory/concepts.hpp"
#include "mnemo/model/decoder_blocks.hpp"
#include "mnemo/model/decoder_hparams.hpp"
#include "mnemo/model/decoder_memory.hpp"
#include "mnemo/model/decoder_recipe.hpp"
#include "mnemo/model/decoder_weights.hpp"
#include "mnemo/model/forward_hooks.hpp"
#include "mnemo/model/layers.hpp"
#include "mnemo/model/matmul.hpp"
#include "mnemo/model/output_head.hpp"
#include "mnemo/model/rope_cache.hpp"
#include "mnemo/model/tensor_binder.hpp"

namespace mnemo::model {

/// Activations of one micro-batch of up to n_ubatch tokens, reused by every call (a
/// warm decode allocates nothing).
class decoder_workspace : public forward_hooks {
 public:
  std::uint32_t n_ubatch() const noexcept { return a_.n_ubatch; }
  /// [n_outputs, n_vocab] logits of the last forward(), output tokens in micro-batch
  /// order.
  const float* logits() const noexcept { return a_.logits.data(); }
  std::uint32_t n_outputs() const noexcept { return a_.n_outputs; }

 private:
  friend class attention_decoder;
  decoder_activations a_;
  aligned_buffer<float> rope_loc_, rope_glb_;  // [n_ubatch, n_rot]: (cos, sin) per pair
};

class attention_decoder : public decoder_memory<attention_decoder> {
 public:
  using workspace = decoder_workspace;

  /// Reads the hyper-parameters by the recipe and checks every tensor's presence,
  /// shape and type. The recipe must outlive the model (recipes are static constants).
  static result<attention_decoder> load(gguf::file file, const decoder_recipe& recipe) {
    attention_decoder m;
    m.rc_ = &recipe;
    MNEMO_ASSIGN_OR_RETURN(m.hp_, read_decoder_hparams(file, recipe));
    m.file_.emplace(std::move(file));  // tensor views stay valid: the mapping does not move
    MNEMO_RETURN_IF_ERROR(m.bind_tensors());
    return m;
  }

  attention_decoder(attention_decoder&&) noexcept = default;
  attention_decoder& operator=(attention_decoder&&) noexcept = default;

  const decoder_recipe& recipe() const noexcept { return *rc_; }
  const decoder_hparams& hparams() const noexcept { return hp_; }
  std::uint32_t n_vocab() const noexcept { return hp_.n_vocab; }
  std::uint32_t n_embd() const noexcept { return hp_.n_embd; }
  std::uint32_t n_layer() const noexcept { return hp_.n_layer; }
  bool tied_output() const noexcept { return head_.tied; }
  const gguf::file& file() const noexcept { return *file_; }
  /// Bytes of the q4_0 and k-quant weights' tiles held besides the mapping
  /// (weight_tiles.hpp).
  std::size_t tile_bytes() const noexcept { return tiles_.bytes(); }

  result<decoder_workspace> make_workspace(std::uint32_t n_ubatch) const {
    if (n_ubatch == 0)
      return make_status(status_code::invalid_argument, "%s: n_ubatch must be > 0", name());
    decoder_workspace ws;
    const std::size_t rope_floats = std::size_t{n_ubatch} * hp_.n_rot;
    MNEMO_RETURN_IF_ERROR(ws.a_.allocate(n_ubatch, dims_));
    MNEMO_RETURN_IF_ERROR(allocate_buffers(
        {{&ws.rope_loc_, hp_.n_local() ? rope_floats : 0}, {&ws.rope_glb_, rope_floats}}));
    return ws;
  }

  /// Computes micro-batch u (already applied to `mem`): writes every layer's K/V into
  /// the memory, attends, and leaves the logits of the tokens with ub.output set in
  /// ws.logits(). A status for a micro-batch larger than the workspace, a token outside
  /// the vocabulary, or an attention error; the caller rolls the memory back.
  /// One parallel region for the whole micro-batch (run_team): the products and
  /// attention share its threads, the steps between them run on the calling thread.
  template <simd::isa_tag Isa = simd::native, memory::kv_memory Memory>
  status forward(Memory& mem, std::size_t u, const ubatch& ub, decoder_workspace& ws,
                 int n_threads) const {
    return run_team(n_threads, [&] { return forward_step<Isa>(mem, u, ub, ws, n_threads); });
  }

 protected:
  attention_decoder() = default;

 private:
  friend class decoder_memory<attention_decoder>;
  const char* name() const noexcept { return rc_->name.data(); }

  /// forward() on the threads of its team.
  template <simd::isa_tag Isa, memory::kv_memory Memory>
  status forward_step(Memory& mem, std::size_t u, const ubatch& ub, decoder_workspace& ws,
                      int n_threads) const {
    decoder_activations& a = ws.a_;
    const decoder_dims& d = dims_;
    const std::size_t n = ub.n_tokens(), E = d.n_embd, dk = hp_.d_k;
    const std::size_t qd = d.q_width(), kd = d.k_width(), vd = d.v_width();
    a.n_outputs = 0;
    if (n == 0) return {};
    if (n > a.n_ubatch)
      return make_status(status_code::invalid_argument,
                         "%s: micro-batch of %zu tokens exceeds the workspace's n_ubatch %u",
                         name(), n, a.n_ubatch);
    float *x = a.x.data(), *h = a.h.data(), *tmp = a.tmp.data();
    float *q = a.q.data(), *k = a.k.data(), *v = a.v.data();

    // Gemma: ggml_scale by the float sqrtf(n_embd), on token inputs only.
    MNEMO_RETURN_IF_ERROR(
        embed_tokens<Isa>(ub, head_.token_embd, E, hp_.n_vocab, x, name(), hp_.embd_scale));
    if (hp_.n_local() != 0) fill_rope_cache(hp_.rope_local, ub.pos.data(), n, ws.rope_loc_.data());
    fill_rope_cache(hp_.rope_global, ub.pos.data(), n, ws.rope_glb_.data());

    const attention::shape sh = d.attention_shape();
    const attention::rope_layout layout = rc_->rope;
    const attention::params ap = hp_.attention_params();
    for (std::size_t l = 0; l < hp_.n_layer; ++l) {
      MNEMO_RETURN_IF_ERROR(ws.between_layers(name(), l));
      const decoder_layer& L = layers_[l];
      const float* rope = hp_.local(l) ? ws.rope_loc_.data() : ws.rope_glb_.data();
      // Attention block: h = norm(x); q, k, v = W h (+ b); q, k: per-head norm, then
      // rope; x += [norm] (Wo attend(q, K, V) (+ bo)).
      norm_rows<Isa>(x, L.attn_norm.data(), h, n, E, hp_.rms_eps);
      project_qkv_layer<Isa>(L, n, a, n_threads);
      for (std::size_t t = 0; t < n; ++t) {
        const float* cs = rope + t * hp_.n_rot;
        for (std::size_t hd = 0; hd < hp_.n_head; ++hd) {
          float* qh = q + t * qd + hd * dk;
          if (!L.q_norm.empty()) rms_norm<Isa>(qh, L.q_norm.data(), qh, dk, hp_.rms_eps);
          rotate_head(layout, hp_.n_rot, cs, qh);
        }
        for (std::size_t hd = 0; hd < hp_.n_head_kv; ++hd) {
          float* kh = k + t * kd + hd * dk;
          if (!L.k_norm.empty()) rms_norm<Isa>(kh, L.k_norm.data(), kh, dk, hp_.rms_eps);
          rotate_head(layout, hp_.n_rot, cs, kh);
        }
        mem.template write_kv<Isa>(l, u, t, k + t * kd, v + t * vd);
      }
      MNEMO_RETURN_IF_ERROR(attend_layer<Isa>(mem, l, u, ub, sh, ap, a, n_threads, name()));
      project_out<Isa>(L.wo, n, d, a, n_threads);
      add_bias<Isa>(tmp, L.bo, n, E);
      if (!L.post_attn_norm.empty())
        norm_rows<Isa>(tmp, L.post_attn_norm.data(), tmp, n, E, hp_.rms_eps);
      add_rows<Isa>(x, tmp, n, E);

      // FFN block: x += [norm] (down(act(gate h) * up h)), h = norm(x).
      norm_rows<Isa>(x, L.ffn_norm.data(), h, n, E, hp_.rms_eps);
      ffn_layer<Isa>(L, n, a, n_threads);
      if (!L.post_ffw_norm.empty())
        norm_rows<Isa>(tmp, L.post_ffw_norm.data(), tmp, n, E, hp_.rms_eps);
      add_rows<Isa>(x, tmp, n, E);
    }

    // Output: only the rows that asked for logits go through the vocabulary product;
    // then the final soft-cap (Gemma 2, 3).
    const std::size_t n_out = head_.apply<Isa>(ub, x, h, E, hp_.rms_eps, a.logits.data(),
                                               hp_.n_vocab, n_threads, a.mm_ws);
    for (std::size_t r = 0; r < n_out; ++r)
      softcap(a.logits.data() + r * hp_.n_vocab, hp_.n_vocab, hp_.final_softcap);
    a.n_outputs = static_cast<std::uint32_t>(n_out);
    return {};
  }

  /// x[t] += b for n rows of width `width`; nothing when b is empty (no bias).
  template <simd::isa_tag Isa>
  static void add_bias(float* x, const std::vector<float>& b, std::size_t n, std::size_t width) {
    if (b.empty()) return;
    for (std::size_t t = 0; t < n; ++t) add_to<Isa>(x + t * width, b.data(), width);
  }

  /// a.q, a.k, a.v of the n tokens of a.h: three products in one group, or one fused
  /// product split per token; biases added to the f32 results before RoPE (build_qkv).
  template <simd::isa_tag Isa>
  void project_qkv_layer(const decoder_layer& L, std::size_t n, decoder_activations& a,
                         int n_threads) const {
    const decoder_dims& d = dims_;
    const std::size_t qd = d.q_width(), kd = d.k_width(), vd = d.v_width();
    if (!L.fused_qkv) {
      project_qkv<Isa>(L.wq, L.wk, L.wv, n, d, a, n_threads);
      add_bias<Isa>(a.q.data(), L.bq, n, qd);
      add_bias<Isa>(a.k.data(), L.bk, n, kd);
      add_bias<Isa>(a.v.data(), L.bv, n, vd);
      return;
    }
    const std::size_t w = qd + kd + vd;
    mul_mat<Isa>(L.wqkv, a.h.data(), d.n_embd, n, a.fused.data(), w, n_threads, a.mm_ws);
    add_bias<Isa>(a.fused.data(), L.bqkv, n, w);
    for (std::size_t t = 0; t < n; ++t) {
      const float* row = a.fused.data() + t * w;
      std::memcpy(a.q.data() + t * qd, row, qd * sizeof(float));
      std::memcpy(a.k.data() + t * kd, row + qd, kd * sizeof(float));
      std::memcpy(a.v.data() + t * vd, row + qd + kd, vd * sizeof(float));
    }
  }

  /// a.tmp = down(act(gate h) * up h) for the n tokens of a.h; a fused gate | up is
  /// one product whose first half is the gate (ggml_swiglu on the fused tensor).
  template <simd::isa_tag Isa>
  void ffn_layer(const decoder_layer& L, std::size_t n, decoder_activations& a,
                 int n_threads) const {
    const decoder_dims& d = dims_;
    const std::size_t F = d.n_ff;
    const bool gelu = rc_->activation == ffn_activation::gelu_tanh;
    auto glu = [gelu](float* g, const float* up, std::size_t m) {
      if (gelu)
        geglu<Isa>(g, up, m);
      else
        swiglu<Isa>(g, up, m);
    };
    if (!rc_->fused_gate_up) {
      gated_ffn<Isa>(L.gate, L.up, L.down, n, d, a, n_threads, glu);
      return;
    }
    mul_mat<Isa>(L.up, a.h.data(), d.n_embd, n, a.fused.data(), 2 * F, n_threads, a.mm_ws);
    parallel_for(n, n_threads, [&](std::size_t t, int) {
      float* g = a.fused.data() + t * 2 * F;
      glu(g, g + F, F);
      std::memcpy(a.gate.data() + t * F, g, F * sizeof(float));
    });
    mul_mat<Isa>(L.down, a.gate.data(), F, n, a.tmp.data(), d.n_embd, n_threads, a.mm_ws);
  }

  status bind_tensors() {
    const std::size_t E = hp_.n_embd, V = hp_.n_vocab;
    dims_ = dims_of(hp_);
    const tensor_binder bind(*file_, rc_->name, &tiles_);
    if (rc_->always_tied && bind.has("output.weight"))
      return make_status(status_code::invalid_argument,
                         "%s: the output is always token_embd; a file with 'output.weight' is "
                         "not a %s file",
                         name(), name());
    for (const char* longrope : {"rope_factors_long.weight", "rope_factors_short.weight"})
      if (bind.has(longrope))
        return make_status(status_code::unsupported, "%s: tensor '%s' (LongRoPE) is not supported",
                           name(), longrope);
    MNEMO_RETURN_IF_ERROR(head_.bind(bind, E, V));
    layers_.resize(hp_.n_layer);
    for (std::uint32_t l = 0; l < hp_.n_layer; ++l)
      MNEMO_RETURN_IF_ERROR(
          bind_decoder_layer(bind, *rc_, "blk." + std::to_string(l) + ".", dims_, layers_[l]));
    dims_.n_fused = fused_width(layers_, *rc_, dims_);
    return {};
  }

  const decoder_recipe* rc_ = nullptr;
  std::optional<gguf::file> file_;  // optional only because gguf::file has no empty state
  weight_tiles tiles_;              // the q4_0 and k-quant weights' tiles (weight_tiles.hpp)
  decoder_hparams hp_;
  decoder_dims dims_;
  output_head head_;
  std::vector<decoder_layer> layers_;
};

/// An attention_decoder that loads only files of one architecture, Arch::recipe; its
/// own type, so a context or a test names what it runs (llama_model, qwen2_model, ...).
template <class Arch>
class arch_model : public attention_decoder {
 public:
  static result<arch_model> load(gguf::file file) {
    MNEMO_ASSIGN_OR_RETURN(attention_decoder d,
                           attention_decoder::load(std::move(file), Arch::recipe));
    return arch_model(std::move(d));
  }
  static result<arch_model> open(const std::string& path, gguf::access access = gguf::access::map) {
    return open_model<arch_model>(path, access);
  }

 private:
  explicit arch_model(attention_decoder&& d) : attention_decoder(std::move(d)) {}
};

}  // namespace mnemo::model
