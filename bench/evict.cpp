// bench/evict: one decode step of a bounded cache at budget B (one layer, f16 K/V,
// d 128, 8 KV heads x group 4, 1 thread), split into the attention call and the
// policy's bookkeeping (prepare, apply, write, views, statistics setup, scoring,
// eviction, commit). Counters: attn_us, book_us and book/attn, the target
// being book/attn <= 0.10 at B = 1024; cells_read, the most cells one lane's view
// handed to attention (B + 1 with budget_rule::kept, B with budget_rule::read).
// BM_attend_plain is the same attention with attend() directly: streaming_llm's
// null-sink path must cost the same. The `_per_head` variants keep per-KV-head lanes
// (8 attention calls of one KV head each, queries gathered and outputs scattered,
// counted as attention); compare their attn_us with the per-layer rows.
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <vector>

#include "common/bench_main.hpp"
#include <benchmark/benchmark.h>

#include "mnemo/base/rng.hpp"
#include "mnemo/evict/expected_attention.hpp"
#include "mnemo/evict/h2o.hpp"
#include "mnemo/evict/h2o_normalised.hpp"
#include "mnemo/evict/h2o_vlen.hpp"
#include "mnemo/evict/key_diff.hpp"
#include "mnemo/evict/keyformer.hpp"
#include "mnemo/evict/q_hitter.hpp"
#include "mnemo/evict/random_evict.hpp"
#include "mnemo/evict/scissorhands.hpp"
#include "mnemo/evict/snapkv.hpp"
#include "mnemo/evict/streaming_llm.hpp"
#include "mnemo/evict/tova.hpp"
#include "mnemo/memory/bounded/bounded.hpp"
#include "mnemo/model/attend_observed.hpp"

namespace {

using namespace mnemo;
using E = dtype::f16;
constexpr std::size_t k_d = 128, k_hkv = 8, k_group = 4;

/// Policies whose defaults need the bench's geometry or a chunk.
struct h2o_vlen_bench : evict::h2o_vlen {
  h2o_vlen_bench() {
    n_head_kv = k_hkv;
    d_v = k_d;
  }
};
struct scissorhands_chunk8 : evict::scissorhands {
  scissorhands_chunk8() { evict_chunk = 8; }
};
struct expected_attention_bench : evict::expected_attention {
  expected_attention_bench() {
    n_head_kv = k_hkv;
    d_v = k_d;
    rope.layout = attention::rope_layout::none;
  }
};
struct q_hitter_bench : evict::q_hitter {
  q_hitter_bench() {
    n_head_kv = k_hkv;
    d_k = d_v = k_d;
  }
};

template <class Policy, memory::kv_granularity G = memory::kv_granularity::per_layer,
          memory::budget_rule R = memory::budget_rule::kept>
struct decode_setup {
  memory::bounded<Policy, E> m;
  attention::shape sh{k_hkv * k_group, k_hkv, k_d, k_d};
  attention::params ap;
  attention::workspace ws;
  memory::layer_views lv;
  std::vector<float> q, k, v, out;
  pos_t next = 0;
  splitmix64 g{1};

  explicit decode_setup(std::size_t budget) : m(make(budget)) {
    ap.scale = 1.0f / std::sqrt(float(k_d));
    q.resize(sh.n_head * k_d);
    k.resize(k_hkv * k_d);
    v.resize(k_hkv * k_d);
    out.resize(sh.n_head * k_d);
    for (std::size_t i = 0; i < budget + 8; ++i) step(nullptr, nullptr);  // fill to the budget
  }
  static memory::bounded<Policy, E> make(std::size_t budget) {
    memory::bounded_config c;
    c.shape = {1, k_hkv, k_d, k_d};
    c.budget = budget;
    c.max_ubatch = 1;
    c.rope.layout = attention::rope_layout::none;
    c.granularity = G;
    c.rule = R;
    return memory::bounded<Policy, E>::make(c).value();
  }
  /// One decode step; accumulates attention and bookkeeping nanoseconds.
  void step(double* attn_ns, double* book_ns) {
    using clk = std::chrono::steady_clock;
    for (auto* a : {&q, &k, &v})
      for (float& x : *a) x = static_cast<float>(g.normal());
    const auto t0 = clk::now();
    const pos_t pos[1] = {next++};
    const seq_id seq[1] = {0};
    const seq_set set[1] = {seq_set::of(0)};
    const memory::ubatch_tokens ub{pos, set};
    (void)m.prepare(std::span(&ub, 1));
    (void)m.apply(0, ub);
    m.write_kv(0, 0, 0, k.data(), v.data());
    m.views(0, 0, lv);
    const attention::query_batch qb{q.data(), 1, pos, seq, nullptr};
    using mem_t = memory::bounded<Policy, E>;
    if constexpr (mem_t::wants_attention_stats) m.observe_call(0, 0, sh, qb);
    attention::mass_sink sink;
    const bool stats = m.stats_sink(0, 0, sink);
    const auto t1 = clk::now();
    if constexpr (G == memory::kv_granularity::per_kv_head) {
      (void)model::detail::attend_lanes<simd::native, E, E, mem_t::wants_kernel_stats>(
          k_hkv, sh, ap, qb, lv, out.data(), ws, {1}, stats, sink);
    } else if constexpr (mem_t::wants_kernel_stats) {
      if (stats)
        (void)attention::attend<simd::native, E, E, attention::mass_sink>(
            sh, ap, qb, lv.streams, out.data(), ws, {1}, sink);
      else
        (void)attention::attend<simd::native, E, E>(sh, ap, qb, lv.streams, out.data(), ws, {1});
    } else {
      (void)attention::attend<simd::native, E, E>(sh, ap, qb, lv.streams, out.data(), ws, {1});
    }
    const auto t2 = clk::now();
    (void)m.after_attention(0, 0, stats);
    m.commit();
    const auto t3 = clk::now();
    if (attn_ns) *attn_ns += std::chrono::duration<double, std::nano>(t2 - t1).count();
    if (book_ns)
      *book_ns += std::chrono::duration<double, std::nano>((t1 - t0) + (t3 - t2)).count();
  }
};

template <class Policy, memory::kv_granularity G = memory::kv_granularity::per_layer,
          memory::budget_rule R = memory::budget_rule::kept>
void BM_decode_step(benchmark::State& state) {
  decode_setup<Policy, G, R> s(static_cast<std::size_t>(state.range(0)));
  double attn = 0, book = 0;
  for (auto _ : state) s.step(&attn, &book);
  const double n = static_cast<double>(state.iterations());
  state.counters["attn_us"] = attn / n / 1e3;
  state.counters["book_us"] = book / n / 1e3;
  state.counters["book/attn"] = book / attn;
  state.counters["cells_read"] = static_cast<double>(s.m.view_stats().max_cells);
}

/// The same attention through attend() directly on the filled cache (null sink).
void BM_attend_plain(benchmark::State& state) {
  decode_setup<evict::streaming_llm> s(static_cast<std::size_t>(state.range(0)));
  const pos_t pos[1] = {s.next};
  const seq_id seq[1] = {0};
  const seq_set set[1] = {seq_set::of(0)};
  const memory::ubatch_tokens ub{pos, set};
  (void)s.m.prepare(std::span(&ub, 1));
  (void)s.m.apply(0, ub);
  s.m.write_kv(0, 0, 0, s.k.data(), s.v.data());
  s.m.views(0, 0, s.lv);
  const attention::query_batch qb{s.q.data(), 1, pos, seq, nullptr};
  for (auto _ : state)
    benchmark::DoNotOptimize(attention::attend<simd::native, E, E>(s.sh, s.ap, qb, s.lv.streams,
                                                                   s.out.data(), s.ws, {1}));
  s.m.rollback();
}

BENCHMARK(BM_attend_plain)->ArgName("B")->Arg(1024)->Arg(4096);
BENCHMARK(BM_decode_step<evict::streaming_llm>)->ArgName("B")->Arg(1024)->Arg(4096);
BENCHMARK(BM_decode_step<evict::h2o>)->ArgName("B")->Arg(1024)->Arg(4096);
BENCHMARK(BM_decode_step<evict::tova>)->ArgName("B")->Arg(1024)->Arg(4096);
BENCHMARK(BM_decode_step<evict::snapkv>)->ArgName("B")->Arg(1024)->Arg(4096);
BENCHMARK(BM_decode_step<evict::random_evict>)->ArgName("B")->Arg(1024);
BENCHMARK(BM_decode_step<evict::h2o_normalised>)->ArgName("B")->Arg(1024);
BENCHMARK(BM_decode_step<h2o_vlen_bench>)->ArgName("B")->Arg(1024);
BENCHMARK(BM_decode_step<evict::scissorhands>)->ArgName("B")->Arg(1024);
BENCHMARK(BM_decode_step<scissorhands_chunk8>)->ArgName("B")->Arg(1024);
BENCHMARK(BM_decode_step<evict::keyformer>)->ArgName("B")->Arg(1024);
// KeyDiff rescores the lane from its keys once per eviction (every evict_chunk = 16 steps).
BENCHMARK(BM_decode_step<evict::key_diff>)->ArgName("B")->Arg(1024);
BENCHMARK(BM_decode_step<q_hitter_bench>)->ArgName("B")->Arg(1024);
// Expected Attention scores at prefill chunk ends: a decode step asks for nothing.
BENCHMARK(BM_decode_step<expected_attention_bench>)->ArgName("B")->Arg(1024);

constexpr auto k_head = memory::kv_granularity::per_kv_head;
constexpr auto k_layer = memory::kv_granularity::per_layer;
constexpr auto k_read = memory::budget_rule::read;
template <class Policy>
void BM_decode_step_per_head(benchmark::State& state) {
  BM_decode_step<Policy, k_head>(state);
}
template <class Policy>
void BM_decode_step_read(benchmark::State& state) {
  BM_decode_step<Policy, k_layer, k_read>(state);
}
template <class Policy>
void BM_decode_step_per_head_read(benchmark::State& state) {
  BM_decode_step<Policy, k_head, k_read>(state);
}
BENCHMARK(BM_decode_step_per_head<evict::streaming_llm>)->ArgName("B")->Arg(1024)->Arg(4096);
BENCHMARK(BM_decode_step_per_head<evict::h2o>)->ArgName("B")->Arg(1024)->Arg(4096);
BENCHMARK(BM_decode_step_per_head<evict::tova>)->ArgName("B")->Arg(1024)->Arg(4096);
BENCHMARK(BM_decode_step_per_head<evict::snapkv>)->ArgName("B")->Arg(1024)->Arg(4096);
BENCHMARK(BM_decode_step_read<evict::h2o>)->ArgName("B")->Arg(1024);
BENCHMARK(BM_decode_step_per_head_read<evict::h2o>)->ArgName("B")->Arg(1024);

}  // namespace

MNEMO_BENCH_MAIN();
