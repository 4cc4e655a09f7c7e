// bench/attention: decode (one query token, long f16 context; BM_decode_q8_0 / _q4_0:
// the same with quantised K/V) as a fraction of the machine's read bandwidth, and
// prefill (512 causal queries) as a fraction of its FMA peak, with 2 threads; plus the
// cost of exporting attention mass (null sink = none), and BM_decode_fma_floor: the
// decode's FMAs alone on the same f16 K/V bytes (common/decode_floor.hpp), the rate
// no decode kernel doing its arithmetic in f32 FMAs can beat here. Decode cases also
// report their roofline, min(read bandwidth, FMA peak x bytes/FLOP) (roofline_GBps,
// frac_roofline; with MNEMO_BENCH_PAIRED=1 frac_paired_roofline[_med], the read
// bandwidth taken from the paired pass).
#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <random>
#include <vector>

#include "common/bench_main.hpp"
#include "common/decode_floor.hpp"
#include "common/paired_read.hpp"
#include <benchmark/benchmark.h>

#include "mnemo/attention/attend.hpp"
#include "mnemo/base/aligned_buffer.hpp"
#include "mnemo/base/parallel.hpp"
#include "mnemo/dtype/dtype.hpp"

namespace {

using namespace mnemo;
const int k_threads = std::getenv("MNEMO_THREADS") ? std::atoi(std::getenv("MNEMO_THREADS")) : 2;
constexpr std::size_t k_d = 128, k_head_kv = 8;

/// One stream of n_cells cells of K/V type E at positions 0..n-1, and n_tokens queries
/// at the last positions (causal), all of sequence 0.
template <class E>
struct setup {
  attention::shape sh;
  aligned_buffer<E> k, v;  // the library's buffer, as a KV cache holds them (huge pages)
  std::vector<pos_t> cell_pos, q_pos;
  std::vector<seq_id> q_seq;
  std::vector<float> q, out;
  attention::kv_segment seg;
  attention::workspace ws;

  setup(std::size_t n_cells, std::size_t n_tokens, std::size_t group) {
    sh = {k_head_kv * group, k_head_kv, k_d, k_d};
    std::mt19937 rng(1);
    std::uniform_real_distribution<float> u(-1.0f, 1.0f);
    const std::size_t row = dtype::blocks_in_row<E>(k_head_kv * k_d);  // elements per cell
    k = std::move(aligned_buffer<E>::make(n_cells * row)).value();
    v = std::move(aligned_buffer<E>::make(k.size())).value();
    std::vector<float> values(k_head_kv * k_d);
    for (aligned_buffer<E>* kv : {&k, &v})
      for (std::size_t c = 0; c < n_cells; ++c) {
        for (float& x : values) x = u(rng);
        dtype::encode_row<simd::native>(values.data(), kv->data() + c * row, values.size());
      }
    cell_pos.resize(n_cells);
    for (std::size_t c = 0; c < n_cells; ++c) cell_pos[c] = static_cast<pos_t>(c);
    q.resize(n_tokens * sh.n_head * k_d);
    for (auto& x : q) x = u(rng);
    for (std::size_t t = 0; t < n_tokens; ++t) {
      q_pos.push_back(static_cast<pos_t>(n_cells - n_tokens + t));
      q_seq.push_back(0);
    }
    out.resize(n_tokens * sh.n_head * k_d);
    seg = {k.data(), v.data(), row * sizeof(E), row * sizeof(E), cell_pos.data(), nullptr, n_cells};
  }
  attention::query_batch batch() const {
    return {q.data(), q_pos.size(), q_pos.data(), q_seq.data(), nullptr};
  }
  double kv_bytes() const { return static_cast<double>((k.size() + v.size()) * sizeof(E)); }
  /// 2 FLOPs per multiply-add over every kept (query row, cell) pair, for Q.K and P.V.
  double flops() const {
    double pairs = 0;
    for (pos_t p : q_pos) pairs += static_cast<double>(p + 1);
    return pairs * static_cast<double>(sh.n_head) * 2.0 * static_cast<double>(sh.d_k + sh.d_v);
  }
};

/// A decode call's roofline on this machine: the longer of reading its K/V bytes at the
/// read bandwidth and doing its FLOPs at the FMA peak (k_threads threads, the process's
/// probe). Reading R query rows per KV head, an f16 element costs 2 bytes and 2R FLOPs.
struct roofline {
  double read_seconds, fma_seconds;
  roofline(double bytes, double flops)
      : read_seconds(bytes / (mnemo_bench::read_gbps_for(k_threads) * 1e9)),
        fma_seconds(flops / (mnemo_bench::fma_gflops_for(k_threads) * 1e9)),
        bytes_(bytes) {}
  /// roofline_GBps: the byte rate the roofline allows (below the read bandwidth when
  /// the FMAs bound the call); frac_roofline: the call's byte rate over it.
  void add_counters(benchmark::State& state) const {
    const double seconds = std::max(read_seconds, fma_seconds);
    if (!(seconds > 0.0) || !std::isfinite(seconds)) return;  // a probe failed
    state.counters["roofline_GBps"] = bytes_ / seconds / 1e9;
    state.counters["frac_roofline"] =
        benchmark::Counter(seconds * mnemo_bench::iterations(state), benchmark::Counter::kIsRate);
  }

 private:
  double bytes_;
};

/// The cells of seg cut into segments of `page` cells (0: seg whole), as a paged memory
/// or a read selection hands them to the kernel.
std::vector<attention::kv_segment> pages_of(const attention::kv_segment& seg, std::size_t page) {
  if (page == 0) return {seg};
  std::vector<attention::kv_segment> out;
  for (std::size_t c0 = 0; c0 < seg.n_cells; c0 += page) {
    attention::kv_segment s = seg;
    s.k = static_cast<const std::byte*>(seg.k) + c0 * seg.k_stride;
    s.v = static_cast<const std::byte*>(seg.v) + c0 * seg.v_stride;
    s.pos = seg.pos + c0;
    s.n_cells = std::min(page, seg.n_cells - c0);
    out.push_back(s);
  }
  return out;
}

template <class Sink, class E = dtype::f16>
void run(benchmark::State& state, std::size_t n_cells, std::size_t n_tokens, std::size_t group,
         bool with_export, std::size_t page = 0) {
  setup<E> s(n_cells, n_tokens, group);
  attention::params p;
  p.scale = 1.0f / std::sqrt(static_cast<float>(k_d));
  const std::vector<attention::kv_segment> segments = pages_of(s.seg, page);
  const attention::kv_view view{segments};
  attention::options opt;
  opt.n_threads = k_threads;
  std::vector<float> mass(k_head_kv * n_cells), lse(n_tokens * s.sh.n_head);
  float* mass_ptr = mass.data();
  Sink sink{};
  if constexpr (Sink::enabled) sink = {std::span<float* const>(&mass_ptr, 1), nullptr, lse.data()};
  (void)with_export;
  mnemo_bench::paired_read paired(state, s.kv_bytes(), k_threads);
  const roofline limit(s.kv_bytes(), s.flops());
  if (n_tokens == 1) paired.set_fma_seconds(limit.fma_seconds);
  for (auto _ : state) {
    paired.call([&] {
      const status st = attention::attend<simd::native, E, E, Sink>(s.sh, p, s.batch(), {&view, 1},
                                                                    s.out.data(), s.ws, opt, sink);
      if (!st.is_ok()) state.SkipWithError(st.to_string().c_str());
      benchmark::DoNotOptimize(s.out.data());
      benchmark::ClobberMemory();
    });
  }
  paired.add_counter();
  state.counters["tokens/s"] = benchmark::Counter(
      static_cast<double>(n_tokens) * mnemo_bench::iterations(state), benchmark::Counter::kIsRate);
  mnemo_bench::add_bytes_counters(state, s.kv_bytes(), k_threads);
  mnemo_bench::add_flops_counters(state, s.flops(), k_threads);
  if (n_tokens == 1) limit.add_counters(state);
  mnemo_bench::add_isa_and_threads_labels(state, k_threads);
}

void BM_decode(benchmark::State& state) {
  run<attention::null_sink>(state, static_cast<std::size_t>(state.range(0)), 1,
                            static_cast<std::size_t>(state.range(1)), false);
}
/// BM_decode over a view of `page`-cell segments: what the segment boundaries cost.
void BM_decode_paged(benchmark::State& state) {
  run<attention::null_sink>(state, static_cast<std::size_t>(state.range(0)), 1,
                            static_cast<std::size_t>(state.range(1)), false,
                            static_cast<std::size_t>(state.range(2)));
}
template <class E>
void BM_decode_quantised(benchmark::State& state) {
  run<attention::null_sink, E>(state, static_cast<std::size_t>(state.range(0)), 1,
                               static_cast<std::size_t>(state.range(1)), false);
}
void BM_decode_export_mass(benchmark::State& state) {
  run<attention::mass_sink>(state, static_cast<std::size_t>(state.range(0)), 1,
                            static_cast<std::size_t>(state.range(1)), true);
}
void BM_prefill(benchmark::State& state) {
  run<attention::null_sink>(state, static_cast<std::size_t>(state.range(0)),
                            static_cast<std::size_t>(state.range(1)),
                            static_cast<std::size_t>(state.range(2)), false);
}

/// The context cut into four chunks per thread, as decode's split-K cuts it; each
/// chunk's K rows, then its V rows, through fma_floor_pass with R rows per KV head.
template <std::size_t R>
void fma_floor_call(const setup<dtype::f16>& s, bool software_prefetch, std::vector<float>& sums) {
  const std::size_t n_cells = s.cell_pos.size(), row = k_head_kv * k_d;
  const std::size_t chunks = 4 * static_cast<std::size_t>(k_threads);
  const std::size_t per_chunk = (n_cells + chunks - 1) / chunks;
  sums.assign(chunks, 0.0f);
  parallel_for(chunks, k_threads, [&](std::size_t i, int) {
    const std::size_t c0 = std::min(n_cells, i * per_chunk);
    const std::size_t n = (std::min(n_cells, c0 + per_chunk) - c0) * row;
    for (const aligned_buffer<dtype::f16>* kv : {&s.k, &s.v})
      sums[i] += mnemo_bench::probe::fma_floor_pass<simd::native, R>(&kv->data()[c0 * row].bits, n,
                                                                     software_prefetch);
  });
}

/// Decode's arithmetic floor at ctx cells and GQA 1, 2 or 4, with (prefetch 1) or
/// without (0) software prefetch: paired like BM_decode, so that BM_decode's rate
/// over this one is the kernel's own efficiency, and this one over the read pass is
/// the bound the machine's FMA throughput sets.
void BM_decode_fma_floor(benchmark::State& state) {
  const auto n_cells = static_cast<std::size_t>(state.range(0));
  const auto group = static_cast<std::size_t>(state.range(1));
  const bool software_prefetch = state.range(2) != 0;
  // The instantiation for this ratio, chosen once.
  const auto floor_call = group == 1   ? &fma_floor_call<1>
                          : group == 2 ? &fma_floor_call<2>
                          : group == 4 ? &fma_floor_call<4>
                                       : nullptr;
  if (floor_call == nullptr) {
    state.SkipWithError("BM_decode_fma_floor: GQA 1, 2 or 4");
    return;
  }
  const setup<dtype::f16> s(n_cells, 1, group);
  std::vector<float> sums;
  mnemo_bench::paired_read paired(state, s.kv_bytes(), k_threads);
  const roofline limit(s.kv_bytes(), s.flops());
  paired.set_fma_seconds(limit.fma_seconds);
  for (auto _ : state) {
    paired.call([&] {
      floor_call(s, software_prefetch, sums);
      benchmark::DoNotOptimize(sums.data());
      benchmark::ClobberMemory();
    });
  }
  paired.add_counter();
  mnemo_bench::add_bytes_counters(state, s.kv_bytes(), k_threads);
  mnemo_bench::add_flops_counters(state, s.flops(), k_threads);
  limit.add_counters(state);
  mnemo_bench::add_isa_and_threads_labels(state, k_threads);
}

BENCHMARK(BM_decode)
    ->ArgNames({"ctx", "gqa"})
    ->ArgsProduct({{1024, 4096, 8192, 16384, 32768}, {1, 2, 4, 8}})
    ->Unit(benchmark::kMicrosecond)
    ->UseRealTime();
BENCHMARK(BM_decode_paged)
    ->ArgNames({"ctx", "gqa", "page"})
    ->ArgsProduct({{16384}, {1, 4, 8}, {16, 64}})
    ->Unit(benchmark::kMicrosecond)
    ->UseRealTime();
void quantised_decode_shapes(benchmark::internal::Benchmark* b) {
  b->ArgNames({"ctx", "gqa"})
      ->ArgsProduct({{4096, 16384, 32768}, {1, 4}})
      ->Unit(benchmark::kMicrosecond)
      ->UseRealTime();
}
BENCHMARK_TEMPLATE(BM_decode_quantised, dtype::block_q8_0)
    ->Name("BM_decode_q8_0")
    ->Apply(quantised_decode_shapes);
BENCHMARK_TEMPLATE(BM_decode_quantised, dtype::block_q4_0)
    ->Name("BM_decode_q4_0")
    ->Apply(quantised_decode_shapes);
BENCHMARK(BM_decode_fma_floor)
    ->ArgNames({"ctx", "gqa", "prefetch"})
    ->ArgsProduct({{16384, 32768}, {1, 2, 4}, {0, 1}})
    ->Unit(benchmark::kMicrosecond)
    ->UseRealTime();
BENCHMARK(BM_decode_export_mass)
    ->ArgNames({"ctx", "gqa"})
    ->ArgsProduct({{16384}, {1, 4}})
    ->Unit(benchmark::kMicrosecond)
    ->UseRealTime();
BENCHMARK(BM_prefill)
    ->ArgNames({"ctx", "queries", "gqa"})
    ->ArgsProduct({{4096}, {512}, {1, 4}})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

}  // namespace

MNEMO_BENCH_MAIN();
