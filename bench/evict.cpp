// bench/evict: one decode step of a bounded cache at budget B (one layer, f16 K/V,
// d 128, 8 KV heads x group 4, 1 thread), split into the attention call and the
// policy's bookkeeping (prepare, apply, write, views, statistics setup, scoring,
// eviction, commit). Counters: attn_us, book_us and book/attn (wall time), the target
// being book/attn <= 0.10 at B = 1024, and attn_cpu_us, book/attn_cpu (this thread's
// CPU time: on a shared machine wall time also counts other processes' slices); cells_read, the
// most cells one lane's view handed to attention (B + 1 with budget_rule::kept, B with
// budget_rule::read). BM_attend_plain is the same attention with attend() directly: streaming_llm's
// null-sink path must cost the same. The `_per_head` variants keep per-KV-head lanes
// (one attention call per layer, each (token, KV head) a row over its head's own
// cells); compare their attn_us with the per-layer rows.
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <ctime>
#include <vector>

#include "common/bench_main.hpp"
#include <benchmark/benchmark.h>

#include "mnemo/base/aligned_buffer.hpp"
#include "mnemo/base/rng.hpp"
#include "mnemo/evict/adakv.hpp"
#include "mnemo/evict/expected_attention.hpp"
#include "mnemo/evict/h2o.hpp"
#include "mnemo/evict/h2o_normalised.hpp"
#include "mnemo/evict/h2o_vlen.hpp"
#include "mnemo/evict/key_diff.hpp"
#include "mnemo/evict/keyformer.hpp"
#include "mnemo/evict/q_hitter.hpp"
#include "mnemo/evict/quest_attend.hpp"
#include "mnemo/evict/random_evict.hpp"
#include "mnemo/evict/scissorhands.hpp"
#include "mnemo/evict/snapkv.hpp"
#include "mnemo/evict/streaming_llm.hpp"
#include "mnemo/evict/think.hpp"
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
    group = k_group;
    rope.n_rot = k_d;  // queries turned back by a model's RoPE
  }
};
/// Every cell rescored twice as often as by default (the trade-off in docs/eviction.md).
struct expected_attention_every256 : expected_attention_bench {
  expected_attention_every256() { rescore_every = 256; }
};
struct q_hitter_bench : evict::q_hitter {
  q_hitter_bench() {
    n_head_kv = k_hkv;
    d_k = d_v = k_d;
  }
};

/// This thread's CPU time in ns: on a shared machine the wall time of a phase also
/// counts other processes' time slices, so the *_cpu counters split the step by it.
double thread_cpu_ns() {
  timespec t{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) * 1e9 + static_cast<double>(t.tv_nsec);
}

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
  /// One decode step; accumulates attention and bookkeeping nanoseconds (wall, and
  /// this thread's CPU time in cpu[0] / cpu[1]).
  void step(double* attn_ns, double* book_ns, double* cpu = nullptr) {
    using clk = std::chrono::steady_clock;
    for (auto* a : {&q, &k, &v})
      for (float& x : *a) x = static_cast<float>(g.normal());
    const double c0 = cpu ? thread_cpu_ns() : 0.0;
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
    const double c1 = cpu ? thread_cpu_ns() : 0.0;
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
    const double c2 = cpu ? thread_cpu_ns() : 0.0;
    (void)m.after_attention(0, 0, stats);
    m.commit();
    const auto t3 = clk::now();
    if (cpu) {
      const double c3 = thread_cpu_ns();
      cpu[0] += c2 - c1;
      cpu[1] += (c1 - c0) + (c3 - c2);
    }
    if (attn_ns) *attn_ns += std::chrono::duration<double, std::nano>(t2 - t1).count();
    if (book_ns)
      *book_ns += std::chrono::duration<double, std::nano>((t1 - t0) + (t3 - t2)).count();
  }
};

template <class Policy, memory::kv_granularity G = memory::kv_granularity::per_layer,
          memory::budget_rule R = memory::budget_rule::kept>
void BM_decode_step(benchmark::State& state) {
  decode_setup<Policy, G, R> s(static_cast<std::size_t>(state.range(0)));
  double attn = 0, book = 0, cpu[2] = {0, 0};
  for (auto _ : state) s.step(&attn, &book, cpu);
  const double n = static_cast<double>(state.iterations());
  state.counters["attn_us"] = attn / n / 1e3;
  state.counters["book_us"] = book / n / 1e3;
  state.counters["book/attn"] = book / attn;
  state.counters["attn_cpu_us"] = cpu[0] / n / 1e3;
  state.counters["book/attn_cpu"] = cpu[1] / cpu[0];
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
// Expected Attention (RoPE, window 32): the decoded tokens scored 16 at a time, every
// cell every rescore_every steps.
BENCHMARK(BM_decode_step<expected_attention_bench>)->ArgName("B")->Arg(1024);
BENCHMARK(BM_decode_step<expected_attention_every256>)->ArgName("B")->Arg(1024);

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
// AdaKV: per-head lanes in one shared pool of pages, budgets allocated over the heads
// per step (each head's view: one segment per run of its pages, its own cells only).
BENCHMARK(BM_decode_step_per_head<evict::adakv<evict::h2o>>)->ArgName("B")->Arg(1024);
BENCHMARK(BM_decode_step_per_head<evict::adakv<evict::tova>>)->ArgName("B")->Arg(1024);
BENCHMARK(BM_decode_step_per_head_read<evict::h2o>)->ArgName("B")->Arg(1024);

// ---- Quest and ThinK (read selection and key-channel pruning) -------------------------
// Same geometry (f16, d 128, 8 KV heads x group 4, 1 thread), one decode row over a
// dense run of `ctx` cells as a full cache holds them.
struct dense_cells {
  std::size_t n;
  // The library's buffer, as a KV cache holds them (huge pages: on 4 KiB pages the
  // per-head reads of Quest's pages, 256 bytes of each 2 KiB row, wait on the TLB).
  aligned_buffer<E> k, v;
  std::vector<float> kf;  // the keys in f32 (what the index and the pruner see)
  std::vector<pos_t> pos;
  std::vector<float> q, out;
  dense_cells(std::size_t n_cells, std::size_t dk) : n(n_cells) {
    splitmix64 g{7};
    kf.resize(n * k_hkv * dk);
    k = std::move(aligned_buffer<E>::make(kf.size())).value();
    v = std::move(aligned_buffer<E>::make(n * k_hkv * k_d)).value();
    for (float& x : kf) x = static_cast<float>(g.normal());
    for (std::size_t i = 0; i < kf.size(); ++i) k[i] = dtype::f16::from_float(kf[i]);
    for (E& x : v) x = dtype::f16::from_float(static_cast<float>(g.normal()));
    pos.resize(n);
    for (std::size_t j = 0; j < n; ++j) pos[j] = static_cast<pos_t>(j);
    q.resize(k_hkv * k_group * k_d);
    for (float& x : q) x = static_cast<float>(g.normal());
    out.resize(k_hkv * k_group * k_d);
  }
};

/// Quest: bookkeeping = appending the step's key to the page metadata + selecting the
/// top pages; attention = quest_attend over the selected pages. B = cells read
/// (top_pages x page), ctx = cells held. The selection computes one bound per page and
/// query head (2 d FMAs, as attention spends per cell read), so its share is about
/// ctx / (page x B) of the attention's arithmetic (half that in bf16 dot products:
/// bf16 = 1, where the CPU has AVX512_BF16; 0: f32 bounds). bytes_read / full_bytes:
/// K/V (and page metadata) bytes one step reads against attending every cell.
void BM_quest_step(benchmark::State& state) {
  using clk = std::chrono::steady_clock;
  const std::size_t B = static_cast<std::size_t>(state.range(0)),
                    ctx = static_cast<std::size_t>(state.range(1)),
                    page = static_cast<std::size_t>(state.range(2));
  dense_cells c(ctx, k_d);
  const evict::quest_config qc{page, B / page, k_hkv, k_d, true, state.range(3) != 0};
  auto ix = evict::quest_index::make(qc).value();
  auto tail = evict::quest_index::make(qc).value();  // times append without growing ix
  for (std::size_t j = 0; j < ctx; ++j) ix.append(&c.kf[j * k_hkv * k_d]);
  const attention::shape sh{k_hkv * k_group, k_hkv, k_d, k_d};
  attention::params ap;
  ap.scale = 1.0f / std::sqrt(float(k_d));
  attention::workspace ws;
  evict::quest_scratch scr;
  const attention::kv_segment cells{
      c.k.data(), c.v.data(), k_hkv * k_d * sizeof(E), k_hkv * k_d * sizeof(E), c.pos.data(),
      nullptr,    ctx};
  const pos_t qpos[1] = {static_cast<pos_t>(ctx - 1)};
  const seq_id qseq[1] = {0};
  const attention::query_batch qb{c.q.data(), 1, qpos, qseq, nullptr};
  double attn = 0, book = 0, attn_cpu = 0, book_cpu = 0;
  std::size_t step = 0;
  for (auto _ : state) {
    const double c0 = thread_cpu_ns();
    const auto t0 = clk::now();
    if (tail.n_cells() == page) tail.clear();
    tail.append(&c.kf[(step++ % ctx) * k_hkv * k_d]);
    ix.select(c.q.data(), k_group);
    const auto t1 = clk::now();
    const double c1 = thread_cpu_ns();
    (void)evict::quest_attend<simd::native, E, E>(ix, cells, sh, ap, qb, c.out.data(), ws, scr,
                                                  {1});
    const auto t2 = clk::now();
    const double c2 = thread_cpu_ns();
    book += std::chrono::duration<double, std::nano>(t1 - t0).count();
    attn += std::chrono::duration<double, std::nano>(t2 - t1).count();
    book_cpu += c1 - c0;
    attn_cpu += c2 - c1;
  }
  const double n = static_cast<double>(state.iterations());
  state.counters["attn_us"] = attn / n / 1e3;
  state.counters["book_us"] = book / n / 1e3;
  state.counters["book/attn"] = book / attn;
  state.counters["attn_cpu_us"] = attn_cpu / n / 1e3;
  state.counters["book/attn_cpu"] = book_cpu / attn_cpu;
  state.counters["bytes_read"] = static_cast<double>(evict::quest_bytes_read<E, E>(ix, sh));
  state.counters["full_bytes"] = static_cast<double>(ctx * k_hkv * k_d * 2 * sizeof(E));
  state.counters["bf16_bounds"] = ix.bf16_bounds() ? 1 : 0;
}
BENCHMARK(BM_quest_step)
    ->ArgNames({"B", "ctx", "page", "bf16"})
    ->ArgsProduct({{1024}, {2048, 4096}, {16}, {0, 1}})
    ->ArgsProduct({{1024}, {4096, 16384}, {64}, {0, 1}});

/// ThinK at budget B cells: bookkeeping = pruning the step's key and gathering the
/// query (the channel choice runs once, at the end of the prefill: choose_us);
/// attention = the kernel over keys of kept_channels() (prune ratio 0.5: 64 of 128).
/// attn_full_us: the same attention over unpruned keys.
void BM_think_step(benchmark::State& state) {
  using clk = std::chrono::steady_clock;
  const std::size_t B = static_cast<std::size_t>(state.range(0));
  dense_cells c(B, k_d);
  const evict::think_config tc{k_hkv, k_group, k_d, attention::rope_layout::normal, 0, 0.5};
  auto t = evict::think_pruner::make(tc).value();
  std::vector<float> window(8 * k_hkv * k_group * k_d);
  splitmix64 g{3};
  for (float& x : window) x = static_cast<float>(g.normal());
  const auto c0 = clk::now();
  t.choose(window.data(), 8, c.kf.data(), B);
  const auto c1 = clk::now();
  const std::size_t kc = t.kept_channels();
  std::vector<float> kp(B * k_hkv * kc), knew(k_hkv * kc), qg(k_hkv * k_group * kc);
  t.prune_keys(c.kf.data(), B, kp.data());
  std::vector<E> ks(kp.size());
  for (std::size_t i = 0; i < kp.size(); ++i) ks[i] = dtype::f16::from_float(kp[i]);
  const attention::shape full{k_hkv * k_group, k_hkv, k_d, k_d}, sh = t.pruned_shape(full);
  attention::params ap;
  ap.scale = 1.0f / std::sqrt(float(k_d));
  attention::workspace ws;
  const attention::kv_segment seg{
      ks.data(), c.v.data(), k_hkv * kc * sizeof(E), k_hkv * k_d * sizeof(E), c.pos.data(),
      nullptr,   B};
  const attention::kv_segment seg_full{
      c.k.data(), c.v.data(), k_hkv * k_d * sizeof(E), k_hkv * k_d * sizeof(E), c.pos.data(),
      nullptr,    B};
  const attention::kv_view view{std::span(&seg, 1)}, view_full{std::span(&seg_full, 1)};
  const pos_t qpos[1] = {static_cast<pos_t>(B - 1)};
  const seq_id qseq[1] = {0};
  const attention::query_batch qb{qg.data(), 1, qpos, qseq, nullptr};
  const attention::query_batch qb_full{c.q.data(), 1, qpos, qseq, nullptr};
  double attn = 0, book = 0, attn_full = 0;
  for (auto _ : state) {
    const auto t0 = clk::now();
    t.prune_keys(c.kf.data(), 1, knew.data());
    t.gather_queries(c.q.data(), 1, qg.data());
    const auto t1 = clk::now();
    (void)attention::attend<simd::native, E, E>(sh, ap, qb, std::span(&view, 1), c.out.data(), ws,
                                                {1});
    const auto t2 = clk::now();
    (void)attention::attend<simd::native, E, E>(full, ap, qb_full, std::span(&view_full, 1),
                                                c.out.data(), ws, {1});
    const auto t3 = clk::now();
    book += std::chrono::duration<double, std::nano>(t1 - t0).count();
    attn += std::chrono::duration<double, std::nano>(t2 - t1).count();
    attn_full += std::chrono::duration<double, std::nano>(t3 - t2).count();
  }
  const double n = static_cast<double>(state.iterations());
  state.counters["attn_us"] = attn / n / 1e3;
  state.counters["attn_full_us"] = attn_full / n / 1e3;
  state.counters["book_us"] = book / n / 1e3;
  state.counters["book/attn"] = book / attn;
  state.counters["choose_us"] = std::chrono::duration<double, std::micro>(c1 - c0).count();
  state.counters["k_bytes/full"] = static_cast<double>(kc) / static_cast<double>(k_d);
}
BENCHMARK(BM_think_step)->ArgName("B")->Arg(1024)->Arg(4096);

}  // namespace

MNEMO_BENCH_MAIN();
