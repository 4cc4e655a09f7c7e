// What sets one attention-decoder architecture apart from the others, as run-time data
// (STYLE rule 3): attention_decoder (decoder.hpp) reads the hyper-parameters, binds the
// tensors and runs the forward pass from a recipe, so an architecture is a small file
// holding its recipe (llama.hpp, qwen2.hpp, qwen3.hpp, phi3.hpp, gemma2.hpp, gemma3.hpp)
// and a row in architectures.hpp.
//
// Tensors the skeleton takes whenever a file has them, in every architecture: biases on
// Q, K, V and the attention output; a fused `attn_qkv` instead of separate Q, K, V
// (llama.cpp's create_tensor_qkv tries the fused tensor first). Tensors a recipe does not
// name (q/k norms, post-norms, experts) are refused, never silently ignored.
#pragma once

#include <cstdint>
#include <string_view>

#include "mnemo/attention/rope.hpp"
#include "mnemo/base/status.hpp"

namespace mnemo::model {

struct decoder_hparams;
namespace detail::arch_keys {
class reader;
}

/// The gate's activation in the gated FFN down(act(gate h) * up h).
enum class ffn_activation : std::uint8_t {
  silu,       // SwiGLU (Llama, Qwen, Phi-3)
  gelu_tanh,  // GeGLU with the tanh GELU (Gemma)
};

/// Which layers attend through a sliding window (`ARCH.attention.sliding_window`).
enum class window_layers : std::uint8_t {
  none,     // the key is ignored: every layer is global (Qwen, Phi-3 as llama.cpp runs them)
  every,    // all layers when the key is set (Mistral)
  pattern,  // `attention.sliding_window_pattern`: a period P (local iff l % P < P - 1)
            // or one flag per layer (Gemma 2, 3)
};

struct decoder_recipe {
  std::string_view name;  // general.architecture, and the prefix of its keys
  attention::rope_layout rope = attention::rope_layout::normal;
  ffn_activation activation = ffn_activation::silu;

  bool qk_norm = false;        // attn_q_norm, attn_k_norm [d_k]: RMSNorm per head before RoPE
  bool post_norms = false;     // post_attention_norm, post_ffw_norm on each block's output
  bool fused_gate_up = false;  // ffn_up [n_embd, 2 n_ff] holds gate | up, no ffn_gate
  bool always_tied = false;    // the output is token_embd; an output.weight is refused
  bool embd_scale = false;     // token rows times sqrtf(n_embd) (Gemma)

  window_layers windows = window_layers::every;
  std::uint32_t window_default = 0;   // n_swa when the key is absent (0: no window)
  std::uint32_t pattern_default = 0;  // period P when the pattern key is absent
  float rope_base_swa_default = 0;    // window layers' base when rope.freq_base_swa is
                                      // absent; 0: rope.freq_base
  bool swa_rope_unscaled = false;     // window layers do not take rope.scaling (Gemma 3)

  float attn_softcap_default = -1;   // attn_logit_softcapping's default; < 0: key not read
  float final_softcap_default = -1;  // final_logit_softcapping's default; < 0: not read

  /// Whatever else the architecture reads or fixes after the common keys (a query
  /// scale of its own, a quirk of llama.cpp's loader); null: nothing.
  status (*adjust)(const detail::arch_keys::reader& keys, decoder_hparams& h) = nullptr;
};

}  // namespace mnemo::model
