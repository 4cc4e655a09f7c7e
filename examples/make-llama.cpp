// make-llama: writes a deterministic random-weight Llama GGUF of any shape, or the same
// shape as another attention architecture (--arch llama3|qwen2|qwen3|phi3|gemma2; llama3 is
// a Llama with Llama 3.1 RoPE scaling).
//
//   make-llama OUT.gguf [--arch NAME] [--n-vocab N] [--n-embd N] [--n-layer N] [--n-head N]
//              [--n-head-kv N] [--n-ff N] [--n-ctx N] [--swa N] [--type TYPE]
//              [--tied] [--seed S] [--vocab-from VOCAB.gguf]
//
// TYPE is any weight type mnemo computes with: f32, f16, bf16, q8_0, q4_0, q4_1, q5_0,
// q5_1, q2_K, q3_K, q4_K, q5_K or q6_K (the k-quants need n_embd and n_ff multiples of
// 256; mnemo's reference quantisers, dtype/weight_encode.hpp, write them), or one of
// llama-quantize's mixtures q3_K_M, q4_K_M, q5_K_M: each tensor the type llama-quantize
// gives it (common/quant_mix.hpp; Q4_K_M keeps output and some attn_v, ffn_down in q6_K).
//
// The defaults are the ~155M-parameter model of docs/performance.md (d_model 1024,
// 8 layers, 16 heads, 4 KV heads, ff 2816, vocab 32000, f16 weights).
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "common/random_llama.hpp"

namespace {

int usage() {
  std::fprintf(
      stderr,
      "usage: make-llama OUT.gguf [--arch llama|llama3|qwen2|qwen3|phi3|gemma2] [--n-vocab N]\n"
      "       [--n-embd N] [--n-layer N] [--n-head N]\n"
      "       [--n-head-kv N] [--n-ff N] [--n-ctx N] [--swa N]\n"
      "       [--type f32|f16|bf16|q8_0|q4_0|q4_1|q5_0|q5_1|q2_K|q3_K|q4_K|q5_K|q6_K\n"
      "               |q3_K_M|q4_K_M|q5_K_M]\n"
      "       [--tied] [--seed S] [--vocab-from F]\n");
  return 2;
}

bool parse_type(const char* s, mnemo::dtype::element_type& t) {
  using mnemo::dtype::element_type;
  for (auto c : {element_type::f32, element_type::f16, element_type::bf16, element_type::q8_0,
                 element_type::q4_0, element_type::q4_1, element_type::q5_0, element_type::q5_1,
                 element_type::q2_K, element_type::q3_K, element_type::q4_K, element_type::q5_K,
                 element_type::q6_K})
    if (mnemo::dtype::to_string(c) == s) {
      t = c;
      return true;
    }
  return false;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2 || argv[1][0] == '-') return usage();
  mnemo_examples::random_llama_config c;
  const std::string out = argv[1];
  for (int i = 2; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--tied") {
      c.tied_output = true;
      continue;
    }
    if (i + 1 >= argc) return usage();
    const char* v = argv[++i];
    char* end = nullptr;
    const unsigned long long n = std::strtoull(v, &end, 10);
    const bool numeric = end != v && *end == '\0' && n <= 0xffffffffull;
    if (a == "--type") {
      c.mix = mnemo_examples::parse_quant_mix(v);
      if (!c.mix && !parse_type(v, c.weight_type)) return usage();
    } else if (a == "--vocab-from") {
      c.vocab_from = v;
    } else if (a == "--arch") {
      c.arch = v;
    } else if (!numeric) {
      return usage();
    } else if (a == "--n-vocab") {
      c.n_vocab = static_cast<std::uint32_t>(n);
    } else if (a == "--n-embd") {
      c.n_embd = static_cast<std::uint32_t>(n);
    } else if (a == "--n-layer") {
      c.n_layer = static_cast<std::uint32_t>(n);
    } else if (a == "--n-head") {
      c.n_head = static_cast<std::uint32_t>(n);
    } else if (a == "--n-head-kv") {
      c.n_head_kv = static_cast<std::uint32_t>(n);
    } else if (a == "--n-ff") {
      c.n_ff = static_cast<std::uint32_t>(n);
    } else if (a == "--n-ctx") {
      c.n_ctx = static_cast<std::uint32_t>(n);
    } else if (a == "--swa") {
      c.sliding_window = static_cast<std::uint32_t>(n);
    } else if (a == "--seed") {
      c.seed = n;
    } else {
      return usage();
    }
  }
  if (const mnemo::status s = mnemo_examples::write_random_llama(c, out); !s.is_ok()) {
    std::fprintf(stderr, "make-llama: %s\n", s.message().c_str());
    return 1;
  }
  std::printf("wrote %s\n", out.c_str());
  return 0;
}
