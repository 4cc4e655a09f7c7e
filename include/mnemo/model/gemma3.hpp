// GGUF arch `gemma3` (Gemma Team 2025): interleaved sliding-window attention (a period
// of 6 by default: five local layers, then a global one), pre- and post-norms around
// attention and FFN, RMSNorm on each query and key head, NeoX RoPE with one base for
// local layers (rope.freq_base_swa, default 10000, never scaled) and one for global
// layers, GeGLU with the tanh GELU, sqrt(n_embd) embedding scale and final logit
// soft-capping. The forward pass follows llama.cpp's llama_model_gemma3::graph<iswa>
// (docs/gemma3.md).
//
// It runs on the interleaved composite (global layers on a full cache, local layers on a
// window-sized sliding_window: make_iswa), the same on split streams (make_iswa_split), or
// one full cache for every layer (the window is then a mask only):
//
//   MNEMO_ASSIGN_OR_RETURN(auto m, model::gemma3_model::open("gemma3.gguf"));
//   MNEMO_ASSIGN_OR_RETURN(auto mem, m.make_iswa<dtype::f16>(32768, 1, 512));
//   MNEMO_ASSIGN_OR_RETURN(auto ctx, (context<model::gemma3_model, decltype(mem)>::make(
//                                        m, std::move(mem), {.n_ubatch = 512})));
#pragma once

#include <cmath>

#include "mnemo/model/decoder.hpp"

namespace mnemo::model {

struct gemma3_arch {
  /// llama.cpp: the 62-layer (27B) type scales queries by 1/sqrt(n_embd / n_head).
  static status adjust(const detail::arch_keys::reader&, decoder_hparams& h) {
    if (h.n_layer == 62) h.attn_scale = 1.0f / std::sqrt(static_cast<float>(h.n_embd / h.n_head));
    return {};
  }
  static constexpr decoder_recipe recipe{
      .name = "gemma3",
      .rope = attention::rope_layout::neox,
      .activation = ffn_activation::gelu_tanh,
      .qk_norm = true,
      .post_norms = true,
      .embd_scale = true,
      .windows = window_layers::pattern,
      .window_default = 0,
      .pattern_default = 6,
      .rope_base_swa_default = 10000.0f,
      .swa_rope_unscaled = true,
      .final_softcap_default = 0.0f,
      .adjust = adjust,
  };
};

using gemma3_model = arch_model<gemma3_arch>;

}  // namespace mnemo::model
