// The hyper-parameters of a GGUF `llama` model, read and checked once at load.
// Keys and defaults follow llama.cpp's load_hparams (docs/model.md): required
// context_length, embedding_length, block_count, attention.layer_norm_rms_epsilon;
// head_count_kv defaults to head_count, head sizes to n_embd / n_head, n_rot to the
// key head size, rope.freq_base to 10000. Every refusal is a status naming the key.
#pragma once

#include <cmath>
#include <cstdint>
#include <string>
#include <string_view>

#include "mnemo/attention/params.hpp"
#include "mnemo/attention/rope.hpp"
#include "mnemo/base/result.hpp"
#include "mnemo/gguf/file.hpp"
#include "mnemo/model/hparams_common.hpp"

namespace mnemo::model {

struct llama_hparams {
  std::uint32_t n_vocab = 0;
  std::uint32_t n_ctx_train = 0;
  std::uint32_t n_embd = 0;
  std::uint32_t n_layer = 0;
  std::uint32_t n_ff = 0;
  std::uint32_t n_head = 0;
  std::uint32_t n_head_kv = 0;
  std::uint32_t d_k = 0;  // key (and query) head size
  std::uint32_t d_v = 0;  // value head size
  std::uint32_t n_rot = 0;
  float rope_freq_base = 10000.0f;
  float rope_freq_scale = 1.0f;
  float rms_eps = 1e-5f;
  std::uint32_t n_swa = 0;  // Mistral-style sliding window; 0 = none

  attention::rope_config rope() const {
    return {attention::rope_layout::normal, n_rot, rope_freq_base, rope_freq_scale};
  }
  /// What every layer's attention computes: kq_scale = 1/sqrt(d_k), causal, and the
  /// standard window when the file sets one.
  attention::params attention_params() const {
    attention::params p;
    p.scale = 1.0f / std::sqrt(static_cast<float>(d_k));
    if (n_swa > 0) {
      p.window = attention::window_kind::standard;
      p.n_swa = static_cast<pos_t>(n_swa);
    }
    return p;
  }
};

/// Reads and checks the hyper-parameters. n_vocab comes from token_embd (the tensor
/// every llama file has), checked against llama.vocab_size when that key is set.
inline result<llama_hparams> read_llama_hparams(const gguf::file& f) {
  const detail::arch_keys::reader r(f, "llama");
  MNEMO_RETURN_IF_ERROR(r.check_arch());
  llama_hparams h;
  MNEMO_RETURN_IF_ERROR(r.trunk(h));
  MNEMO_ASSIGN_OR_RETURN(h.n_ff, r.uniform_u32("feed_forward_length", 0, h.n_layer));
  MNEMO_ASSIGN_OR_RETURN(h.n_head, r.uniform_u32("attention.head_count", 0, h.n_layer));
  MNEMO_ASSIGN_OR_RETURN(h.n_head_kv,
                         r.uniform_u32("attention.head_count_kv", h.n_head, h.n_layer));
  if (h.n_ff == 0 || h.n_head == 0 || h.n_head_kv == 0 || h.n_head % h.n_head_kv != 0)
    return make_status(status_code::invalid_argument,
                       "llama: feed_forward_length (%u) and head_count (%u) must be > 0 and "
                       "head_count a multiple of head_count_kv (%u)",
                       h.n_ff, h.n_head, h.n_head_kv);
  const std::uint32_t d_default = h.n_embd % h.n_head == 0 ? h.n_embd / h.n_head : 0;
  MNEMO_ASSIGN_OR_RETURN(h.d_k, r.u32("attention.key_length", d_default));
  MNEMO_ASSIGN_OR_RETURN(h.d_v, r.u32("attention.value_length", d_default));
  if (h.d_k == 0 || h.d_v == 0)
    return make_status(status_code::invalid_argument,
                       "llama: embedding_length %u is not a multiple of head_count %u and no "
                       "attention.key_length / value_length is set",
                       h.n_embd, h.n_head);
  MNEMO_ASSIGN_OR_RETURN(h.n_rot, r.u32("rope.dimension_count", h.d_k));
  MNEMO_ASSIGN_OR_RETURN(h.rope_freq_base, r.f32("rope.freq_base", 10000.0f));
  MNEMO_ASSIGN_OR_RETURN(h.rms_eps, r.f32("attention.layer_norm_rms_epsilon", 0, true));
  MNEMO_ASSIGN_OR_RETURN(h.n_swa, r.u32("attention.sliding_window", 0));

  // Position scaling: none or linear (freq_scale = 1 / factor); YaRN, LongRoPE and
  // Llama-3 frequency factors change the angles and are refused rather than ignored.
  if (const gguf::kv* kv = f.find("llama.rope.scaling.type")) {
    MNEMO_ASSIGN_OR_RETURN(std::string_view type, kv->get<std::string_view>());
    if (type == "linear") {
      MNEMO_ASSIGN_OR_RETURN(float factor, r.f32("rope.scaling.factor", 1.0f));
      if (factor > 0.0f) h.rope_freq_scale = 1.0f / factor;
    } else if (type != "none") {
      return make_status(status_code::unsupported, "llama: rope scaling '%.*s' is not supported",
                         static_cast<int>(type.size()), type.data());
    }
  } else {
    MNEMO_ASSIGN_OR_RETURN(float linear, r.f32("rope.scale_linear", 1.0f));
    if (linear > 0.0f) h.rope_freq_scale = 1.0f / linear;
  }
  if (f.find_tensor("rope_freqs.weight") != nullptr)
    return make_status(status_code::unsupported,
                       "llama: rope frequency factors (rope_freqs.weight, Llama 3.1) are not "
                       "supported");
  MNEMO_RETURN_IF_ERROR(h.rope().validate(h.d_k).with_context("llama"));

  MNEMO_ASSIGN_OR_RETURN(const gguf::tensor* embd, f.require_tensor("token_embd.weight"));
  h.n_vocab = static_cast<std::uint32_t>(embd->dims[1]);
  MNEMO_ASSIGN_OR_RETURN(std::uint32_t vocab_key, r.u32("vocab_size", h.n_vocab));
  if (vocab_key != h.n_vocab || h.n_vocab == 0)
    return make_status(status_code::invalid_argument,
                       "llama: llama.vocab_size is %u but token_embd.weight has %u rows", vocab_key,
                       h.n_vocab);
  return h;
}

}  // namespace mnemo::model
