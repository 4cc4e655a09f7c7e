// A tiny random-weight llama GGUF built in memory for the context and model tests,
// with optional defects (a missing tensor or key, a wrong shape, a type mnemo does not
// compute with) to check the load-time statuses. f32 weights, N(0, 1/fan_in).
#pragma once

#include <cmath>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "mnemo/base/rng.hpp"
#include "mnemo/gguf/writer.hpp"
#include "mnemo/model/llama.hpp"

namespace mnemo_test {

struct tiny_llama_spec {
  std::uint32_t n_vocab = 64, n_embd = 64, n_layer = 2, n_head = 4, n_head_kv = 2, n_ff = 96;
  std::uint32_t n_swa = 0;
  bool tied = false;
  std::uint64_t seed = 7;
  std::string drop_tensor;                          // leave this tensor out
  std::string drop_key;                             // leave this metadata key out
  std::string bad_shape;                            // give this tensor one more output row
  std::string bad_type;                             // store this tensor as i8
  std::function<void(mnemo::gguf::writer&)> extra;  // adds keys or tensors of its own
};

inline mnemo::result<mnemo::model::llama_model> make_tiny_llama(const tiny_llama_spec& s) {
  mnemo::gguf::writer w;
  auto key_u32 = [&](const char* k, std::uint32_t v) {
    if (s.drop_key != k) w.add<std::uint32_t>(k, v);
  };
  w.add_string("general.architecture", "llama");
  key_u32("llama.context_length", 4096);
  key_u32("llama.embedding_length", s.n_embd);
  key_u32("llama.block_count", s.n_layer);
  key_u32("llama.feed_forward_length", s.n_ff);
  key_u32("llama.attention.head_count", s.n_head);
  key_u32("llama.attention.head_count_kv", s.n_head_kv);
  if (s.drop_key != "llama.attention.layer_norm_rms_epsilon")
    w.add<float>("llama.attention.layer_norm_rms_epsilon", 1e-5f);
  if (s.n_swa > 0) key_u32("llama.attention.sliding_window", s.n_swa);
  mnemo::splitmix64 g{s.seed};
  auto tensor = [&](const std::string& name, std::uint64_t n_in, std::uint64_t n_out, float sigma,
                    float mean) {
    if (name == s.drop_tensor) return;
    if (name == s.bad_shape) ++n_out;
    std::vector<float> v(n_in * n_out);
    for (float& x : v) x = mean + sigma * g.normal();
    if (name == s.bad_type) {
      w.add_tensor(name, {n_in, n_out}, 24, std::vector<std::byte>(n_in * n_out));
      return;
    }
    if (n_out == 1)
      w.add_tensor_f32(name, {n_in}, v);
    else
      w.add_tensor_f32(name, {n_in, n_out}, v);
  };
  const std::uint32_t d = s.n_embd / s.n_head, kv = d * s.n_head_kv;
  const float se = 1.0f / std::sqrt(static_cast<float>(s.n_embd));
  tensor("token_embd.weight", s.n_embd, s.n_vocab, 1.0f, 0.0f);
  tensor("output_norm.weight", s.n_embd, 1, 0.1f, 1.0f);
  if (!s.tied) tensor("output.weight", s.n_embd, s.n_vocab, se, 0.0f);
  for (std::uint32_t l = 0; l < s.n_layer; ++l) {
    const std::string p = "blk." + std::to_string(l) + ".";
    tensor(p + "attn_norm.weight", s.n_embd, 1, 0.1f, 1.0f);
    tensor(p + "attn_q.weight", s.n_embd, s.n_embd, se, 0.0f);
    tensor(p + "attn_k.weight", s.n_embd, kv, se, 0.0f);
    tensor(p + "attn_v.weight", s.n_embd, kv, se, 0.0f);
    tensor(p + "attn_output.weight", s.n_embd, s.n_embd, se, 0.0f);
    tensor(p + "ffn_norm.weight", s.n_embd, 1, 0.1f, 1.0f);
    tensor(p + "ffn_gate.weight", s.n_embd, s.n_ff, se, 0.0f);
    tensor(p + "ffn_up.weight", s.n_embd, s.n_ff, se, 0.0f);
    tensor(p + "ffn_down.weight", s.n_ff, s.n_embd, 1.0f / std::sqrt(static_cast<float>(s.n_ff)),
           0.0f);
  }
  if (s.extra) s.extra(w);
  MNEMO_ASSIGN_OR_RETURN(auto bytes, w.to_bytes());
  MNEMO_ASSIGN_OR_RETURN(auto file, mnemo::gguf::file::from_owned_bytes(std::move(bytes)));
  return mnemo::model::llama_model::load(std::move(file));
}

}  // namespace mnemo_test
