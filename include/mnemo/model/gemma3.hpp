// A Gemma-3-style decoder (Gemma Team 2025) for GGUF arch `gemma3`: interleaved
// sliding-window attention (local layers with a window, global layers without),
// pre- and post-norms around attention and FFN, RMSNorm on each query and key head,
// NeoX RoPE with one base for local and one for global layers, GeGLU with the tanh
// GELU, sqrt(n_embd) embedding scale, tied output and final logit soft-capping. The
// forward pass follows llama.cpp's llama_model_gemma3::graph<iswa> (fixtures/MODELS.md §4).
//
// Like llama_model it is written against memory::kv_memory only, so it runs on
//  - the interleaved composite: global layers on a full cache, local layers on a
//    window-sized sliding_window (iswa_memory<KE>, make_iswa), or
//  - the same on split streams: global layers on split_stream, local layers on a
//    window per sequence (iswa_split_memory<KE>, make_iswa_split), or
//  - one full cache for every layer (the window is then a mask only), for comparison.
// The window is the model's: attention params come from the hyper-parameters, and a
// memory that reports a window for a layer (layered::window) must agree with it.
//
//   MNEMO_ASSIGN_OR_RETURN(auto m, model::gemma3_model::open("gemma3.gguf"));
//   MNEMO_ASSIGN_OR_RETURN(auto mem, m.make_iswa<dtype::f16>(32768, 1, 512));
//   MNEMO_ASSIGN_OR_RETURN(auto ctx, (context<model::gemma3_model, decltype(mem)>::make(
//                                        m, std::move(mem), {.n_ubatch = 512})));
#pragma once

#include <cmath>
#include <optional>
#include <string>
#include <vector>

#include "mnemo/attention/attend.hpp"
#include "mnemo/base/aligned_buffer.hpp"
#include "mnemo/base/parallel.hpp"
#include "mnemo/batch/ubatch.hpp"
#include "mnemo/gguf/file.hpp"
#include "mnemo/memory/concepts.hpp"
#include "mnemo/memory/full_cache.hpp"
#include "mnemo/memory/layered.hpp"
#include "mnemo/memory/sliding_window.hpp"
#include "mnemo/memory/split_stream.hpp"
#include "mnemo/memory/split_window.hpp"
#include "mnemo/model/decoder_blocks.hpp"
#include "mnemo/model/forward_hooks.hpp"
#include "mnemo/model/gemma3_hparams.hpp"
#include "mnemo/model/layers.hpp"
#include "mnemo/model/matmul.hpp"
#include "mnemo/model/output_head.hpp"
#include "mnemo/model/tensor_binder.hpp"
#include "mnemo/model/weight.hpp"

namespace mnemo::model {

struct gemma3_layer {
  std::vector<float> attn_norm, post_attn_norm;  // [n_embd]
  std::vector<float> ffn_norm, post_ffw_norm;    // [n_embd]
  std::vector<float> q_norm, k_norm;             // [d_k]
  weight wq;                                     // [n_embd, n_head * d_k]  (ggml ne)
  weight wk;                                     // [n_embd, n_head_kv * d_k]
  weight wv;                                     // [n_embd, n_head_kv * d_v]
  weight wo;                                     // [n_head * d_v, n_embd]
  weight gate, up;                               // [n_embd, n_ff]
  weight down;                                   // [n_ff, n_embd]
};

/// Activations of one micro-batch of up to n_ubatch tokens, reused by every call.
class gemma3_workspace : public forward_hooks {
 public:
  std::uint32_t n_ubatch() const noexcept { return a_.n_ubatch; }
  /// [n_outputs, n_vocab] soft-capped logits of the last forward(), output tokens in
  /// micro-batch order.
  const float* logits() const noexcept { return a_.logits.data(); }
  std::uint32_t n_outputs() const noexcept { return a_.n_outputs; }

 private:
  friend class gemma3_model;
  decoder_activations a_;
  aligned_buffer<float> rope_loc_, rope_glb_;  // [n_ubatch, n_rot]: (cos, sin) per pair
};

class gemma3_model {
 public:
  using workspace = gemma3_workspace;
  /// Global layers (part 0) on a full cache, local layers (part 1) on a sliding window.
  template <class KE, class VE = KE>
  using iswa_memory = memory::layered<memory::full_cache<KE, VE>, memory::sliding_window<KE, VE>>;
  /// Global layers (part 0) on split streams, local layers (part 1) on a window per
  /// sequence.
  template <class KE, class VE = KE>
  using iswa_split_memory =
      memory::layered<memory::split_stream<KE, VE>, memory::split_window<KE, VE>>;

  /// Reads the hyper-parameters and checks every tensor's presence, shape and type.
  static result<gemma3_model> load(gguf::file file) {
    gemma3_model m;
    MNEMO_ASSIGN_OR_RETURN(m.hp_, read_gemma3_hparams(file));
    m.file_.emplace(std::move(file));  // tensor views stay valid: the mapping does not move
    MNEMO_RETURN_IF_ERROR(m.bind_tensors());
    return m;
  }
  static result<gemma3_model> open(const std::string& path,
                                   gguf::access access = gguf::access::map) {
    return open_model<gemma3_model>(path, access);
  }

  gemma3_model(gemma3_model&&) noexcept = default;
  gemma3_model& operator=(gemma3_model&&) noexcept = default;

  const gemma3_hparams& hparams() const noexcept { return hp_; }
  std::uint32_t n_vocab() const noexcept { return hp_.n_vocab; }
  std::uint32_t n_embd() const noexcept { return hp_.n_embd; }
  std::uint32_t n_layer() const noexcept { return hp_.n_layer; }
  const gguf::file& file() const noexcept { return *file_; }
  /// Bytes of the q4_0 weights' tiles held besides the mapping (q4_0_tiles.hpp).
  std::size_t tile_bytes() const noexcept { return tiles_.bytes(); }

  // ---- memories for this model ---------------------------------------------------

  memory::kv_shape kv_shape(std::size_t n_layers) const noexcept {
    return {n_layers, hp_.n_head_kv, hp_.d_k, hp_.d_v};
  }
  /// One full cache of `size` cells for every layer (the window is a mask only). Local
  /// and global layers rotate keys with different bases, so such a cache can K-shift
  /// only when they agree (shift_supported, otherwise seq_add / seq_div are refused).
  memory::full_cache_config full_cache_config(std::size_t size, seq_id n_seq_max) const {
    memory::full_cache_config c;
    c.shape = kv_shape(hp_.n_layer);
    c.size = size;
    c.n_seq_max = n_seq_max;
    c.rope = hp_.rope(hp_.n_layer - 1);
    c.shift_supported = hp_.uniform_rope();
    return c;
  }
  /// The global part of the composite: n_ctx cells for the global layers.
  memory::full_cache_config global_cache_config(std::size_t n_ctx, seq_id n_seq_max) const {
    memory::full_cache_config c;
    c.shape = kv_shape(hp_.n_global());
    c.size = n_ctx;
    c.n_seq_max = n_seq_max;
    c.rope = hp_.rope(global_layer());
    return c;
  }
  /// The local part: pad(n_swa * n_seq_max + n_ubatch, 256) cells (min n_ctx, spec
  /// §4.1), or `size` cells when given (tests use small sizes so that cells are reused).
  memory::sliding_window_config window_config(std::size_t n_ctx, seq_id n_seq_max,
                                              std::uint32_t n_ubatch, std::size_t size = 0) const {
    memory::sliding_window_config c;
    c.shape = kv_shape(hp_.n_local());
    c.n_ctx = n_ctx;
    c.n_seq_max = n_seq_max;
    c.n_ubatch = n_ubatch;
    c.window = attention::window_kind::standard;
    c.n_swa = static_cast<pos_t>(hp_.n_swa);
    c.size = size;
    c.rope = hp_.rope(local_layer());
    return c;
  }
  /// layer -> part of iswa_memory: 0 global, 1 local.
  std::vector<std::uint8_t> layer_parts() const {
    std::vector<std::uint8_t> parts(hp_.n_layer);
    for (std::size_t l = 0; l < hp_.n_layer; ++l) parts[l] = hp_.local(l) ? 1 : 0;
    return parts;
  }
  /// The interleaved composite. Needs both kinds of layer (a model with only global
  /// layers runs on full_cache_config alone).
  template <class KE, class VE = KE>
  result<iswa_memory<KE, VE>> make_iswa(std::size_t n_ctx, seq_id n_seq_max, std::uint32_t n_ubatch,
                                        std::size_t window_size = 0) const {
    if (hp_.n_local() == 0 || hp_.n_global() == 0)
      return make_status(status_code::invalid_argument,
                         "gemma3: the interleaved memory needs local and global layers (this "
                         "model has %u and %u); use one full cache",
                         hp_.n_local(), hp_.n_global());
    using full_t = memory::full_cache<KE, VE>;
    using window_t = memory::sliding_window<KE, VE>;
    MNEMO_ASSIGN_OR_RETURN(full_t g, full_t::make(global_cache_config(n_ctx, n_seq_max)));
    MNEMO_ASSIGN_OR_RETURN(window_t w,
                           window_t::make(window_config(n_ctx, n_seq_max, n_ubatch, window_size)));
    return iswa_memory<KE, VE>::make(layer_parts(), std::move(g), std::move(w));
  }
  /// The interleaved composite on split streams: n_ctx_seq cells per sequence for the
  /// global layers, pad(n_swa + n_ubatch, 256) per sequence (min n_ctx_seq) or
  /// `window_size` for the local ones.
  template <class KE, class VE = KE>
  result<iswa_split_memory<KE, VE>> make_iswa_split(std::size_t n_ctx_seq, seq_id n_seq_max,
                                                    std::uint32_t n_ubatch,
                                                    std::size_t window_size = 0) const {
    if (hp_.n_local() == 0 || hp_.n_global() == 0)
      return make_status(status_code::invalid_argument,
                         "gemma3: the interleaved memory needs local and global layers (this "
                         "model has %u and %u); use one split-stream cache",
                         hp_.n_local(), hp_.n_global());
    const memory::full_cache_config g = global_cache_config(n_ctx_seq, n_seq_max);
    memory::split_stream_config gc;
    gc.shape = g.shape;
    gc.size_per_stream = n_ctx_seq;
    gc.n_seq_max = n_seq_max;
    gc.rope = g.rope;
    memory::split_window_config wc;
    wc.stream = window_config(n_ctx_seq, 1, n_ubatch, window_size);
    wc.n_seq_max = n_seq_max;
    using split_t = memory::split_stream<KE, VE>;
    using window_t = memory::split_window<KE, VE>;
    MNEMO_ASSIGN_OR_RETURN(split_t gs, split_t::make(gc));
    MNEMO_ASSIGN_OR_RETURN(window_t ws, window_t::make(wc));
    return iswa_split_memory<KE, VE>::make(layer_parts(), std::move(gs), std::move(ws));
  }

  result<gemma3_workspace> make_workspace(std::uint32_t n_ubatch) const {
    if (n_ubatch == 0)
      return make_status(status_code::invalid_argument, "gemma3: n_ubatch must be > 0");
    gemma3_workspace ws;
    const std::size_t rope_floats = std::size_t{n_ubatch} * hp_.n_rot;
    MNEMO_RETURN_IF_ERROR(ws.a_.allocate(n_ubatch, dims_of(hp_)));
    MNEMO_RETURN_IF_ERROR(
        allocate_buffers({{&ws.rope_loc_, rope_floats}, {&ws.rope_glb_, rope_floats}}));
    return ws;
  }

  /// Computes micro-batch u (already applied to `mem`): writes every layer's K/V into
  /// the memory, attends, and leaves the soft-capped logits of the tokens with
  /// ub.output set in ws.logits(). A status for a micro-batch larger than the workspace,
  /// a token outside the vocabulary, a memory whose window disagrees with the model's,
  /// or an attention error; the caller rolls the memory back.
  template <simd::isa_tag Isa = simd::native, memory::kv_memory Memory>
  status forward(Memory& mem, std::size_t u, const ubatch& ub, gemma3_workspace& ws,
                 int n_threads) const {
    decoder_activations& a = ws.a_;
    const decoder_dims d = dims_of(hp_);
    const std::size_t n = ub.n_tokens(), E = d.n_embd, dk = hp_.d_k;
    const std::size_t qd = d.q_width(), kd = d.k_width(), vd = d.v_width();
    a.n_outputs = 0;
    if (n == 0) return {};
    if (n > a.n_ubatch)
      return make_status(status_code::invalid_argument,
                         "gemma3: micro-batch of %zu tokens exceeds the workspace's n_ubatch %u", n,
                         a.n_ubatch);
    MNEMO_RETURN_IF_ERROR(check_memory_windows(mem));
    float *x = a.x.data(), *h = a.h.data(), *tmp = a.tmp.data();
    float *q = a.q.data(), *k = a.k.data(), *v = a.v.data();

    // ggml_scale by the float sqrtf(n_embd), on token inputs only (MODELS.md §4).
    MNEMO_RETURN_IF_ERROR(embed_tokens<Isa>(ub, head_.token_embd, E, hp_.n_vocab, x, "gemma3",
                                            std::sqrt(static_cast<float>(E))));
    fill_rope(ub, hp_.rope_base_swa, 1.0f, ws.rope_loc_.data());
    fill_rope(ub, hp_.rope_base, hp_.rope_scale, ws.rope_glb_.data());

    const attention::shape sh = d.attention_shape();
    for (std::size_t l = 0; l < hp_.n_layer; ++l) {
      MNEMO_RETURN_IF_ERROR(ws.between_layers("gemma3", l));
      const gemma3_layer& L = layers_[l];
      const float* rope = hp_.local(l) ? ws.rope_loc_.data() : ws.rope_glb_.data();
      // Attention block: h = norm(x); q, k, v = W h; q, k: per-head norm, then rope;
      // x += norm(Wo attend(q, K, V)) (the post-attention norm).
      norm_rows<Isa>(x, L.attn_norm.data(), h, n, E, hp_.rms_eps);
      project_qkv<Isa>(L.wq, L.wk, L.wv, n, d, a, n_threads);
      for (std::size_t t = 0; t < n; ++t) {
        const float* cs = rope + t * hp_.n_rot;
        for (std::size_t hd = 0; hd < hp_.n_head; ++hd) {
          float* qh = q + t * qd + hd * dk;
          rms_norm<Isa>(qh, L.q_norm.data(), qh, dk, hp_.rms_eps);
          rotate_neox(qh, cs);
        }
        for (std::size_t hd = 0; hd < hp_.n_head_kv; ++hd) {
          float* kh = k + t * kd + hd * dk;
          rms_norm<Isa>(kh, L.k_norm.data(), kh, dk, hp_.rms_eps);
          rotate_neox(kh, cs);
        }
        mem.template write_kv<Isa>(l, u, t, k + t * kd, v + t * vd);
      }
      // llama.cpp scales q by attn_scale and attends with kq_scale 1: the same product
      // (exactly so for the power-of-two 1/sqrt(d_k) of d_k = 64, 256).
      MNEMO_RETURN_IF_ERROR(
          attend_layer<Isa>(mem, l, u, ub, sh, hp_.attention_params(l), a, n_threads, "gemma3"));
      project_out<Isa>(L.wo, n, d, a, n_threads);
      norm_rows<Isa>(tmp, L.post_attn_norm.data(), tmp, n, E, hp_.rms_eps);
      add_rows<Isa>(x, tmp, n, E);

      // FFN block: x += norm(down(gelu(gate h) * up h)), h = norm(x).
      norm_rows<Isa>(x, L.ffn_norm.data(), h, n, E, hp_.rms_eps);
      gated_ffn<Isa>(L.gate, L.up, L.down, n, d, a, n_threads,
                     [](float* g, const float* up, std::size_t F) { geglu<Isa>(g, up, F); });
      norm_rows<Isa>(tmp, L.post_ffw_norm.data(), tmp, n, E, hp_.rms_eps);
      add_rows<Isa>(x, tmp, n, E);
    }

    // Output: only the rows that asked for logits go through the (tied) vocabulary
    // product; then the final soft-cap.
    const std::size_t n_out = head_.apply<Isa>(ub, x, h, E, hp_.rms_eps, a.logits.data(),
                                               hp_.n_vocab, n_threads, a.mm_ws);
    for (std::size_t r = 0; r < n_out; ++r)
      softcap(a.logits.data() + r * hp_.n_vocab, hp_.n_vocab, hp_.final_softcap);
    a.n_outputs = static_cast<std::uint32_t>(n_out);
    return {};
  }

 private:
  gemma3_model() = default;

  std::size_t global_layer() const noexcept {
    for (std::size_t l = 0; l < hp_.n_layer; ++l)
      if (!hp_.local(l)) return l;
    return 0;
  }
  std::size_t local_layer() const noexcept {
    for (std::size_t l = 0; l < hp_.n_layer; ++l)
      if (hp_.local(l)) return l;
    return 0;
  }

  /// A memory that applies a window to a layer (layered::window) must hold at least
  /// what the model's mask keeps there: no window on global layers, and a standard
  /// window of >= n_swa on local ones. Memories without windows hold everything.
  template <class Memory>
  status check_memory_windows(const Memory& mem) const {
    if constexpr (requires { mem.window(std::size_t{0}); }) {
      for (std::size_t l = 0; l < hp_.n_layer; ++l) {
        const auto [kind, n_swa] = mem.window(l);
        if (kind == attention::window_kind::none) continue;
        if (!hp_.local(l) || kind != attention::window_kind::standard ||
            n_swa < static_cast<pos_t>(hp_.n_swa))
          return make_status(status_code::invalid_argument,
                             "gemma3: the memory keeps a %s window of %d for layer %zu, which "
                             "attends %s",
                             attention::to_string(kind).data(), n_swa, l,
                             hp_.local(l) ? "a standard window" : "every position (global)");
      }
    } else if constexpr (requires { mem.window(); }) {  // one window memory for every layer
      if (mem.window() != attention::window_kind::none && hp_.n_global() != 0)
        return make_status(status_code::invalid_argument,
                           "gemma3: a %s window memory cannot hold the %u global layers (use "
                           "make_iswa or one full cache)",
                           attention::to_string(mem.window()).data(), hp_.n_global());
    }
    return {};
  }

  /// Per token, (cos, sin) of every rotated pair, as ggml_rope_cache_init: the angle
  /// p * freq_scale * base^(-2i/n_rot) as a float running product (MODELS.md §2).
  void fill_rope(const ubatch& ub, float base, float freq_scale, float* cs) const {
    const float theta_scale = std::pow(base, -2.0f / static_cast<float>(hp_.n_rot));
    for (std::uint32_t t = 0; t < ub.n_tokens(); ++t) {
      float theta = static_cast<float>(ub.pos[t]);
      float* row = cs + std::size_t{t} * hp_.n_rot;
      for (std::size_t i = 0; i < hp_.n_rot; i += 2) {
        const float a = freq_scale * theta;
        row[i] = std::cos(a);
        row[i + 1] = std::sin(a);
        theta *= theta_scale;
      }
    }
  }

  /// NeoX-mode RoPE on one head [d_k]: pair i is (i, i + n_rot / 2), turned by angle i.
  void rotate_neox(float* x, const float* cs) const noexcept {
    const std::size_t half = hp_.n_rot / 2;
    for (std::size_t i = 0; i < half; ++i) {
      const float x0 = x[i], x1 = x[i + half], c = cs[2 * i], s = cs[2 * i + 1];
      x[i] = x0 * c - x1 * s;
      x[i + half] = x0 * s + x1 * c;
    }
  }

  status bind_tensors() {
    const std::size_t E = hp_.n_embd, V = hp_.n_vocab, dk = hp_.d_k;
    const decoder_dims d = dims_of(hp_);
    const tensor_binder bind(*file_, "gemma3", &tiles_);
    MNEMO_RETURN_IF_ERROR(head_.bind(bind, E, V));
    layers_.resize(hp_.n_layer);
    for (std::uint32_t l = 0; l < hp_.n_layer; ++l) {
      const std::string b = "blk." + std::to_string(l) + ".";
      for (const char* extra :
           {"attn_q.bias", "attn_k.bias", "attn_v.bias", "attn_output.bias", "ffn_gate_inp.weight"})
        if (bind.has(b + extra))
          return make_status(status_code::unsupported,
                             "gemma3: tensor '%s%s' (biases or experts) is not supported",
                             b.c_str(), extra);
      gemma3_layer& L = layers_[l];
      MNEMO_ASSIGN_OR_RETURN(L.attn_norm, bind.norm(b + "attn_norm.weight", E));
      MNEMO_ASSIGN_OR_RETURN(L.post_attn_norm, bind.norm(b + "post_attention_norm.weight", E));
      MNEMO_ASSIGN_OR_RETURN(L.ffn_norm, bind.norm(b + "ffn_norm.weight", E));
      MNEMO_ASSIGN_OR_RETURN(L.post_ffw_norm, bind.norm(b + "post_ffw_norm.weight", E));
      MNEMO_ASSIGN_OR_RETURN(L.q_norm, bind.norm(b + "attn_q_norm.weight", dk));
      MNEMO_ASSIGN_OR_RETURN(L.k_norm, bind.norm(b + "attn_k_norm.weight", dk));
      MNEMO_RETURN_IF_ERROR(bind_attention_weights(bind, b, d, L.wq, L.wk, L.wv, L.wo));
      MNEMO_RETURN_IF_ERROR(bind_ffn_weights(bind, b, d, L.gate, L.up, L.down));
    }
    return {};
  }

  std::optional<gguf::file> file_;  // optional only because gguf::file has no empty state
  weight_tiles tiles_;              // the q4_0 weights' tiles (q4_0_tiles.hpp)
  gemma3_hparams hp_;
  output_head head_;
  std::vector<gemma3_layer> layers_;
};

}  // namespace mnemo::model
