// GGUF arch `gemma2` (Gemma Team 2024): a sliding window on every other layer (period 2
// by default: even layers local, odd layers global), pre- and post-norms around
// attention and FFN, RoPE in NeoX mode, GeGLU with the tanh GELU, sqrt(n_embd) embedding
// scale, soft-capping of the attention scores (cap tanh(s / cap), after the query
// scale) and of the final logits, and an output that is always token_embd. The forward
// pass follows llama_model_gemma2::graph (docs/model.md); it runs on the
// interleaved memory like gemma3 (decoder_memory.hpp).
#pragma once

#include <cmath>

#include "mnemo/model/decoder.hpp"

namespace mnemo::model {

struct gemma2_arch {
  /// llama.cpp: the 46-layer (27B) type scales queries by 1/sqrt(n_embd / n_head).
  static status adjust(const detail::arch_keys::reader&, decoder_hparams& h) {
    if (h.n_layer == 46) h.attn_scale = 1.0f / std::sqrt(static_cast<float>(h.n_embd / h.n_head));
    return {};
  }
  static constexpr decoder_recipe recipe{
      .name = "gemma2",
      .rope = attention::rope_layout::neox,
      .activation = ffn_activation::gelu_tanh,
      .post_norms = true,
      .always_tied = true,
      .embd_scale = true,
      .windows = window_layers::pattern,
      .window_default = 4096,
      .pattern_default = 2,
      .attn_softcap_default = 50.0f,
      .final_softcap_default = 30.0f,
      .adjust = adjust,
  };
};

using gemma2_model = arch_model<gemma2_arch>;

}  // namespace mnemo::model
