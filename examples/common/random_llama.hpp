// A deterministic random-weight Llama GGUF of any shape: the demo's model, the
// benchmarks' 155M model and the eviction quality harness's model. `arch` writes the
// same shape as another attention architecture instead (qwen2: Q/K/V biases; qwen3:
// q/k norms; phi3: fused attn_qkv and gate|up; gemma2: post-norms, tied output, a
// window of 4096 on every other layer; llama3: a Llama with Llama 3.1's RoPE scaling as
// converted files carry it, a rope_freqs tensor and freq_base 500000), for speed
// comparisons between them. Weights are N(0, sigma^2) with sigma = 1/sqrt(fan_in)
// (embedding sigma 1, norms 1 + N(0, 0.01)), as in the test fixtures, so activations
// keep unit scale. `mix` writes each matrix in the type llama-quantize's Q3_K_M, Q4_K_M
// or Q5_K_M gives it (quant_mix.hpp) instead of one `weight_type` for all.
//
// The vocabulary is copied from another GGUF (tokenizer.ggml.* keys) when one is
// given, else a byte vocabulary is made up: <unk> <s> </s>, the 256 byte tokens
// <0x00>..<0xFF> (ids 3..258, as in Llama's SentencePiece vocab), then "tok_N".
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "common/quant_mix.hpp"

#include "mnemo/base/rng.hpp"
#include "mnemo/dtype/element_type.hpp"
#include "mnemo/dtype/rows.hpp"
#include "mnemo/dtype/weight_encode.hpp"
#include "mnemo/gguf/file.hpp"
#include "mnemo/gguf/writer.hpp"
#include "mnemo/model/rope_scaling.hpp"

namespace mnemo_examples {

struct random_llama_config {
  std::string arch = "llama";  // llama, llama3, qwen2, qwen3, phi3 or gemma2
  std::uint32_t n_vocab = 32000;
  std::uint32_t n_embd = 1024;
  std::uint32_t n_layer = 8;
  std::uint32_t n_head = 16;
  std::uint32_t n_head_kv = 4;
  std::uint32_t n_ff = 2816;
  std::uint32_t n_ctx = 4096;
  std::uint32_t sliding_window = 0;  // > 0: Mistral-style window on every layer
  float rope_base = 10000.0f;
  float rms_eps = 1e-5f;
  mnemo::dtype::element_type weight_type = mnemo::dtype::element_type::f16;
  std::optional<quant_mix> mix;  // set: llama-quantize's types per tensor, not weight_type
  bool tied_output = false;
  std::uint64_t seed = 1;
  std::string vocab_from;  // a GGUF whose tokenizer.ggml.* keys are copied, or empty
};

namespace detail {

/// [n_out, n_in] random values encoded in `type` (GGUF layout, row after row).
inline std::vector<std::byte> random_matrix(mnemo::splitmix64& g, std::size_t n_in,
                                            std::size_t n_out, float sigma,
                                            mnemo::dtype::element_type type) {
  const std::size_t row_bytes =
      mnemo::dtype::block_bytes(type) * (n_in / mnemo::dtype::block_size(type));
  std::vector<std::byte> out(row_bytes * n_out);
  std::vector<float> row(n_in);
  for (std::size_t r = 0; r < n_out; ++r) {
    for (float& v : row) v = sigma * g.normal();
    mnemo::dtype::encode_any_row(type, row.data(), out.data() + r * row_bytes, n_in);
  }
  return out;
}

inline std::vector<float> random_norm(mnemo::splitmix64& g, std::size_t n) {
  std::vector<float> w(n);
  for (float& v : w) v = 1.0f + 0.1f * g.normal();
  return w;
}

/// Copies every tokenizer.ggml.* key of `src` whose type the writer can express.
inline mnemo::status copy_vocab(const std::string& path, std::uint32_t n_vocab,
                                mnemo::gguf::writer& w) {
  MNEMO_ASSIGN_OR_RETURN(auto src, mnemo::gguf::file::open(path));
  MNEMO_ASSIGN_OR_RETURN(auto token_view, src.get_array<std::string_view>("tokenizer.ggml.tokens"));
  const std::vector<std::string_view> tokens(token_view.begin(), token_view.end());
  if (tokens.size() != n_vocab)
    return mnemo::make_status(mnemo::status_code::invalid_argument,
                              "%s has %zu tokens, the model is configured for %u", path.c_str(),
                              tokens.size(), n_vocab);
  w.add_array<std::string_view>("tokenizer.ggml.tokens", tokens);
  MNEMO_ASSIGN_OR_RETURN(auto model, src.get_string("tokenizer.ggml.model"));
  w.add_string("tokenizer.ggml.model", model);
  if (auto pre = src.get_string("tokenizer.ggml.pre")) w.add_string("tokenizer.ggml.pre", *pre);
  if (auto s = src.get_array_as<float>("tokenizer.ggml.scores"))
    w.add_array<float>("tokenizer.ggml.scores", *s);
  if (auto t = src.get_array_as<std::int32_t>("tokenizer.ggml.token_type"))
    w.add_array<std::int32_t>("tokenizer.ggml.token_type", *t);
  if (auto m = src.get_array<std::string_view>("tokenizer.ggml.merges")) {
    const std::vector<std::string_view> merges(m->begin(), m->end());
    w.add_array<std::string_view>("tokenizer.ggml.merges", merges);
  }
  for (const char* key : {"tokenizer.ggml.bos_token_id", "tokenizer.ggml.eos_token_id",
                          "tokenizer.ggml.unknown_token_id", "tokenizer.ggml.padding_token_id"})
    if (auto id = src.get_u32(key)) w.add<std::uint32_t>(key, *id);
  for (const char* key : {"tokenizer.ggml.add_bos_token", "tokenizer.ggml.add_eos_token"})
    if (auto b = src.get_bool(key)) w.add<bool>(key, *b);
  return {};
}

inline void byte_vocab(std::uint32_t n_vocab, mnemo::gguf::writer& w) {
  std::vector<std::string> tokens;
  std::vector<float> scores;
  std::vector<std::int32_t> types;
  const char* specials[] = {"<unk>", "<s>", "</s>"};
  for (std::uint32_t i = 0; i < n_vocab; ++i) {
    char buf[32];
    if (i < 3) {
      tokens.emplace_back(specials[i]);
      types.push_back(i == 0 ? 2 : 3);  // unknown, control
    } else if (i < 259) {
      std::snprintf(buf, sizeof buf, "<0x%02X>", i - 3);
      tokens.emplace_back(buf);
      types.push_back(6);  // byte
    } else {
      std::snprintf(buf, sizeof buf, "tok_%u", i);
      tokens.emplace_back(buf);
      types.push_back(1);  // normal
    }
    scores.push_back(-static_cast<float>(i));
  }
  w.add_array("tokenizer.ggml.tokens", tokens);
  w.add_string("tokenizer.ggml.model", "llama");
  w.add_array<float>("tokenizer.ggml.scores", scores);
  w.add_array<std::int32_t>("tokenizer.ggml.token_type", types);
  w.add<std::uint32_t>("tokenizer.ggml.bos_token_id", 1);
  w.add<std::uint32_t>("tokenizer.ggml.eos_token_id", 2);
  w.add<std::uint32_t>("tokenizer.ggml.unknown_token_id", 0);
}

}  // namespace detail

/// Writes the model to `path`. Shapes are checked (head sizes, block sizes of the type).
inline mnemo::status write_random_llama(const random_llama_config& c, const std::string& path) {
  using mnemo::make_status;
  using mnemo::status_code;
  namespace dt = mnemo::dtype;
  if (c.n_head == 0 || c.n_head_kv == 0 || c.n_head % c.n_head_kv != 0 || c.n_embd % c.n_head != 0)
    return make_status(status_code::invalid_argument,
                       "random llama: n_head (%u) must be a multiple of n_head_kv (%u) and divide "
                       "n_embd (%u)",
                       c.n_head, c.n_head_kv, c.n_embd);
  const dt::element_type base = c.mix ? quant_mix_base(*c.mix) : c.weight_type;
  const std::size_t bs = dt::block_size(base);  // every type of a mix has blocks of 256
  if (!dt::is_valid(base) || c.n_embd % bs != 0 || c.n_ff % bs != 0)
    return make_status(status_code::invalid_argument,
                       "random llama: n_embd (%u) and n_ff (%u) must be multiples of the %s block "
                       "(%zu)",
                       c.n_embd, c.n_ff, std::string(dt::to_string(base)).c_str(), bs);
  if (c.n_vocab < 259 && c.vocab_from.empty())
    return make_status(status_code::invalid_argument,
                       "random llama: the made-up byte vocabulary needs n_vocab >= 259");
  const std::uint32_t head_dim = c.n_embd / c.n_head;
  const std::uint32_t n_embd_kv = head_dim * c.n_head_kv;

  const bool llama3 = c.arch == "llama3";  // GGUF arch llama, with rope scaling
  const std::string a = llama3 ? "llama" : c.arch;
  if (a != "llama" && a != "qwen2" && a != "qwen3" && a != "phi3" && a != "gemma2")
    return make_status(status_code::invalid_argument,
                       "random llama: arch '%s' (llama, llama3, qwen2, qwen3, phi3, gemma2)",
                       c.arch.c_str());
  const float rope_base = llama3 ? 500000.0f : c.rope_base;
  const std::string k = a + ".";
  mnemo::gguf::writer w;
  w.add_string("general.architecture", a);
  w.add_string("general.name", "mnemo random " + c.arch);
  w.add<std::uint32_t>(k + "context_length", c.n_ctx);
  w.add<std::uint32_t>(k + "embedding_length", c.n_embd);
  w.add<std::uint32_t>(k + "block_count", c.n_layer);
  w.add<std::uint32_t>(k + "feed_forward_length", c.n_ff);
  w.add<std::uint32_t>(k + "attention.head_count", c.n_head);
  w.add<std::uint32_t>(k + "attention.head_count_kv", c.n_head_kv);
  w.add<float>(k + "attention.layer_norm_rms_epsilon", c.rms_eps);
  w.add<std::uint32_t>(k + "rope.dimension_count", head_dim);
  w.add<float>(k + "rope.freq_base", rope_base);
  w.add<std::uint32_t>(k + "vocab_size", c.n_vocab);
  if (c.mix) w.add<std::uint32_t>("general.file_type", quant_mix_file_type(*c.mix));
  if (c.sliding_window > 0) w.add<std::uint32_t>(k + "attention.sliding_window", c.sliding_window);
  if (c.vocab_from.empty()) {
    detail::byte_vocab(c.n_vocab, w);
  } else {
    MNEMO_RETURN_IF_ERROR(detail::copy_vocab(c.vocab_from, c.n_vocab, w));
  }

  mnemo::splitmix64 g{c.seed};
  const bool tied = c.tied_output || a == "gemma2";  // gemma2 has no output.weight
  std::uint32_t layer = 0;
  const auto mat = [&](const std::string& name, tensor_role role, std::uint32_t n_in,
                       std::uint32_t n_out, float sigma) {
    const dt::element_type t =
        c.mix ? quant_mix_type(*c.mix, role, layer, c.n_layer, tied) : c.weight_type;
    w.add_tensor(name, {n_in, n_out}, dt::ggml_type_id(t),
                 detail::random_matrix(g, n_in, n_out, sigma, t));
  };
  const auto norm = [&](const std::string& name, std::uint32_t n) {
    const auto v = detail::random_norm(g, n);
    w.add_tensor_f32(name, {n}, v);
  };
  const float s_embd = 1.0f / std::sqrt(static_cast<float>(c.n_embd));
  const float s_ff = 1.0f / std::sqrt(static_cast<float>(c.n_ff));
  const auto bias = [&](const std::string& name, std::uint32_t n) {
    std::vector<float> v(n);
    for (float& x : v) x = 0.1f * g.normal();
    w.add_tensor_f32(name, {n}, v);
  };
  if (llama3)  // Llama 3.1's own parameters: factor 8, low 1, high 4, original context 8192
    w.add_tensor_f32(
        "rope_freqs.weight", {head_dim / 2},
        mnemo::model::llama3_rope_factors(head_dim, rope_base, 8.0f, 1.0f, 4.0f, 8192.0f));
  mat("token_embd.weight", tensor_role::token_embd, c.n_embd, c.n_vocab, 1.0f);
  for (; layer < c.n_layer; ++layer) {
    const std::string p = "blk." + std::to_string(layer) + ".";
    norm(p + "attn_norm.weight", c.n_embd);
    if (a == "phi3") {
      mat(p + "attn_qkv.weight", tensor_role::attn_qkv, c.n_embd, c.n_embd + 2 * n_embd_kv, s_embd);
    } else {
      mat(p + "attn_q.weight", tensor_role::attn_q, c.n_embd, c.n_embd, s_embd);
      mat(p + "attn_k.weight", tensor_role::attn_k, c.n_embd, n_embd_kv, s_embd);
      mat(p + "attn_v.weight", tensor_role::attn_v, c.n_embd, n_embd_kv, s_embd);
    }
    if (a == "qwen2") {
      bias(p + "attn_q.bias", c.n_embd);
      bias(p + "attn_k.bias", n_embd_kv);
      bias(p + "attn_v.bias", n_embd_kv);
    }
    if (a == "qwen3") {
      norm(p + "attn_q_norm.weight", head_dim);
      norm(p + "attn_k_norm.weight", head_dim);
    }
    mat(p + "attn_output.weight", tensor_role::attn_output, c.n_embd, c.n_embd, s_embd);
    norm(p + "ffn_norm.weight", c.n_embd);
    if (a == "phi3") {
      mat(p + "ffn_up.weight", tensor_role::ffn_up, c.n_embd, 2 * c.n_ff, s_embd);
    } else {
      mat(p + "ffn_gate.weight", tensor_role::ffn_gate, c.n_embd, c.n_ff, s_embd);
      mat(p + "ffn_up.weight", tensor_role::ffn_up, c.n_embd, c.n_ff, s_embd);
    }
    mat(p + "ffn_down.weight", tensor_role::ffn_down, c.n_ff, c.n_embd, s_ff);
    if (a == "gemma2") {
      norm(p + "post_attention_norm.weight", c.n_embd);
      norm(p + "post_ffw_norm.weight", c.n_embd);
    }
  }
  norm("output_norm.weight", c.n_embd);
  if (!tied) mat("output.weight", tensor_role::output, c.n_embd, c.n_vocab, s_embd);
  return w.write(path);
}

}  // namespace mnemo_examples
