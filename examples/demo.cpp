// mnemo demo: what the library does today, end to end on this machine.
//   1. which SIMD paths this build has and this CPU runs;
//   2. a kernel self-check: every supported ISA's f16 / q8_0 row dot against scalar;
//   3. a unified KV cache holding several sequences (one sharing another's prefix),
//      filled through the memory's transactional planning, then decode attention for
//      every sequence through the cache's views, checked against the reference
//      kernel, with the K/V bytes read per second.
#include <chrono>
#include <cmath>
#include <cstdio>
#include <random>
#include <vector>

#include "mnemo/attention/attend.hpp"
#include "mnemo/attention/reference.hpp"
#include "mnemo/memory/memory.hpp"
#include "mnemo/mnemo.hpp"
#include "mnemo/simd/cpu.hpp"

namespace {

using namespace mnemo;
using clock_type = std::chrono::steady_clock;

double seconds_since(clock_type::time_point t0) {
  return std::chrono::duration<double>(clock_type::now() - t0).count();
}

/// Largest |dot_isa - dot_scalar| over random rows of element E.
template <class Isa, class E>
float dot_self_check(std::mt19937& rng) {
  constexpr std::size_t n = 256;
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  std::vector<float> x(n), y(n);
  std::vector<E> row(dtype::blocks_in_row<E>(n));
  float worst = 0;
  for (int rep = 0; rep < 100; ++rep) {
    for (auto& v : x) v = u(rng);
    for (auto& v : y) v = u(rng);
    dtype::row_kernels<simd::scalar>::encode(y.data(), row.data(), n);
    const float a = dtype::row_kernels<Isa>::dot(x.data(), row.data(), n);
    const float b = dtype::row_kernels<simd::scalar>::dot(x.data(), row.data(), n);
    worst = std::max(worst, std::fabs(a - b));
  }
  return worst;
}

template <class Isa>
bool check_isa(std::mt19937& rng) {
  const float f16 = dot_self_check<Isa, dtype::f16>(rng);
  const float q8 = dot_self_check<Isa, dtype::block_q8_0>(rng);
  const bool ok = f16 < 1e-3f && q8 < 1e-3f;
  std::printf("  %-7s dot vs scalar: f16 max |diff| %.2e, q8_0 %.2e  %s\n", Isa::name.data(), f16,
              q8, ok ? "ok" : "FAILED");
  return ok;
}

}  // namespace

int main() {
  std::printf("mnemo demo\n\n[1/3] SIMD paths (native for this build: %s)\n",
              simd::native::name.data());
  for (const auto& s : simd::isa_report())
    std::printf("  %-7s compiled: %-3s  supported by this CPU: %s\n", s.name.data(),
                s.compiled ? "yes" : "no", s.supported ? "yes" : "no");

  std::printf("\n[2/3] kernel self-check\n");
  std::mt19937 rng(2026);
  bool ok = check_isa<simd::scalar>(rng);
#if defined(MNEMO_ARCH_X86_64)
  if (simd::supported<simd::avx2>()) ok &= check_isa<simd::avx2>(rng);
  if (simd::supported<simd::avx512>()) ok &= check_isa<simd::avx512>(rng);
#elif defined(MNEMO_ARCH_AARCH64)
  ok &= check_isa<simd::neon>(rng);
#endif

  // A unified f16 cache: 8 KV heads x 128, 4 sequences of 4096 tokens; sequence 3
  // shares the first 2048 positions of sequence 0 (seq_cp: no copy).
  constexpr std::size_t n_head_kv = 8, d = 128, n_seq = 4, n_ctx = 4096, n_ubatch = 512;
  std::printf("\n[3/3] unified KV cache: %zu sequences x %zu tokens, f16, %zu KV heads x %zu\n",
              n_seq, n_ctx, n_head_kv, d);
  memory::full_cache_config cfg;
  cfg.shape = {1, n_head_kv, d, d};
  cfg.size = n_seq * n_ctx;
  cfg.n_seq_max = n_seq;
  cfg.rope.n_rot = d;
  auto made = memory::full_cache<dtype::f16>::make(cfg);
  if (!made.is_ok()) {
    std::printf("cannot build the cache: %s\n", made.error().to_string().c_str());
    return 1;
  }
  auto& cache = *made;
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  std::vector<float> k(n_head_kv * d), v(n_head_kv * d);
  const auto t_fill = clock_type::now();
  for (seq_id s = 0; s < static_cast<seq_id>(n_seq); ++s) {
    pos_t start = 0;
    if (s == 3) {  // share seq 0's prefix
      if (status st = cache.seq_cp(0, 3, 0, n_ctx / 2); !st)
        return std::printf("%s\n", st.to_string().c_str()), 1;
      start = n_ctx / 2;
    }
    for (pos_t p0 = start; p0 < static_cast<pos_t>(n_ctx); p0 += n_ubatch) {
      std::vector<pos_t> pos(n_ubatch);
      std::vector<seq_set> seqs(n_ubatch, seq_set::of(s));
      for (std::size_t j = 0; j < n_ubatch; ++j) pos[j] = p0 + static_cast<pos_t>(j);
      const memory::ubatch_tokens ub{pos, seqs};
      status st = cache.prepare({&ub, 1});
      if (st) st = cache.apply(0, ub);
      if (!st) return std::printf("decode failed: %s\n", st.to_string().c_str()), 1;
      for (std::size_t j = 0; j < n_ubatch; ++j) {
        for (auto& x : k) x = u(rng);
        for (auto& x : v) x = u(rng);
        cache.write_kv(0, 0, j, k.data(), v.data());
      }
      cache.commit();
    }
    std::printf("  sequence %d: positions %d..%d (%s)\n", s, cache.seq_pos_min(s),
                cache.seq_pos_max(s), s == 3 ? "first half shared with sequence 0" : "own cells");
  }
  std::printf("  filled in %.2f s; %s", seconds_since(t_fill), cache.report().to_string().c_str());

  // One decode step: a query token per sequence at its next position, all through
  // one view of the cache; sequences only see their own cells.
  const attention::shape sh{4 * n_head_kv, n_head_kv, d, d};  // GQA 4
  attention::params p;
  p.scale = 1.0f / std::sqrt(static_cast<float>(d));
  std::vector<float> q(n_seq * sh.n_head * d), out(n_seq * sh.n_head * d), ref(out.size());
  for (auto& x : q) x = u(rng);
  std::vector<pos_t> qpos;
  std::vector<seq_id> qseq;
  for (seq_id s = 0; s < static_cast<seq_id>(n_seq); ++s) {
    qpos.push_back(cache.seq_pos_max(s) + 1);
    qseq.push_back(s);
  }
  const attention::kv_segment seg = cache.segment(0);
  const attention::kv_view view{{&seg, 1}};
  const attention::query_batch qb{q.data(), n_seq, qpos.data(), qseq.data(), nullptr};
  attention::workspace ws;
  status st = attention::attend<simd::native, dtype::f16, dtype::f16>(sh, p, qb, {&view, 1},
                                                                      out.data(), ws);
  if (st)
    st = attention::reference_attend<dtype::f16, dtype::f16>(sh, p, qb, {&view, 1}, ref.data());
  if (!st) return std::printf("attention failed: %s\n", st.to_string().c_str()), 1;
  float worst = 0;
  for (std::size_t i = 0; i < out.size(); ++i) worst = std::max(worst, std::fabs(out[i] - ref[i]));
  const bool attn_ok = worst < 1e-4f;
  ok &= attn_ok;
  const int reps = 50;
  const auto t0 = clock_type::now();
  for (int r = 0; r < reps; ++r)
    (void)attention::attend<simd::native, dtype::f16, dtype::f16>(sh, p, qb, {&view, 1}, out.data(),
                                                                  ws);
  const double dt = seconds_since(t0) / reps;
  const double bytes = static_cast<double>(cache.used()) * 2 * n_head_kv * d * sizeof(dtype::f16);
  std::printf(
      "  decode attention, %zu sequences, GQA 4, %d threads: %.3f ms per step, %.1f GB/s of K/V, "
      "max |fast - reference| = %.1e  %s\n",
      n_seq, default_thread_count(), dt * 1e3, bytes / dt * 1e-9, worst, attn_ok ? "ok" : "FAILED");
  std::printf("\n%s\n", ok ? "all self-checks passed" : "SELF-CHECK FAILED");
  return ok ? 0 : 1;
}
