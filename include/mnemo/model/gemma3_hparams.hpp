// The hyper-parameters of a GGUF `gemma3` model, read and checked once at load
// (docs/gemma3.md; llama.cpp llama_model_gemma3::load_arch_hparams):
//  - the keys of llama_hparams under the `gemma3.` prefix, eps required;
//  - interleaved sliding-window attention: `attention.sliding_window` (n_swa, 0: none)
//    and `attention.sliding_window_pattern` P (default 6): layer l is local iff
//    l % P < P - 1 (set_swa_pattern), or an array of per-layer flags;
//  - RoPE in NeoX layout, base `rope.freq_base` on global layers and
//    `rope.freq_base_swa` (default 10000) on local ones; linear scaling applies to the
//    global layers only (the local scale stays 1, as llama.cpp reads no SWA scale key);
//  - query scale 1/sqrt(key_length) (1/sqrt(n_embd / n_head) for the 62-layer 27B type);
//  - `final_logit_softcapping` (0 when absent: real Gemma 3 files have none).
// Every refusal is a status naming the key.
#pragma once

#include <cmath>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "mnemo/attention/params.hpp"
#include "mnemo/attention/rope.hpp"
#include "mnemo/base/result.hpp"
#include "mnemo/gguf/file.hpp"
#include "mnemo/model/hparams_common.hpp"

namespace mnemo::model {

struct gemma3_hparams {
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
  float rope_base = 1e6f;          // global layers
  float rope_base_swa = 10000.0f;  // local layers
  float rope_scale = 1.0f;         // global layers (linear scaling); local layers: 1
  float rms_eps = 1e-6f;
  float attn_scale = 0.0f;     // applied to q . k
  float final_softcap = 0.0f;  // 0: off
  std::uint32_t n_swa = 0;     // local window; 0: every layer is global
  std::uint32_t swa_pattern = 6;
  std::vector<std::uint8_t> is_swa;  // [n_layer] 1: local (window) layer

  bool local(std::size_t l) const noexcept { return is_swa[l] != 0; }
  std::uint32_t n_local() const noexcept {
    std::uint32_t n = 0;
    for (auto b : is_swa) n += b;
    return n;
  }
  std::uint32_t n_global() const noexcept { return n_layer - n_local(); }

  /// How layer l rotates its queries and keys (a memory holding l's keys needs it for
  /// K-shift).
  attention::rope_config rope(std::size_t l) const {
    return local(l)
               ? attention::rope_config{attention::rope_layout::neox, n_rot, rope_base_swa, 1.0f}
               : attention::rope_config{attention::rope_layout::neox, n_rot, rope_base, rope_scale};
  }
  /// Local and global layers rotate alike (then one memory can K-shift every layer).
  bool uniform_rope() const noexcept {
    return n_local() == 0 || n_global() == 0 || (rope_base == rope_base_swa && rope_scale == 1.0f);
  }
  /// What layer l's attention computes: scale attn_scale, causal, and on local layers
  /// the standard window (masked when p_q - p_k >= n_swa).
  attention::params attention_params(std::size_t l) const {
    attention::params p;
    p.scale = attn_scale;
    if (local(l)) {
      p.window = attention::window_kind::standard;
      p.n_swa = static_cast<pos_t>(n_swa);
    }
    return p;
  }
};

namespace detail {

/// is_swa from `attention.sliding_window_pattern`: a period P (local iff l % P < P - 1,
/// llama_hparams::set_swa_pattern) or one flag per layer (true / non-zero: local).
inline status read_swa_pattern(const arch_keys::reader& k, gemma3_hparams& h) {
  h.is_swa.assign(h.n_layer, 0);
  if (h.n_swa == 0) return {};  // no window: every layer is global
  const gguf::kv* kv = k.find("attention.sliding_window_pattern");
  if (kv != nullptr && kv->is_array()) {
    if (kv->size() != h.n_layer)
      return make_status(status_code::invalid_argument,
                         "gemma3: 'attention.sliding_window_pattern' has %llu flags for %u layers",
                         static_cast<unsigned long long>(kv->size()), h.n_layer);
    if (auto flags = kv->get_array<bool>(); flags.is_ok()) {
      for (std::size_t l = 0; l < h.n_layer; ++l) h.is_swa[l] = (*flags)[l] ? 1 : 0;
      return {};
    }
    MNEMO_ASSIGN_OR_RETURN(std::vector<std::uint32_t> v, kv->get_array_as<std::uint32_t>());
    for (std::size_t l = 0; l < h.n_layer; ++l) h.is_swa[l] = v[l] != 0 ? 1 : 0;
    return {};
  }
  MNEMO_ASSIGN_OR_RETURN(h.swa_pattern, k.u32("attention.sliding_window_pattern", 6));
  // P = 0 makes every layer local (set_swa_pattern(0)); P = 1 every layer global.
  for (std::uint32_t l = 0; l < h.n_layer; ++l)
    h.is_swa[l] = h.swa_pattern == 0 || l % h.swa_pattern < h.swa_pattern - 1 ? 1 : 0;
  return {};
}

}  // namespace detail

/// Reads and checks the hyper-parameters. n_vocab comes from token_embd, checked
/// against gemma3.vocab_size when that key is set.
inline result<gemma3_hparams> read_gemma3_hparams(const gguf::file& f) {
  const detail::arch_keys::reader k(f, "gemma3");
  MNEMO_RETURN_IF_ERROR(k.check_arch());
  gemma3_hparams h;
  MNEMO_RETURN_IF_ERROR(k.trunk(h));
  MNEMO_ASSIGN_OR_RETURN(h.n_ff, k.uniform_u32("feed_forward_length", 0, h.n_layer));
  MNEMO_ASSIGN_OR_RETURN(h.n_head, k.uniform_u32("attention.head_count", 0, h.n_layer));
  MNEMO_ASSIGN_OR_RETURN(h.n_head_kv,
                         k.uniform_u32("attention.head_count_kv", h.n_head, h.n_layer));
  if (h.n_ff == 0 || h.n_head == 0 || h.n_head_kv == 0 || h.n_head % h.n_head_kv != 0)
    return make_status(status_code::invalid_argument,
                       "gemma3: feed_forward_length (%u) and head_count (%u) must be > 0 and "
                       "head_count a multiple of head_count_kv (%u)",
                       h.n_ff, h.n_head, h.n_head_kv);
  const std::uint32_t d_default = h.n_embd % h.n_head == 0 ? h.n_embd / h.n_head : 0;
  MNEMO_ASSIGN_OR_RETURN(h.d_k, k.u32("attention.key_length", d_default));
  MNEMO_ASSIGN_OR_RETURN(h.d_v, k.u32("attention.value_length", d_default));
  if (h.d_k == 0 || h.d_v == 0)
    return make_status(status_code::invalid_argument,
                       "gemma3: embedding_length %u is not a multiple of head_count %u and no "
                       "attention.key_length / value_length is set",
                       h.n_embd, h.n_head);
  MNEMO_ASSIGN_OR_RETURN(h.n_rot, k.u32("rope.dimension_count", h.d_k));
  MNEMO_ASSIGN_OR_RETURN(h.rope_base, k.f32("rope.freq_base", 10000.0f));
  MNEMO_ASSIGN_OR_RETURN(h.rope_base_swa, k.f32("rope.freq_base_swa", 10000.0f));
  MNEMO_ASSIGN_OR_RETURN(h.rms_eps, k.f32("attention.layer_norm_rms_epsilon", 0, true));
  MNEMO_ASSIGN_OR_RETURN(h.n_swa, k.u32("attention.sliding_window", 0));
  MNEMO_ASSIGN_OR_RETURN(h.final_softcap, k.f32("final_logit_softcapping", 0.0f));
  if (!(h.final_softcap >= 0.0f))
    return make_status(status_code::invalid_argument,
                       "gemma3: final_logit_softcapping must be >= 0 (got %g)",
                       static_cast<double>(h.final_softcap));
  MNEMO_RETURN_IF_ERROR(detail::read_swa_pattern(k, h));

  if (const gguf::kv* kv = k.find("rope.scaling.type")) {
    MNEMO_ASSIGN_OR_RETURN(std::string_view type, kv->get<std::string_view>());
    if (type == "linear") {
      MNEMO_ASSIGN_OR_RETURN(float factor, k.f32("rope.scaling.factor", 1.0f));
      if (factor > 0.0f) h.rope_scale = 1.0f / factor;
    } else if (type != "none") {
      return make_status(status_code::unsupported, "gemma3: rope scaling '%.*s' is not supported",
                         static_cast<int>(type.size()), type.data());
    }
  }
  // llama.cpp: the 62-layer (27B) type scales queries by 1/sqrt(n_embd / n_head).
  h.attn_scale = h.n_layer == 62 ? 1.0f / std::sqrt(static_cast<float>(h.n_embd / h.n_head))
                                 : 1.0f / std::sqrt(static_cast<float>(h.d_k));
  for (std::size_t l = 0; l < h.n_layer; ++l)
    MNEMO_RETURN_IF_ERROR(h.rope(l).validate(h.d_k).with_context("gemma3"));

  MNEMO_ASSIGN_OR_RETURN(const gguf::tensor* embd, f.require_tensor("token_embd.weight"));
  h.n_vocab = static_cast<std::uint32_t>(embd->dims[1]);
  MNEMO_ASSIGN_OR_RETURN(std::uint32_t vocab_key, k.u32("vocab_size", h.n_vocab));
  if (vocab_key != h.n_vocab || h.n_vocab == 0)
    return make_status(status_code::invalid_argument,
                       "gemma3: gemma3.vocab_size is %u but token_embd.weight has %u rows",
                       vocab_key, h.n_vocab);
  return h;
}

}  // namespace mnemo::model
