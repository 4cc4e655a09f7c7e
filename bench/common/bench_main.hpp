// main() for mnemo bench binaries: measures (or reads) the machine limits before any
// benchmark runs, so the probe neither disturbs nor is disturbed by a timing, and puts
// the figures into the run's context (console header, JSON "context").
//
//   #include "common/bench_main.hpp"
//   ... BENCHMARK(...) ...
//   MNEMO_BENCH_MAIN();
#pragma once

#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "common/machine_limits.hpp"
#include <benchmark/benchmark.h>

#include "mnemo/simd/f16_widening.hpp"
#include "mnemo/simd/prefetch.hpp"

namespace mnemo_bench {

/// MNEMO_PREFETCH=l1|l2 overrides the CPU's default simd::prefetch_target (to measure
/// which one a machine wants); false on any other value.
inline bool apply_prefetch_setting() {
  using mnemo::simd::prefetch_target;
  if (const char* v = std::getenv("MNEMO_PREFETCH")) {
    if (std::strcmp(v, "l1") == 0) {
      mnemo::simd::set_prefetch_target(prefetch_target::l1);
    } else if (std::strcmp(v, "l2") == 0) {
      mnemo::simd::set_prefetch_target(prefetch_target::l2);
    } else {
      std::fprintf(stderr, "MNEMO_PREFETCH must be l1 or l2, not '%s'\n", v);
      return false;
    }
  }
  const bool l2 = mnemo::simd::current_prefetch_target() == prefetch_target::l2;
  benchmark::AddCustomContext("mnemo_prefetch", l2 ? "l2" : "l1");
  return true;
}

/// MNEMO_F16_WIDENING=cheap|costly overrides the CPU's default simd::f16_widening (the
/// AVX2 decode tiles and read order: to compare them on one machine); false on any
/// other value.
inline bool apply_f16_widening_setting() {
  using mnemo::simd::f16_widening;
  if (const char* v = std::getenv("MNEMO_F16_WIDENING")) {
    if (std::strcmp(v, "cheap") == 0) {
      mnemo::simd::set_f16_widening(f16_widening::cheap);
    } else if (std::strcmp(v, "costly") == 0) {
      mnemo::simd::set_f16_widening(f16_widening::costly);
    } else {
      std::fprintf(stderr, "MNEMO_F16_WIDENING must be cheap or costly, not '%s'\n", v);
      return false;
    }
  }
  const bool costly = mnemo::simd::current_f16_widening() == f16_widening::costly;
  benchmark::AddCustomContext("mnemo_f16_widening", costly ? "costly" : "cheap");
  return true;
}

/// Parses the Google Benchmark flags, probes the machine and runs the selected
/// benchmarks. Returns the process exit code.
inline int run_benchmarks(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  if (!apply_prefetch_setting() || !apply_f16_widening_setting()) return 1;
  add_machine_limits_context();
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}

}  // namespace mnemo_bench

#define MNEMO_BENCH_MAIN()                                                              \
  int main(int argc, char** argv) { return ::mnemo_bench::run_benchmarks(argc, argv); } \
  static_assert(true, "MNEMO_BENCH_MAIN() needs a trailing semicolon")
