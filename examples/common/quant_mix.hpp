// The per-tensor types of llama-quantize's k-quant mixtures (Q3_K_M, Q4_K_M, Q5_K_M),
// so that make-llama writes a file of any shape with the types a user's download holds.
// The rules are llama.cpp's (src/llama-quant.cpp, llama_tensor_get_type_impl) for the
// non-Falcon, dense (no experts) architectures make-llama writes:
//
//   tensor            Q3_K_M                        Q4_K_M / Q5_K_M
//   output            q6_K                          q6_K
//   token_embd        base (q6_K when tied)         base (q6_K when tied)
//   attn_v            q5_K in layers 0, 1, else q4_K  q6_K where more_bits(layer)
//   attn_qkv (fused)  q4_K                          q5_K / q6_K
//   attn_output       q4_K                          base
//   ffn_down          q5_K below n_layer / 16, q4_K q6_K where more_bits(layer)
//   everything else   base: q3_K, q4_K or q5_K      base
//
// more_bits(i) = i < n/8 || i >= 7n/8 || (i - n/8) % 3 == 2 (llama.cpp's use_more_bits).
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

#include "mnemo/dtype/element_type.hpp"

namespace mnemo_examples {

enum class quant_mix { q3_K_M, q4_K_M, q5_K_M };

/// The role of a weight matrix in the Llama-shaped models make-llama writes.
enum class tensor_role {
  token_embd,
  output,
  attn_q,
  attn_k,
  attn_v,
  attn_qkv,
  attn_output,
  ffn_gate,
  ffn_up,
  ffn_down
};

/// "q3_K_M", "q4_K_M" or "q5_K_M" (as make-llama's --type spells them), else nullopt.
inline std::optional<quant_mix> parse_quant_mix(std::string_view s) {
  if (s == "q3_K_M") return quant_mix::q3_K_M;
  if (s == "q4_K_M") return quant_mix::q4_K_M;
  if (s == "q5_K_M") return quant_mix::q5_K_M;
  return std::nullopt;
}

/// The type of the tensors no rule moves.
inline mnemo::dtype::element_type quant_mix_base(quant_mix m) {
  using mnemo::dtype::element_type;
  switch (m) {
    case quant_mix::q3_K_M: return element_type::q3_K;
    case quant_mix::q4_K_M: return element_type::q4_K;
    case quant_mix::q5_K_M: break;
  }
  return element_type::q5_K;
}

/// llama.cpp's general.file_type (llama_ftype) of the mixture.
inline std::uint32_t quant_mix_file_type(quant_mix m) {
  switch (m) {
    case quant_mix::q3_K_M: return 12;
    case quant_mix::q4_K_M: return 15;
    case quant_mix::q5_K_M: break;
  }
  return 17;
}

/// The type llama-quantize gives the matrix of `role` in layer `layer` of `n_layer`;
/// `tied`: the token embeddings are also the output matrix.
inline mnemo::dtype::element_type quant_mix_type(quant_mix m, tensor_role role, std::uint32_t layer,
                                                 std::uint32_t n_layer, bool tied) {
  using mnemo::dtype::element_type;
  const auto i = static_cast<std::int64_t>(layer), n = static_cast<std::int64_t>(n_layer);
  const bool more_bits = i < n / 8 || i >= 7 * n / 8 || (i - n / 8) % 3 == 2;
  const bool q3 = m == quant_mix::q3_K_M;
  switch (role) {
    case tensor_role::output: return element_type::q6_K;
    case tensor_role::token_embd: return tied ? element_type::q6_K : quant_mix_base(m);
    case tensor_role::attn_v:
      if (q3) return layer < 2 ? element_type::q5_K : element_type::q4_K;
      return more_bits ? element_type::q6_K : quant_mix_base(m);
    case tensor_role::attn_qkv:
      return q3                       ? element_type::q4_K
             : m == quant_mix::q4_K_M ? element_type::q5_K
                                      : element_type::q6_K;
    case tensor_role::attn_output: return q3 ? element_type::q4_K : quant_mix_base(m);
    case tensor_role::ffn_down:
      if (q3) return i < n / 16 ? element_type::q5_K : element_type::q4_K;
      return more_bits ? element_type::q6_K : quant_mix_base(m);
    default: break;
  }
  return quant_mix_base(m);
}

}  // namespace mnemo_examples
