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
// measured instead. No Google Benchmark here: programs that are not benchmarks
// (batched_bench) use the same figures; machine_limits.hpp adds the counters.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>

#include "common/machine_probe.hpp"
#include "common/threads.hpp"

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

/// Read bandwidth (GB/s) and FMA peak (GFLOP/s) available to `threads` threads.
inline double read_gbps_for(int threads) {
  const auto& m = machine_limits();
  return detail::scaled_limit(m.read_gbps_1t, m.read_gbps_all, threads);
}
inline double fma_gflops_for(int threads) {
  const auto& m = machine_limits();
  return detail::scaled_limit(m.fma_gflops_1t, m.fma_gflops_all, threads);
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
