// GGUF arch `phi3` (Phi-3, Phi-4-mini): one fused attn_qkv tensor (Q | K | V rows), gate
// and up fused in ffn_up (the first half is the gate), RoPE in NeoX mode over the first
// rope.dimension_count dims of each head. llama.cpp disables Phi's sliding window, so
// every layer is global; LongRoPE factor tensors are refused. The forward pass follows
// llama_model_phi3::graph (docs/model.md).
#pragma once

#include "mnemo/model/decoder.hpp"

namespace mnemo::model {

struct phi3_arch {
  static constexpr decoder_recipe recipe{
      .name = "phi3",
      .rope = attention::rope_layout::neox,
      .fused_gate_up = true,
      .windows = window_layers::none,
  };
};

using phi3_model = arch_model<phi3_arch>;

}  // namespace mnemo::model
