// One layer's tensors of an attention decoder and their binding from a GGUF file by the
// architecture's recipe (decoder_recipe.hpp). Optional tensors (biases, q/k norms,
// post-norms) are empty vectors when absent; Q, K, V come from one fused `attn_qkv`
// when the file has it, and gate and up from one `ffn_up` when the recipe fuses them.
#pragma once

#include <algorithm>
#include <cstddef>
#include <string>
#include <vector>

#include "mnemo/base/status.hpp"
#include "mnemo/model/decoder_blocks.hpp"
#include "mnemo/model/decoder_recipe.hpp"
#include "mnemo/model/tensor_binder.hpp"
#include "mnemo/model/weight.hpp"

namespace mnemo::model {

struct decoder_layer {
  std::vector<float> attn_norm, ffn_norm;            // [n_embd]
  std::vector<float> post_attn_norm, post_ffw_norm;  // [n_embd]; empty: none
  std::vector<float> q_norm, k_norm;                 // [d_k]; empty: none
  std::vector<float> bq, bk, bv, bo;                 // biases [out width]; empty: none
  std::vector<float> bqkv;                           // fused bias [q | k | v]; empty: none
  bool fused_qkv = false;
  weight wqkv;  // [n_embd, q + k + v]  (ggml ne) when fused_qkv
  weight wq;    // [n_embd, n_head * d_k] otherwise
  weight wk;    // [n_embd, n_head_kv * d_k]
  weight wv;    // [n_embd, n_head_kv * d_v]
  weight wo;    // [n_head * d_v, n_embd]
  weight gate;  // [n_embd, n_ff]; unused when the recipe fuses gate | up
  weight up;    // [n_embd, n_ff], or [n_embd, 2 n_ff] = gate | up
  weight down;  // [n_ff, n_embd]
};

namespace detail {

/// An optional 1-D tensor [n] copied to f32; empty when the file lacks it.
inline result<std::vector<float>> optional_vector(const tensor_binder& bind,
                                                  const std::string& name, std::size_t n) {
  if (!bind.has(name)) return std::vector<float>{};
  return bind.norm(name, n);
}

}  // namespace detail

/// Binds layer `prefix` ("blk.N.") by the recipe. Tensors the recipe would leave unused
/// (q/k norms, post-norms, experts) are refused with `unsupported`.
inline status bind_decoder_layer(const tensor_binder& bind, const decoder_recipe& rc,
                                 const std::string& b, const decoder_dims& d, decoder_layer& L) {
  const std::size_t E = d.n_embd;
  auto refuse = [&](const char* tensor, const char* what) -> status {
    if (!bind.has(b + tensor)) return {};
    return make_status(status_code::unsupported, "%.*s: tensor '%s%s' (%s) is not supported",
                       static_cast<int>(rc.name.size()), rc.name.data(), b.c_str(), tensor, what);
  };
  MNEMO_RETURN_IF_ERROR(refuse("ffn_gate_inp.weight", "experts"));
  if (!rc.qk_norm) {
    MNEMO_RETURN_IF_ERROR(refuse("attn_q_norm.weight", "q/k norms"));
    MNEMO_RETURN_IF_ERROR(refuse("attn_k_norm.weight", "q/k norms"));
  }
  if (!rc.post_norms) {
    MNEMO_RETURN_IF_ERROR(refuse("post_attention_norm.weight", "post-norms"));
    MNEMO_RETURN_IF_ERROR(refuse("post_ffw_norm.weight", "post-norms"));
  }

  MNEMO_ASSIGN_OR_RETURN(L.attn_norm, bind.norm(b + "attn_norm.weight", E));
  MNEMO_ASSIGN_OR_RETURN(L.ffn_norm, bind.norm(b + "ffn_norm.weight", E));
  if (rc.post_norms) {
    MNEMO_ASSIGN_OR_RETURN(L.post_attn_norm, bind.norm(b + "post_attention_norm.weight", E));
    MNEMO_ASSIGN_OR_RETURN(L.post_ffw_norm, bind.norm(b + "post_ffw_norm.weight", E));
  }
  if (rc.qk_norm) {
    MNEMO_ASSIGN_OR_RETURN(L.q_norm, bind.norm(b + "attn_q_norm.weight", d.d_k));
    MNEMO_ASSIGN_OR_RETURN(L.k_norm, bind.norm(b + "attn_k_norm.weight", d.d_k));
  }

  const std::size_t qw = d.q_width(), kw = d.k_width(), vw = d.v_width();
  L.fused_qkv = bind.has(b + "attn_qkv.weight");
  if (L.fused_qkv) {
    MNEMO_ASSIGN_OR_RETURN(L.wqkv, bind.matrix(b + "attn_qkv.weight", E, qw + kw + vw));
    MNEMO_ASSIGN_OR_RETURN(L.bqkv,
                           detail::optional_vector(bind, b + "attn_qkv.bias", qw + kw + vw));
  } else {
    MNEMO_ASSIGN_OR_RETURN(L.wq, bind.matrix(b + "attn_q.weight", E, qw));
    MNEMO_ASSIGN_OR_RETURN(L.wk, bind.matrix(b + "attn_k.weight", E, kw));
    MNEMO_ASSIGN_OR_RETURN(L.wv, bind.matrix(b + "attn_v.weight", E, vw));
    MNEMO_ASSIGN_OR_RETURN(L.bq, detail::optional_vector(bind, b + "attn_q.bias", qw));
    MNEMO_ASSIGN_OR_RETURN(L.bk, detail::optional_vector(bind, b + "attn_k.bias", kw));
    MNEMO_ASSIGN_OR_RETURN(L.bv, detail::optional_vector(bind, b + "attn_v.bias", vw));
  }
  MNEMO_ASSIGN_OR_RETURN(L.wo, bind.matrix(b + "attn_output.weight", d.attn_width(), E));
  MNEMO_ASSIGN_OR_RETURN(L.bo, detail::optional_vector(bind, b + "attn_output.bias", E));

  if (rc.fused_gate_up) {
    if (bind.has(b + "ffn_gate.weight"))
      return make_status(status_code::invalid_argument,
                         "%.*s: '%sffn_gate.weight' found, but gate and up are fused in ffn_up",
                         static_cast<int>(rc.name.size()), rc.name.data(), b.c_str());
    MNEMO_ASSIGN_OR_RETURN(L.up, bind.matrix(b + "ffn_up.weight", E, 2 * d.n_ff));
  } else {
    MNEMO_ASSIGN_OR_RETURN(L.gate, bind.matrix(b + "ffn_gate.weight", E, d.n_ff));
    MNEMO_ASSIGN_OR_RETURN(L.up, bind.matrix(b + "ffn_up.weight", E, d.n_ff));
  }
  MNEMO_ASSIGN_OR_RETURN(L.down, bind.matrix(b + "ffn_down.weight", d.n_ff, E));
  return {};
}

/// The widest fused product a token of these layers needs (decoder_dims::n_fused).
inline std::size_t fused_width(const std::vector<decoder_layer>& layers, const decoder_recipe& rc,
                               const decoder_dims& d) {
  std::size_t w = rc.fused_gate_up ? 2 * d.n_ff : 0;
  for (const decoder_layer& L : layers)
    if (L.fused_qkv) w = std::max(w, d.q_width() + d.k_width() + d.v_width());
  return w;
}

}  // namespace mnemo::model
