// GGUF arch `llama` (Touvron et al. 2023; Llama 1-3, Mistral, TinyLlama, ...): RMSNorm,
// RoPE in normal (adjacent-pair) mode, grouped-query attention, SwiGLU FFN, tied or
// separate output, the Mistral sliding window on every layer when the file sets one,
// and Llama 3.1's per-pair frequency divisors (`rope_freqs.weight`). The forward pass
// follows llama.cpp's llm_build_llama (docs/model.md).
//
//   MNEMO_ASSIGN_OR_RETURN(auto m, mnemo::model::llama_model::open("model.gguf"));
#pragma once

#include "mnemo/model/decoder.hpp"

namespace mnemo::model {

struct llama_arch {
  static constexpr decoder_recipe recipe{
      .name = "llama",
      .rope = attention::rope_layout::normal,
      .windows = window_layers::every,
  };
};

using llama_model = arch_model<llama_arch>;

}  // namespace mnemo::model
