// The examples' random Llama writer: the shapes and keys a Llama loader reads, the
// weight statistics it promises, determinism per seed, refused shapes, and that the
// other architecture shapes it writes load as those architectures.
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include "common/random_llama.hpp"
#include "common/small_llama.hpp"
#include <gtest/gtest.h>

#include "mnemo/model/architectures.hpp"
#include "mnemo/model/matmul.hpp"
#include "mnemo/model/weight.hpp"

namespace {

namespace fs = std::filesystem;
using mnemo::dtype::element_type;
using mnemo_examples::random_llama_config;

std::string temp_path(const char* name) {
  return (fs::temp_directory_path() /
          (std::string("mnemo_") + name + "_" + std::to_string(::getpid()) + ".gguf"))
      .string();
}

random_llama_config small_config(element_type t) { return mnemo_test::small_llama_config(t); }

TEST(RandomLlama, WritesEveryTensorWithItsShapeAndType) {
  for (element_type t : {element_type::f32, element_type::f16, element_type::q8_0}) {
    const std::string path = temp_path("shapes");
    ASSERT_TRUE(mnemo_examples::write_random_llama(small_config(t), path).is_ok());
    auto f = mnemo::gguf::file::open(path);
    ASSERT_TRUE(f.is_ok()) << f.error().message();
    EXPECT_EQ(*f->get_string("general.architecture"), "llama");
    EXPECT_EQ(*f->get_u32("llama.attention.head_count_kv"), 2u);
    EXPECT_EQ(*f->get_u32("llama.rope.dimension_count"), 16u);
    const struct {
      const char* name;
      std::size_t n_in, n_out;
    } expect[] = {{"token_embd.weight", 64, 300},
                  {"blk.1.attn_q.weight", 64, 64},
                  {"blk.1.attn_k.weight", 64, 32},
                  {"blk.1.attn_v.weight", 64, 32},
                  {"blk.0.attn_output.weight", 64, 64},
                  {"blk.0.ffn_gate.weight", 64, 96},
                  {"blk.0.ffn_up.weight", 64, 96},
                  {"blk.0.ffn_down.weight", 96, 64},
                  {"output.weight", 64, 300}};
    for (const auto& e : expect) {
      const auto* tensor = f->find_tensor(e.name);
      ASSERT_NE(tensor, nullptr) << e.name;
      auto w = mnemo::model::weight_from_gguf(*tensor, e.n_in, e.n_out);
      ASSERT_TRUE(w.is_ok()) << w.error().message();
      EXPECT_EQ(w->type, t) << e.name;
    }
    const auto* norm = f->find_tensor("blk.1.ffn_norm.weight");
    ASSERT_NE(norm, nullptr);
    EXPECT_EQ(norm->element_type, element_type::f32);
    auto tokens = f->get_array<std::string_view>("tokenizer.ggml.tokens");
    ASSERT_TRUE(tokens.is_ok());
    EXPECT_EQ((*tokens)[3 + 'A'], "<0x41>");
    std::remove(path.c_str());
  }
}

TEST(RandomLlama, ProjectionsHaveUnitGain) {
  // sigma = 1/sqrt(fan_in): a unit-variance input gives unit-variance outputs.
  random_llama_config c = small_config(element_type::f32);
  c.n_embd = 256;
  c.n_ff = 256;
  const std::string path = temp_path("gain");
  ASSERT_TRUE(mnemo_examples::write_random_llama(c, path).is_ok());
  auto f = mnemo::gguf::file::open(path);
  ASSERT_TRUE(f.is_ok());
  auto w = mnemo::model::weight_from_gguf(*f->find_tensor("blk.0.attn_q.weight"), 256, 256);
  ASSERT_TRUE(w.is_ok());
  std::vector<float> row(256);
  double sum = 0, sum2 = 0;
  for (std::size_t r = 0; r < w->n_out; ++r) {
    mnemo::model::get_row(*w, r, row.data());
    for (float v : row) {
      sum += v;
      sum2 += static_cast<double>(v) * v;
    }
  }
  const double n = 256.0 * 256.0, mean = sum / n, var = sum2 / n - mean * mean;
  EXPECT_NEAR(mean, 0.0, 0.01 / 16 * 4);
  EXPECT_NEAR(var * 256.0, 1.0, 0.03) << "variance of 1/sqrt(fan_in)-scaled weights";
  std::remove(path.c_str());
}

TEST(RandomLlama, SameSeedSameBytesOtherSeedOtherBytes) {
  const std::string a = temp_path("a"), b = temp_path("b"), d = temp_path("d");
  random_llama_config c = small_config(element_type::f16);
  ASSERT_TRUE(mnemo_examples::write_random_llama(c, a).is_ok());
  ASSERT_TRUE(mnemo_examples::write_random_llama(c, b).is_ok());
  c.seed = 8;
  ASSERT_TRUE(mnemo_examples::write_random_llama(c, d).is_ok());
  auto fa = mnemo::gguf::file::open(a), fb = mnemo::gguf::file::open(b),
       fd = mnemo::gguf::file::open(d);
  ASSERT_TRUE(fa.is_ok() && fb.is_ok() && fd.is_ok());
  EXPECT_TRUE(std::ranges::equal(fa->bytes(), fb->bytes()));
  EXPECT_FALSE(std::ranges::equal(fa->bytes(), fd->bytes()));
  for (const auto& p : {a, b, d}) std::remove(p.c_str());
}

TEST(RandomLlama, RefusesShapesItCannotWrite) {
  random_llama_config c = small_config(element_type::q8_0);
  c.n_ff = 100;  // not a multiple of the q8_0 block
  EXPECT_EQ(mnemo_examples::write_random_llama(c, temp_path("bad")).code(),
            mnemo::status_code::invalid_argument);
  c = small_config(element_type::f32);
  c.n_head_kv = 3;
  EXPECT_EQ(mnemo_examples::write_random_llama(c, temp_path("bad")).code(),
            mnemo::status_code::invalid_argument);
  c = small_config(element_type::f32);
  c.vocab_from = "/nonexistent/vocab.gguf";
  EXPECT_FALSE(mnemo_examples::write_random_llama(c, temp_path("bad")).is_ok());
}

TEST(RandomLlama, CopiesAVocabulary) {
  const std::string vocab =
      std::string(MNEMO_FIXTURES_DIR) + "/tokenizer/ggml-vocab-llama-spm.gguf";
  if (!fs::exists(vocab)) GTEST_SKIP() << "no fixtures at " << MNEMO_FIXTURES_DIR;
  random_llama_config c = small_config(element_type::f32);
  c.n_vocab = 32000;
  c.vocab_from = vocab;
  const std::string path = temp_path("vocab");
  ASSERT_TRUE(mnemo_examples::write_random_llama(c, path).is_ok());
  auto f = mnemo::gguf::file::open(path);
  auto src = mnemo::gguf::file::open(vocab);
  ASSERT_TRUE(f.is_ok() && src.is_ok());
  auto t1 = f->get_array<std::string_view>("tokenizer.ggml.tokens");
  auto t2 = src->get_array<std::string_view>("tokenizer.ggml.tokens");
  ASSERT_TRUE(t1.is_ok() && t2.is_ok());
  ASSERT_EQ(t1->size(), t2->size());
  for (std::size_t i = 0; i < t1->size(); ++i) ASSERT_EQ((*t1)[i], (*t2)[i]) << "token " << i;
  EXPECT_EQ(*f->get_array_as<float>("tokenizer.ggml.scores"),
            *src->get_array_as<float>("tokenizer.ggml.scores"));
  std::remove(path.c_str());
  c.n_vocab = 512;  // a vocabulary of another size is refused
  EXPECT_EQ(mnemo_examples::write_random_llama(c, path).code(),
            mnemo::status_code::invalid_argument);
}

TEST(RandomLlama, EveryArchitectureShapeLoadsAsThatArchitecture) {
  struct arch_case {
    const char* arch;
    const char* gguf_arch;
  };
  for (const arch_case a :
       {arch_case{"llama", "llama"}, arch_case{"llama3", "llama"}, arch_case{"qwen2", "qwen2"},
        arch_case{"qwen3", "qwen3"}, arch_case{"phi3", "phi3"}, arch_case{"gemma2", "gemma2"}}) {
    SCOPED_TRACE(a.arch);
    random_llama_config c = small_config(element_type::f32);
    c.arch = a.arch;
    const std::string path = temp_path(a.arch);
    ASSERT_TRUE(mnemo_examples::write_random_llama(c, path).is_ok());
    // the loaders refuse a tensor their recipe does not name and miss none it needs
    auto m = mnemo::model::open_attention_decoder(path);
    ASSERT_TRUE(m.is_ok()) << m.error().to_string();
    EXPECT_EQ(m->recipe().name, a.gguf_arch);
    const auto& h = m->hparams();
    EXPECT_EQ(h.n_layer, c.n_layer);
    EXPECT_EQ(h.d_k, c.n_embd / c.n_head);
    const std::string arch = a.arch;
    if (arch == "llama3") {
      EXPECT_EQ(h.rope_global.freq_base, 500000.0f);
      EXPECT_EQ(h.rope_global.freq_factors,
                mnemo::model::llama3_rope_factors(h.n_rot, 500000.0f, 8.0f, 1.0f, 4.0f, 8192.0f));
      EXPECT_GT(h.rope_global.freq_factors.back(), 1.0f) << "no pair is scaled";
    } else {
      EXPECT_TRUE(h.rope_global.freq_factors.empty());
    }
    if (arch == "gemma2") {
      EXPECT_TRUE(m->tied_output());
      EXPECT_EQ(h.is_swa, (std::vector<std::uint8_t>{1, 0})) << "a window on every other layer";
      EXPECT_EQ(h.attn_softcap, 50.0f);
      EXPECT_EQ(h.final_softcap, 30.0f);
    } else {
      EXPECT_EQ(h.n_local(), 0u);
    }
    std::remove(path.c_str());
  }
  random_llama_config c = small_config(element_type::f32);
  c.arch = "mamba";
  EXPECT_EQ(mnemo_examples::write_random_llama(c, temp_path("mamba")).code(),
            mnemo::status_code::invalid_argument);
}

// llama-quantize's Q4_K_M of make-llama's 8-layer 155M model (its log): q6_K for output,
// and for attn_v and ffn_down in layers 0, 3, 6 and 7; the same rule on a small shape.
TEST(RandomLlama, MixesNameLlamaQuantizesTypesAndLoad) {
  random_llama_config c = small_config(element_type::f32);
  c.n_embd = 256;
  c.n_ff = 512;
  c.n_head = 4;
  c.n_layer = 8;
  c.mix = mnemo_examples::quant_mix::q4_K_M;
  const std::string path = temp_path("q4_k_m");
  ASSERT_TRUE(mnemo_examples::write_random_llama(c, path).is_ok());
  {
    auto f = mnemo::gguf::file::open(path);
    ASSERT_TRUE(f.is_ok()) << f.error().message();
    EXPECT_EQ(*f->get_u32("general.file_type"), 15u);
    const auto type_of = [&](const std::string& name) {
      const auto* t = f->find_tensor(name);
      return t ? t->element_type : element_type::f32;
    };
    EXPECT_EQ(type_of("output.weight"), element_type::q6_K);
    EXPECT_EQ(type_of("token_embd.weight"), element_type::q4_K);
    for (std::uint32_t l = 0; l < 8; ++l) {
      const std::string p = "blk." + std::to_string(l) + ".";
      const element_type more =
          l == 0 || l == 3 || l == 6 || l == 7 ? element_type::q6_K : element_type::q4_K;
      EXPECT_EQ(type_of(p + "attn_v.weight"), more) << l;
      EXPECT_EQ(type_of(p + "ffn_down.weight"), more) << l;
      for (const char* n : {"attn_q", "attn_k", "attn_output", "ffn_gate", "ffn_up"})
        EXPECT_EQ(type_of(p + n + ".weight"), element_type::q4_K) << p << n;
      EXPECT_EQ(type_of(p + "ffn_norm.weight"), element_type::f32);
    }
  }
  auto m = mnemo::model::open_attention_decoder(path);
  EXPECT_TRUE(m.is_ok()) << m.error().to_string();
  std::remove(path.c_str());
}

// The fixtures' llama-quantize files (one layer): every matrix's type is the mix rule's.
TEST(RandomLlama, MixRulesMatchLlamaQuantizeFixtures) {
  using mnemo_examples::quant_mix;
  using mnemo_examples::tensor_role;
  struct fixture {
    const char* file;
    quant_mix mix;
  };
  const struct {
    const char* name;
    tensor_role role;
  } roles[] = {{"token_embd.weight", tensor_role::token_embd},
               {"output.weight", tensor_role::output},
               {"blk.0.attn_q.weight", tensor_role::attn_q},
               {"blk.0.attn_k.weight", tensor_role::attn_k},
               {"blk.0.attn_v.weight", tensor_role::attn_v},
               {"blk.0.attn_output.weight", tensor_role::attn_output},
               {"blk.0.ffn_gate.weight", tensor_role::ffn_gate},
               {"blk.0.ffn_up.weight", tensor_role::ffn_up},
               {"blk.0.ffn_down.weight", tensor_role::ffn_down}};
  for (const fixture fx : {fixture{"llama-q3_k_m.gguf", quant_mix::q3_K_M},
                           fixture{"llama-q4_k_m.gguf", quant_mix::q4_K_M},
                           fixture{"llama-q5_k_m.gguf", quant_mix::q5_K_M}}) {
    const std::string file = std::string(MNEMO_FIXTURES_DIR) + "/" + fx.file;
    if (!fs::exists(file)) GTEST_SKIP() << "no fixtures at " << MNEMO_FIXTURES_DIR;
    auto f = mnemo::gguf::file::open(file);
    ASSERT_TRUE(f.is_ok()) << f.error().message();
    EXPECT_EQ(*f->get_u32("general.file_type"), mnemo_examples::quant_mix_file_type(fx.mix));
    for (const auto& r : roles) {
      const auto* t = f->find_tensor(r.name);
      ASSERT_NE(t, nullptr) << fx.file << " " << r.name;
      EXPECT_EQ(t->element_type, mnemo_examples::quant_mix_type(fx.mix, r.role, 0, 1, false))
          << fx.file << " " << r.name;
    }
  }
}

}  // namespace
