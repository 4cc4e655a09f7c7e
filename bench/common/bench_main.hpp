// main() for mnemo bench binaries: measures (or reads) the machine limits before any
// benchmark runs, so the probe neither disturbs nor is disturbed by a timing, and puts
// the figures into the run's context (console header, JSON "context").
//
//   #include "common/bench_main.hpp"
//   ... BENCHMARK(...) ...
//   MNEMO_BENCH_MAIN();
#pragma once

#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "common/machine_limits.hpp"
#include <benchmark/benchmark.h>

#include "mnemo/attention/product_precision.hpp"
#include "mnemo/simd/f16_widening.hpp"
#include "mnemo/simd/prefetch.hpp"

namespace mnemo_bench {

/// Sets a process-wide setting from environment variable `var` when it is set: one of
/// `names`, the enum's values in order; records the value in force in the run's context
/// under `key`. False (with a message) on any other value.
template <class E, std::size_t N>
bool apply_env_setting(const char* var, const char* key, const char* const (&names)[N],
                       void (*set)(E) noexcept, E (*get)() noexcept) {
  if (const char* v = std::getenv(var)) {
    std::size_t i = 0;
    while (i < N && std::strcmp(v, names[i]) != 0) ++i;
    if (i == N) {
      std::fprintf(stderr, "%s must be %s or %s, not '%s'\n", var, names[0], names[N - 1], v);
      return false;
    }
    set(static_cast<E>(i));
  }
  benchmark::AddCustomContext(key, names[static_cast<std::size_t>(get())]);
  return true;
}

/// The settings a run can be measured under, to compare them on one machine:
/// MNEMO_PREFETCH=l1|l2 (simd::prefetch_target), MNEMO_F16_WIDENING=cheap|costly (the
/// AVX2 decode tiles and read order), MNEMO_PRODUCT_PRECISION=f32|bf16 (the decode
/// tiles' Q.K and P.V products).
inline bool apply_settings() {
  namespace simd = mnemo::simd;
  namespace attention = mnemo::attention;
  static constexpr const char* prefetch[] = {"l1", "l2"};
  static constexpr const char* widening[] = {"cheap", "costly"};
  static constexpr const char* precision[] = {"f32", "bf16"};
  static_assert(static_cast<int>(simd::prefetch_target::l2) == 1 &&
                static_cast<int>(simd::f16_widening::costly) == 1 &&
                static_cast<int>(attention::product_precision::bf16) == 1);
  const bool ok =
      apply_env_setting("MNEMO_PREFETCH", "mnemo_prefetch", prefetch, &simd::set_prefetch_target,
                        &simd::current_prefetch_target) &&
      apply_env_setting("MNEMO_F16_WIDENING", "mnemo_f16_widening", widening,
                        &simd::set_f16_widening, &simd::current_f16_widening) &&
      apply_env_setting("MNEMO_PRODUCT_PRECISION", "mnemo_product_precision", precision,
                        &attention::set_product_precision, &attention::current_product_precision);
  if (ok && attention::current_product_precision() == attention::product_precision::bf16 &&
      !attention::bf16_products_supported())
    std::fprintf(stderr,
                 "MNEMO_PRODUCT_PRECISION=bf16: this CPU has no AVX512_BF16, "
                 "the kernels compute in f32\n");
  return ok;
}

/// Parses the Google Benchmark flags, probes the machine and runs the selected
/// benchmarks. Returns the process exit code.
inline int run_benchmarks(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  if (!apply_settings()) return 1;
  add_machine_limits_context();
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}

}  // namespace mnemo_bench

#define MNEMO_BENCH_MAIN()                                                              \
  int main(int argc, char** argv) { return ::mnemo_bench::run_benchmarks(argc, argv); } \
  static_assert(true, "MNEMO_BENCH_MAIN() needs a trailing semicolon")
