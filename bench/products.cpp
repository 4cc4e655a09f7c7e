// bench/products: model::mul_mat on the shapes of the 155M Llama of docs/performance.md (d_model
// 1024, 4 KV heads of 64, ff 2816, vocab 32000), 2 threads (MNEMO_THREADS overrides).
//   decode  (n_tok 1, and 16 for batched decode): weight bytes/s and the fraction of the
//           read bandwidth. The weights are rotated over enough copies (>= 256 MiB, far beyond the
//           last-level cache) that every call reads them from DRAM, as a model's layers do.
//   token   one decode step's products of that model (57 weights of its own each), as
//           weight bytes/s and the fraction of the read bandwidth.
//   small_m (n_tok 1 .. 512 through [1024 -> 2816]): short prompts and batched decode, against
//           both limits (the weights from DRAM below 256 tokens).
//   prefill (n_tok 512): GFLOP/s (2 n_tok n_in n_out) and the fraction of the FMA peak;
//           Eigen's f32 product on the same data for comparison.
//   in_cache (n_tok 1, one thread, ~256 KiB of weights read from L2 over and over): the
//           instruction cost of each type's one-token product without memory waits, as
//           weight bytes/s per core; arith_bound = that rate x MNEMO_THREADS against the
//           read bandwidth of as many threads (below 1: the arithmetic, not the memory,
//           bounds the type's decode).
// best_*: the fastest single call against the same limits (robust to preemption).

// GCC 12 warns inside its own AVX-512 intrinsics where Eigen's packing inlines them
// (PR 105593, see simd/target.hpp). The middle end reports them at the intrinsic's
// location, so the pragma must cover the whole translation unit.
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <random>
#include <utility>
#include <vector>

#include "common/bench_main.hpp"
#include "common/paired_read.hpp"
#include <Eigen/Core>
#include <benchmark/benchmark.h>
#include <sys/mman.h>

#include "mnemo/base/aligned_buffer.hpp"
#include "mnemo/dtype/dtype.hpp"
#include "mnemo/dtype/weight_encode.hpp"
#include "mnemo/model/matmul.hpp"
#include "mnemo/model/weight_tiles.hpp"

namespace {

using namespace mnemo;
const int k_threads = std::getenv("MNEMO_THREADS") ? std::atoi(std::getenv("MNEMO_THREADS")) : 2;
constexpr std::size_t k_rotate_bytes = std::size_t{256} << 20;
/// MNEMO_BENCH_HUGEPAGES=1: back the weights with transparent huge pages, as the read
/// probe's buffer is (a GGUF mapping is on 4 KiB pages, the default here).
const bool k_huge_pages = std::getenv("MNEMO_BENCH_HUGEPAGES") != nullptr &&
                          std::atoi(std::getenv("MNEMO_BENCH_HUGEPAGES")) != 0;

struct free_deleter {
  void operator()(std::byte* p) const noexcept { std::free(p); }
};
using weight_bytes = std::unique_ptr<std::byte, free_deleter>;

/// `bytes` of untouched memory, 2 MiB aligned; with k_huge_pages, madvise(MADV_HUGEPAGE)
/// before the first write, so that the faults map huge pages where the kernel has them.
weight_bytes make_weight_bytes(std::size_t bytes) {
  constexpr std::size_t huge = std::size_t{2} << 20;
  const std::size_t rounded = (bytes + huge - 1) / huge * huge;
  weight_bytes p(static_cast<std::byte*>(std::aligned_alloc(huge, rounded)));
  if (p == nullptr) std::abort();
  if (k_huge_pages) (void)madvise(p.get(), rounded, MADV_HUGEPAGE);
  return p;
}

/// Weights of type E and their storage: random rows, or copies of another weight's bytes
/// at other addresses (only the DRAM traffic matters); attach_tiles (q4_0, k-quants): every
/// weight with its tiles, as models load them (weight_tiles.hpp: one reserved buffer).
template <class E>
struct weight_store {
  std::vector<weight_bytes> bufs;
  std::vector<model::weight> ws;
  model::weight_tiles tiles;

  void add_random(std::size_t n_in, std::size_t n_out, std::mt19937& rng) {
    std::uniform_real_distribution<float> u(-1.0f, 1.0f);
    const std::size_t rb = dtype::row_bytes_of<E>(n_in);
    bufs.push_back(make_weight_bytes(rb * n_out));
    std::vector<float> row(n_in);
    for (std::size_t r = 0; r < n_out; ++r) {
      for (float& v : row) v = u(rng);
      dtype::encode_any_row(dtype::element_type_of<E>, row.data(), bufs.back().get() + r * rb,
                            n_in);
    }
    finish(n_in, n_out);
  }
  void add_copy_of(const model::weight& w) {
    bufs.push_back(make_weight_bytes(w.n_bytes()));
    std::memcpy(bufs.back().get(), w.data, w.n_bytes());
    finish(w.n_in, w.n_out);
  }
  void attach_tiles() {
    std::size_t bytes = 0;
    for (const model::weight& w : ws) bytes += (model::tiles_bytes(w) + 63) / 64 * 64;
    tiles.reserve(bytes);
    for (model::weight& w : ws) tiles.attach(w);
  }

 private:
  void finish(std::size_t n_in, std::size_t n_out) {
    model::weight w;
    w.type = dtype::element_type_of<E>;
    w.n_in = n_in;
    w.n_out = n_out;
    w.row_bytes = dtype::row_bytes_of<E>(n_in);
    w.data = bufs.back().get();
    ws.push_back(w);
  }
};

/// `copies` copies of a random [n_out, n_in] weight of type E, and random activations.
template <class E>
struct setup {
  weight_store<E> store;
  // 64-byte aligned like the model's activations: with std::vector's 16, the panels
  // two threads write at once shared a cache line in every row of y (0.66 against
  // 0.71 of the FMA peak for f32 [1024 -> 2816], 512 tokens).
  aligned_buffer<float> x, y;
  model::matmul_workspace scratch;

  setup(std::size_t n_in, std::size_t n_out, std::size_t n_tok, bool rotate, bool tiled) {
    std::mt19937 rng(1);
    std::uniform_real_distribution<float> u(-1.0f, 1.0f);
    const std::size_t bytes = dtype::row_bytes_of<E>(n_in) * n_out;
    const std::size_t copies = rotate ? std::max<std::size_t>(1, k_rotate_bytes / bytes) : 1;
    store.add_random(n_in, n_out, rng);
    for (std::size_t c = 1; c < copies; ++c) store.add_copy_of(store.ws.front());
    if (tiled) store.attach_tiles();
    x = std::move(aligned_buffer<float>::make(n_tok * n_in)).value();
    for (float& v : x) v = u(rng);
    y = std::move(aligned_buffer<float>::make(n_tok * n_out)).value();  // zero-filled
    (void)model::matmul_reserve<simd::native>(scratch, k_threads);
  }
};

template <class E, bool Tiled = false>
void BM_product(benchmark::State& state) {
  const auto n_in = static_cast<std::size_t>(state.range(0));
  const auto n_out = static_cast<std::size_t>(state.range(1));
  const auto n_tok = static_cast<std::size_t>(state.range(2));
  if (Tiled && !model::weight_tiles::used()) {
    state.SkipWithError("this CPU's products do not read tiles (no AVX-512 VNNI + VBMI)");
    return;
  }
  // From DRAM below 256 tokens (decode, batched decode, short prompts), as in a model.
  setup<E> s(n_in, n_out, n_tok, n_tok < 256, Tiled);
  std::size_t i = 0;
  double best = 1e30;  // seconds, the fastest call
  const std::vector<model::weight>& ws = s.store.ws;
  mnemo_bench::paired_read paired(state, static_cast<double>(ws[0].n_bytes()), k_threads);
  for (auto _ : state) {
    const model::weight& w = ws[i++ % ws.size()];
    best = std::min(best, paired.call([&] {
      model::mul_mat<simd::native>(w, s.x.data(), n_in, n_tok, s.y.data(), n_out, k_threads,
                                   s.scratch);
      benchmark::DoNotOptimize(s.y.data());
      benchmark::ClobberMemory();
    }));
  }
  paired.add_counter();
  // The fastest call against the same limits: on a shared machine a 2-thread call that
  // waits for a preempted thread takes a whole time slice (~4-12 ms), which the mean
  // and median absorb; the best call is what the kernel does when both threads run.
  const double bytes = static_cast<double>(ws[0].n_bytes());
  const double flops = 2.0 * static_cast<double>(n_tok * n_in * n_out);
  state.counters["best_us"] = best * 1e6;
  state.counters["best_frac_read_bw"] =
      bytes / best / (mnemo_bench::read_gbps_for(k_threads) * 1e9);
  state.counters["best_frac_fma_peak"] =
      flops / best / (mnemo_bench::fma_gflops_for(k_threads) * 1e9);
  state.counters["tokens/s"] = benchmark::Counter(
      static_cast<double>(n_tok) * mnemo_bench::iterations(state), benchmark::Counter::kIsRate);
  mnemo_bench::add_bytes_counters(state, bytes, k_threads);
  mnemo_bench::add_flops_counters(state, 2.0 * static_cast<double>(n_tok * n_in * n_out),
                                  k_threads);
  mnemo_bench::add_isa_and_threads_labels(state, k_threads);
}

/// One token through [1024 -> n_out] weights of ~256 KiB on one thread, the same weights
/// every call (L2-resident): the type's arithmetic rate with no memory wait. Tiled: the
/// product reads the weight's tiles, as models run it on CPUs with AVX-512 VNNI.
template <class E, bool Tiled = false>
void BM_in_cache(benchmark::State& state) {
  constexpr std::size_t n_in = 1024, target_bytes = 256 * 1024;
  const std::size_t n_out =
      std::max<std::size_t>(16, target_bytes / dtype::row_bytes_of<E>(n_in) / 16 * 16);
  if (Tiled && !model::weight_tiles::used()) {
    state.SkipWithError("this CPU's products do not read tiles (no AVX-512 VNNI + VBMI)");
    return;
  }
  setup<E> s(n_in, n_out, 1, false, Tiled);
  const model::weight& w = s.store.ws.front();
  double best = 1e30;
  for (auto _ : state) {
    const auto t0 = std::chrono::steady_clock::now();
    model::mul_mat<simd::native>(w, s.x.data(), n_in, 1, s.y.data(), n_out, 1, s.scratch);
    benchmark::DoNotOptimize(s.y.data());
    benchmark::ClobberMemory();
    best = std::min(best,
                    std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  const double bytes = static_cast<double>(w.n_bytes());
  state.counters["best_GBps_1core"] = bytes / best / 1e9;
  state.counters["arith_bound"] =
      bytes / best * k_threads / (mnemo_bench::read_gbps_for(k_threads) * 1e9);
  mnemo_bench::add_bytes_counters(state, bytes, 1);
  mnemo_bench::add_isa_and_threads_labels(state, 1);
}

/// Eigen's f32 product Y = X W^T on the same layout (row-major W [n_out, n_in]).
void BM_eigen_f32(benchmark::State& state) {
  const auto n_in = static_cast<Eigen::Index>(state.range(0));
  const auto n_out = static_cast<Eigen::Index>(state.range(1));
  const auto n_tok = static_cast<Eigen::Index>(state.range(2));
  using mat = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
  mat w = mat::Random(n_out, n_in), x = mat::Random(n_tok, n_in), y(n_tok, n_out);
  Eigen::setNbThreads(k_threads);
  for (auto _ : state) {
    y.noalias() = x * w.transpose();
    benchmark::DoNotOptimize(y.data());
    benchmark::ClobberMemory();
  }
  const double flops = 2.0 * static_cast<double>(n_tok * n_in * n_out);
  mnemo_bench::add_bytes_counters(state, static_cast<double>(n_in * n_out) * 4.0, k_threads);
  mnemo_bench::add_flops_counters(state, flops, k_threads);
  mnemo_bench::add_isa_and_threads_labels(state, "eigen", Eigen::nbThreads());
}

/// The one-token products of one decode step of the 155M Llama, in the order its forward
/// pass runs them: per layer q, k, v, o, gate, up, down; then the output head.
constexpr std::size_t k_token_layers = 8;
constexpr std::pair<std::size_t, std::size_t> k_layer_products[] = {
    {1024, 1024}, {1024, 256}, {1024, 256}, {1024, 1024}, {1024, 2816}, {1024, 2816}, {2816, 1024}};
constexpr std::pair<std::size_t, std::size_t> k_output_head = {1024, 32000};

/// One token's weight products, each weight its own (69 MB at q4_0, 244 MB at f16: far
/// beyond the L3, so a step streams them from DRAM as a decode step does), against the
/// read bandwidth: what "single-sequence decode is memory-bound on weights" comes
/// to once the per-call costs of the small products are counted. grouped:0 runs
/// one mul_mat per weight (57 calls); grouped:1 as the decoders do, q, k, v and gate, up
/// as one mul_mat_many each (33 calls).
template <class E, bool Tiled = false>
void BM_token(benchmark::State& state) {
  const bool grouped = state.range(0) != 0;
  if (Tiled && !model::weight_tiles::used()) {
    state.SkipWithError("this CPU's products do not read tiles (no AVX-512 VNNI + VBMI)");
    return;
  }
  std::mt19937 rng(1);
  weight_store<E> store;
  for (std::size_t l = 0; l < k_token_layers; ++l)
    for (auto [n_in, n_out] : k_layer_products) store.add_random(n_in, n_out, rng);
  store.add_random(k_output_head.first, k_output_head.second, rng);
  if (Tiled) store.attach_tiles();
  double bytes = 0;
  std::size_t max_in = 0, sum_out = 0;
  for (const model::weight& w : store.ws) {
    bytes += static_cast<double>(w.n_bytes());
    max_in = std::max(max_in, w.n_in);
    sum_out += w.n_out;
  }
  auto x = std::move(aligned_buffer<float>::make(max_in)).value();
  auto y = std::move(aligned_buffer<float>::make(sum_out)).value();  // each product its own
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  for (float& v : x) v = u(rng);
  model::matmul_workspace scratch;
  (void)model::matmul_reserve<simd::native>(scratch, k_threads);
  mnemo_bench::paired_read paired(state, bytes, k_threads);
  // Each product's output at its own offset of y; groups as the decoder blocks form them.
  std::vector<model::product_out> outs;
  for (std::size_t i = 0, off = 0; i < store.ws.size(); off += store.ws[i++].n_out)
    outs.push_back({&store.ws[i], y.data() + off, store.ws[i].n_out});
  const std::size_t layer_groups[] = {3, 1, 2, 1};  // q k v, o, gate up, down
  for (auto _ : state) {
    paired.call([&] {
      std::size_t i = 0;
      for (std::size_t l = 0; l < k_token_layers; ++l)
        for (std::size_t n : layer_groups) {
          if (grouped) {
            model::mul_mat_many<simd::native>({outs.data() + i, n}, x.data(), max_in, 1, k_threads,
                                              scratch);
          } else {
            for (std::size_t j = i; j < i + n; ++j)
              model::mul_mat<simd::native>(*outs[j].w, x.data(), max_in, 1, outs[j].y,
                                           outs[j].y_stride, k_threads, scratch);
          }
          i += n;
        }
      model::mul_mat<simd::native>(*outs[i].w, x.data(), max_in, 1, outs[i].y, outs[i].y_stride,
                                   k_threads, scratch);
      benchmark::DoNotOptimize(y.data());
      benchmark::ClobberMemory();
    });
  }
  paired.add_counter();
  state.counters["tokens/s"] =
      benchmark::Counter(mnemo_bench::iterations(state), benchmark::Counter::kIsRate);
  state.counters["MB_per_token"] = bytes / 1e6;
  mnemo_bench::add_bytes_counters(state, bytes, k_threads);
  mnemo_bench::add_isa_and_threads_labels(state, k_threads);
}

/// The shapes of one layer's products and the output head.
constexpr std::pair<long, long> k_decode_shapes[] = {
    {1024L, 1024L}, {1024L, 256L}, {1024L, 2816L}, {2816L, 1024L}, {1024L, 32000L}};

void decode_args(benchmark::internal::Benchmark* b) {
  b->ArgNames({"in", "out", "tok"});
  for (long tok : {1, 16})
    for (auto [in, out] : k_decode_shapes) b->Args({in, out, tok});
  b->Unit(benchmark::kMicrosecond)->UseRealTime();
}
void decode_one_token_args(benchmark::internal::Benchmark* b) {
  b->ArgNames({"in", "out", "tok"});
  for (auto [in, out] : k_decode_shapes) b->Args({in, out, 1});
  b->Unit(benchmark::kMicrosecond)->UseRealTime();
}
/// Short prompts and batched decode: M tokens through the gate / up shape, from the one-token
/// kernels through the small-M tiles to the packed product.
void small_m_args(benchmark::internal::Benchmark* b) {
  b->ArgNames({"in", "out", "tok"});
  for (long tok : {1, 2, 4, 8, 16, 32, 40, 47, 64, 128, 512}) b->Args({1024, 2816, tok});
  b->Unit(benchmark::kMicrosecond)->UseRealTime();
}
void prefill_args(benchmark::internal::Benchmark* b) {
  b->ArgNames({"in", "out", "tok"});
  for (auto [in, out] : {std::pair{1024L, 2816L}, {2816L, 1024L}, {1024L, 1024L}})
    b->Args({in, out, 512});
  b->Unit(benchmark::kMillisecond)->UseRealTime();
}

BENCHMARK_TEMPLATE(BM_product, float)->Apply(decode_args)->Name("decode/f32");
BENCHMARK_TEMPLATE(BM_product, dtype::f16)->Apply(decode_args)->Name("decode/f16");
BENCHMARK_TEMPLATE(BM_product, dtype::bf16)->Apply(decode_args)->Name("decode/bf16");
BENCHMARK_TEMPLATE(BM_product, dtype::block_q8_0)->Apply(decode_args)->Name("decode/q8_0");
BENCHMARK_TEMPLATE(BM_product, dtype::block_q4_0)->Apply(decode_args)->Name("decode/q4_0");
// The weight-only types (x rounded to q8_K / q8_1 / q8_0, integer dot products).
BENCHMARK_TEMPLATE(BM_product, dtype::block_q4_1)
    ->Apply(decode_one_token_args)
    ->Name("decode/q4_1");
BENCHMARK_TEMPLATE(BM_product, dtype::block_q5_0)
    ->Apply(decode_one_token_args)
    ->Name("decode/q5_0");
BENCHMARK_TEMPLATE(BM_product, dtype::block_q5_1)
    ->Apply(decode_one_token_args)
    ->Name("decode/q5_1");
BENCHMARK_TEMPLATE(BM_product, dtype::block_q2_K)
    ->Apply(decode_one_token_args)
    ->Name("decode/q2_K");
BENCHMARK_TEMPLATE(BM_product, dtype::block_q3_K)
    ->Apply(decode_one_token_args)
    ->Name("decode/q3_K");
BENCHMARK_TEMPLATE(BM_product, dtype::block_q4_K)
    ->Apply(decode_one_token_args)
    ->Name("decode/q4_K");
BENCHMARK_TEMPLATE(BM_product, dtype::block_q5_K)
    ->Apply(decode_one_token_args)
    ->Name("decode/q5_K");
BENCHMARK_TEMPLATE(BM_product, dtype::block_q6_K)
    ->Apply(decode_one_token_args)
    ->Name("decode/q6_K");
// What models run for one token: the tiles of q4_0 and k-quant weights (only
// one-token products read them).
BENCHMARK_TEMPLATE(BM_product, dtype::block_q4_0, true)
    ->Apply(decode_one_token_args)
    ->Name("decode/q4_0_tiles");
BENCHMARK_TEMPLATE(BM_product, dtype::block_q2_K, true)
    ->Apply(decode_one_token_args)
    ->Name("decode/q2_K_tiles");
BENCHMARK_TEMPLATE(BM_product, dtype::block_q3_K, true)
    ->Apply(decode_one_token_args)
    ->Name("decode/q3_K_tiles");
BENCHMARK_TEMPLATE(BM_product, dtype::block_q4_K, true)
    ->Apply(decode_one_token_args)
    ->Name("decode/q4_K_tiles");
BENCHMARK_TEMPLATE(BM_product, dtype::block_q5_K, true)
    ->Apply(decode_one_token_args)
    ->Name("decode/q5_K_tiles");
BENCHMARK_TEMPLATE(BM_product, dtype::block_q6_K, true)
    ->Apply(decode_one_token_args)
    ->Name("decode/q6_K_tiles");
BENCHMARK_TEMPLATE(BM_in_cache, float)->Name("in_cache/f32")->Unit(benchmark::kMicrosecond);
BENCHMARK_TEMPLATE(BM_in_cache, dtype::f16)->Name("in_cache/f16")->Unit(benchmark::kMicrosecond);
BENCHMARK_TEMPLATE(BM_in_cache, dtype::bf16)->Name("in_cache/bf16")->Unit(benchmark::kMicrosecond);
BENCHMARK_TEMPLATE(BM_in_cache, dtype::block_q8_0)
    ->Name("in_cache/q8_0")
    ->Unit(benchmark::kMicrosecond);
BENCHMARK_TEMPLATE(BM_in_cache, dtype::block_q4_0)
    ->Name("in_cache/q4_0")
    ->Unit(benchmark::kMicrosecond);
BENCHMARK_TEMPLATE(BM_in_cache, dtype::block_q4_1)
    ->Name("in_cache/q4_1")
    ->Unit(benchmark::kMicrosecond);
BENCHMARK_TEMPLATE(BM_in_cache, dtype::block_q5_0)
    ->Name("in_cache/q5_0")
    ->Unit(benchmark::kMicrosecond);
BENCHMARK_TEMPLATE(BM_in_cache, dtype::block_q5_1)
    ->Name("in_cache/q5_1")
    ->Unit(benchmark::kMicrosecond);
BENCHMARK_TEMPLATE(BM_in_cache, dtype::block_q2_K)
    ->Name("in_cache/q2_K")
    ->Unit(benchmark::kMicrosecond);
BENCHMARK_TEMPLATE(BM_in_cache, dtype::block_q3_K)
    ->Name("in_cache/q3_K")
    ->Unit(benchmark::kMicrosecond);
BENCHMARK_TEMPLATE(BM_in_cache, dtype::block_q4_K)
    ->Name("in_cache/q4_K")
    ->Unit(benchmark::kMicrosecond);
BENCHMARK_TEMPLATE(BM_in_cache, dtype::block_q5_K)
    ->Name("in_cache/q5_K")
    ->Unit(benchmark::kMicrosecond);
BENCHMARK_TEMPLATE(BM_in_cache, dtype::block_q6_K)
    ->Name("in_cache/q6_K")
    ->Unit(benchmark::kMicrosecond);
BENCHMARK_TEMPLATE(BM_in_cache, dtype::block_q4_0, true)
    ->Name("in_cache/q4_0_tiles")
    ->Unit(benchmark::kMicrosecond);
BENCHMARK_TEMPLATE(BM_in_cache, dtype::block_q2_K, true)
    ->Name("in_cache/q2_K_tiles")
    ->Unit(benchmark::kMicrosecond);
BENCHMARK_TEMPLATE(BM_in_cache, dtype::block_q3_K, true)
    ->Name("in_cache/q3_K_tiles")
    ->Unit(benchmark::kMicrosecond);
BENCHMARK_TEMPLATE(BM_in_cache, dtype::block_q4_K, true)
    ->Name("in_cache/q4_K_tiles")
    ->Unit(benchmark::kMicrosecond);
BENCHMARK_TEMPLATE(BM_in_cache, dtype::block_q5_K, true)
    ->Name("in_cache/q5_K_tiles")
    ->Unit(benchmark::kMicrosecond);
BENCHMARK_TEMPLATE(BM_in_cache, dtype::block_q6_K, true)
    ->Name("in_cache/q6_K_tiles")
    ->Unit(benchmark::kMicrosecond);
BENCHMARK_TEMPLATE(BM_token, dtype::f16)
    ->Name("token/f16")
    ->ArgName("grouped")
    ->DenseRange(0, 1)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK_TEMPLATE(BM_token, dtype::block_q8_0)
    ->Name("token/q8_0")
    ->ArgName("grouped")
    ->DenseRange(0, 1)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK_TEMPLATE(BM_token, dtype::block_q4_0)
    ->Name("token/q4_0")
    ->ArgName("grouped")
    ->DenseRange(0, 1)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK_TEMPLATE(BM_token, dtype::block_q4_0, true)
    ->Name("token/q4_0_tiles")
    ->ArgName("grouped")
    ->DenseRange(0, 1)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK_TEMPLATE(BM_token, dtype::block_q4_K)
    ->Name("token/q4_K")
    ->ArgName("grouped")
    ->DenseRange(0, 0)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK_TEMPLATE(BM_token, dtype::block_q4_K, true)
    ->Name("token/q4_K_tiles")
    ->ArgName("grouped")
    ->DenseRange(0, 0)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK_TEMPLATE(BM_product, float)->Apply(small_m_args)->Name("small_m/f32");
BENCHMARK_TEMPLATE(BM_product, dtype::f16)->Apply(small_m_args)->Name("small_m/f16");
BENCHMARK_TEMPLATE(BM_product, dtype::bf16)->Apply(small_m_args)->Name("small_m/bf16");
BENCHMARK_TEMPLATE(BM_product, dtype::block_q8_0)->Apply(small_m_args)->Name("small_m/q8_0");
BENCHMARK_TEMPLATE(BM_product, dtype::block_q4_0)->Apply(small_m_args)->Name("small_m/q4_0");
BENCHMARK_TEMPLATE(BM_product, dtype::block_q4_K)->Apply(small_m_args)->Name("small_m/q4_K");
BENCHMARK_TEMPLATE(BM_product, dtype::block_q6_K)->Apply(small_m_args)->Name("small_m/q6_K");
BENCHMARK_TEMPLATE(BM_product, float)->Apply(prefill_args)->Name("prefill/f32");
BENCHMARK_TEMPLATE(BM_product, dtype::f16)->Apply(prefill_args)->Name("prefill/f16");
BENCHMARK_TEMPLATE(BM_product, dtype::bf16)->Apply(prefill_args)->Name("prefill/bf16");
BENCHMARK_TEMPLATE(BM_product, dtype::block_q8_0)->Apply(prefill_args)->Name("prefill/q8_0");
BENCHMARK_TEMPLATE(BM_product, dtype::block_q4_0)->Apply(prefill_args)->Name("prefill/q4_0");
BENCHMARK_TEMPLATE(BM_product, dtype::block_q4_K)->Apply(prefill_args)->Name("prefill/q4_K");
BENCHMARK_TEMPLATE(BM_product, dtype::block_q6_K)->Apply(prefill_args)->Name("prefill/q6_K");
BENCHMARK(BM_eigen_f32)->Apply(prefill_args)->Name("prefill/eigen_f32");

}  // namespace

MNEMO_BENCH_MAIN();
