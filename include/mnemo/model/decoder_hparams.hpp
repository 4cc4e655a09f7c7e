// The hyper-parameters of an attention decoder (llama, qwen2, qwen3, phi3, gemma2,
// gemma3), read once at load from `ARCH.*` keys with llama.cpp's defaults
// (docs/model.md) and the architecture's recipe (decoder_recipe.hpp): required
// context_length, embedding_length, block_count, attention.layer_norm_rms_epsilon;
// head_count_kv defaults to head_count, head sizes to n_embd / n_head, n_rot to the key
// head size, rope.freq_base to 10000. Every refusal is a status naming the key.
#pragma once

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "mnemo/attention/params.hpp"
#include "mnemo/attention/rope.hpp"
#include "mnemo/base/result.hpp"
#include "mnemo/gguf/file.hpp"
#include "mnemo/model/decoder_recipe.hpp"
#include "mnemo/model/hparams_common.hpp"
#include "mnemo/model/rope_scaling.hpp"

namespace mnemo::model {

struct decoder_hparams {
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
  float rms_eps = 1e-5f;
  float attn_scale = 0;     // q . k is multiplied by this (1/sqrt(d_k) unless the recipe says)
  float attn_softcap = 0;   // > 0: scores become cap tanh(score / cap) (Gemma 2)
  float final_softcap = 0;  // > 0: the same on the logits
  float embd_scale = 1;     // token rows are multiplied by this (Gemma: sqrtf(n_embd))
  std::uint32_t n_swa = 0;  // window of the local layers; 0: none
  std::vector<std::uint8_t> is_swa;    // [n_layer] 1: local (window) layer
  attention::rope_config rope_global;  // how global layers rotate queries and keys
  attention::rope_config rope_local;   // how window layers do

  bool local(std::size_t l) const noexcept { return is_swa[l] != 0; }
  std::uint32_t n_local() const noexcept {
    std::uint32_t n = 0;
    for (auto b : is_swa) n += b;
    return n;
  }
  std::uint32_t n_global() const noexcept { return n_layer - n_local(); }

  /// How layer l rotates its queries and keys (a memory holding l's keys needs it for
  /// K-shift).
  const attention::rope_config& rope(std::size_t l) const noexcept {
    return local(l) ? rope_local : rope_global;
  }
  /// The rotation of the model's first global layer (its last layer when all are local).
  const attention::rope_config& rope() const noexcept {
    return n_global() == 0 ? rope_local : rope_global;
  }
  /// Local and global layers rotate alike (then one memory can K-shift every layer).
  bool uniform_rope() const noexcept {
    const auto& a = rope_local;
    const auto& b = rope_global;
    return n_local() == 0 || n_global() == 0 ||
           (a.freq_base == b.freq_base && a.freq_scale == b.freq_scale &&
            a.freq_factors == b.freq_factors && a.yarn.ext_factor == b.yarn.ext_factor);
  }
  /// What every layer's attention computes: scale, soft-cap, causal. The window comes
  /// from the memory's views (layer_views::window), configured from window(l).
  attention::params attention_params() const {
    attention::params p;
    p.scale = attn_scale;
    p.softcap = attn_softcap;
    return p;
  }
  /// Layer l's window: the standard window of n_swa on local layers (masked when
  /// p_q - p_k >= n_swa), none on global ones. Memories are configured with it.
  attention::layer_window window(std::size_t l) const {
    if (!local(l)) return {};
    return {attention::window_kind::standard, static_cast<pos_t>(n_swa)};
  }
  /// Every layer's window, or none when no layer has one.
  std::vector<attention::layer_window> windows() const {
    std::vector<attention::layer_window> w;
    if (n_local() != 0)
      for (std::size_t l = 0; l < n_layer; ++l) w.push_back(window(l));
    return w;
  }
};

namespace detail {

/// is_swa from the recipe: every layer when a window is set, or the period / per-layer
/// flags of `attention.sliding_window_pattern` (llama_hparams::set_swa_pattern).
inline status read_window_layers(const arch_keys::reader& k, const decoder_recipe& rc,
                                 decoder_hparams& h) {
  h.is_swa.assign(h.n_layer, 0);
  if (rc.windows == window_layers::none) {
    h.n_swa = 0;
    return {};
  }
  MNEMO_ASSIGN_OR_RETURN(h.n_swa, k.u32("attention.sliding_window", rc.window_default));
  if (h.n_swa == 0) return {};  // no window: every layer is global
  if (rc.windows == window_layers::every) {
    h.is_swa.assign(h.n_layer, 1);
    return {};
  }
  const gguf::kv* kv = k.find("attention.sliding_window_pattern");
  if (kv != nullptr && kv->is_array()) {
    if (kv->size() != h.n_layer)
      return make_status(status_code::invalid_argument, "%s has %llu flags for %u layers",
                         k.key("attention.sliding_window_pattern").c_str(),
                         static_cast<unsigned long long>(kv->size()), h.n_layer);
    if (auto flags = kv->get_array<bool>(); flags.is_ok()) {
      for (std::size_t l = 0; l < h.n_layer; ++l) h.is_swa[l] = (*flags)[l] ? 1 : 0;
      return {};
    }
    MNEMO_ASSIGN_OR_RETURN(std::vector<std::uint32_t> v, kv->get_array_as<std::uint32_t>());
    for (std::size_t l = 0; l < h.n_layer; ++l) h.is_swa[l] = v[l] != 0 ? 1 : 0;
    return {};
  }
  MNEMO_ASSIGN_OR_RETURN(std::uint32_t period,
                         k.u32("attention.sliding_window_pattern", rc.pattern_default));
  // P = 0 makes every layer local (set_swa_pattern(0)); P = 1 every layer global.
  for (std::uint32_t l = 0; l < h.n_layer; ++l)
    h.is_swa[l] = period == 0 || l % period < period - 1 ? 1 : 0;
  return {};
}

/// A soft-cap key read with the recipe's default (< 0: not read, off).
inline result<float> read_softcap(const arch_keys::reader& k, const char* key, float fallback) {
  if (fallback < 0) return 0.0f;
  MNEMO_ASSIGN_OR_RETURN(float cap, k.f32(key, fallback));
  if (!(cap >= 0.0f))
    return make_status(status_code::invalid_argument, "%s must be >= 0 (got %g)",
                       k.key(key).c_str(), static_cast<double>(cap));
  return cap;
}

}  // namespace detail

/// Reads and checks the hyper-parameters of an architecture with recipe `rc`. n_vocab
/// comes from token_embd, checked against ARCH.vocab_size when that key is set.
inline result<decoder_hparams> read_decoder_hparams(const gguf::file& f, const decoder_recipe& rc) {
  const detail::arch_keys::reader k(f, rc.name);
  const auto who = [&] { return std::string(rc.name); };
  MNEMO_RETURN_IF_ERROR(k.check_arch());
  decoder_hparams h;
  MNEMO_RETURN_IF_ERROR(k.trunk(h));
  MNEMO_ASSIGN_OR_RETURN(h.n_ff, k.uniform_u32("feed_forward_length", 0, h.n_layer));
  MNEMO_ASSIGN_OR_RETURN(h.n_head, k.uniform_u32("attention.head_count", 0, h.n_layer));
  MNEMO_ASSIGN_OR_RETURN(h.n_head_kv,
                         k.uniform_u32("attention.head_count_kv", h.n_head, h.n_layer));
  if (h.n_ff == 0 || h.n_head == 0 || h.n_head_kv == 0 || h.n_head % h.n_head_kv != 0)
    return make_status(status_code::invalid_argument,
                       "%s: feed_forward_length (%u) and head_count (%u) must be > 0 and "
                       "head_count a multiple of head_count_kv (%u)",
                       who().c_str(), h.n_ff, h.n_head, h.n_head_kv);
  const std::uint32_t d_default = h.n_embd % h.n_head == 0 ? h.n_embd / h.n_head : 0;
  MNEMO_ASSIGN_OR_RETURN(h.d_k, k.u32("attention.key_length", d_default));
  MNEMO_ASSIGN_OR_RETURN(h.d_v, k.u32("attention.value_length", d_default));
  if (h.d_k == 0 || h.d_v == 0)
    return make_status(status_code::invalid_argument,
                       "%s: embedding_length %u is not a multiple of head_count %u and no "
                       "attention.key_length / value_length is set",
                       who().c_str(), h.n_embd, h.n_head);
  MNEMO_ASSIGN_OR_RETURN(h.rms_eps, k.f32("attention.layer_norm_rms_epsilon", 0, true));
  h.attn_scale = 1.0f / std::sqrt(static_cast<float>(h.d_k));
  MNEMO_ASSIGN_OR_RETURN(
      h.attn_softcap, detail::read_softcap(k, "attn_logit_softcapping", rc.attn_softcap_default));
  MNEMO_ASSIGN_OR_RETURN(h.final_softcap, detail::read_softcap(k, "final_logit_softcapping",
                                                               rc.final_softcap_default));
  if (rc.embd_scale) h.embd_scale = std::sqrt(static_cast<float>(h.n_embd));
  MNEMO_RETURN_IF_ERROR(detail::read_window_layers(k, rc, h));

  attention::rope_config& g = h.rope_global;
  g.layout = rc.rope;
  MNEMO_ASSIGN_OR_RETURN(std::uint32_t n_rot, k.u32("rope.dimension_count", h.d_k));
  h.n_rot = n_rot;
  g.n_rot = n_rot;
  MNEMO_ASSIGN_OR_RETURN(g.freq_base, k.f32("rope.freq_base", 10000.0f));
  MNEMO_RETURN_IF_ERROR(read_rope_scaling(k, f, h.n_ctx_train, g));
  h.rope_local = g;
  MNEMO_ASSIGN_OR_RETURN(
      h.rope_local.freq_base,
      k.f32("rope.freq_base_swa",
            rc.rope_base_swa_default > 0 ? rc.rope_base_swa_default : g.freq_base));
  if (rc.swa_rope_unscaled) {
    h.rope_local.freq_scale = 1.0f;
    h.rope_local.yarn = {};
  }
  if (rc.adjust != nullptr) MNEMO_RETURN_IF_ERROR(rc.adjust(k, h));
  MNEMO_RETURN_IF_ERROR(h.rope_global.validate(h.d_k).with_context(who()));
  MNEMO_RETURN_IF_ERROR(h.rope_local.validate(h.d_k).with_context(who()));
  MNEMO_ASSIGN_OR_RETURN(h.n_vocab, k.vocab());
  return h;
}

}  // namespace mnemo::model
