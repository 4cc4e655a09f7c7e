// Interleaved sliding-window memory for a Gemma-3-style model (docs/gemma3.md,
// docs/performance.md "Interleaved SWA"):
//   BM_memory_bytes   bytes of the composite (global layers on a full cache, local layers
//                     on a window cache) against one full cache for every layer, from the
//                     memory objects' own reports: the bench model at 32k context, and
//                     the Gemma 3 4B layout (34 layers, 5 global, window 1024) with small
//                     rows (the ratio does not depend on the row size)
//   BM_decode_8k      one decode step at an 8k context on a random gemma3-shaped model,
//                     `memory` 0: one full cache (the window a mask), 1: the composite;
//                     counters: tokens/s, cells the views hand to attention per local
//                     and per global layer, K/V bytes those cells hold per token (the
//                     kernel skips blocks the window mask drops whole, so a full cache
//                     does not read all it is handed: docs/performance.md)
//   BM_split_memory_bytes  the same on split streams (per-sequence context 32k / n_seq):
//                     global layers on split_stream, local layers on split_window (a
//                     window of pad(n_swa + n_ubatch, 256) cells per sequence), against
//                     one full cache of 32k cells for every layer
//   BM_split_decode_8k one decode step of n_seq sequences at 8k context each, `memory` 0:
//                     split_stream for every layer (the window a mask), 1: the
//                     per-stream composite; local_cells counts the cells the views of
//                     a local layer hand to attention over all sequences (<= n_seq
//                     windows of pad(n_swa + n_ubatch, 256) cells)
// The 8k context is written into the memory directly (random K/V through prepare /
// apply / write_kv / commit), so setup costs no prefill; each timed step decodes position
// 8192 and removes it again (rollback within the window is always possible,
// docs/sliding-window.md).
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "common/bench_main.hpp"
#include "common/random_llama.hpp"
#include <benchmark/benchmark.h>

#include "mnemo/base/rng.hpp"
#include "mnemo/context.hpp"
#include "mnemo/gguf/writer.hpp"
#include "mnemo/memory/full/full_cache.hpp"
#include "mnemo/memory/layered/layered.hpp"
#include "mnemo/memory/stream/split_stream.hpp"
#include "mnemo/memory/window/sliding_window.hpp"
#include "mnemo/memory/window/split_window.hpp"
#include "mnemo/model/gemma3.hpp"

namespace {

using namespace mnemo;
using model::gemma3_model;
using kv_t = dtype::f16;
using full_t = memory::full_cache<kv_t>;
using iswa_t = gemma3_model::iswa_memory<kv_t>;

// The bench model: 6 layers (5 local + 1 global), 8 query / 4 KV heads of 128, window
// 512, f16 weights (14 MB: the K/V of an 8k context, 100 MB in one full cache, is what
// a decode step reads most).
constexpr std::uint32_t k_embd = 256, k_layers = 6, k_head = 8, k_head_kv = 4, k_dk = 128,
                        k_ff = 512, k_vocab = 512, k_swa = 512, k_ubatch = 512;
constexpr std::size_t k_ctx8k = 8192;

void must(const status& st, const char* what) {
  if (!st.is_ok()) {
    std::fprintf(stderr, "bench_swa: %s: %s\n", what, st.to_string().c_str());
    std::exit(1);
  }
}

std::string write_bench_model() {
  const std::string path =
      (std::filesystem::temp_directory_path() / "mnemo_bench_gemma3.gguf").string();
  gguf::writer w;
  const auto key = [](const char* k) { return std::string("gemma3.") + k; };
  w.add_string("general.architecture", "gemma3");
  w.add<std::uint32_t>(key("context_length"), 32768);
  w.add<std::uint32_t>(key("embedding_length"), k_embd);
  w.add<std::uint32_t>(key("block_count"), k_layers);
  w.add<std::uint32_t>(key("feed_forward_length"), k_ff);
  w.add<std::uint32_t>(key("attention.head_count"), k_head);
  w.add<std::uint32_t>(key("attention.head_count_kv"), k_head_kv);
  w.add<std::uint32_t>(key("attention.key_length"), k_dk);
  w.add<std::uint32_t>(key("attention.value_length"), k_dk);
  w.add<float>(key("attention.layer_norm_rms_epsilon"), 1e-6f);
  w.add<float>(key("rope.freq_base"), 1e6f);
  w.add<float>(key("rope.freq_base_swa"), 1e4f);
  w.add<std::uint32_t>(key("attention.sliding_window"), k_swa);
  w.add<std::uint32_t>(key("attention.sliding_window_pattern"), 6);
  splitmix64 g{1};
  const std::uint32_t t = dtype::ggml_type_id(dtype::element_type::f16);
  const auto mat = [&](const std::string& name, std::uint32_t n_in, std::uint32_t n_out) {
    const float sigma = 1.0f / std::sqrt(static_cast<float>(n_in));
    w.add_tensor(
        name, {n_in, n_out}, t,
        mnemo_examples::detail::random_matrix(g, n_in, n_out, sigma, dtype::element_type::f16));
  };
  const auto norm = [&](const std::string& name, std::uint32_t n) {
    w.add_tensor_f32(name, {n}, mnemo_examples::detail::random_norm(g, n));
  };
  mat("token_embd.weight", k_embd, k_vocab);
  norm("output_norm.weight", k_embd);
  for (std::uint32_t l = 0; l < k_layers; ++l) {
    const std::string p = "blk." + std::to_string(l) + ".";
    for (const char* n : {"attn_norm", "post_attention_norm", "ffn_norm", "post_ffw_norm"})
      norm(p + n + ".weight", k_embd);
    norm(p + "attn_q_norm.weight", k_dk);
    norm(p + "attn_k_norm.weight", k_dk);
    mat(p + "attn_q.weight", k_embd, k_head * k_dk);
    mat(p + "attn_k.weight", k_embd, k_head_kv * k_dk);
    mat(p + "attn_v.weight", k_embd, k_head_kv * k_dk);
    mat(p + "attn_output.weight", k_head * k_dk, k_embd);
    mat(p + "ffn_gate.weight", k_embd, k_ff);
    mat(p + "ffn_up.weight", k_embd, k_ff);
    mat(p + "ffn_down.weight", k_ff, k_embd);
  }
  must(w.write(path), "write the bench model");
  return path;
}

const gemma3_model& bench_model() {
  static const std::unique_ptr<gemma3_model> m = [] {
    auto r = gemma3_model::open(write_bench_model());
    must(r.is_ok() ? status{} : r.error(), "load the bench model");
    return std::make_unique<gemma3_model>(std::move(r).value());
  }();
  return *m;
}

/// Writes positions [0, n) of sequence s with random K/V rows into every layer.
template <class Memory>
void fill(Memory& mem, std::size_t n, std::size_t n_layer, seq_id s = 0) {
  splitmix64 g{7};
  std::vector<float> k(k_head_kv * k_dk), v(k_head_kv * k_dk);
  std::vector<pos_t> pos(k_ubatch);
  std::vector<seq_set> seqs(k_ubatch, seq_set::of(s));
  for (std::size_t p0 = 0; p0 < n; p0 += k_ubatch) {
    const std::size_t m = std::min<std::size_t>(k_ubatch, n - p0);
    for (std::size_t j = 0; j < m; ++j) pos[j] = static_cast<pos_t>(p0 + j);
    const memory::ubatch_tokens ub{{pos.data(), m}, {seqs.data(), m}};
    must(mem.prepare({&ub, 1}), "prepare");
    must(mem.apply(0, ub), "apply");
    for (std::size_t l = 0; l < n_layer; ++l)
      for (std::size_t j = 0; j < m; ++j) {
        for (float& x : k) x = g.uniform() - 0.5f;
        for (float& x : v) x = g.uniform() - 0.5f;
        mem.write_kv(l, 0, j, k.data(), v.data());
      }
    mem.commit();
  }
}

// ---- memory bytes at 32k ---------------------------------------------------------

void BM_memory_bytes(benchmark::State& state) {
  const bool gemma4b = state.range(0) == 1;
  const std::size_t n_ctx = 32768;
  // The bench model itself, or the Gemma 3 4B layer layout with 1 KV head of 16 (rows of
  // 32 B f16: the cell counts are those of the real model, the bytes scale with the row).
  std::size_t n_layer = k_layers, n_kv = k_head_kv, d = k_dk;
  pos_t n_swa = k_swa;
  if (gemma4b) n_layer = 34, n_kv = 1, d = 16, n_swa = 1024;
  std::vector<std::uint8_t> parts(n_layer);
  std::size_t n_global = 0;
  for (std::size_t l = 0; l < n_layer; ++l) n_global += (parts[l] = l % 6 == 5 ? 0 : 1) == 0;
  double full_bytes = 0, iswa_bytes = 0;
  std::size_t window_cells = 0;
  for (auto _ : state) {
    memory::full_cache_config fc;
    fc.shape = {n_layer, n_kv, d, d};
    fc.size = n_ctx;
    fc.rope.layout = attention::rope_layout::none;  // bytes only: no K-shift here
    auto full = full_t::make(fc);
    must(full.is_ok() ? status{} : full.error(), "full cache");
    memory::full_cache_config gc = fc;
    gc.shape.n_layer = n_global;
    memory::sliding_window_config wc;
    wc.shape = {n_layer - n_global, n_kv, d, d};
    wc.n_ctx = n_ctx;
    wc.n_ubatch = k_ubatch;
    wc.window = attention::window_kind::standard;
    wc.n_swa = n_swa;
    wc.rope.layout = attention::rope_layout::none;
    auto g = full_t::make(gc);
    auto w = memory::sliding_window<kv_t>::make(wc);
    must(g.is_ok() && w.is_ok() ? status{} : status(status_code::internal, "parts"), "parts");
    window_cells = w->size();
    auto iswa = iswa_t::make(parts, std::move(g).value(), std::move(w).value());
    must(iswa.is_ok() ? status{} : iswa.error(), "composite");
    full_bytes = static_cast<double>(full->report().total_bytes);
    iswa_bytes = static_cast<double>(iswa->report().total_bytes);
    benchmark::DoNotOptimize(iswa_bytes);
  }
  state.counters["full_MiB"] = full_bytes / (1 << 20);
  state.counters["iswa_MiB"] = iswa_bytes / (1 << 20);
  state.counters["ratio"] = iswa_bytes / full_bytes;
  state.counters["window_cells"] = static_cast<double>(window_cells);
  state.counters["global_layers"] = static_cast<double>(n_global);
  state.SetLabel(gemma4b ? "gemma3-4b layout, n_ctx 32768" : "bench model, n_ctx 32768");
}
BENCHMARK(BM_memory_bytes)
    ->ArgName("gemma3_4b")
    ->Arg(0)
    ->Arg(1)
    ->Iterations(1)
    ->Unit(benchmark::kMillisecond);

// ---- decode at 8k ------------------------------------------------------------------

template <class Memory>
void decode_8k(benchmark::State& state, Memory mem, const char* label) {
  const gemma3_model& m = bench_model();
  const int threads = static_cast<int>(state.range(1));
  fill(mem, k_ctx8k, k_layers);
  context_params p;
  p.n_ubatch = k_ubatch;
  p.n_threads = threads;
  auto ctx = context<gemma3_model, Memory>::make(m, std::move(mem), p);
  must(ctx.is_ok() ? status{} : ctx.error(), "context");
  const pos_t at = static_cast<pos_t>(k_ctx8k);
  batch b;
  b.add(42, at, {0}, true);
  for (auto _ : state) {
    must(ctx->decode(b), "decode");
    benchmark::DoNotOptimize(ctx->logits().data());
    must(ctx->seq_rm(0, at, -1), "seq_rm");
  }
  // What each layer's attention was handed: the cells of its view (same after the
  // step is undone: the used prefix does not shrink).
  memory::layer_views lv;
  double local = 0, global = 0;
  for (std::size_t l = 0; l < k_layers; ++l) {
    ctx->memory().views(l, 0, lv);
    double cells = 0;
    for (const auto& s : lv.segments) cells += static_cast<double>(s.n_cells);
    (m.hparams().local(l) ? local : global) = cells;
  }
  const double row = 2.0 * k_head_kv * k_dk * sizeof(kv_t);  // K + V bytes of one cell
  const double kv_bytes = (local * m.hparams().n_local() + global * m.hparams().n_global()) * row;
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations()));
  state.counters["local_cells"] = local;
  state.counters["global_cells"] = global;
  state.counters["viewed_kv_MiB"] = kv_bytes / (1 << 20);
  state.SetLabel(std::string(label) + ", " + std::to_string(threads) + " thread(s), " +
                 std::string(simd::native::name));
}

void BM_decode_8k(benchmark::State& state) {
  const gemma3_model& m = bench_model();
  if (state.range(0) == 0) {
    auto mem = full_t::make(m.full_cache_config(k_ctx8k + 256, 1));
    must(mem.is_ok() ? status{} : mem.error(), "full cache");
    decode_8k(state, std::move(mem).value(), "full cache, window as mask");
  } else {
    auto mem = m.make_iswa<kv_t>(k_ctx8k + 256, 1, k_ubatch);
    must(mem.is_ok() ? status{} : mem.error(), "composite");
    decode_8k(state, std::move(mem).value(), "iswa composite");
  }
}
BENCHMARK(BM_decode_8k)
    ->ArgNames({"memory", "threads"})
    ->ArgsProduct({{0, 1}, {1, 2}})
    ->MinTime(1.0)
    ->Unit(benchmark::kMillisecond);

// ---- split streams: memory bytes at 32k, decode of several sequences at 8k ------------

void BM_split_memory_bytes(benchmark::State& state) {
  const bool gemma4b = state.range(0) == 1;
  const auto n_seq = static_cast<seq_id>(state.range(1));
  const std::size_t n_ctx = 32768, n_ctx_seq = n_ctx / static_cast<std::size_t>(n_seq);
  std::size_t n_layer = k_layers, n_kv = k_head_kv, d = k_dk;
  pos_t n_swa = k_swa;
  if (gemma4b) n_layer = 34, n_kv = 1, d = 16, n_swa = 1024;
  std::vector<std::uint8_t> parts(n_layer);
  std::size_t n_global = 0;
  for (std::size_t l = 0; l < n_layer; ++l) n_global += (parts[l] = l % 6 == 5 ? 0 : 1) == 0;
  double full_bytes = 0, split_bytes = 0;
  std::size_t window_cells = 0;
  for (auto _ : state) {
    memory::full_cache_config fc;
    fc.shape = {n_layer, n_kv, d, d};
    fc.size = n_ctx;
    fc.n_seq_max = n_seq;
    fc.rope.layout = attention::rope_layout::none;
    auto full = full_t::make(fc);
    memory::split_stream_config gc;
    gc.shape = {n_global, n_kv, d, d};
    gc.size_per_stream = n_ctx_seq;
    gc.n_seq_max = n_seq;
    gc.rope.layout = attention::rope_layout::none;
    memory::split_window_config wc;
    wc.n_seq_max = n_seq;
    wc.stream.shape = {n_layer - n_global, n_kv, d, d};
    wc.stream.n_ctx = n_ctx_seq;
    wc.stream.n_ubatch = k_ubatch;
    wc.stream.window = attention::window_kind::standard;
    wc.stream.n_swa = n_swa;
    wc.stream.rope.layout = attention::rope_layout::none;
    auto g = memory::split_stream<kv_t>::make(gc);
    auto w = memory::split_window<kv_t>::make(wc);
    must(full.is_ok() && g.is_ok() && w.is_ok() ? status{} : status(status_code::internal, "parts"),
         "parts");
    window_cells = w->size_per_stream();
    auto split = model::gemma3_model::iswa_split_memory<kv_t>::make(parts, std::move(g).value(),
                                                                    std::move(w).value());
    must(split.is_ok() ? status{} : split.error(), "composite");
    full_bytes = static_cast<double>(full->report().total_bytes);
    split_bytes = static_cast<double>(split->report().total_bytes);
    benchmark::DoNotOptimize(split_bytes);
  }
  state.counters["full_MiB"] = full_bytes / (1 << 20);
  state.counters["split_iswa_MiB"] = split_bytes / (1 << 20);
  state.counters["ratio"] = split_bytes / full_bytes;
  state.counters["window_cells_per_seq"] = static_cast<double>(window_cells);
  state.SetLabel(std::string(gemma4b ? "gemma3-4b layout" : "bench model") + ", n_ctx 32768, " +
                 std::to_string(n_seq) + " sequence(s)");
}
BENCHMARK(BM_split_memory_bytes)
    ->ArgNames({"gemma3_4b", "n_seq"})
    ->ArgsProduct({{0, 1}, {1, 4}})
    ->Iterations(1)
    ->Unit(benchmark::kMillisecond);

template <class Memory>
void split_decode_8k(benchmark::State& state, Memory mem, seq_id n_seq, int threads,
                     const char* label) {
  const gemma3_model& m = bench_model();
  for (seq_id s = 0; s < n_seq; ++s) fill(mem, k_ctx8k, k_layers, s);
  context_params p;
  p.n_ubatch = k_ubatch;
  p.n_seq_max = static_cast<std::uint32_t>(n_seq);
  p.n_threads = threads;
  auto ctx = context<gemma3_model, Memory>::make(m, std::move(mem), p);
  must(ctx.is_ok() ? status{} : ctx.error(), "context");
  const pos_t at = static_cast<pos_t>(k_ctx8k);
  batch b;
  for (seq_id s = 0; s < n_seq; ++s) b.add(42, at, {s}, true);
  for (auto _ : state) {
    must(ctx->decode(b), "decode");
    benchmark::DoNotOptimize(ctx->logits().data());
    for (seq_id s = 0; s < n_seq; ++s) must(ctx->seq_rm(s, at, -1), "seq_rm");
  }
  // The cells attention is handed for one decode step of every sequence: plan the step
  // again, read the views of every layer, roll it back.
  auto& mem2 = ctx->memory();
  std::vector<pos_t> pos(static_cast<std::size_t>(n_seq), at);
  std::vector<seq_set> seqs;
  for (seq_id s = 0; s < n_seq; ++s) seqs.push_back(seq_set::of(s));
  const memory::ubatch_tokens ub{pos, seqs};
  must(mem2.prepare({&ub, 1}), "prepare");
  must(mem2.apply(0, ub), "apply");
  memory::layer_views lv;
  double local = 0, global = 0;
  for (std::size_t l = 0; l < k_layers; ++l) {
    mem2.views(l, 0, lv);
    double cells = 0;
    for (const auto& s : lv.segments) cells += static_cast<double>(s.n_cells);
    (m.hparams().local(l) ? local : global) = cells;
  }
  mem2.rollback();
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations()) * n_seq);
  state.counters["local_cells"] = local;
  state.counters["global_cells"] = global;
  state.counters["local_cells_per_seq"] = local / n_seq;
  state.SetLabel(std::string(label) + ", " + std::to_string(n_seq) + " sequence(s), " +
                 std::string(simd::native::name));
}

void BM_split_decode_8k(benchmark::State& state) {
  const gemma3_model& m = bench_model();
  const auto n_seq = static_cast<seq_id>(state.range(1));
  const int threads = static_cast<int>(state.range(2));
  const std::size_t n_ctx_seq = k_ctx8k + 256;
  if (state.range(0) == 0) {
    const memory::full_cache_config fc = m.full_cache_config(n_ctx_seq, n_seq);
    memory::split_stream_config c;
    c.shape = fc.shape;
    c.size_per_stream = n_ctx_seq;
    c.n_seq_max = n_seq;
    c.rope = fc.rope;
    c.shift_supported = fc.shift_supported;
    c.windows = fc.windows;
    auto mem = memory::split_stream<kv_t>::make(c);
    must(mem.is_ok() ? status{} : mem.error(), "split stream");
    split_decode_8k(state, std::move(mem).value(), n_seq, threads, "split_stream, window as mask");
  } else {
    auto mem = m.template make_iswa_split<kv_t>(n_ctx_seq, n_seq, k_ubatch);
    must(mem.is_ok() ? status{} : mem.error(), "composite");
    split_decode_8k(state, std::move(mem).value(), n_seq, threads, "split_stream + split_window");
  }
}
BENCHMARK(BM_split_decode_8k)
    ->ArgNames({"memory", "n_seq", "threads"})
    ->ArgsProduct({{0, 1}, {1, 4}, {1, 2}})
    ->MinTime(1.0)
    ->Unit(benchmark::kMillisecond);

}  // namespace

MNEMO_BENCH_MAIN();
