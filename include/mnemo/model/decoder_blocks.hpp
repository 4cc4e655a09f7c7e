// The pieces every attention decoder (llama, gemma3, jamba) runs per layer, written
// once: the micro-batch activations, row-wise norm and residual add, the Q/K/V
// projections, attention through whatever views the memory hands out (with the
// eviction observer when the memory is a bounded cache), and the gated FFN.
// What differs between architectures (RoPE mode, q/k norms, post-norms, the gate's
// activation) stays in each model.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>

#include "mnemo/attention/attend.hpp"
#include "mnemo/base/aligned_buffer.hpp"
#include "mnemo/base/parallel.hpp"
#include "mnemo/base/status.hpp"
#include "mnemo/batch/ubatch.hpp"
#include "mnemo/memory/concepts.hpp"
#include "mnemo/model/attend_observed.hpp"
#include "mnemo/model/layers.hpp"
#include "mnemo/model/matmul.hpp"
#include "mnemo/model/tensor_binder.hpp"
#include "mnemo/model/weight.hpp"

namespace mnemo::model {

/// The sizes a decoder's activations depend on.
struct decoder_dims {
  std::size_t n_embd = 0, n_head = 0, n_head_kv = 0, d_k = 0, d_v = 0, n_ff = 0, n_vocab = 0;
  std::size_t n_fused = 0;  // widest fused product (Q|K|V, gate|up) a token needs; 0: none

  std::size_t q_width() const noexcept { return n_head * d_k; }     // a token's queries
  std::size_t k_width() const noexcept { return n_head_kv * d_k; }  // its keys
  std::size_t v_width() const noexcept { return n_head_kv * d_v; }  // its values
  std::size_t attn_width() const noexcept { return n_head * d_v; }  // attention output
  attention::shape attention_shape() const noexcept { return {n_head, n_head_kv, d_k, d_v}; }
};

/// The dims of an architecture's hyper-parameters (llama, gemma3, jamba name them alike).
template <class Hparams>
decoder_dims dims_of(const Hparams& hp) noexcept {
  return {hp.n_embd, hp.n_head, hp.n_head_kv, hp.d_k, hp.d_v, hp.n_ff, hp.n_vocab};
}

/// Binds layer `prefix` ("blk.N.")'s attention projections, shapes checked:
/// wq, wk, wv [n_embd -> heads x d], wo [n_head d_v -> n_embd] (ggml names).
inline status bind_attention_weights(const tensor_binder& bind, const std::string& prefix,
                                     const decoder_dims& d, weight& wq, weight& wk, weight& wv,
                                     weight& wo) {
  MNEMO_ASSIGN_OR_RETURN(wq, bind.matrix(prefix + "attn_q.weight", d.n_embd, d.q_width()));
  MNEMO_ASSIGN_OR_RETURN(wk, bind.matrix(prefix + "attn_k.weight", d.n_embd, d.k_width()));
  MNEMO_ASSIGN_OR_RETURN(wv, bind.matrix(prefix + "attn_v.weight", d.n_embd, d.v_width()));
  MNEMO_ASSIGN_OR_RETURN(wo, bind.matrix(prefix + "attn_output.weight", d.attn_width(), d.n_embd));
  return {};
}

/// Binds layer `prefix`'s gated FFN: gate, up [n_embd -> n_ff], down [n_ff -> n_embd].
inline status bind_ffn_weights(const tensor_binder& bind, const std::string& prefix,
                               const decoder_dims& d, weight& gate, weight& up, weight& down) {
  MNEMO_ASSIGN_OR_RETURN(gate, bind.matrix(prefix + "ffn_gate.weight", d.n_embd, d.n_ff));
  MNEMO_ASSIGN_OR_RETURN(up, bind.matrix(prefix + "ffn_up.weight", d.n_embd, d.n_ff));
  MNEMO_ASSIGN_OR_RETURN(down, bind.matrix(prefix + "ffn_down.weight", d.n_ff, d.n_embd));
  return {};
}

/// Activations of one micro-batch of up to n_ubatch tokens, reused by every call (a
/// warm decode allocates nothing).
struct decoder_activations {
  std::uint32_t n_ubatch = 0, n_outputs = 0;
  aligned_buffer<float> x, tmp;    // [n_ubatch, n_embd]: residual stream, block output
  aligned_buffer<float> h;         // [n_ubatch, max(n_embd, n_head d_v)]: normed input
  aligned_buffer<float> q, attn;   // [n_ubatch, n_head d]
  aligned_buffer<float> k, v;      // [n_ubatch, n_head_kv d]
  aligned_buffer<float> gate, up;  // [n_ubatch, n_ff]
  aligned_buffer<float> logits;    // [n_ubatch, n_vocab]
  aligned_buffer<float> fused;     // [n_ubatch, n_fused]: a fused product before its split
  attention::workspace attn_ws;
  matmul_workspace mm_ws;
  memory::layer_views views;

  status allocate(std::uint32_t n_tokens, const decoder_dims& d) {
    n_ubatch = n_tokens;
    const std::size_t n = n_tokens;
    return allocate_buffers({{&x, n * d.n_embd},
                             {&h, n * std::max(d.n_embd, d.attn_width())},
                             {&tmp, n * d.n_embd},
                             {&q, n * d.q_width()},
                             {&attn, n * d.attn_width()},
                             {&k, n * d.k_width()},
                             {&v, n * d.v_width()},
                             {&gate, n * d.n_ff},
                             {&up, n * d.n_ff},
                             {&logits, n * d.n_vocab},
                             {&fused, n * d.n_fused}});
  }
};

/// out[t] = rms_norm(x[t]) * w for n rows of width `width` (out may be x).
template <simd::isa_tag Isa>
void norm_rows(const float* x, const float* w, float* out, std::size_t n, std::size_t width,
               float eps) {
  for (std::size_t t = 0; t < n; ++t) rms_norm<Isa>(x + t * width, w, out + t * width, width, eps);
}

/// x[t] += y[t] for n rows of width `width`.
template <simd::isa_tag Isa>
void add_rows(float* x, const float* y, std::size_t n, std::size_t width) {
  for (std::size_t t = 0; t < n; ++t) add_to<Isa>(x + t * width, y + t * width, width);
}

/// q, k, v = Wq h, Wk h, Wv h for the micro-batch's n tokens (one group of products).
template <simd::isa_tag Isa>
void project_qkv(const weight& wq, const weight& wk, const weight& wv, std::size_t n,
                 const decoder_dims& d, decoder_activations& a, int n_threads) {
  const product_out qkv[] = {{&wq, a.q.data(), d.q_width()},
                             {&wk, a.k.data(), d.k_width()},
                             {&wv, a.v.data(), d.v_width()}};
  mul_mat_many<Isa>(qkv, a.h.data(), d.n_embd, n, n_threads, a.mm_ws);
}

/// Attends a.q over layer l's views of micro-batch u into a.attn (the K/V of the
/// micro-batch already written), masking by the window the memory reports for the
/// layer with its views (`ap` holds the rest: scale, soft-cap, causality). A memory that observes
/// attention (bounded<Policy>) gets its statistics and evicts; every other memory takes the
/// null-sink kernel. `who` names the model in an error.
template <simd::isa_tag Isa, memory::kv_memory Memory>
status attend_layer(Memory& mem, std::size_t l, std::size_t u, const ubatch& ub,
                    const attention::shape& sh, const attention::params& ap, decoder_activations& a,
                    int n_threads, const char* who) {
  using KE = typename Memory::k_element;
  using VE = typename Memory::v_element;
  mem.views(l, u, a.views);
  attention::params p = ap;
  p.window = a.views.window.kind;
  p.n_swa = a.views.window.n_swa;
  const attention::query_batch qb{
      a.q.data(), ub.n_tokens(), ub.pos.data(), ub.seq.data(),
      a.views.token_stream.empty() ? nullptr : a.views.token_stream.data()};
  const attention::options opt{n_threads};
  if constexpr (attention_observer<Memory>) {
    return attend_observed<Isa, KE, VE>(mem, l, u, sh, p, qb, a.views, a.attn.data(), a.attn_ws,
                                        opt)
        .with_context(who);
  } else {
    return attention::attend<Isa, KE, VE>(sh, p, qb, a.views.streams, a.attn.data(), a.attn_ws, opt)
        .with_context(who);
  }
}

/// a.tmp = Wo a.attn (the attention block's output before the residual add).
template <simd::isa_tag Isa>
void project_out(const weight& wo, std::size_t n, const decoder_dims& d, decoder_activations& a,
                 int n_threads) {
  mul_mat<Isa>(wo, a.attn.data(), d.attn_width(), n, a.tmp.data(), d.n_embd, n_threads, a.mm_ws);
}

/// a.tmp = down(glu(gate h, up h)) for the n tokens of a.h, where glu(g, u, n_ff)
/// overwrites g with act(g) * u (SwiGLU, GeGLU).
template <simd::isa_tag Isa, class Glu>
void gated_ffn(const weight& gate, const weight& up, const weight& down, std::size_t n,
               const decoder_dims& d, decoder_activations& a, int n_threads, Glu glu) {
  const std::size_t E = d.n_embd, F = d.n_ff;
  const product_out gate_up[] = {{&gate, a.gate.data(), F}, {&up, a.up.data(), F}};
  mul_mat_many<Isa>(gate_up, a.h.data(), E, n, n_threads, a.mm_ws);
  parallel_for(n, n_threads,
               [&](std::size_t t, int) { glu(a.gate.data() + t * F, a.up.data() + t * F, F); });
  mul_mat<Isa>(down, a.gate.data(), F, n, a.tmp.data(), E, n_threads, a.mm_ws);
}

}  // namespace mnemo::model
