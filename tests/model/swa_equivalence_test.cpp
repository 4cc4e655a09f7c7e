// The interleaved composite (global layers on a full cache, local layers on a small
// sliding window that forgets) gives the same logits as one full cache for every layer,
// for the gemma3 fixture model, over random steps: decodes of random lengths into random
// sequences (split into micro-batches of 8), failed decodes rolled back after some
// micro-batches were applied (injected in both memories), and sequence operations
// (suffix removal, branch copies, keep, whole removal). The full cache is the reference:
// it never forgets, so equality shows that the window part forgets only what no later
// query reads, and that rollback restores the cells it reused.
//  - plain: an operation the composite refuses must be one that needs forgotten
//    positions (unsupported, and can_resume says so); the reference skips it too.
//  - recompute: the composite's context decodes forgotten prefixes again, so every
//    operation succeeds and the logits still agree.
// Seeds 1..k_seeds (fewer in sanitizer builds); a failure prints the seed, the step and
// the first worst element.
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "common/slow_build.hpp"
#include "common/splitmix64.hpp"
#include <gtest/gtest.h>

#include "mnemo/context.hpp"
#include "mnemo/memory/full/full_cache_state.hpp"
#include "mnemo/memory/layered/layered_state.hpp"
#include "mnemo/model/gemma3.hpp"

namespace {

using namespace mnemo;
using model::gemma3_model;

constexpr std::uint32_t k_ubatch = 8;
constexpr seq_id k_seqs = 3;
constexpr std::size_t k_window_cells = 16 * k_seqs + k_ubatch;  // 56: reused constantly
constexpr int k_seeds = static_cast<int>(mnemo_test::scaled_count(10, 3)), k_steps = 60;
constexpr float k_tol = 1e-4f;

/// A memory that can fail apply() of one micro-batch, after the earlier ones of the
/// same decode were applied and computed: the context must roll them back.
template <class M>
struct flaky : M {
  explicit flaky(M&& m) : M(std::move(m)) {}
  int fail_at = -1;
  status apply(std::size_t u, const memory::ubatch_tokens& ub) {
    if (static_cast<int>(u) == fail_at)
      return make_status(status_code::failed_compute, "injected failure at micro-batch %zu", u);
    return M::apply(u, ub);
  }
};

using iswa_t = flaky<gemma3_model::iswa_memory<float>>;
using full_t = flaky<memory::full_cache<float>>;

const gemma3_model* load_model() {
  static std::unique_ptr<gemma3_model> m;
  if (m) return m.get();
  auto r = gemma3_model::open(std::string(MNEMO_FIXTURES_DIR) + "/gemma3-iswa.gguf");
  if (!r.is_ok()) return nullptr;
  m = std::make_unique<gemma3_model>(std::move(r).value());
  return m.get();
}

float max_diff(std::span<const float> a, std::span<const float> b, std::size_t& at) {
  float worst = a.size() == b.size() ? 0.0f : INFINITY;
  at = 0;
  for (std::size_t i = 0; i < std::min(a.size(), b.size()); ++i)
    if (const float d = std::fabs(a[i] - b[i]); !(d <= worst)) worst = d, at = i;
  return worst;
}

void run_seed(const gemma3_model& m, std::uint64_t seed, bool recompute) {
  context_params p;
  p.n_ubatch = k_ubatch;
  p.n_seq_max = k_seqs;
  p.n_threads = 1;
  auto im = m.make_iswa<float>(1024, k_seqs, k_ubatch, k_window_cells);
  ASSERT_TRUE(im.is_ok()) << im.error().to_string();
  auto fm = memory::full_cache<float>::make(m.full_cache_config(1024, k_seqs));
  ASSERT_TRUE(fm.is_ok());
  context_params pi = p;
  pi.recompute = recompute;
  auto ci = context<gemma3_model, iswa_t>::make(m, iswa_t(std::move(im).value()), pi);
  auto cf = context<gemma3_model, full_t>::make(m, full_t(std::move(fm).value()), p);
  ASSERT_TRUE(ci.is_ok() && cf.is_ok());
  auto& I = *ci;
  auto& F = *cf;

  mnemo_test::splitmix64 rng{seed};
  int refused = 0, recomputed_ops = 0, rollbacks = 0, compared = 0;
  for (int step = 0; step < k_steps; ++step) {
    SCOPED_TRACE(::testing::Message() << "seed " << seed << " step " << step);
    const seq_id s = static_cast<seq_id>(rng.range(0, k_seqs - 1));
    const pos_t top = F.seq_pos_max(s);
    const int kind = static_cast<int>(rng.range(0, 9));
    if (kind <= 4) {  // decode, sometimes failing after the first micro-batches
      const int n = static_cast<int>(rng.range(1, 40));
      batch b;
      for (int i = 0; i < n; ++i)
        b.add(static_cast<token_id>(rng.range(3, 511)), top + 1 + i, {s}, rng.range(0, 2) == 0);
      const int n_ub = (n + static_cast<int>(k_ubatch) - 1) / static_cast<int>(k_ubatch);
      const bool fail = n_ub > 1 && rng.range(0, 3) == 0;
      const int at = fail ? static_cast<int>(rng.range(1, n_ub - 1)) : -1;
      I.memory().fail_at = F.memory().fail_at = at;
      const status si = I.decode(b), sf = F.decode(b);
      I.memory().fail_at = F.memory().fail_at = -1;
      ASSERT_EQ(si.is_ok(), !fail) << si.to_string();
      ASSERT_EQ(sf.is_ok(), !fail) << sf.to_string();
      if (fail) {
        ++rollbacks;
        continue;
      }
      std::size_t w = 0;
      const float d = max_diff(I.logits(), F.logits(), w);
      ++compared;
      ASSERT_LE(d, k_tol) << "logits differ: element " << w << " (output row " << w / 512
                          << ", column " << w % 512 << ")";
    } else {  // a sequence operation
      const pos_t p0 = top < 0 ? 0 : static_cast<pos_t>(rng.range(0, top));
      const bool forgotten = !I.can_resume(s, p0);
      status si, sf;
      const char* what = "";
      if (kind <= 6) {  // truncate s to p0
        what = "seq_rm";
        si = I.seq_rm(s, p0, -1);
        if (si.is_ok()) sf = F.seq_rm(s, p0, -1);
      } else if (kind <= 8) {  // branch: dst gets s's [0, p0)
        what = "seq_cp";
        const seq_id d = static_cast<seq_id>((s + 1 + rng.range(0, k_seqs - 2)) % k_seqs);
        const bool clean = I.seq_rm(d, -1, -1).is_ok() && F.seq_rm(d, -1, -1).is_ok();
        ASSERT_TRUE(clean);
        si = I.seq_cp(s, d, 0, p0);
        if (si.is_ok()) sf = F.seq_cp(s, d, 0, p0);
      } else {
        what = rng.range(0, 1) == 0 ? "seq_keep" : "seq_rm all";
        si = what[4] == 'k' ? I.seq_keep(s) : I.seq_rm(s, -1, -1);
        sf = what[4] == 'k' ? F.seq_keep(s) : F.seq_rm(s, -1, -1);
      }
      if (!si.is_ok()) {
        ASSERT_FALSE(recompute) << what << " refused in recompute mode: " << si.to_string();
        ASSERT_EQ(si.code(), status_code::unsupported) << si.to_string();
        ASSERT_FALSE(I.can_resume(s, p0)) << what << " refused although " << p0 << " is resumable";
        ++refused;
        continue;
      }
      ASSERT_TRUE(sf.is_ok()) << sf.to_string();
      recomputed_ops += forgotten && kind <= 8;
    }
    for (seq_id q = 0; q < k_seqs; ++q) {
      ASSERT_EQ(I.seq_pos_max(q), F.seq_pos_max(q)) << "sequence " << q;
      ASSERT_TRUE(I.can_resume(q, F.seq_pos_max(q) + 1)) << "sequence " << q;
    }
  }
  std::printf(
      "[ measure ] seed %llu %s: %d compared decodes, %d rollbacks, %d refused, %d operations "
      "on forgotten positions succeeded\n",
      static_cast<unsigned long long>(seed), recompute ? "recompute" : "plain", compared, rollbacks,
      refused, recomputed_ops);
}

class SwaEquivalence : public ::testing::TestWithParam<bool> {};

TEST_P(SwaEquivalence, CompositeMatchesFullCache) {
  const gemma3_model* m = load_model();
  if (m == nullptr) GTEST_SKIP() << "gemma3 fixture not found in " << MNEMO_FIXTURES_DIR;
  for (int seed = 1; seed <= k_seeds; ++seed) {
    run_seed(*m, static_cast<std::uint64_t>(seed), GetParam());
    if (::testing::Test::HasFatalFailure()) return;
  }
}

INSTANTIATE_TEST_SUITE_P(Modes, SwaEquivalence, ::testing::Values(false, true),
                         [](const ::testing::TestParamInfo<bool>& i) {
                           return std::string(i.param ? "Recompute" : "Plain");
                         });

}  // namespace
