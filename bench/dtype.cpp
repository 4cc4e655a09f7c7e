// bench/dtype: streaming the encoded K/V rows of one head (d = 128) through dot_rows
// (K side of decode attention: scores = q . k_r) and axpy_rows (V side: o += p_r v_r),
// per storage type and ISA, as bytes/s of encoded data read and as a fraction of the
// machine's read bandwidth (frac_read_bw, from bench/common/machine_limits.hpp).
//
//   dot_rows<isa,type>/ws_kib:512      rows fit in L2 (1 MiB per Zen 4 core): kernel speed
//   dot_rows<isa,type>/ws_kib:262144   256 MiB of rows, far beyond L3: DRAM streaming
//   axpy_rows<isa,type>/...            likewise, y [128] stays in L1
//   axpy<isa,type>/...                 one axpy call per row (no prefetch, call overhead)
//
// One thread (the machine-limit fraction is against the one-thread read bandwidth).
// Only the ISAs this CPU runs are registered.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "common/bench_main.hpp"
#include <benchmark/benchmark.h>

#include "mnemo/base/aligned_buffer.hpp"
#include "mnemo/dtype/dtype.hpp"
#include "mnemo/simd/simd.hpp"

namespace {

using namespace mnemo;
constexpr std::size_t k_d = 128;  // head dimension
constexpr std::size_t k_kib_l2 = 512;
constexpr std::size_t k_kib_dram = 256 * 1024;

/// A working set of `bytes` of encoded rows [n_rows, k_d] of E, built outside the
/// timed loop and kept for the next benchmark of the same type and size (the
/// registration order makes every ISA reuse it).
template <class E>
const aligned_buffer<unsigned char>* rows_for(std::size_t bytes, std::size_t& n_rows) {
  static aligned_buffer<unsigned char> buf;
  static std::size_t held = 0;
  const std::size_t row_bytes = dtype::row_bytes_of<E>(k_d);
  n_rows = bytes / row_bytes;
  if (held != bytes) {
    buf = aligned_buffer<unsigned char>();  // free the previous set first
    auto made = aligned_buffer<unsigned char>::make(n_rows * row_bytes);
    if (!made.is_ok()) return nullptr;
    buf = std::move(made).value();
    // 64 distinct encoded rows of values in [-1, 1), repeated
    std::vector<float> x(k_d * 64);
    std::uint64_t s = 0x5eed;
    for (float& v : x) {
      s = s * 6364136223846793005ull + 1442695040888963407ull;
      v = static_cast<float>(s >> 40) * 0x1p-23f - 1.0f;
    }
    std::vector<unsigned char> enc(64 * row_bytes);
    dtype::encode_row<simd::scalar>(x.data(), reinterpret_cast<E*>(enc.data()), 64 * k_d);
    for (std::size_t r = 0; r < n_rows; ++r)
      std::memcpy(buf.data() + r * row_bytes, enc.data() + (r % 64) * row_bytes, row_bytes);
    held = bytes;
  }
  return &buf;
}

enum class op { dot_rows, axpy_rows, axpy };

template <class Isa, class E, op Op>
void bm_rows(benchmark::State& state) {
  const std::size_t bytes = static_cast<std::size_t>(state.range(0)) * 1024;
  const std::size_t row_bytes = dtype::row_bytes_of<E>(k_d);
  std::size_t n_rows = 0;
  const aligned_buffer<unsigned char>* buf = rows_for<E>(bytes, n_rows);
  if (buf == nullptr) {
    state.SkipWithError("cannot allocate the working set");
    return;
  }
  const auto* rows = reinterpret_cast<const E*>(buf->data());
  const std::size_t my_rows = n_rows;

  std::vector<float> x(k_d, 0.25f), y(k_d, 0.0f), out(Op == op::dot_rows ? my_rows : 0);
  std::vector<float> p(my_rows);  // attention weights, small enough that y stays finite
  for (std::size_t i = 0; i < p.size(); ++i) p[i] = 1.0f / static_cast<float>(i + 1);
  for (auto _ : state) {
    if constexpr (Op == op::dot_rows) {
      dtype::dot_rows<Isa>(x.data(), rows, row_bytes, my_rows, k_d, out.data());
      benchmark::DoNotOptimize(out.data());
    } else if constexpr (Op == op::axpy_rows) {
      dtype::axpy_rows<Isa>(p.data(), rows, row_bytes, my_rows, k_d, y.data());
      benchmark::DoNotOptimize(y.data());
    } else {
      const auto* base = reinterpret_cast<const unsigned char*>(rows);
      for (std::size_t r = 0; r < my_rows; ++r)
        dtype::axpy<Isa>(p[r], reinterpret_cast<const E*>(base + r * row_bytes), y.data(), k_d);
      benchmark::DoNotOptimize(y.data());
    }
    benchmark::ClobberMemory();
  }
  mnemo_bench::add_bytes_counters(state, static_cast<double>(my_rows * row_bytes));
  state.counters["rows"] = static_cast<double>(my_rows);
  mnemo_bench::add_isa_and_threads_labels(state, Isa::name, state.threads());
}

template <class Isa, class E>
void register_type() {
  if (!simd::supported<Isa>()) return;
  const std::string suffix =
      "<" + std::string(Isa::name) + "," + std::string(dtype::element_traits<E>::name) + ">";
  benchmark::RegisterBenchmark(("dot_rows" + suffix).c_str(), bm_rows<Isa, E, op::dot_rows>)
      ->ArgName("ws_kib")
      ->Arg(k_kib_l2)
      ->Arg(k_kib_dram)
      ->UseRealTime();
  benchmark::RegisterBenchmark(("axpy_rows" + suffix).c_str(), bm_rows<Isa, E, op::axpy_rows>)
      ->ArgName("ws_kib")
      ->Arg(k_kib_l2)
      ->Arg(k_kib_dram)
      ->UseRealTime();
  benchmark::RegisterBenchmark(("axpy" + suffix).c_str(), bm_rows<Isa, E, op::axpy>)
      ->ArgName("ws_kib")
      ->Arg(k_kib_l2)
      ->Arg(k_kib_dram)
      ->UseRealTime();
}

template <class E>
void register_all_isas() {
  register_type<simd::scalar, E>();
  if constexpr (simd::is_compiled<simd::avx2>) register_type<simd::avx2, E>();
  if constexpr (simd::is_compiled<simd::avx512>) register_type<simd::avx512, E>();
  if constexpr (simd::is_compiled<simd::neon>) register_type<simd::neon, E>();
}

const bool registered = [] {
  register_all_isas<float>();
  register_all_isas<dtype::f16>();
  register_all_isas<dtype::bf16>();
  register_all_isas<dtype::block_q8_0>();
  register_all_isas<dtype::block_q4_0>();
  return true;
}();

}  // namespace

MNEMO_BENCH_MAIN();
