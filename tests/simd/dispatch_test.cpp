// Run-time ISA checks and dispatch: the probe agrees with the compiler's own CPU
// feature builtins, dispatch picks the widest usable ISA, passes the matching tag,
// forwards results, and a kernel run through it matches the scalar path.
#include <cstddef>
#include <random>
#include <string_view>
#include <vector>

#include "simd/harness.hpp"
#include <gtest/gtest.h>

#include "mnemo/simd/simd.hpp"

namespace mnemo_test {
namespace {

using simd::isa_id;

TEST(Cpu, ReportListsEveryIsaWidestFirst) {
  const auto report = simd::isa_report();
  ASSERT_EQ(report.size(), 4u);
  EXPECT_EQ(report[0].name, "avx512");
  EXPECT_EQ(report[1].name, "avx2");
  EXPECT_EQ(report[2].name, "neon");
  EXPECT_EQ(report[3].name, "scalar");
  EXPECT_TRUE(report[3].compiled);
  EXPECT_TRUE(report[3].supported);
  for (const auto& r : report) EXPECT_TRUE(r.compiled || !r.supported) << r.name;
  // AVX-512 code runs only where AVX2 code runs (its region enables AVX2 too).
  EXPECT_TRUE(!report[0].supported || report[1].supported);
}

#if defined(MNEMO_ARCH_X86_64)
// An independent reference: the compiler's runtime's own cpuid probe.
TEST(Cpu, X86ProbeAgreesWithCompilerBuiltins) {
  __builtin_cpu_init();
  const bool avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") &&
                    __builtin_cpu_supports("bmi") && __builtin_cpu_supports("bmi2");
  const bool avx512 = avx2 && __builtin_cpu_supports("avx512f") &&
                      __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512dq") &&
                      __builtin_cpu_supports("avx512vl");
  EXPECT_EQ(simd::supported<simd::avx2>(), avx2);
  EXPECT_EQ(simd::supported<simd::avx512>(), avx512);
  EXPECT_FALSE(simd::supported<simd::neon>());
  EXPECT_TRUE(simd::supported<simd::scalar>());
}
#endif

TEST(Dispatch, BestIsaIsWidestCompiledAndSupported) {
  EXPECT_EQ(simd::isa_name(simd::best_isa()), simd::best_supported_isa_name());
  EXPECT_EQ(simd::best_isa(), simd::best_isa());  // cached, stable
}

TEST(Dispatch, CallsWithTheSelectedTag) {
  const std::string_view name = simd::dispatch([]<class Isa>(Isa) { return Isa::name; });
#if defined(MNEMO_FORCE_SCALAR)
  EXPECT_EQ(name, "scalar");
#else
  EXPECT_EQ(name, simd::best_supported_isa_name());
#endif
}

TEST(Dispatch, ForwardsArgumentsResultsAndVoid) {
  int calls = 0;
  simd::dispatch([&](auto) { ++calls; });
  EXPECT_EQ(calls, 1);
  const int lanes =
      simd::dispatch([&]<class Isa>(Isa) { return static_cast<int>(Isa::lanes_f32); });
  EXPECT_GE(lanes, 1);
}

TEST(Dispatch, ToEachUsableIsaPassesThatTag) {
  const isa_id ids[] = {isa_id::avx512, isa_id::avx2, isa_id::neon, isa_id::scalar};
  for (isa_id id : ids) {
    const bool usable = [&] {
      switch (id) {
        case isa_id::avx512: return simd::supported<simd::avx512>();
        case isa_id::avx2: return simd::supported<simd::avx2>();
        case isa_id::neon: return simd::supported<simd::neon>();
        case isa_id::scalar: return true;
      }
      return false;
    }();
    if (!usable) continue;
    const isa_id got = simd::dispatch_to(id, []<class Isa>(Isa) { return simd::id_of<Isa>; });
    EXPECT_EQ(got, id) << simd::isa_name(id);
  }
}

TEST(Dispatch, ToAnIsaNotInTheBuildRunsScalar) {
#if defined(MNEMO_ARCH_X86_64)
  const isa_id missing = isa_id::neon;
#else
  const isa_id missing = isa_id::avx512;
#endif
  EXPECT_EQ(simd::dispatch_to(missing, []<class Isa>(Isa) { return simd::id_of<Isa>; }),
            isa_id::scalar);
}

// A kernel reached through dispatch (the intended use: once per call, the whole loop
// inside) gives the scalar path's result.
TEST(Dispatch, DispatchedKernelMatchesScalar) {
  std::mt19937_64 rng(12345);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  const std::size_t n = 1000;  // not a multiple of any lane count: exercises the tail
  std::vector<float> x(n), y0(n);
  for (std::size_t i = 0; i < n; ++i) x[i] = dist(rng), y0[i] = dist(rng);
  std::vector<float> y = y0, want = y0;
  const std::string_view used = simd::dispatch([&]<class Isa>(Isa) {
    harness<Isa>::axpy(0.75f, x.data(), y.data(), n);
    return Isa::name;
  });
  harness<simd::scalar>::axpy(0.75f, x.data(), want.data(), n);
  for (std::size_t i = 0; i < n; ++i)
    ASSERT_EQ(y[i], want[i]) << "seed 12345, isa " << used << ": first difference at " << i;
}

}  // namespace
}  // namespace mnemo_test
