// The hyper-parameters of a GGUF `jamba` model (Lieber et al. 2024, AI21), read and
// checked once at load. Keys follow llama.cpp's llama_model_jamba::load_arch_hparams
// (docs/hybrid.md): the llama keys plus the ssm.* block of mamba_hparams.hpp;
// a layer is recurrent iff attention.head_count_kv[l] == 0. Only the dense-FFN form
// is supported: expert_count > 0 (MoE layers) is refused with a status.
#pragma once

#include <cmath>
#include <cstdint>
#include <vector>

#include "mnemo/attention/params.hpp"
#include "mnemo/base/result.hpp"
#include "mnemo/gguf/file.hpp"
#include "mnemo/model/mamba_hparams.hpp"

namespace mnemo::model {

struct jamba_hparams {
  std::uint32_t n_vocab = 0;
  std::uint32_t n_ctx_train = 0;
  std::uint32_t n_embd = 0;
  std::uint32_t n_layer = 0;
  std::uint32_t n_ff = 0;
  std::uint32_t n_head = 0;     // of the attention layers
  std::uint32_t n_head_kv = 0;  // of the attention layers
  std::uint32_t d_k = 0, d_v = 0;
  float rms_eps = 1e-6f;
  ssm_hparams ssm;
  std::vector<std::uint8_t> recurrent;  // [n_layer] 1: a Mamba layer, 0: attention

  std::uint32_t n_attention_layers() const noexcept {
    std::uint32_t c = 0;
    for (auto r : recurrent) c += r ? 0 : 1;
    return c;
  }
  std::uint32_t n_recurrent_layers() const noexcept { return n_layer - n_attention_layers(); }
  /// No RoPE (rope type NONE in llama.cpp), causal, kq_scale = 1/sqrt(d_k).
  attention::params attention_params() const {
    attention::params p;
    p.scale = 1.0f / std::sqrt(static_cast<float>(d_k));
    return p;
  }
};

/// Reads and checks a `jamba` file's hyper-parameters.
inline result<jamba_hparams> read_jamba_hparams(const gguf::file& f) {
  const detail::arch_keys::reader r(f, "jamba");
  MNEMO_RETURN_IF_ERROR(r.check_arch());
  jamba_hparams h;
  MNEMO_RETURN_IF_ERROR(r.trunk(h));
  MNEMO_ASSIGN_OR_RETURN(h.rms_eps, r.f32("attention.layer_norm_rms_epsilon", 0, true));
  MNEMO_ASSIGN_OR_RETURN(std::uint32_t n_expert, r.u32("expert_count", 0));
  if (n_expert > 0)
    return make_status(status_code::unsupported,
                       "jamba: expert_count is %u; mixture-of-experts layers are not supported",
                       n_expert);
  const std::vector<std::uint32_t> zeros(h.n_layer, 0);
  MNEMO_ASSIGN_OR_RETURN(auto ff, r.per_layer("feed_forward_length", zeros, h.n_layer));
  MNEMO_ASSIGN_OR_RETURN(auto heads, r.per_layer("attention.head_count", zeros, h.n_layer));
  MNEMO_ASSIGN_OR_RETURN(auto heads_kv, r.per_layer("attention.head_count_kv", heads, h.n_layer));
  h.n_ff = ff[0];
  for (std::uint32_t l = 0; l < h.n_layer; ++l) {
    if (ff[l] != h.n_ff || ff[l] == 0)
      return make_status(status_code::unsupported,
                         "jamba: feed_forward_length must be the same > 0 value for every layer "
                         "(layer %u has %u, layer 0 %u)",
                         l, ff[l], h.n_ff);
    h.recurrent.push_back(heads_kv[l] == 0 ? 1 : 0);
    if (heads_kv[l] == 0) continue;
    if (h.n_head == 0) h.n_head = heads[l], h.n_head_kv = heads_kv[l];
    if (heads[l] != h.n_head || heads_kv[l] != h.n_head_kv)
      return make_status(status_code::unsupported,
                         "jamba: attention layers differ in head_count / head_count_kv (layer %u "
                         "has %u / %u, the first attention layer %u / %u)",
                         l, heads[l], heads_kv[l], h.n_head, h.n_head_kv);
  }
  if (h.n_head_kv != 0 && (h.n_head == 0 || h.n_head % h.n_head_kv != 0))
    return make_status(status_code::invalid_argument,
                       "jamba: head_count (%u) must be a multiple of head_count_kv (%u)", h.n_head,
                       h.n_head_kv);
  if (h.n_head != 0) {
    const std::uint32_t d_default = h.n_embd % h.n_head == 0 ? h.n_embd / h.n_head : 0;
    MNEMO_ASSIGN_OR_RETURN(h.d_k, r.u32("attention.key_length", d_default));
    MNEMO_ASSIGN_OR_RETURN(h.d_v, r.u32("attention.value_length", d_default));
    if (h.d_k == 0 || h.d_v == 0)
      return make_status(status_code::invalid_argument,
                         "jamba: embedding_length %u is not a multiple of head_count %u", h.n_embd,
                         h.n_head);
  }
  if (h.n_attention_layers() == 0 || h.n_recurrent_layers() == 0)
    return make_status(status_code::unsupported,
                       "jamba: %u attention and %u Mamba layers; the hybrid memory needs at least "
                       "one of each",
                       h.n_attention_layers(), h.n_recurrent_layers());
  MNEMO_ASSIGN_OR_RETURN(h.ssm, read_ssm_hparams(f, "jamba", h.n_embd));
  MNEMO_ASSIGN_OR_RETURN(h.n_vocab, r.vocab());
  return h;
}

}  // namespace mnemo::model
