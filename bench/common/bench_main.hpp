// main() for mnemo bench binaries: measures (or reads) the machine limits before any
// benchmark runs, so the probe neither disturbs nor is disturbed by a timing, and puts
// the figures into the run's context (console header, JSON "context").
//
//   #include "common/bench_main.hpp"
//   ... BENCHMARK(...) ...
//   MNEMO_BENCH_MAIN();
#pragma once

#include "common/machine_limits.hpp"
#include <benchmark/benchmark.h>

namespace mnemo_bench {

/// Parses the Google Benchmark flags, probes the machine and runs the selected
/// benchmarks. Returns the process exit code.
inline int run_benchmarks(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  add_machine_limits_context();
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}

}  // namespace mnemo_bench

#define MNEMO_BENCH_MAIN()                                                              \
  int main(int argc, char** argv) { return ::mnemo_bench::run_benchmarks(argc, argv); } \
  static_assert(true, "MNEMO_BENCH_MAIN() needs a trailing semicolon")
