// GGUF arch `qwen2` (Qwen 2, 2.5): the Llama decoder with biases on Q, K and V and RoPE
// in NeoX mode; usually a tied output. llama.cpp ignores Qwen's sliding-window keys, so
// every layer is global. The forward pass follows llama_model_qwen2::graph (docs/model.md).
#pragma once

#include "mnemo/model/decoder.hpp"

namespace mnemo::model {

struct qwen2_arch {
  static constexpr decoder_recipe recipe{
      .name = "qwen2",
      .rope = attention::rope_layout::neox,
      .windows = window_layers::none,
  };
};

using qwen2_model = arch_model<qwen2_arch>;

}  // namespace mnemo::model
