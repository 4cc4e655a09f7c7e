// The attention architectures on small random-weight files built here (no fixtures
// needed): the same weights stored fused (phi3's attn_qkv, gate|up in ffn_up) and
// separate give the same logits; biases and q/k norms change them (so they
// are used); each recipe's defaults and refusals; the interleaved memory agrees with one
// full cache on gemma2; and open_attention_decoder picks the recipe by
// general.architecture.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "mnemo/base/rng.hpp"
#include "mnemo/context.hpp"
#include "mnemo/gguf/writer.hpp"
#include "mnemo/memory/full/full_cache.hpp"
#include "mnemo/memory/layered/layered.hpp"
#include "mnemo/memory/window/sliding_window.hpp"
#include "mnemo/model/architectures.hpp"

namespace {

using namespace mnemo;

struct arch_file {
  std::string arch = "llama";
  std::uint32_t n_vocab = 64, n_embd = 64, n_layer = 2, n_head = 4, n_head_kv = 2, n_ff = 96;
  std::uint32_t d_head = 16;
  bool fused_qkv = false, fused_gate_up = false, biases = false, qk_norm = false;
  bool post_norms = false, tied = false;
  std::function<void(gguf::writer&)> extra;  // more keys or tensors
};

/// Values of tensor `name`, the same whatever file they are stored in (seeded by name).
std::vector<float> values(const std::string& name, std::size_t n, float sigma, float mean) {
  std::uint64_t seed = 1469598103934665603ull;
  for (char c : name) seed = (seed ^ static_cast<unsigned char>(c)) * 1099511628211ull;
  splitmix64 g{seed};
  std::vector<float> v(n);
  for (float& x : v) x = mean + sigma * g.normal();
  return v;
}

result<gguf::file> build(const arch_file& s) {
  gguf::writer w;
  const std::string a = s.arch + ".";
  w.add_string("general.architecture", s.arch);
  w.add<std::uint32_t>(a + "context_length", 4096);
  w.add<std::uint32_t>(a + "embedding_length", s.n_embd);
  w.add<std::uint32_t>(a + "block_count", s.n_layer);
  w.add<std::uint32_t>(a + "feed_forward_length", s.n_ff);
  w.add<std::uint32_t>(a + "attention.head_count", s.n_head);
  w.add<std::uint32_t>(a + "attention.head_count_kv", s.n_head_kv);
  w.add<std::uint32_t>(a + "attention.key_length", s.d_head);
  w.add<std::uint32_t>(a + "attention.value_length", s.d_head);
  w.add<float>(a + "attention.layer_norm_rms_epsilon", 1e-6f);
  const std::size_t E = s.n_embd, F = s.n_ff, q = s.n_head * s.d_head, kv = s.n_head_kv * s.d_head;
  const float se = 1.0f / std::sqrt(static_cast<float>(E));
  auto mat = [&](const std::string& name, std::size_t n_in, std::size_t n_out, float sigma) {
    w.add_tensor_f32(name, {n_in, n_out}, values(name, n_in * n_out, sigma, 0.0f));
  };
  auto vec = [&](const std::string& name, std::size_t n, float sigma, float mean) {
    w.add_tensor_f32(name, {n}, values(name, n, sigma, mean));
  };
  vec("output_norm.weight", E, 0.1f, 1.0f);
  mat("token_embd.weight", E, s.n_vocab, se);
  if (!s.tied) mat("output.weight", E, s.n_vocab, se);
  for (std::uint32_t l = 0; l < s.n_layer; ++l) {
    const std::string b = "blk." + std::to_string(l) + ".";
    vec(b + "attn_norm.weight", E, 0.1f, 1.0f);
    vec(b + "ffn_norm.weight", E, 0.1f, 1.0f);
    if (s.fused_qkv) {
      // Q | K | V output rows, each row n_embd values: the separate tensors back to back.
      std::vector<float> all = values(b + "attn_q.weight", E * q, se, 0.0f);
      for (const char* t : {"attn_k.weight", "attn_v.weight"}) {
        const auto part = values(b + t, E * kv, se, 0.0f);
        all.insert(all.end(), part.begin(), part.end());
      }
      w.add_tensor_f32(b + "attn_qkv.weight", {E, q + 2 * kv}, all);
    } else {
      mat(b + "attn_q.weight", E, q, se);
      mat(b + "attn_k.weight", E, kv, se);
      mat(b + "attn_v.weight", E, kv, se);
    }
    if (s.biases) {
      vec(b + "attn_q.bias", q, 0.5f, 0.0f);
      vec(b + "attn_k.bias", kv, 0.5f, 0.0f);
      vec(b + "attn_v.bias", kv, 0.05f, 0.0f);
    }
    if (s.qk_norm) {
      vec(b + "attn_q_norm.weight", s.d_head, 0.1f, 1.0f);
      vec(b + "attn_k_norm.weight", s.d_head, 0.1f, 1.0f);
    }
    mat(b + "attn_output.weight", q, E, 1.0f / std::sqrt(static_cast<float>(q)));
    if (s.post_norms) {
      vec(b + "post_attention_norm.weight", E, 0.1f, 1.0f);
      vec(b + "post_ffw_norm.weight", E, 0.1f, 1.0f);
    }
    if (s.fused_gate_up) {
      std::vector<float> all = values(b + "ffn_gate.weight", E * F, se, 0.0f);
      const auto up = values(b + "ffn_up.weight", E * F, se, 0.0f);
      all.insert(all.end(), up.begin(), up.end());
      w.add_tensor_f32(b + "ffn_up.weight", {E, 2 * F}, all);
    } else {
      mat(b + "ffn_gate.weight", E, F, se);
      mat(b + "ffn_up.weight", E, F, se);
    }
    mat(b + "ffn_down.weight", F, E, 1.0f / std::sqrt(static_cast<float>(F)));
  }
  if (s.extra) s.extra(w);
  MNEMO_ASSIGN_OR_RETURN(auto bytes, w.to_bytes());
  return gguf::file::from_owned_bytes(std::move(bytes));
}

result<model::attention_decoder> load(const arch_file& s) {
  MNEMO_ASSIGN_OR_RETURN(gguf::file f, build(s));
  return model::load_attention_decoder(std::move(f));
}

/// Logits [n, n_vocab] of tokens 0..n-1 of sequence 0 through `Memory`.
template <class Memory>
std::vector<float> run_on(const model::attention_decoder& m, Memory mem, std::size_t n) {
  context_params p;
  p.n_ubatch = 8;  // several micro-batches
  auto c = context<model::attention_decoder, Memory>::make(m, std::move(mem), p);
  EXPECT_TRUE(c.is_ok()) << c.error().to_string();
  if (!c.is_ok()) return {};
  batch b;
  for (std::size_t i = 0; i < n; ++i)
    b.add(static_cast<token_id>((i * 7 + 3) % m.n_vocab()), static_cast<pos_t>(i), {0}, true);
  const status st = c->decode(b);
  EXPECT_TRUE(st) << st.to_string();
  return {c->logits().begin(), c->logits().end()};
}

std::vector<float> run(const model::attention_decoder& m, std::size_t n = 24) {
  auto mem = memory::full_cache<float>::make(m.full_cache_config(256, 1));
  EXPECT_TRUE(mem.is_ok()) << mem.error().to_string();
  return run_on(m, std::move(mem).value(), n);
}

double max_diff(const std::vector<float>& a, const std::vector<float>& b) {
  if (a.size() != b.size() || a.empty()) return INFINITY;
  double d = 0;
  for (std::size_t i = 0; i < a.size(); ++i)
    d = std::max(d, static_cast<double>(std::fabs(a[i] - b[i])));
  return d;
}

#define LOAD(var, spec)  \
  auto var = load(spec); \
  ASSERT_TRUE(var.is_ok()) << var.error().to_string()

TEST(ArchFused, FusedQkvGivesTheSeparateLogits) {
  arch_file s;
  LOAD(sep, s);
  s.fused_qkv = true;
  LOAD(fused, s);
  EXPECT_LE(max_diff(run(*sep), run(*fused)), 1e-5);
}

TEST(ArchFused, Phi3FusedGateUpGivesQwen2sSeparateLogits) {
  // phi3 and qwen2 without biases compute the same graph (NeoX RoPE, SwiGLU, no window);
  // phi3 stores gate | up in one ffn_up and Q | K | V in one attn_qkv.
  arch_file q;
  q.arch = "qwen2";
  LOAD(qwen2, q);
  arch_file p = q;
  p.arch = "phi3";
  p.fused_gate_up = true;
  p.fused_qkv = true;
  LOAD(phi3, p);
  EXPECT_EQ(phi3->recipe().name, "phi3");
  EXPECT_LE(max_diff(run(*qwen2), run(*phi3)), 1e-5);
}

TEST(ArchOptional, BiasesAndQkNormsChangeTheLogits) {
  arch_file plain;
  plain.arch = "qwen2";
  LOAD(base, plain);
  const auto ref = run(*base);
  arch_file with_bias = plain;
  with_bias.biases = true;
  LOAD(biased, with_bias);
  EXPECT_GT(max_diff(ref, run(*biased)), 1e-2) << "biases unused";
  arch_file q3 = plain;
  q3.arch = "qwen3";
  q3.qk_norm = true;
  LOAD(qwen3, q3);
  EXPECT_GT(max_diff(ref, run(*qwen3)), 1e-2) << "q/k norms unused";
}

TEST(ArchRefusals, TensorsARecipeWouldIgnoreOrNeedsAreStatuses) {
  struct defect {
    arch_file spec;
    status_code code;
    std::string needle;
  };
  std::vector<defect> cases;
  auto add = [&](std::string arch, auto edit, status_code code, std::string needle) {
    arch_file s;
    s.arch = std::move(arch);
    edit(s);
    cases.push_back({s, code, std::move(needle)});
  };
  add(
      "llama", [](arch_file& s) { s.qk_norm = true; }, status_code::unsupported, "attn_q_norm");
  add(
      "qwen2", [](arch_file& s) { s.post_norms = true; }, status_code::unsupported,
      "post_attention_norm");
  add(
      "qwen3", [](arch_file&) {}, status_code::not_found, "attn_q_norm");
  add(
      "gemma2", [](arch_file& s) { s.post_norms = true; }, status_code::invalid_argument,
      "output.weight");
  add(
      "phi3",
      [](arch_file& s) {
        s.fused_qkv = true;
        s.fused_gate_up = true;
        s.extra = [](gguf::writer& w) {
          w.add_tensor_f32("blk.0.ffn_gate.weight", {64, 96}, std::vector<float>(64 * 96));
        };
      },
      status_code::invalid_argument, "ffn_gate.weight");
  add(
      "llama",
      [](arch_file& s) {
        s.extra = [](gguf::writer& w) {
          w.add_tensor_f32("blk.1.ffn_gate_inp.weight", {64, 4}, std::vector<float>(256));
        };
      },
      status_code::unsupported, "ffn_gate_inp");
  add(
      "phi3",
      [](arch_file& s) {
        s.fused_qkv = true;
        s.fused_gate_up = true;
        s.extra = [](gguf::writer& w) {
          w.add_tensor_f32("rope_factors_long.weight", {8}, std::vector<float>(8, 1.0f));
        };
      },
      status_code::unsupported, "LongRoPE");
  for (const defect& d : cases) {
    auto m = load(d.spec);
    ASSERT_FALSE(m.is_ok()) << d.spec.arch << ": " << d.needle;
    EXPECT_EQ(m.error().code(), d.code) << m.error().to_string();
    EXPECT_NE(m.error().message().find(d.needle), std::string::npos) << m.error().to_string();
  }
}

TEST(ArchGemma2, DefaultsFollowLlamaCpp) {
  arch_file s;
  s.arch = "gemma2";
  s.post_norms = true;
  s.tied = true;
  s.n_layer = 4;
  LOAD(m, s);
  const auto& h = m->hparams();
  EXPECT_EQ(h.n_swa, 4096u);
  for (std::size_t l = 0; l < 4; ++l) EXPECT_EQ(h.local(l), l % 2 == 0) << "layer " << l;
  EXPECT_EQ(h.attn_softcap, 50.0f);
  EXPECT_EQ(h.final_softcap, 30.0f);
  EXPECT_EQ(h.attn_scale, 0.25f);  // 1/sqrt(key_length 16)
  EXPECT_EQ(h.embd_scale, 8.0f);   // sqrtf(n_embd 64)
  EXPECT_EQ(h.attention_params().softcap, 50.0f);
  EXPECT_EQ(h.rope(0).layout, attention::rope_layout::neox);
  EXPECT_TRUE(m->tied_output());
}

// Window 6 on even layers: the interleaved memory (window part small enough to forget)
// and one full cache (the window a mask only) give the same logits, and without the
// window (a pattern of period 1: every layer global) they differ, so the window is used.
TEST(ArchGemma2, InterleavedMemoryMatchesOneFullCache) {
  arch_file s;
  s.arch = "gemma2";
  s.post_norms = true;
  s.tied = true;
  s.extra = [](gguf::writer& w) {
    w.add<std::uint32_t>("gemma2.attention.sliding_window", 6);
    w.add<float>("gemma2.attn_logit_softcapping", 8.0f);
  };
  LOAD(m, s);
  const auto full = run(*m, 40);
  auto iswa = m->make_iswa<float>(256, 1, 8, 16);
  ASSERT_TRUE(iswa.is_ok()) << iswa.error().to_string();
  EXPECT_LE(max_diff(full, run_on(*m, std::move(iswa).value(), 40)), 1e-5);
  s.extra = [](gguf::writer& w) {
    w.add<std::uint32_t>("gemma2.attention.sliding_window", 6);
    w.add<float>("gemma2.attn_logit_softcapping", 8.0f);
    w.add<std::uint32_t>("gemma2.attention.sliding_window_pattern", 1);
  };
  LOAD(global, s);
  EXPECT_EQ(global->hparams().n_local(), 0u);
  EXPECT_GT(max_diff(full, run(*global, 40)), 1e-3);
}

TEST(ArchDispatch, OpensEveryArchitectureByName) {
  for (const model::decoder_recipe* r : model::k_attention_recipes) {
    arch_file s;
    s.arch = std::string(r->name);
    s.qk_norm = r->qk_norm;
    s.post_norms = r->post_norms;
    s.fused_gate_up = r->fused_gate_up;
    s.fused_qkv = r->fused_gate_up;  // phi3 files fuse both
    s.tied = r->always_tied;
    LOAD(m, s);
    EXPECT_EQ(&m->recipe(), r);
  }
  arch_file s;
  s.arch = "mistral-x";
  auto m = load(s);
  ASSERT_FALSE(m.is_ok());
  EXPECT_EQ(m.error().code(), status_code::unsupported);
  EXPECT_NE(m.error().message().find("qwen3"), std::string::npos) << m.error().to_string();
  // A typed model refuses another architecture's file.
  s.arch = "qwen2";
  auto f = build(s);
  ASSERT_TRUE(f.is_ok());
  auto llama = model::llama_model::load(std::move(f).value());
  ASSERT_FALSE(llama.is_ok());
  EXPECT_NE(llama.error().message().find("qwen2"), std::string::npos);
}

// The fixtures of the second set, when present: the hyper-parameters each file states.
TEST(ArchFixtures, ReadTheHyperParametersMODELSmdLists) {
  const std::string dir = MNEMO_FIXTURES_DIR;
  auto open = [&](const char* name) { return model::open_attention_decoder(dir + "/" + name); };
  if (std::filesystem::exists(dir + "/gemma2-iswa.gguf")) {
    auto m = open("gemma2-iswa.gguf");
    ASSERT_TRUE(m.is_ok()) << m.error().to_string();
    const auto& h = m->hparams();
    EXPECT_EQ(h.n_swa, 24u);
    EXPECT_TRUE(h.local(0));
    EXPECT_FALSE(h.local(1));
    EXPECT_EQ(h.attn_softcap, 8.0f);
    EXPECT_EQ(h.final_softcap, 10.0f);
    EXPECT_EQ(h.attn_scale, 0.125f);
  }
  if (std::filesystem::exists(dir + "/llama3-ropescale.gguf")) {
    auto m = open("llama3-ropescale.gguf");
    ASSERT_TRUE(m.is_ok()) << m.error().to_string();
    const auto& f = m->hparams().rope().freq_factors;
    ASSERT_EQ(f.size(), 16u);
    EXPECT_NEAR(f[2], 1.3632773f, 1e-6);
    EXPECT_EQ(f[15], 8.0f);
  }
  if (std::filesystem::exists(dir + "/phi3.gguf")) {
    auto m = open("phi3.gguf");
    ASSERT_TRUE(m.is_ok()) << m.error().to_string();
    EXPECT_EQ(m->hparams().n_local(), 0u);  // Phi's window is disabled, as in llama.cpp
    EXPECT_EQ(m->hparams().n_rot, 32u);
  }
}

}  // namespace
