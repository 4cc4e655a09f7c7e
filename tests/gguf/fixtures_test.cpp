// Opens every shared fixture model (MNEMO_FIXTURES_DIR, set by tests/model.cmake) and
// checks facts the fixtures' own documentation states, plus values read from the
// files by an independent script (noted where used). Skips when the fixtures are absent.
#include <cmath>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include <gtest/gtest.h>

#include "mnemo/dtype/types.hpp"
#include "mnemo/gguf/file.hpp"

#ifndef MNEMO_FIXTURES_DIR
#define MNEMO_FIXTURES_DIR ""
#endif

namespace {

using mnemo::status_code;
using mnemo::dtype::element_type;
namespace gguf = mnemo::gguf;

std::string fixture(const std::string& name) {
  return std::string(MNEMO_FIXTURES_DIR) + "/" + name;
}

#define MNEMO_SKIP_WITHOUT_FIXTURES()                     \
  if (!std::filesystem::is_directory(MNEMO_FIXTURES_DIR)) \
  GTEST_SKIP() << "fixture directory '" MNEMO_FIXTURES_DIR "' not found (MNEMO_FIXTURES_DIR)"

/// Declares `const gguf::file& var` for fixture `name`, or fails the test.
#define MNEMO_OPEN_FIXTURE(var, name)                                    \
  auto var##_result = gguf::file::open(fixture(name));                   \
  ASSERT_TRUE(var##_result.is_ok()) << var##_result.error().to_string(); \
  const gguf::file& var = *var##_result

float f32_at(const gguf::tensor& t, std::size_t i) {
  float v;
  std::memcpy(&v, t.data.data() + 4 * i, 4);
  return v;
}

struct model_facts {
  const char* file;
  const char* arch;
  std::size_t n_tensors;
  std::uint32_t block_count;
  std::uint32_t embedding_length;
};

TEST(GgufFixtures, EveryModelOpensWithItsArchitectureAndTensors) {
  MNEMO_SKIP_WITHOUT_FIXTURES();
  const model_facts models[] = {
      {"llama-tiny.gguf", "llama", 21, 2, 128},   {"llama-gqa4-f16.gguf", "llama", 30, 3, 256},
      {"gemma3-iswa.gguf", "gemma3", 80, 6, 128}, {"mamba.gguf", "mamba", 32, 3, 128},
      {"jamba.gguf", "jamba", 55, 4, 128},
  };
  for (const model_facts& m : models) {
    SCOPED_TRACE(m.file);
    auto r = gguf::file::open(fixture(m.file));
    ASSERT_TRUE(r.is_ok()) << r.error().to_string();
    const gguf::file& f = *r;
    EXPECT_EQ(f.version(), 3u);
    EXPECT_EQ(f.alignment(), 32u);
    EXPECT_EQ(f.get_string("general.architecture").value_or(std::string_view()), m.arch);
    const std::string a(m.arch);
    EXPECT_EQ(f.get_u32(a + ".block_count").value_or(0), m.block_count);
    EXPECT_EQ(f.get_u32(a + ".embedding_length").value_or(0), m.embedding_length);
    EXPECT_EQ(f.get_u32(a + ".context_length").value_or(0), 4096u);
    EXPECT_EQ(f.get_u32(a + ".vocab_size").value_or(0), 512u);
    ASSERT_EQ(f.tensors().size(), m.n_tensors);
    auto tokens = f.get_array<std::string_view>("tokenizer.ggml.tokens");
    ASSERT_TRUE(tokens.is_ok()) << tokens.error().to_string();
    EXPECT_EQ(tokens->size(), 512u);
    EXPECT_EQ((*tokens)[0], "<unk>");
    EXPECT_EQ((*tokens)[3], "<0x00>");  // byte tokens 3..258
    EXPECT_EQ((*tokens)[258], "<0xFF>");
    const auto* lo = f.bytes().data();
    for (const gguf::tensor& t : f.tensors()) {
      ASSERT_GE(t.data.data(), lo + f.data_offset()) << t.name;
      ASSERT_LE(t.data.data() + t.data.size(), lo + f.bytes().size()) << t.name;
      EXPECT_EQ(reinterpret_cast<std::uintptr_t>(t.data.data()) % 32, 0u) << t.name;
      EXPECT_EQ(f.find_tensor(t.name), &t);
    }
    // Tied output: gemma3 and mamba have no output.weight.
    const bool tied = a == "gemma3" || a == "mamba";
    EXPECT_EQ(f.find_tensor("output.weight") == nullptr, tied);
    ASSERT_NE(f.find_tensor("token_embd.weight"), nullptr);
    // Norm weights are 1 + N(0, 0.1^2): a wrong data offset would not look like that.
    const gguf::tensor& norm = *f.find_tensor("output_norm.weight");
    ASSERT_EQ(norm.element_type, element_type::f32);
    for (std::size_t i = 0; i < norm.n_elements; ++i) {
      const float x = f32_at(norm, i);
      ASSERT_TRUE(x > 0.4f && x < 1.6f) << "output_norm.weight[" << i << "] = " << x;
    }
  }
}

TEST(GgufFixtures, LlamaTinyHyperParametersAndData) {
  MNEMO_SKIP_WITHOUT_FIXTURES();
  MNEMO_OPEN_FIXTURE(f, "llama-tiny.gguf");
  // README.md: f32, 2 layers, GQA 2. The other numbers were read with a separate script.
  EXPECT_EQ(f.get_u32("llama.attention.head_count").value_or(0), 4u);
  EXPECT_EQ(f.get_u32("llama.attention.head_count_kv").value_or(0), 2u);
  EXPECT_EQ(f.get_u32("llama.feed_forward_length").value_or(0), 344u);
  EXPECT_EQ(f.get_u32("llama.rope.dimension_count").value_or(0), 32u);
  EXPECT_FLOAT_EQ(f.get_f32("llama.rope.freq_base").value_or(0), 10000.0f);
  EXPECT_FLOAT_EQ(f.get_f32("llama.attention.layer_norm_rms_epsilon").value_or(0), 1e-5f);
  EXPECT_EQ(f.get_string("tokenizer.ggml.model").value_or(std::string_view()), "llama");
  EXPECT_EQ(f.get_u32("tokenizer.ggml.bos_token_id").value_or(9), 1u);
  EXPECT_EQ(f.get_u32("tokenizer.ggml.eos_token_id").value_or(9), 2u);
  EXPECT_EQ(f.get_bool("tokenizer.ggml.add_bos_token").value_or(false), true);
  EXPECT_EQ(f.get_bool("tokenizer.ggml.add_eos_token").value_or(true), false);
  auto types = f.get_array<std::int32_t>("tokenizer.ggml.token_type");
  ASSERT_TRUE(types.is_ok()) << types.error().to_string();
  ASSERT_EQ(types->size(), 512u);
  EXPECT_EQ((*types)[0], 2);  // <unk>: 2; <s>, </s>: 3; bytes: 6; pieces: 1
  EXPECT_EQ((*types)[1], 3);
  EXPECT_EQ((*types)[3], 6);
  EXPECT_EQ((*types)[300], 1);
  EXPECT_EQ(f.get_array<float>("tokenizer.ggml.scores")->size(), 512u);

  const gguf::tensor* e = f.find_tensor("token_embd.weight");
  ASSERT_NE(e, nullptr);
  EXPECT_EQ(e->n_dims, 2u);
  EXPECT_EQ(e->dims[0], 128u);
  EXPECT_EQ(e->dims[1], 512u);
  EXPECT_EQ(e->n_bytes(), 128u * 512u * 4u);
  EXPECT_EQ(e->row_bytes, 128u * 4u);
  EXPECT_EQ(e->type_name, "f32");
  // First values as read by a separate Python script from the same file.
  EXPECT_FLOAT_EQ(f32_at(*e, 0), 0.3455841839313507f);
  EXPECT_FLOAT_EQ(f32_at(*e, 3), -1.3031572103500366f);
  const gguf::tensor* down = f.find_tensor("blk.1.ffn_down.weight");
  ASSERT_NE(down, nullptr);
  EXPECT_EQ(down->dims[0], 344u);
  EXPECT_EQ(down->offset, 1800704u);
  EXPECT_FLOAT_EQ(f32_at(*down, 0), 0.07484854757785797f);
}

TEST(GgufFixtures, LlamaGqa4F16Tensors) {
  MNEMO_SKIP_WITHOUT_FIXTURES();
  MNEMO_OPEN_FIXTURE(f, "llama-gqa4-f16.gguf");
  EXPECT_EQ(f.get_u32("llama.feed_forward_length").value_or(0), 688u);
  EXPECT_EQ(f.get_u32("llama.attention.head_count_kv").value_or(0), 1u);
  EXPECT_EQ(f.get_u32("llama.rope.dimension_count").value_or(0), 64u);
  const gguf::tensor* k = f.find_tensor("blk.2.attn_k.weight");
  ASSERT_NE(k, nullptr);
  EXPECT_EQ(k->element_type, element_type::f16);
  EXPECT_EQ(k->ggml_type, 1u);
  EXPECT_EQ(k->dims[0], 256u);
  EXPECT_EQ(k->dims[1], 64u);
  EXPECT_EQ(k->n_bytes(), 256u * 64u * 2u);
  EXPECT_EQ(f.find_tensor("blk.0.attn_norm.weight")->element_type, element_type::f32);
  EXPECT_EQ(f.find_tensor("blk.3.attn_q.weight"), nullptr);  // 3 layers only
  const auto e = f.find_tensor("token_embd.weight");
  std::uint16_t h;
  std::memcpy(&h, e->data.data(), 2);
  EXPECT_FLOAT_EQ(mnemo::dtype::f16::from_bits(h).to_float(), 0.345703125f);  // script
}

TEST(GgufFixtures, GemmaMambaJambaKeys) {
  MNEMO_SKIP_WITHOUT_FIXTURES();
  MNEMO_OPEN_FIXTURE(g, "gemma3-iswa.gguf");
  EXPECT_EQ(g.get_u32("gemma3.attention.sliding_window").value_or(0), 16u);
  EXPECT_EQ(g.get_u32("gemma3.attention.sliding_window_pattern").value_or(0), 6u);
  EXPECT_EQ(g.get_u32("gemma3.attention.key_length").value_or(0), 64u);
  EXPECT_FLOAT_EQ(g.get_f32("gemma3.final_logit_softcapping").value_or(0), 10.0f);
  EXPECT_FLOAT_EQ(g.get_f32("gemma3.rope.freq_base").value_or(0), 1e6f);
  EXPECT_EQ(g.find_tensor("blk.5.attn_q.weight")->dims[1], 256u);

  MNEMO_OPEN_FIXTURE(m, "mamba.gguf");
  EXPECT_EQ(m.get_u32("mamba.ssm.conv_kernel").value_or(0), 4u);
  EXPECT_EQ(m.get_u32("mamba.ssm.inner_size").value_or(0), 256u);
  EXPECT_EQ(m.get_u32("mamba.ssm.state_size").value_or(0), 16u);
  EXPECT_EQ(m.get_u32("mamba.ssm.time_step_rank").value_or(0), 8u);
  EXPECT_EQ(m.get_bool("mamba.ssm.dt_b_c_rms").value_or(true), false);
  const gguf::tensor* a = m.find_tensor("blk.2.ssm_a");
  ASSERT_NE(a, nullptr);
  EXPECT_EQ(a->dims[0], 16u);
  EXPECT_EQ(a->dims[1], 256u);
  EXPECT_FLOAT_EQ(f32_at(*a, 0), -1.0f);  // A[c][s] = -(s+1)
  EXPECT_FLOAT_EQ(f32_at(*a, 15), -16.0f);

  MNEMO_OPEN_FIXTURE(j, "jamba.gguf");
  auto kv = j.get_array<std::int32_t>("jamba.attention.head_count_kv");
  ASSERT_TRUE(kv.is_ok()) << kv.error().to_string();
  EXPECT_EQ(kv->to_vector(), (std::vector<std::int32_t>{0, 2, 0, 2}));
  EXPECT_EQ(j.get_array_as<std::uint32_t>("jamba.attention.head_count_kv").value(),
            (std::vector<std::uint32_t>{0, 2, 0, 2}));
  EXPECT_EQ(j.get_u32("jamba.attention.head_count_kv").error().code(),
            status_code::invalid_argument);
  EXPECT_EQ(j.find_tensor("blk.0.attn_q.weight"), nullptr);  // layer 0 is Mamba
  EXPECT_NE(j.find_tensor("blk.1.attn_q.weight"), nullptr);
  EXPECT_NE(j.find_tensor("blk.0.ssm_dt_norm.weight"), nullptr);
}

TEST(GgufFixtures, TokenizerVocabularies) {
  MNEMO_SKIP_WITHOUT_FIXTURES();
  struct vocab {
    const char* file;
    const char* model;
    std::size_t n_tokens;
  };
  const vocab vocabs[] = {{"tokenizer/ggml-vocab-gpt-2.gguf", "gpt2", 50257},
                          {"tokenizer/ggml-vocab-llama-spm.gguf", "llama", 32000},
                          {"tokenizer/ggml-vocab-phi-3.gguf", "llama", 32064},
                          {"tokenizer/ggml-vocab-starcoder.gguf", "gpt2", 49152}};
  for (const vocab& v : vocabs) {
    SCOPED_TRACE(v.file);
    auto r = gguf::file::open(fixture(v.file));
    ASSERT_TRUE(r.is_ok()) << r.error().to_string();
    EXPECT_TRUE(r->tensors().empty());
    EXPECT_EQ(r->get_string("tokenizer.ggml.model").value_or(std::string_view()), v.model);
    auto toks = r->get_array<std::string_view>("tokenizer.ggml.tokens");
    ASSERT_TRUE(toks.is_ok());
    EXPECT_EQ(toks->size(), v.n_tokens);
    std::size_t bytes = 0;
    for (std::string_view t : *toks) bytes += t.size();
    EXPECT_GT(bytes, v.n_tokens);
  }
  MNEMO_OPEN_FIXTURE(g, "tokenizer/ggml-vocab-gpt-2.gguf");
  auto merges = g.get_array<std::string_view>("tokenizer.ggml.merges");
  ASSERT_TRUE(merges.is_ok());
  EXPECT_EQ(merges->size(), 50000u);
  EXPECT_EQ((*merges)[0], "\xc4\xa0 t");  // "Ġ t"
  EXPECT_EQ((*g.get_array<std::string_view>("tokenizer.ggml.tokens"))[50256], "<|endoftext|>");
}

}  // namespace
