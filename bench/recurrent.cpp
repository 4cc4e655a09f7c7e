// bench/recurrent: a Mamba-1 model decoding through mnemo::context + memory::recurrent,
// and the selective scan it spends its state traffic in.
//  - mamba_decode: one token per sequence per call on a random Mamba written here with
//    gguf::writer (d_model 1024, 24 layers, d_state 16, d_inner 2048, dt_rank 64, vocab
//    32000, f16 matrices, tied output; cached as MNEMO_BENCH_MAMBA or
//    /tmp/mnemo-bench-mamba-1024x24.gguf). Counters: tokens/s; bytes = the weights
//    (read once per call, whatever the number of sequences) plus every sequence's state
//    read and written once; state_bytes_per_seq.
//  - scan_step / scan_chunk: one layer's selective scan (d_inner 2048, d_state 16), one
//    thread: decode over `slots` sequence states (256 slots = 32 MiB streams from DRAM),
//    as bytes of state read + written per token against the read bandwidth; prefill of
//    512 tokens as GFLOP/s against the FMA peak (7 FLOPs per token, channel and state,
//    exp counted as 1, as bench/ssm.cpp).
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "common/bench_main.hpp"
#include "common/random_llama.hpp"
#include <benchmark/benchmark.h>

#include "mnemo/context.hpp"
#include "mnemo/gguf/writer.hpp"
#include "mnemo/memory/recurrent/recurrent.hpp"
#include "mnemo/model/mamba.hpp"
#include "mnemo/ssm/ssm.hpp"

namespace {

using namespace mnemo;

constexpr std::uint32_t k_embd = 1024, k_layers = 24, k_state = 16, k_inner = 2048, k_rank = 64,
                        k_conv = 4, k_vocab = 32000;

/// Writes the random Mamba (weights N(0, 1/fan_in), as random_llama.hpp).
status write_random_mamba(const std::string& path) {
  namespace dt = mnemo::dtype;
  const auto f16 = dt::element_type::f16;
  const std::uint32_t t16 = dt::ggml_type_id(f16);
  gguf::writer w;
  w.add_string("general.architecture", "mamba");
  w.add<std::uint32_t>("mamba.context_length", 4096);
  w.add<std::uint32_t>("mamba.embedding_length", k_embd);
  w.add<std::uint32_t>("mamba.block_count", k_layers);
  w.add<std::uint32_t>("mamba.ssm.conv_kernel", k_conv);
  w.add<std::uint32_t>("mamba.ssm.inner_size", k_inner);
  w.add<std::uint32_t>("mamba.ssm.state_size", k_state);
  w.add<std::uint32_t>("mamba.ssm.time_step_rank", k_rank);
  w.add<float>("mamba.attention.layer_norm_rms_epsilon", 1e-5f);
  w.add<std::uint32_t>("mamba.vocab_size", k_vocab);
  mnemo_examples::detail::byte_vocab(k_vocab, w);
  splitmix64 g{1};
  auto mat = [&](const std::string& name, std::uint32_t n_in, std::uint32_t n_out, float sigma) {
    w.add_tensor(name, {n_in, n_out}, t16,
                 mnemo_examples::detail::random_matrix(g, n_in, n_out, sigma, f16));
  };
  auto vec = [&](const std::string& name, std::initializer_list<std::uint64_t> dims,
                 std::vector<float> v) { w.add_tensor_f32(name, dims, v); };
  mat("token_embd.weight", k_embd, k_vocab, 0.1f);
  vec("output_norm.weight", {k_embd}, mnemo_examples::detail::random_norm(g, k_embd));
  for (std::uint32_t l = 0; l < k_layers; ++l) {
    const std::string b = "blk." + std::to_string(l) + ".";
    vec(b + "attn_norm.weight", {k_embd}, mnemo_examples::detail::random_norm(g, k_embd));
    mat(b + "ssm_in.weight", k_embd, 2 * k_inner, 1.0f / std::sqrt(float(k_embd)));
    std::vector<float> conv(k_inner * k_conv), cb(k_inner), dtb(k_inner), A(k_inner * k_state),
        D(k_inner);
    for (auto& v : conv) v = 0.5f * g.normal();
    for (auto& v : cb) v = 0.1f * g.normal();
    for (auto& v : dtb) {  // softplus^-1 of dt0, dt0 log-uniform in [0.01, 0.1]
      const float dt0 = std::exp(std::log(0.01f) + g.uniform() * std::log(10.0f));
      v = dt0 + std::log(-std::expm1(-dt0));
    }
    for (std::uint32_t c = 0; c < k_inner; ++c)
      for (std::uint32_t s = 0; s < k_state; ++s) A[c * k_state + s] = -float(s + 1);
    for (auto& v : D) v = 1.0f + 0.1f * g.normal();
    vec(b + "ssm_conv1d.weight", {k_conv, k_inner}, conv);
    vec(b + "ssm_conv1d.bias", {k_inner}, cb);
    mat(b + "ssm_x.weight", k_inner, k_rank + 2 * k_state, 1.0f / std::sqrt(float(k_inner)));
    mat(b + "ssm_dt.weight", k_rank, k_inner, 1.0f / std::sqrt(float(k_rank)));
    vec(b + "ssm_dt.bias", {k_inner}, dtb);
    vec(b + "ssm_a", {k_state, k_inner}, A);
    vec(b + "ssm_d", {k_inner}, D);
    mat(b + "ssm_out.weight", k_inner, k_embd, 1.0f / std::sqrt(float(k_inner)));
  }
  return w.write(path);
}

const model::mamba_model* bench_model() {
  static std::unique_ptr<model::mamba_model> m = []() -> std::unique_ptr<model::mamba_model> {
    const char* env = std::getenv("MNEMO_BENCH_MAMBA");
    const std::string path = env != nullptr ? env : "/tmp/mnemo-bench-mamba-1024x24.gguf";
    auto r = model::mamba_model::open(path);
    if (!r.is_ok()) {
      if (status st = write_random_mamba(path); !st) {
        std::fprintf(stderr, "bench_recurrent: %s\n", st.to_string().c_str());
        return nullptr;
      }
      r = model::mamba_model::open(path);
    }
    if (!r.is_ok()) {
      std::fprintf(stderr, "bench_recurrent: %s\n", r.error().to_string().c_str());
      return nullptr;
    }
    return std::make_unique<model::mamba_model>(std::move(r).value());
  }();
  return m.get();
}

/// Bytes of weights one decode call reads: every tensor of the file except the
/// embedding rows not looked up (the tied output reads the whole table once).
double weight_bytes(const model::mamba_model& m) {
  double b = 0;
  for (const auto& t : m.file().tensors()) b += static_cast<double>(t.data.size());
  return b;
}

void BM_mamba_decode(benchmark::State& state) {
  const auto n_seq = static_cast<seq_id>(state.range(0));
  const int threads = static_cast<int>(state.range(1));
  const model::mamba_model* m = bench_model();
  if (m == nullptr) return state.SkipWithError("no model");
  auto mem = memory::recurrent::make(m->recurrent_config(n_seq));
  if (!mem.is_ok()) return state.SkipWithError(mem.error().to_string().c_str());
  const std::size_t state_bytes = mem->state_bytes();
  context_params p;
  p.n_ubatch = 512;
  p.n_seq_max = n_seq;
  p.n_threads = threads;
  auto ctx = context<model::mamba_model, memory::recurrent>::make(*m, std::move(*mem), p);
  if (!ctx.is_ok()) return state.SkipWithError(ctx.error().to_string().c_str());
  batch b;
  pos_t pos = 0;
  auto step = [&](pos_t n_tok) {
    b.clear();
    for (seq_id s = 0; s < n_seq; ++s)
      for (pos_t k = 0; k < n_tok; ++k)
        b.add(3 + (pos + k + 7 * s) % 500, pos + k, {s}, k == n_tok - 1);
    pos += n_tok;
    return ctx->decode(b);
  };
  if (status st = step(8); !st) return state.SkipWithError(st.to_string().c_str());  // prompt
  for (auto _ : state) {
    if (status st = step(1); !st) return state.SkipWithError(st.to_string().c_str());
    benchmark::DoNotOptimize(ctx->logits().data());
  }
  const double it = mnemo_bench::iterations(state);
  state.counters["tokens/s"] = benchmark::Counter(n_seq * it, benchmark::Counter::kIsRate);
  state.counters["state_bytes_per_seq"] = static_cast<double>(state_bytes);
  mnemo_bench::add_bytes_counters(state, weight_bytes(*m) + 2.0 * state_bytes * n_seq, threads);
  mnemo_bench::add_isa_and_threads_labels(state, threads);
}

std::vector<float> uniform(std::mt19937& rng, std::size_t n, float lo, float hi) {
  std::uniform_real_distribution<float> u(lo, hi);
  std::vector<float> v(n);
  for (auto& x : v) x = u(rng);
  return v;
}

void run_scan(benchmark::State& state, std::size_t n_tokens, std::size_t slots,
              ssm::scan_path path) {
  constexpr std::size_t bc = k_rank + 2 * k_state;
  std::mt19937 rng(1);
  const auto x = uniform(rng, n_tokens * k_inner, -2, 2),
             dt = uniform(rng, n_tokens * k_inner, -5, 0), bcv = uniform(rng, n_tokens * bc, -1, 1),
             z = uniform(rng, n_tokens * k_inner, -3, 3),
             A = uniform(rng, k_inner * k_state, -16, -1), D = uniform(rng, k_inner, 0.9f, 1.1f);
  auto states = uniform(rng, slots * k_inner * k_state, -1, 1);
  std::vector<float> y(n_tokens * k_inner);
  std::size_t slot = 0;
  for (auto _ : state) {
    ssm::scan_args a;
    a.d_inner = k_inner;
    a.d_state = k_state;
    a.n_tokens = n_tokens;
    a.x = x.data();
    a.ld_x = k_inner;
    a.dt = dt.data();
    a.ld_dt = k_inner;
    a.B = bcv.data() + k_rank;
    a.C = bcv.data() + k_rank + k_state;
    a.ld_bc = bc;
    a.z = z.data();
    a.ld_z = k_inner;
    a.A = A.data();
    a.D = D.data();
    a.state = states.data() + slot * k_inner * k_state;
    a.y = y.data();
    a.ld_y = k_inner;
    if (status st = ssm::selective_scan<simd::native>(a, path); !st)
      return state.SkipWithError(st.to_string().c_str());
    slot = slot + 1 == slots ? 0 : slot + 1;
    benchmark::DoNotOptimize(y.data());
    benchmark::ClobberMemory();
  }
  const double nt = static_cast<double>(n_tokens);
  state.counters["tokens/s"] =
      benchmark::Counter(nt * mnemo_bench::iterations(state), benchmark::Counter::kIsRate);
  mnemo_bench::add_bytes_counters(state, 2.0 * k_inner * k_state * sizeof(float), 1);
  mnemo_bench::add_flops_counters(state, 7.0 * nt * k_inner * k_state, 1);
  mnemo_bench::add_isa_and_threads_labels(state, 1);
}

void BM_scan_step(benchmark::State& state) {
  run_scan(state, 1, static_cast<std::size_t>(state.range(0)), ssm::scan_path::step);
}
void BM_scan_chunk(benchmark::State& state) {
  run_scan(state, static_cast<std::size_t>(state.range(0)), 1, ssm::scan_path::chunk);
}

BENCHMARK(BM_mamba_decode)
    ->ArgNames({"seqs", "threads"})
    ->ArgsProduct({{1, 16}, {1, 2}})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK(BM_scan_step)->ArgNames({"slots"})->Arg(1)->Arg(256)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_scan_chunk)->ArgNames({"tokens"})->Arg(512)->Unit(benchmark::kMillisecond);

}  // namespace

MNEMO_BENCH_MAIN();
