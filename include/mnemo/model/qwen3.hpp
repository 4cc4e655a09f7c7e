// GGUF arch `qwen3` (Qwen 3 dense): the Llama decoder with an RMSNorm over each query
// and key head before RoPE (attn_q_norm, attn_k_norm [d_k]), RoPE in NeoX mode, no
// biases, and a head size that need not be n_embd / n_head. The forward pass follows
// llama_model_qwen3::graph (docs/model.md).
#pragma once

#include "mnemo/model/decoder.hpp"

namespace mnemo::model {

struct qwen3_arch {
  static constexpr decoder_recipe recipe{
      .name = "qwen3",
      .rope = attention::rope_layout::neox,
      .qk_norm = true,
      .windows = window_layers::none,
  };
};

using qwen3_model = arch_model<qwen3_arch>;

}  // namespace mnemo::model
