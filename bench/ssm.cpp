// bench/ssm: the Mamba-1 selective scan and causal conv1d at d_inner 2048, d_state 16,
// d_conv 4 (a 1024-wide Mamba layer), one thread.
//  - scan decode (one token): state bytes read + written per token (2 x 128 KiB) as
//    a fraction of the read bandwidth. `slots` rotates over that many sequence states
//    (A shared), so slots=256 (64 MiB of state) streams from DRAM while slots=1 stays
//    in L2; path 0 = step (across d_state), 1 = chunk (across channels).
//  - scan prefill (512 tokens of one sequence): GFLOP/s as a fraction of the FMA peak,
//    counting 7 FLOPs per (token, channel, state): dt*A, exp (as 1), state*dA, the
//    B*xdt multiply-add, the C multiply-add. exp really costs ~12 vector ops, so the
//    kernel is exp-bound well below the peak (docs/ssm.md).
#include <cstdlib>
#include <random>
#include <vector>

#include "common/bench_main.hpp"
#include <benchmark/benchmark.h>

#include "mnemo/ssm/ssm.hpp"

namespace {

using namespace mnemo;
constexpr std::size_t k_inner = 2048, k_state = 16, k_conv = 4, k_bc = 8 + 2 * k_state;

std::vector<float> uniform(std::mt19937& rng, std::size_t n, float lo, float hi) {
  std::uniform_real_distribution<float> u(lo, hi);
  std::vector<float> v(n);
  for (auto& x : v) x = u(rng);
  return v;
}

struct scan_setup {
  std::vector<float> x, dt, bc, z, A, D, states, y;
  std::size_t n_tokens, slots;
  scan_setup(std::size_t nt, std::size_t ns) : n_tokens(nt), slots(ns) {
    std::mt19937 rng(1);
    x = uniform(rng, nt * k_inner, -2, 2);
    dt = uniform(rng, nt * k_inner, -5, 0);
    bc = uniform(rng, nt * k_bc, -1, 1);
    z = uniform(rng, nt * k_inner, -3, 3);
    A = uniform(rng, k_inner * k_state, -16, -1);
    D = uniform(rng, k_inner, 0.9f, 1.1f);
    states = uniform(rng, ns * k_inner * k_state, -1, 1);
    y.resize(nt * k_inner);
  }
  ssm::scan_args args(std::size_t slot) {
    return {k_inner,  k_state,       n_tokens,
            x.data(), k_inner,       dt.data(),
            k_inner,  bc.data() + 8, bc.data() + 8 + k_state,
            k_bc,     z.data(),      k_inner,
            A.data(), D.data(),      states.data() + slot * k_inner * k_state,
            y.data(), k_inner};
  }
};

void run_scan(benchmark::State& state, std::size_t n_tokens, std::size_t slots,
              ssm::scan_path path) {
  scan_setup s(n_tokens, slots);
  std::size_t slot = 0;
  for (auto _ : state) {
    const status st = ssm::selective_scan<simd::native>(s.args(slot), path);
    if (!st.is_ok()) state.SkipWithError(st.to_string().c_str());
    slot = slot + 1 == slots ? 0 : slot + 1;
    benchmark::DoNotOptimize(s.y.data());
    benchmark::ClobberMemory();
  }
  const double nt = static_cast<double>(n_tokens), elems = nt * k_inner * k_state;
  state.counters["tokens/s"] =
      benchmark::Counter(nt * mnemo_bench::iterations(state), benchmark::Counter::kIsRate);
  // The state is read and written once per call, whatever the token count.
  mnemo_bench::add_bytes_counters(state, 2.0 * k_inner * k_state * sizeof(float), 1);
  mnemo_bench::add_flops_counters(state, 7.0 * elems, 1);
  mnemo_bench::add_isa_and_threads_labels(state, 1);
}

void BM_scan_decode(benchmark::State& state) {
  run_scan(state, 1, static_cast<std::size_t>(state.range(0)),
           state.range(1) == 0 ? ssm::scan_path::step : ssm::scan_path::chunk);
}
void BM_scan_prefill(benchmark::State& state) {
  run_scan(state, static_cast<std::size_t>(state.range(0)), 1,
           state.range(1) == 0 ? ssm::scan_path::step : ssm::scan_path::chunk);
}

void BM_conv(benchmark::State& state) {
  const auto n_tokens = static_cast<std::size_t>(state.range(0));
  std::mt19937 rng(2);
  const auto x = uniform(rng, n_tokens * k_inner, -2, 2), w = uniform(rng, k_inner * k_conv, -1, 1),
             b = uniform(rng, k_inner, -0.1f, 0.1f);
  auto st = uniform(rng, k_inner * (k_conv - 1), -1, 1);
  std::vector<float> out(n_tokens * k_inner);
  const ssm::conv_args a{k_inner,  k_conv,    n_tokens,   x.data(), k_inner, w.data(),
                         b.data(), st.data(), out.data(), k_inner,  true};
  for (auto _ : state) {
    const status s = ssm::causal_conv1d<simd::native>(a);
    if (!s.is_ok()) state.SkipWithError(s.to_string().c_str());
    benchmark::DoNotOptimize(out.data());
    benchmark::ClobberMemory();
  }
  state.counters["tokens/s"] = benchmark::Counter(
      static_cast<double>(n_tokens) * mnemo_bench::iterations(state), benchmark::Counter::kIsRate);
  mnemo_bench::add_isa_and_threads_labels(state, 1);
}

BENCHMARK(BM_scan_decode)
    ->ArgNames({"slots", "path"})
    ->ArgsProduct({{1, 256}, {0, 1}})
    ->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_scan_prefill)
    ->ArgNames({"tokens", "path"})
    ->ArgsProduct({{512}, {0, 1}})
    ->Unit(benchmark::kMillisecond);
BENCHMARK(BM_conv)->ArgNames({"tokens"})->Arg(1)->Arg(512)->Unit(benchmark::kMicrosecond);

}  // namespace

MNEMO_BENCH_MAIN();
