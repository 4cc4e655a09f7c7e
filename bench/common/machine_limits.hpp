// The machine limits every mnemo bench compares itself with (DESIGN "Performance
// model"): DRAM read bandwidth for memory-bound kernels (decode attention) and the
// FP32 FMA peak for compute-bound ones (prefill, matmul), each on one thread and on
// all usable threads. Measured once per process, or pinned from the environment:
//
//   MNEMO_READ_GBPS="39,45"     GB/s (1e9 bytes/s): 1 thread, all threads
//   MNEMO_FMA_GFLOPS="248,496"  GFLOP/s: 1 thread, all threads
//
// A single value is used for every thread count (right for a bandwidth that one thread
// saturates; give both values for FMA). Unparsable values are reported on stderr and
// measured instead.
//
// Counters (all rates; `threads` defaults to state.threads()):
//   frac_read_bw  = achieved bytes/s / read bandwidth for that thread count
//   frac_fma_peak = achieved FLOP/s  / FMA peak for that thread count
// For k threads the limit is min(k x one-thread figure, all-threads figure).
// With ->Threads(n) Google Benchmark sums counters over threads, so each thread passes
// its own share of the bytes / FLOPs, and the benchmark must use ->UseRealTime()
// (CPU time is summed over threads too, which would divide the rate by n).
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#include "common/machine_probe.hpp"
#include "common/threads.hpp"
#include <benchmark/benchmark.h>

#include "mnemo/simd/isa.hpp"

namespace mnemo_bench {

struct machine_limits_t {
  double read_gbps_1t = 0;     ///< GB/s, one thread streaming far beyond the LLC
  double read_gbps_all = 0;    ///< GB/s, `threads` pinned threads
  double fma_gflops_1t = 0;    ///< GFLOP/s FP32, native ISA, one thread
  double fma_gflops_all = 0;   ///< GFLOP/s FP32, native ISA, `threads` pinned threads
  int threads = 1;             ///< usable CPUs (the affinity mask of the process)
  bool read_from_env = false;  ///< read figures came from MNEMO_READ_GBPS
  bool fma_from_env = false;   ///< FMA figures came from MNEMO_FMA_GFLOPS
  double probe_seconds = 0;    ///< time the measurement took
};

namespace detail {

/// Parses "a" or "a,b" (positive numbers) from the variable `name` into (one thread,
/// all threads). Returns false when unset or malformed (malformed is reported).
inline bool limits_from_env(const char* name, double& one, double& all) {
  const char* s = std::getenv(name);
  if (s == nullptr || *s == '\0') return false;
  char* end = nullptr;
  const double a = std::strtod(s, &end);
  double b = a;
  bool ok = end != s && a > 0;
  if (ok && *end == ',') {
    const char* s2 = end + 1;
    b = std::strtod(s2, &end);
    ok = end != s2 && b > 0;
  }
  ok = ok && *end == '\0';
  if (!ok) {
    std::fprintf(stderr, "mnemo_bench: ignoring %s=\"%s\" (want \"X\" or \"X1,XALL\"); measuring\n",
                 name, s);
    return false;
  }
  one = a;
  all = b;
  return true;
}

inline machine_limits_t load_or_measure() {
  const auto t0 = std::chrono::steady_clock::now();
  machine_limits_t m;
  m.threads = usable_threads();
  m.read_from_env = limits_from_env("MNEMO_READ_GBPS", m.read_gbps_1t, m.read_gbps_all);
  m.fma_from_env = limits_from_env("MNEMO_FMA_GFLOPS", m.fma_gflops_1t, m.fma_gflops_all);
  if (!m.read_from_env) {
    stream_buffer buf;
    if (buf.allocate(k_limits_read_bytes, m.threads)) {
      // Short passes for one thread, whole-buffer passes for all (see measure_read_gbps).
      m.read_gbps_1t = measure_read_gbps(buf, 1, 0.12, std::size_t{64} << 20, 8);
      m.read_gbps_all = m.threads > 1
                            ? std::max(m.read_gbps_1t, measure_read_gbps(buf, m.threads, 0.2))
                            : m.read_gbps_1t;
    } else {
      std::fprintf(stderr, "mnemo_bench: no memory for the read-bandwidth probe\n");
    }
  }
  if (!m.fma_from_env) {
    m.fma_gflops_1t = measure_fma_gflops(1, 0.06);
    m.fma_gflops_all = m.threads > 1 ? measure_fma_gflops(m.threads, 0.1) : m.fma_gflops_1t;
  }
  m.probe_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return m;
}

/// Limit for k threads: min(k x one-thread figure, all-threads figure).
inline double scaled_limit(double one, double all, int k) {
  return std::min(one * std::max(k, 1), std::max(all, one));
}

}  // namespace detail

/// The figures of this process, measured on first use (0.3-0.5 s; call it before
/// timing anything, e.g. through MNEMO_BENCH_MAIN, so it neither disturbs nor is
/// disturbed by a benchmark) or pinned by MNEMO_READ_GBPS / MNEMO_FMA_GFLOPS.
inline const machine_limits_t& machine_limits() {
  static const machine_limits_t limits = detail::load_or_measure();
  return limits;
}

/// This thread's iteration count. Deliberately not Counter::kIsIterationInvariant:
/// with ->Threads(n) Google Benchmark (1.7) multiplies such counters by the iterations
/// of all threads after summing them over threads, counting the work n times.
inline double iterations(const benchmark::State& state) {
  return static_cast<double>(state.iterations());
}

/// Read bandwidth (GB/s) and FMA peak (GFLOP/s) available to `threads` threads.
inline double read_gbps_for(int threads) {
  const auto& m = machine_limits();
  return detail::scaled_limit(m.read_gbps_1t, m.read_gbps_all, threads);
}
inline double fma_gflops_for(int threads) {
  const auto& m = machine_limits();
  return detail::scaled_limit(m.fma_gflops_1t, m.fma_gflops_all, threads);
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

/// A summary block of the figures, with where they came from.
inline void print_machine_limits(std::FILE* out = stdout) {
  const auto& m = machine_limits();
  std::fprintf(out,
               "mnemo machine limits (isa %.*s, %d threads; %s):\n"
               "  read bandwidth  %8.1f GB/s (1 thread)  %8.1f GB/s (%d threads)\n"
               "  FP32 FMA peak   %8.1f GFLOP/s (1 thread)  %8.1f GFLOP/s (%d threads)\n",
               static_cast<int>(mnemo::simd::native::name.size()), mnemo::simd::native::name.data(),
               m.threads,
               m.read_from_env && m.fma_from_env ? "both from the environment"
               : m.read_from_env                 ? "read from MNEMO_READ_GBPS, FMA measured"
               : m.fma_from_env                  ? "FMA from MNEMO_FMA_GFLOPS, read measured"
                                                 : "measured, best of several passes",
               m.read_gbps_1t, m.read_gbps_all, m.threads, m.fma_gflops_1t, m.fma_gflops_all,
               m.threads);
  if (!(m.read_from_env && m.fma_from_env))
    std::fprintf(out,
                 "  (probe took %.2f s; pin with MNEMO_READ_GBPS=%.1f,%.1f "
                 "MNEMO_FMA_GFLOPS=%.1f,%.1f)\n",
                 m.probe_seconds, m.read_gbps_1t, m.read_gbps_all, m.fma_gflops_1t,
                 m.fma_gflops_all);
}

}  // namespace mnemo_bench
