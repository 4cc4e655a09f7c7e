// The small random Llama the model tests write with the examples' GGUF writer: 2
// layers, d_model 64, 4 heads on 2 KV heads of 16, ff 96, 300 tokens.
#pragma once

#include <cstdint>

#include "common/random_llama.hpp"

namespace mnemo_test {

inline mnemo_examples::random_llama_config small_llama_config(mnemo::dtype::element_type t,
                                                              std::uint64_t seed = 7) {
  mnemo_examples::random_llama_config c;
  c.n_vocab = 300;
  c.n_embd = 64;
  c.n_layer = 2;
  c.n_head = 4;
  c.n_head_kv = 2;
  c.n_ff = 96;
  c.weight_type = t;
  c.seed = seed;
  return c;
}

}  // namespace mnemo_test
