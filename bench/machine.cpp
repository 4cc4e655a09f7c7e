// bench_machine: the machine limits every other bench is compared with (docs/
// performance.md, "Machine limits"), shown through Google Benchmark, plus a summary block.
//
//   BM_read_bandwidth/threads:k   streaming reads of a 1 GiB buffer, k pinned threads
//   BM_read_working_set/kib:n     one thread re-reading n KiB: L1, L2, L3 and DRAM
//   BM_fma_peak<isa>/threads:k    independent FP32 FMA chains, k pinned threads
//   BM_decode_pattern/order:o/threads:k   attention decode's read order without its
//                                 arithmetic (common/decode_pattern.hpp): 0 address
//                                 order, 1 the kernel's groups of eight cells, 2 head
//                                 by head with spread software prefetch, 3 without,
//                                 4 K in groups and V head by head
//   BM_f16_fma_in_l1/rows:r       one thread widening f16 from L1 (ops<native>::load_f16)
//                                 with r FMAs per element (common/decode_floor.hpp):
//                                 what one core's conversions and FMAs allow a decode
//                                 at r query rows per KV head, with no memory wait
//   BM_f16_widen_once/<tile>/rows:r   the same with each f16 vector widened once for r
//                                 rows in the decode kernel's register tiles: dots (Q.K,
//                                 queries loaded by the FMAs), broadcast (P.V, one
//                                 broadcast probability per row and cell)
//
// The summary also estimates the core clock from a chain of dependent integer adds
// (one per cycle on every x86 core), so FLOPs per cycle can be checked against the
// core's FMA width: 64 = two 512-bit FMA pipes (Zen 5 server), 32 = two 256-bit
// pipes (Zen 4 runs a 512-bit FMA as two halves; Haswell..Zen 3 with AVX2).
#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <string>
#include <type_traits>

#include "common/bench_main.hpp"
#include "common/decode_floor.hpp"
#include "common/decode_pattern.hpp"
#include "common/machine_limits.hpp"
#include "common/machine_probe.hpp"
#include "common/probe_kernels.hpp"
#include "common/threads.hpp"
#include <benchmark/benchmark.h>

#include "mnemo/simd/simd.hpp"

namespace {

namespace simd = mnemo::simd;
using namespace mnemo_bench;

/// Pins a benchmark thread to allowed CPU thread_index() for the scope and restores the
/// previous affinity (thread 0 is the main thread, reused by later benchmarks).
class scoped_pin {
 public:
  explicit scoped_pin(int index) : saved_(save_affinity()) { pin_this_thread(index); }
  ~scoped_pin() { restore_affinity(saved_); }
  scoped_pin(const scoped_pin&) = delete;
  scoped_pin& operator=(const scoped_pin&) = delete;

 private:
  saved_affinity saved_;
};

/// The 1 GiB buffer of BM_read_bandwidth, allocated and touched on first use (before
/// any timed loop; benchmark threads wait at the loop start for each other).
const stream_buffer& big_buffer() {
  static stream_buffer buf;
  [[maybe_unused]] static const bool once = [] {
    const bool ok = buf.allocate(k_bench_read_bytes, usable_threads());
    if (!ok) std::fprintf(stderr, "bench_machine: cannot allocate the read buffer\n");
    return ok;
  }();
  return buf;
}

/// big_buffer() when it holds at least `floats`, else null with the benchmark skipped.
const stream_buffer* buffer_or_skip(benchmark::State& state, std::size_t floats = 1) {
  const stream_buffer& buf = big_buffer();
  if (buf.size() >= floats) return &buf;
  state.SkipWithError("no read buffer");
  return nullptr;
}

// [n] floats per thread: thread t streams its own contiguous chunk once per iteration.
void BM_read_bandwidth(benchmark::State& state) {
  const stream_buffer* buf = buffer_or_skip(state);
  if (buf == nullptr) return;
  scoped_pin pin(state.thread_index());
  const auto [p, n] = buf->chunk(state.thread_index(), state.threads());
  for (auto _ : state) benchmark::DoNotOptimize(probe::read_sum<simd::native>(p, n));
  add_bytes_counters(state, static_cast<double>(n * sizeof(float)));
  add_isa_and_threads_labels(state);
}

// Working sets chosen for the reference machine (Zen 4/5: 32-48 KiB L1d, 1 MiB L2 per
// core, 32 MiB L3): 16 KiB fits L1, 512 KiB L2, 8 MiB L3, 1 GiB only DRAM.
void BM_read_working_set(benchmark::State& state) {
  const auto n = static_cast<std::size_t>(state.range(0)) * 1024 / sizeof(float);
  const stream_buffer* buf = buffer_or_skip(state, n);
  if (buf == nullptr) return;
  scoped_pin pin(0);
  const float* p = buf->data();
  benchmark::DoNotOptimize(probe::read_sum<simd::native>(p, n));  // warm the caches
  for (auto _ : state) benchmark::DoNotOptimize(probe::read_sum<simd::native>(p, n));
  add_bytes_counters(state, static_cast<double>(n * sizeof(float)), 1);
  add_isa_and_threads_labels(state, 1);
}

// Thread t reads its own share of the 1 GiB buffer: K in the first half, V in the second.
void BM_decode_pattern(benchmark::State& state) {
  const stream_buffer* buf = buffer_or_skip(state);
  if (buf == nullptr) return;
  scoped_pin pin(state.thread_index());
  const auto [p, n] = buf->chunk(state.thread_index(), state.threads());
  const std::size_t cells = n * sizeof(float) / 2 / probe::k_pattern_cell_bytes /
                            probe::k_pattern_block_cells * probe::k_pattern_block_cells;
  const auto* k = reinterpret_cast<const char*>(p);
  const char* v = k + cells * probe::k_pattern_cell_bytes;
  const auto order = static_cast<probe::decode_order>(state.range(0));
  for (auto _ : state)
    benchmark::DoNotOptimize(probe::read_decode_pattern<simd::native>(k, v, cells, order));
  add_bytes_counters(state, 2.0 * static_cast<double>(cells * probe::k_pattern_cell_bytes));
  add_isa_and_threads_labels(state);
}

template <std::size_t R>
void BM_f16_fma_in_l1(benchmark::State& state) {
  constexpr std::size_t n = 8 * 1024;  // 16 KiB of f16: half the smallest L1 data cache
  static std::uint16_t values[n];
  for (std::size_t i = 0; i < n; ++i) values[i] = static_cast<std::uint16_t>(0x3c00 + (i & 255));
  scoped_pin pin(0);
  for (auto _ : state)
    benchmark::DoNotOptimize(probe::fma_floor_pass<simd::native, R>(values, n, false));
  add_bytes_counters(state, static_cast<double>(n * sizeof(std::uint16_t)), 1);
  add_flops_counters(state, 2.0 * static_cast<double>(R * n), 1);
  add_isa_and_threads_labels(state, 1);
}

/// One thread, f16 from L1 widened once per vector for R query rows, in the register
/// tiles of the decode kernel's Q.K (Tile = 0: queries loaded by the FMAs) and P.V
/// (Tile = 1: a broadcast probability per row).
template <std::size_t R, int Tile>
void BM_f16_widen_once(benchmark::State& state) {
  constexpr std::size_t n = 8 * 1024;  // 16 KiB of f16
  static std::uint16_t values[n];
  alignas(64) static float q[R * 128];
  for (std::size_t i = 0; i < n; ++i) values[i] = static_cast<std::uint16_t>(0x3c00 + (i & 255));
  for (std::size_t i = 0; i < R * 128; ++i) q[i] = 1e-3f * static_cast<float>(i % 7);
  scoped_pin pin(0);
  for (auto _ : state)
    benchmark::DoNotOptimize(Tile == 0
                                 ? probe::widen_once_dots<simd::native, R>(values, n, q)
                                 : probe::widen_once_broadcast<simd::native, R>(values, n, q));
  add_bytes_counters(state, static_cast<double>(n * sizeof(std::uint16_t)), 1);
  add_flops_counters(state, 2.0 * static_cast<double>(R * n), 1);
  add_isa_and_threads_labels(state, 1);
}

template <class Isa>
void BM_fma_peak(benchmark::State& state) {
  constexpr std::size_t iters = std::size_t{1} << 16;  // ~0.1-1 ms per iteration
  static volatile float mul_src = 0.999999f, add_src = 1e-6f;
  const float mul = mul_src, add = add_src;
  scoped_pin pin(state.thread_index());
  for (auto _ : state) benchmark::DoNotOptimize(probe::fma_chains<Isa>(iters, mul, add));
  add_flops_counters(state, probe::fma_chains_flops<Isa>(iters));
  add_isa_and_threads_labels<Isa>(state);
}

/// The thread counts worth showing: 1 and all usable CPUs.
template <class B>
void with_thread_counts(B* b) {
  const int all = usable_threads();
  b->Threads(1);
  if (all > 1) b->Threads(all);
  b->UseRealTime();
}

template <class Isa>
void register_fma_peak() {
  with_thread_counts(benchmark::RegisterBenchmark(
      (std::string("BM_fma_peak<") + std::string(Isa::name) + ">").c_str(), BM_fma_peak<Isa>));
}

/// Only ISAs the -march=native build (and so this CPU) can run. A template so that the
/// discarded branches are not instantiated (ops<avx2> cannot inline into code built
/// without AVX2, as in the MNEMO_ISA=scalar preset).
template <class Native = simd::native>
void register_all() {
  with_thread_counts(benchmark::RegisterBenchmark("BM_read_bandwidth", BM_read_bandwidth));
  benchmark::RegisterBenchmark("BM_read_working_set", BM_read_working_set)
      ->ArgName("kib")
      ->Arg(16)
      ->Arg(512)
      ->Arg(8 << 10)
      ->Arg(1 << 20)
      ->UseRealTime();
  auto* pattern = benchmark::RegisterBenchmark("BM_decode_pattern", BM_decode_pattern)
                      ->ArgName("order")
                      ->DenseRange(0, 4);
  with_thread_counts(pattern);
  benchmark::RegisterBenchmark("BM_f16_fma_in_l1/rows:1", BM_f16_fma_in_l1<1>)->UseRealTime();
  benchmark::RegisterBenchmark("BM_f16_fma_in_l1/rows:2", BM_f16_fma_in_l1<2>)->UseRealTime();
  benchmark::RegisterBenchmark("BM_f16_fma_in_l1/rows:4", BM_f16_fma_in_l1<4>)->UseRealTime();
  benchmark::RegisterBenchmark("BM_f16_widen_once/dots/rows:4", BM_f16_widen_once<4, 0>)
      ->UseRealTime();
  benchmark::RegisterBenchmark("BM_f16_widen_once/dots/rows:8", BM_f16_widen_once<8, 0>)
      ->UseRealTime();
  benchmark::RegisterBenchmark("BM_f16_widen_once/broadcast/rows:4", BM_f16_widen_once<4, 1>)
      ->UseRealTime();
  benchmark::RegisterBenchmark("BM_f16_widen_once/broadcast/rows:8", BM_f16_widen_once<8, 1>)
      ->UseRealTime();
  register_fma_peak<simd::scalar>();
  if constexpr (std::is_same_v<Native, simd::avx2> || std::is_same_v<Native, simd::avx512>) {
    register_fma_peak<simd::avx2>();
  }
  if constexpr (!std::is_same_v<Native, simd::scalar> && !std::is_same_v<Native, simd::avx2>) {
    register_fma_peak<Native>();
  }
}

/// Core clock in GHz from dependent integer adds (latency 1 cycle on all x86 cores);
/// 0 where not measured. Best of a few 10 ms runs.
double estimate_clock_ghz() {
#if defined(MNEMO_ARCH_X86_64)
  double best = 0;
  for (int r = 0; r < 5; ++r) {
    unsigned long long x = 0;
    constexpr long blocks = 1 << 15;  // x 256 adds ~ 8.4 M cycles
    const auto t0 = std::chrono::steady_clock::now();
    for (long i = 0; i < blocks; ++i) {
#define MNEMO_ADD8                                           \
  "add $1, %0\n\tadd $1, %0\n\tadd $1, %0\n\tadd $1, %0\n\t" \
  "add $1, %0\n\tadd $1, %0\n\tadd $1, %0\n\tadd $1, %0\n\t"
#define MNEMO_ADD64 \
  MNEMO_ADD8 MNEMO_ADD8 MNEMO_ADD8 MNEMO_ADD8 MNEMO_ADD8 MNEMO_ADD8 MNEMO_ADD8 MNEMO_ADD8
      __asm__ volatile(MNEMO_ADD64 MNEMO_ADD64 MNEMO_ADD64 MNEMO_ADD64 : "+r"(x));
#undef MNEMO_ADD64
#undef MNEMO_ADD8
    }
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    best = std::max(best, static_cast<double>(x) / s * 1e-9);
  }
  return best;
#else
  return 0;
#endif
}

void print_summary() {
  std::printf("\n");
  print_machine_limits(stdout);
  const auto& m = machine_limits();
  const double ghz = estimate_clock_ghz();
  if (ghz > 0 && m.fma_gflops_1t > 0) {
    std::printf(
        "  core clock      %8.2f GHz (dependent adds)  -> %.1f FP32 FLOP/cycle/core "
        "(%.1f FMA lanes of %zu per cycle)\n",
        ghz, m.fma_gflops_1t / ghz, m.fma_gflops_1t / ghz / 2, simd::native::lanes_f32);
  }
}

}  // namespace

int main(int argc, char** argv) {
  register_all();
  const int rc = run_benchmarks(argc, argv);
  if (rc == 0) print_summary();
  return rc;
}
