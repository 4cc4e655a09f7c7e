// Google Benchmark counters against the machine limits of measured_limits.hpp (read
// bandwidth, FMA peak; measured once per process or pinned by MNEMO_READ_GBPS /
// MNEMO_FMA_GFLOPS).
//
// Counters (all rates; `threads` defaults to state.threads()):
//   frac_read_bw  = achieved bytes/s / read bandwidth for that thread count
//   frac_fma_peak = achieved FLOP/s  / FMA peak for that thread count
// For k threads the limit is min(k x one-thread figure, all-threads figure).
// With ->Threads(n) Google Benchmark sums counters over threads, so each thread passes
// its own share of the bytes / FLOPs, and the benchmark must use ->UseRealTime()
// (CPU time is summed over threads too, which would divide the rate by n).
#pragma once

#include <cstdio>
#include <string>
#include <string_view>

#include "common/measured_limits.hpp"
#include <benchmark/benchmark.h>

#include "mnemo/simd/isa.hpp"

namespace mnemo_bench {

/// This thread's iteration count. Deliberately not Counter::kIsIterationInvariant:
/// with ->Threads(n) Google Benchmark (1.7) multiplies such counters by the iterations
/// of all threads after summing them over threads, counting the work n times.
inline double iterations(const benchmark::State& state) {
  return static_cast<double>(state.iterations());
}

/// Counter frac_read_bw: bytes read per iteration (this thread's share) over the read
/// bandwidth of `threads` threads (0: state.threads()). Call after the timed loop.
inline void add_frac_read_bw(benchmark::State& state, double bytes_per_iteration, int threads = 0) {
  const double limit = read_gbps_for(threads > 0 ? threads : state.threads()) * 1e9;
  if (limit <= 0) return;  // probe failed: no fraction rather than a wrong one
  state.counters["frac_read_bw"] = benchmark::Counter(
      bytes_per_iteration * iterations(state) / limit, benchmark::Counter::kIsRate);
}

/// Counter frac_fma_peak: FLOPs per iteration (this thread's share) over the FMA peak
/// of `threads` threads (0: state.threads()). Call after the timed loop.
inline void add_frac_fma_peak(benchmark::State& state, double flops_per_iteration,
                              int threads = 0) {
  const double limit = fma_gflops_for(threads > 0 ? threads : state.threads()) * 1e9;
  if (limit <= 0) return;
  state.counters["frac_fma_peak"] = benchmark::Counter(
      flops_per_iteration * iterations(state) / limit, benchmark::Counter::kIsRate);
}

/// bytes_per_second plus frac_read_bw. Unlike SetBytesProcessed (which prints binary
/// prefixes: G = GiB) this prints decimal prefixes, so "30G/s" reads as the GB/s of
/// the machine limits; the JSON value is bytes/s either way.
inline void add_bytes_counters(benchmark::State& state, double bytes_per_iteration,
                               int threads = 0) {
  state.counters["bytes_per_second"] =
      benchmark::Counter(bytes_per_iteration * iterations(state), benchmark::Counter::kIsRate,
                         benchmark::Counter::kIs1000);
  add_frac_read_bw(state, bytes_per_iteration, threads);
}

/// FLOP/s (printed with SI prefixes, e.g. 210G) plus frac_fma_peak.
inline void add_flops_counters(benchmark::State& state, double flops_per_iteration,
                               int threads = 0) {
  state.counters["FLOP/s"] =
      benchmark::Counter(flops_per_iteration * iterations(state), benchmark::Counter::kIsRate);
  add_frac_fma_peak(state, flops_per_iteration, threads);
}

/// Label "<isa> threads=<n>" (STYLE rule 14), e.g. "avx512 threads=2".
inline void add_isa_and_threads_labels(benchmark::State& state, std::string_view isa_name,
                                       int threads) {
  std::string label(isa_name);
  label += " threads=";
  label += std::to_string(threads > 0 ? threads : state.threads());
  state.SetLabel(label);
}
template <class Isa = mnemo::simd::native>
void add_isa_and_threads_labels(benchmark::State& state, int threads = 0) {
  add_isa_and_threads_labels(state, Isa::name, threads);
}

/// The figures as Google Benchmark context (console header and JSON "context").
inline void add_machine_limits_context() {
  const auto& m = machine_limits();
  const auto num = [](double x) {
    char b[32];
    std::snprintf(b, sizeof b, "%.1f", x);
    return std::string(b);
  };
  benchmark::AddCustomContext("mnemo_isa", std::string(mnemo::simd::native::name));
  benchmark::AddCustomContext("mnemo_threads", std::to_string(m.threads));
  benchmark::AddCustomContext("mnemo_read_gbps_1t", num(m.read_gbps_1t));
  benchmark::AddCustomContext("mnemo_read_gbps_all", num(m.read_gbps_all));
  benchmark::AddCustomContext("mnemo_fma_gflops_1t", num(m.fma_gflops_1t));
  benchmark::AddCustomContext("mnemo_fma_gflops_all", num(m.fma_gflops_all));
}

}  // namespace mnemo_bench
