// The quality harness (docs/eviction.md, "Quality harness"): (1) synthetic Q/K/V with a planted
// heavy hitter and needle: attention-output error against the full cache and
// needle retention per policy and budget; (2) a random-weight Llama from the GGUF
// writer: per-step logit KL(full || bounded) per policy and budget, per layer and, for
// the policies that score per head, with per-KV-head lanes. Small by default
// (seconds in ctest); MNEMO_EVICT_BIG=1 runs the bigger docs/eviction.md table.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>

#include "common/random_llama.hpp"
#include "evict/harness.hpp"
#include <gtest/gtest.h>
#include <unistd.h>

#include "mnemo/context.hpp"
#include "mnemo/evict/adakv.hpp"
#include "mnemo/evict/budget_schedule.hpp"
#include "mnemo/evict/duo_attention.hpp"
#include "mnemo/evict/expected_attention.hpp"
#include "mnemo/evict/h2o.hpp"
#include "mnemo/evict/h2o_normalised.hpp"
#include "mnemo/evict/h2o_vlen.hpp"
#include "mnemo/evict/key_diff.hpp"
#include "mnemo/evict/key_norm.hpp"
#include "mnemo/evict/keyformer.hpp"
#include "mnemo/evict/last_recent.hpp"
#include "mnemo/evict/oracle.hpp"
#include "mnemo/evict/q_hitter.hpp"
#include "mnemo/evict/quest_reads.hpp"
#include "mnemo/evict/random_evict.hpp"
#include "mnemo/evict/scissorhands.hpp"
#include "mnemo/evict/snapkv.hpp"
#include "mnemo/evict/streaming_llm.hpp"
#include "mnemo/evict/think_keys.hpp"
#include "mnemo/evict/tova.hpp"
#include "mnemo/memory/full/full_cache.hpp"
#include "mnemo/model/llama.hpp"

namespace {

using namespace mnemo;
using namespace evict_test;
const bool k_big = std::getenv("MNEMO_EVICT_BIG") != nullptr;

evict::h2o h2o_p() {
  evict::h2o p;
  p.recent = 8;
  return p;
}
evict::snapkv snap_p() {
  evict::snapkv p;
  p.window = 8;
  return p;
}
evict::key_norm knorm_p(std::size_t h, std::size_t d) {
  evict::key_norm p;
  p.n_head_kv = h;
  p.d_k = d;
  return p;
}

template <class F>
void for_each_policy(std::size_t h, std::size_t d, F&& f) {
  f("last-recent", evict::last_recent{});
  f("streaming", evict::streaming_llm{});
  f("h2o", h2o_p());
  f("tova", evict::tova{});
  f("snapkv", snap_p());
  f("key-norm", knorm_p(h, d));
}

/// The policies of the second set.
template <class F>
void for_each_new_policy(std::size_t h, std::size_t d, F&& f) {
  f("random", evict::random_evict{});
  evict::h2o_normalised hn;
  hn.recent = 8;
  f("h2o-normalised", hn);
  evict::h2o_vlen hv;
  hv.recent = 8;
  hv.n_head_kv = h;
  hv.d_v = d;
  f("h2o-vlen", hv);
  evict::scissorhands sc;
  sc.recent = 8;
  f("scissorhands", sc);
  evict::keyformer kf;
  kf.recent = 8;
  f("keyformer", kf);
}

/// KeyDiff, Q-Hitter and Expected Attention (`rope`: how the cache's keys and the
/// queries were rotated, which Expected Attention undoes and averages; `group`: query
/// heads per KV head).
template <class F>
void for_each_score_policy(std::size_t h, std::size_t group, std::size_t d,
                           const attention::rope_config& rope, F&& f) {
  evict::key_diff kd;
  kd.evict_chunk = 8;
  f("key-diff", kd);
  evict::q_hitter qh;
  qh.recent = 8;
  qh.n_head_kv = h;
  qh.d_k = qh.d_v = d;
  f("q-hitter", qh);
  evict::expected_attention ea;
  ea.window = 8;
  ea.recent = 8;
  ea.n_head_kv = h;
  ea.group = group;
  ea.d_v = d;
  ea.rope = rope;
  f("expected-attention", ea);
}

TEST(EvictQuality, SyntheticErrorAndNeedle) {
  const std::size_t n = k_big ? 1024 : 256, n_seeds = k_big ? 20 : 4;
  const std::vector<std::size_t> budgets = {n / 16, n / 8, n / 4, n / 2, n};
  std::printf("| policy | budget | rel. error | needle kept |\n|---|---|---|---|\n");
  std::vector<synthetic> data;  // per seed, shared by every policy and budget
  for (std::uint64_t seed = 1; seed <= n_seeds; ++seed) {
    synthetic_spec sp;
    sp.n_tokens = n;
    sp.heavy = static_cast<pos_t>(n / 8);
    sp.needle = static_cast<pos_t>(n / 3);
    sp.seed = seed;
    data.push_back(make_synthetic(sp));
  }
  auto rows = [&](const char* name, auto policy) {
    std::vector<run_result> fulls;  // the full cache's run per seed (budget = context)
    for (const synthetic& s : data) fulls.push_back(run_synthetic(s, n - 64, 32, n, policy));
    double prev = 1e9;
    for (std::size_t b : budgets) {
      double err = 0.0;
      int needle = 0;
      for (std::uint64_t seed = 1; seed <= n_seeds; ++seed) {
        const synthetic& s = data[seed - 1];
        const run_result& full = fulls[seed - 1];
        const auto r = run_synthetic(s, n - 64, 32, b, policy);
        err += relative_error(r.out, full.out, s.n_head * s.d);
        needle += r.needle_kept_at_question;
        if (b >= n) {
          EXPECT_EQ(r.out, full.out) << name << " seed " << seed;  // exact
        }
      }
      err /= static_cast<double>(n_seeds);
      std::printf("| %s | %zu | %.3f | %d/%zu |\n", name, b, err, needle, n_seeds);
      EXPECT_LE(err, prev + 0.05) << name << ": error grew with the budget (" << b << ")";
      prev = err;
    }
  };
  for_each_policy(1, 32, rows);
  for_each_new_policy(1, 32, rows);
  attention::rope_config none;
  none.layout = attention::rope_layout::none;  // the synthetic keys are not rotated
  for_each_score_policy(1, 2, 32, none, rows);
}

struct llama_fixture {
  std::string path;
  model::llama_model m;
};

const llama_fixture& small_llama() {
  static llama_fixture f = [] {
    mnemo_examples::random_llama_config c;
    c.n_vocab = 260;
    c.n_embd = k_big ? 256 : 64;
    c.n_layer = k_big ? 4 : 2;
    c.n_head = k_big ? 8 : 4;
    c.n_head_kv = 2;
    c.n_ff = k_big ? 512 : 128;
    c.weight_type = dtype::element_type::f32;
    c.seed = 3;
    // one file per process: ctest runs the cases that share it in parallel processes,
    // and rewriting a file another process has mapped kills that one (SIGBUS)
    const auto path =
        (std::filesystem::temp_directory_path() / ("mnemo_evict_llama_" + std::to_string(c.n_embd) +
                                                   "_" + std::to_string(::getpid()) + ".gguf"))
            .string();
    EXPECT_TRUE(mnemo_examples::write_random_llama(c, path).is_ok());
    return llama_fixture{path, model::llama_model::open(path).value()};
  }();
  return f;
}

/// Next-token agreement with the full cache over the teacher-forced decode steps.
struct llama_quality {
  double kl = 0.0;                   // mean KL(full || bounded)
  double top1 = 0.0;                 // fraction of steps with the full cache's top-1
  std::size_t first_divergence = 0;  // first step whose top-1 differs (n_decode: none)
};

/// Mean KL(full || bounded) of the next-token distributions over the decode steps.
template <class Policy>
double mean_kl(std::size_t budget, Policy p, std::size_t n_prompt, std::size_t n_decode,
               const run_options& lo = {}, llama_quality* q_out = nullptr) {
  const auto& M = small_llama().m;
  memory::bounded_config c;
  c.shape = M.kv_shape();
  c.budget = budget;
  c.max_ubatch = 32;
  c.rope = M.hparams().rope();
  lo.apply(c);
  auto bnd =
      context<model::llama_model, memory::bounded<Policy, float>>::make(
          M, memory::bounded<Policy, float>::make(c, p).value(), {.n_ubatch = 32, .n_threads = 1})
          .value();
  auto full =
      context<model::llama_model, memory::full_cache<float>>::make(
          M,
          memory::full_cache<float>::make(M.full_cache_config(n_prompt + n_decode + 8, 1)).value(),
          {.n_ubatch = 32, .n_threads = 1})
          .value();
  splitmix64 g{17};
  double kl = 0.0;
  pos_t pos = 0;
  std::size_t step_i = 0, agree = 0, first_div = n_decode;
  auto step = [&](std::size_t n, bool measure) {
    batch b;
    for (std::size_t j = 0; j < n; ++j)
      b.add(static_cast<token_id>(g.next() % 260), pos++, {0}, j + 1 == n);
    EXPECT_TRUE(bnd.decode(b).is_ok());
    EXPECT_TRUE(full.decode(b).is_ok());
    if (!measure) return;
    const auto a = full.logits_ith(-1), q = bnd.logits_ith(-1);
    const bool same = std::max_element(a.begin(), a.end()) - a.begin() ==
                      std::max_element(q.begin(), q.end()) - q.begin();
    agree += same;
    if (!same && first_div == n_decode) first_div = step_i;
    ++step_i;
    double ma = -1e300, mq = -1e300, za = 0, zq = 0;
    for (std::size_t i = 0; i < a.size(); ++i)
      ma = std::max(ma, double(a[i])), mq = std::max(mq, double(q[i]));
    for (std::size_t i = 0; i < a.size(); ++i) za += std::exp(a[i] - ma), zq += std::exp(q[i] - mq);
    for (std::size_t i = 0; i < a.size(); ++i) {
      const double la = a[i] - ma - std::log(za), lq = q[i] - mq - std::log(zq);
      kl += std::exp(la) * (la - lq);
    }
  };
  for (std::size_t i = 0; i < n_prompt; i += 32)
    step(std::min<std::size_t>(32, n_prompt - i), false);
  for (std::size_t i = 0; i < n_decode; ++i) step(1, true);
  if (q_out)
    *q_out = {kl / static_cast<double>(n_decode),
              static_cast<double>(agree) / static_cast<double>(n_decode), first_div};
  return kl / static_cast<double>(n_decode);
}

TEST(EvictQuality, RandomLlamaKLFallsWithBudget) {
  const std::size_t n_prompt = k_big ? 480 : 96, n_decode = k_big ? 32 : 16;
  const std::size_t ctx_len = n_prompt + n_decode;
  const std::vector<std::size_t> budgets = {ctx_len / 16, ctx_len / 4, ctx_len / 2, ctx_len};
  const auto& M = small_llama().m;
  std::printf(
      "| policy | budget | mean KL(full || bounded) | top-1 agreement | first divergence "
      "|\n|---|---|---|---|---|\n");
  auto rows = [&](const char* name, auto policy, memory::kv_granularity gr) {
    std::vector<double> kl;
    for (std::size_t b : budgets) {
      llama_quality q;
      kl.push_back(mean_kl(b, policy, n_prompt, n_decode, {.granularity = gr}, &q));
      std::printf("| %s | %zu | %.5f | %.2f | %zu |\n", name, b, kl.back(), q.top1,
                  q.first_divergence);
    }
    // Per-head lanes attend one KV head per call: the same sums, maybe another order.
    EXPECT_LE(kl.back(), 1e-9) << name << ": budget >= context must give the full cache's logits";
    EXPECT_GT(kl.front(), kl[2]) << name << ": KL must fall from budget " << budgets.front()
                                 << " to " << budgets[2];
    EXPECT_GT(kl[2], 0.0) << name;
    return kl;
  };
  for_each_policy(M.hparams().n_head_kv, M.hparams().d_k, [&](const char* name, auto policy) {
    EXPECT_EQ(rows(name, policy, memory::kv_granularity::per_layer).back(), 0.0) << name;
  });
  for_each_new_policy(M.hparams().n_head_kv, M.hparams().d_k, [&](const char* name, auto policy) {
    EXPECT_EQ(rows(name, policy, memory::kv_granularity::per_layer).back(), 0.0) << name;
  });
  for_each_score_policy(
      M.hparams().n_head_kv, M.hparams().n_head / M.hparams().n_head_kv, M.hparams().d_k,
      M.hparams().rope(), [&](const char* name, auto policy) {
        EXPECT_EQ(rows(name, policy, memory::kv_granularity::per_layer).back(), 0.0) << name;
      });
  // Per-KV-head lanes for the policies that score per head .
  const auto head = memory::kv_granularity::per_kv_head;
  rows("h2o per head", h2o_p(), head);
  rows("tova per head", evict::tova{}, head);
  rows("snapkv per head", snap_p(), head);
  rows("key-norm per head", knorm_p(M.hparams().n_head_kv, M.hparams().d_k), head);

  // Quest and ThinK through the decoder hold every token (budget = context): Quest reads
  // `budget` cells per decode row (pages of 4), ThinK keeps the fraction budget /
  // context of each KV head's channel pairs (window: the last 8 prefill rows).
  auto read_rows = [&](const char* name, auto policy_for) {
    std::vector<double> kl;
    for (std::size_t b : budgets) {
      llama_quality q;
      kl.push_back(mean_kl(ctx_len, policy_for(b), n_prompt, n_decode, {}, &q));
      std::printf("| %s | %zu | %.5f | %.2f | %zu |\n", name, b, kl.back(), q.top1,
                  q.first_divergence);
    }
    EXPECT_LE(kl.back(), 1e-9) << name << ": reading everything must give the full cache's logits";
    EXPECT_GT(kl.front(), kl[2]) << name << ": KL must fall from budget " << budgets.front()
                                 << " to " << budgets[2];
    EXPECT_GT(kl[2], 0.0) << name;
  };
  read_rows("quest (page 4)", [](std::size_t b) {
    evict::quest_reads<> p;
    p.page_size = 4;
    p.top_pages = std::max<std::size_t>(1, b / 4);
    return p;
  });
  read_rows("think", [&](std::size_t b) {
    evict::think_keys<> p;
    p.prune_ratio = 1.0 - static_cast<double>(b) / static_cast<double>(ctx_len);
    p.window = 8;
    return p;
  });
}

// AdaKV (ragged per-head budgets in a shared pool) around per-head scorers; budget
// >= context gives the full cache's logits.
TEST(EvictQuality, RandomLlamaAdakv) {
  const std::size_t n_prompt = k_big ? 480 : 96, n_decode = k_big ? 32 : 16;
  const std::size_t ctx_len = n_prompt + n_decode;
  const auto head = memory::kv_granularity::per_kv_head;
  auto rows = [&](const char* name, auto policy) {
    std::vector<double> kl;
    for (std::size_t b : {ctx_len / 16, ctx_len / 4, ctx_len / 2, ctx_len}) {
      llama_quality q;
      kl.push_back(mean_kl(b, policy, n_prompt, n_decode, {.granularity = head}, &q));
      std::printf("| %s | %zu | %.5f | %.2f | %zu |\n", name, b, kl.back(), q.top1,
                  q.first_divergence);
    }
    EXPECT_LE(kl.back(), 1e-9) << name;
    EXPECT_GT(kl.front(), kl[2]) << name;
  };
  evict::adakv<evict::h2o> a;
  static_cast<evict::h2o&>(a) = h2o_p();
  rows("adakv h2o", a);
  rows("adakv tova", evict::adakv<evict::tova>{});
  evict::adakv<evict::snapkv> sn;
  static_cast<evict::snapkv&>(sn) = snap_p();
  rows("adakv snapkv", sn);
}

// PyramidKV (per-layer budgets falling from the first layer to the last, averaging B)
// around H2O and SnapKV, and DuoAttention (KV head 0 of every layer keeps the whole
// context, the others stream with 4 sinks and B - 4 recent cells). Random weights
// give no head a role, so neither layout has a structure to exploit here; asserted:
// KL falls with B, and DuoAttention at B = context gives the full cache's logits.
TEST(EvictQuality, RandomLlamaBudgetLayouts) {
  const std::size_t n_prompt = k_big ? 480 : 96, n_decode = k_big ? 32 : 16;
  const std::size_t ctx_len = n_prompt + n_decode;
  const auto& hp = small_llama().m.hparams();
  auto rows = [&](const char* name, auto policy, auto layout_for) {
    std::vector<double> kl;
    for (std::size_t b : {ctx_len / 16, ctx_len / 4, ctx_len / 2, ctx_len}) {
      llama_quality q;
      kl.push_back(mean_kl(b, policy, n_prompt, n_decode, layout_for(b), &q));
      std::printf("| %s | %zu | %.5f | %.2f | %zu |\n", name, b, kl.back(), q.top1,
                  q.first_divergence);
    }
    EXPECT_GT(kl.front(), kl[2]) << name;
    return kl;
  };
  auto pyramid = [&](std::size_t b) {
    return run_options{.layer_budgets = evict::pyramid_budgets(hp.n_layer, b)};
  };
  rows("pyramidkv h2o", h2o_p(), pyramid);
  rows("pyramidkv snapkv", snap_p(), pyramid);
  std::vector<std::uint8_t> profile(hp.n_layer * hp.n_head_kv, 0);
  for (std::size_t l = 0; l < hp.n_layer; ++l) profile[l * hp.n_head_kv] = 1;
  const auto duo = rows("duo-attention", evict::streaming_llm{}, [&](std::size_t b) {
    return run_options{.granularity = memory::kv_granularity::per_kv_head,
                       .head_budgets = evict::duo_attention_budgets(profile, ctx_len, 4, b - 4)};
  });
  EXPECT_LE(duo.back(), 1e-9) << "every head holding the context must give the full cache's logits";
}

}  // namespace
