// bench/memory: what the unified ("full") cache costs besides attention, on a 64k-cell
// f16 cache of one layer, 8 KV heads x 128 (4 KiB of K+V per cell, 256 MiB):
//
//   BM_decode_batch   prepare + apply (+ write_kv) + commit of one batch of `tokens`
//                     tokens over `seqs` sequences, with the cache 3/4 full (48k cells
//                     used, as in steady decoding); reported per token (`t/token`).
//   BM_seq_*          one sequence operation on 4 sequences of 12k cells each (48k
//                     used), the cache restored outside the timing after each call.
//   BM_state_*        per-sequence state_write / state_read of one of them (48 MiB).
//
// Compare t/token with the attention time of one decode step over the same cache
// (bench_attention BM_decode; docs/performance.md "Memory" has the table).
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <vector>

#include "common/bench_main.hpp"
#include <benchmark/benchmark.h>

#include "mnemo/memory/memory.hpp"

namespace {

using namespace mnemo;
using E = dtype::f16;
using cache_t = memory::full_cache<E>;

constexpr std::size_t k_cells = 65536, k_used = 49152, k_head_kv = 8, k_d = 128;
constexpr std::size_t k_ubatch = 512;

void must(const status& s, const char* what) {
  if (s.is_ok()) return;
  std::fprintf(stderr, "bench_memory: %s: %s\n", what, s.to_string().c_str());
  std::exit(1);
}

cache_t make_cache(attention::rope_layout rope, seq_id n_seq_max = 8) {
  memory::full_cache_config cfg;
  cfg.shape = {1, k_head_kv, k_d, k_d};
  cfg.size = k_cells;
  cfg.n_seq_max = n_seq_max;
  cfg.rope.layout = rope;
  cfg.rope.n_rot = k_d;
  auto c = cache_t::make(cfg);
  must(c.is_ok() ? status{} : c.error(), "make");
  return std::move(c).value();
}

/// Places tokens in micro-batches of up to 512, metadata only: what a decode does to
/// the cache besides writing rows (the rows stay zero; their values cost nothing).
void place(cache_t& c, const std::vector<pos_t>& pos, const std::vector<seq_set>& seqs) {
  for (std::size_t i = 0; i < pos.size(); i += k_ubatch) {
    const std::size_t n = std::min(k_ubatch, pos.size() - i);
    const memory::ubatch_tokens ub{{pos.data() + i, n}, {seqs.data() + i, n}};
    must(c.prepare({&ub, 1}), "prepare");
    must(c.apply(0, ub), "apply");
    c.commit();
  }
}

/// Positions [p0, p1) of sequences [s0, s0 + n_seq), position-major as a batched
/// decode interleaves them (so neighbouring cells belong to different sequences).
void fill(cache_t& c, seq_id s0, seq_id n_seq, pos_t p0, pos_t p1) {
  std::vector<pos_t> pos;
  std::vector<seq_set> seqs;
  for (pos_t p = p0; p < p1; ++p)
    for (seq_id s = s0; s < s0 + n_seq; ++s) {
      pos.push_back(p);
      seqs.push_back(seq_set::of(s));
    }
  place(c, pos, seqs);
}

/// Per-token time: seconds per token (printed with an SI prefix, e.g. 1.2u = 1.2 us).
void add_token_counters(benchmark::State& state, double tokens_per_iteration) {
  state.counters["t/token"] =
      benchmark::Counter(tokens_per_iteration * mnemo_bench::iterations(state),
                         benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
  state.counters["tokens/s"] = benchmark::Counter(
      tokens_per_iteration * mnemo_bench::iterations(state), benchmark::Counter::kIsRate);
  mnemo_bench::add_isa_and_threads_labels(state, 1);
}

// ------------------------------------------------------------------ decode batches

/// One batch of `tokens` tokens over min(seqs, tokens) of `seqs` sequences (each
/// sequence's positions continue), planned, applied and committed; `write` adds the
/// K/V rows (f32 -> f16 encode). The cache starts 3/4 full; once the free quarter is
/// used up, the added positions are removed outside the timing.
void BM_decode_batch(benchmark::State& state) {
  const auto n_tok = static_cast<std::size_t>(state.range(0));
  const auto n_seq = static_cast<seq_id>(state.range(1));
  const bool write = state.range(2) != 0;
  cache_t c = make_cache(attention::rope_layout::normal, std::max<seq_id>(n_seq, 8));
  const auto len = static_cast<pos_t>(k_used / static_cast<std::size_t>(n_seq));
  fill(c, 0, n_seq, 0, len);

  const seq_id active = std::min<seq_id>(n_seq, static_cast<seq_id>(n_tok));
  const pos_t per_seq = static_cast<pos_t>(n_tok / static_cast<std::size_t>(active));
  std::vector<pos_t> pos(n_tok);
  std::vector<seq_set> seqs(n_tok);
  for (std::size_t j = 0; j < n_tok; ++j)
    seqs[j] = seq_set::of(static_cast<seq_id>(j % static_cast<std::size_t>(active)));
  std::mt19937 rng(1);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  std::vector<float> k(n_tok * k_head_kv * k_d), v(k.size());
  for (auto& x : k) x = u(rng);
  for (auto& x : v) x = u(rng);
  const memory::ubatch_tokens ub{pos, seqs};

  const std::size_t batches_per_refill = (k_cells - k_used) / n_tok;
  std::size_t batches = 0;
  pos_t next = len;
  for (auto _ : state) {
    if (batches == batches_per_refill) {
      state.PauseTiming();
      must(c.seq_rm(-1, len, -1), "seq_rm");
      next = len;
      batches = 0;
      state.ResumeTiming();
    }
    for (std::size_t j = 0; j < n_tok; ++j)
      pos[j] = next + static_cast<pos_t>(j / static_cast<std::size_t>(active));
    next += per_seq;
    ++batches;
    const status st = c.prepare({&ub, 1});
    if (!st.is_ok()) state.SkipWithError(st.to_string().c_str());
    must(c.apply(0, ub), "apply");
    if (write)
      for (std::size_t j = 0; j < n_tok; ++j)
        c.write_kv(0, 0, j, k.data() + j * k_head_kv * k_d, v.data() + j * k_head_kv * k_d);
    c.commit();
  }
  add_token_counters(state, static_cast<double>(n_tok));
}

BENCHMARK(BM_decode_batch)
    ->ArgNames({"tokens", "seqs", "write"})
    ->ArgsProduct({{1, 8, 64, 512}, {1, 8, 64}, {0, 1}})
    ->Unit(benchmark::kMicrosecond);

// ------------------------------------------------------------------ sequence operations

constexpr seq_id k_seqs = 4;
constexpr pos_t k_len = static_cast<pos_t>(k_used / k_seqs);  // 12288 positions each

/// 4 sequences of 12k positions, interleaved cell by cell.
cache_t make_filled(attention::rope_layout rope = attention::rope_layout::none) {
  cache_t c = make_cache(rope);
  fill(c, 0, k_seqs, 0, k_len);
  return c;
}

void report_op(benchmark::State& state, double bytes = 0) {
  if (bytes > 0) mnemo_bench::add_bytes_counters(state, bytes, 1);
  mnemo_bench::add_isa_and_threads_labels(state, 1);
}

/// seq_rm of the last `n` positions of sequence 0.
void BM_seq_rm(benchmark::State& state) {
  const auto n = static_cast<pos_t>(state.range(0));
  cache_t c = make_filled();
  for (auto _ : state) {
    must(c.seq_rm(0, k_len - n, -1), "seq_rm");
    state.PauseTiming();
    fill(c, 0, 1, k_len - n, k_len);
    state.ResumeTiming();
  }
  report_op(state);
}
BENCHMARK(BM_seq_rm)->ArgName("positions")->Arg(1)->Arg(k_len)->Unit(benchmark::kMicrosecond);

/// seq_cp of all of sequence 0 into an empty sequence (shares 12k cells).
void BM_seq_cp(benchmark::State& state) {
  cache_t c = make_filled();
  for (auto _ : state) {
    must(c.seq_cp(0, k_seqs, -1, -1), "seq_cp");
    state.PauseTiming();
    must(c.seq_rm(k_seqs, -1, -1), "seq_rm");
    state.ResumeTiming();
  }
  report_op(state);
}
BENCHMARK(BM_seq_cp)->Unit(benchmark::kMicrosecond);

/// seq_keep(0): frees the 36k cells of the three other sequences.
void BM_seq_keep(benchmark::State& state) {
  cache_t c = make_filled();
  for (auto _ : state) {
    must(c.seq_keep(0), "seq_keep");
    state.PauseTiming();
    fill(c, 1, k_seqs - 1, 0, k_len);
    state.ResumeTiming();
  }
  report_op(state);
}
BENCHMARK(BM_seq_keep)->Iterations(40)->Unit(benchmark::kMicrosecond);

/// seq_add of the second half of sequence 0 (6k cells) by +64, metadata only, and
/// with update() re-rotating the 6k keys (f16, RoPE on all 128 dims): a context shift.
void BM_seq_add(benchmark::State& state) {
  const bool with_update = state.range(0) != 0;
  cache_t c = make_filled(attention::rope_layout::normal);
  constexpr pos_t half = k_len / 2, delta = 64;
  for (auto _ : state) {
    must(c.seq_add(0, half, -1, delta), "seq_add");
    if (with_update) must(c.update(), "update");
    state.PauseTiming();
    must(c.seq_add(0, half + delta, -1, -delta), "seq_add");
    must(c.update(), "update");
    state.ResumeTiming();
  }
  // update() reads and writes each shifted K row once: [6144, 8, 128] f16 each way.
  report_op(state, with_update ? 2.0 * half * k_head_kv * k_d * sizeof(E) : 0.0);
}
BENCHMARK(BM_seq_add)->ArgName("update")->Arg(0)->Arg(1)->Unit(benchmark::kMicrosecond);

/// seq_div of the second half of sequence 0 by 2 (metadata; the shift is pending).
void BM_seq_div(benchmark::State& state) {
  cache_t c = make_filled();
  for (auto _ : state) {
    must(c.seq_div(0, k_len / 2, -1, 2), "seq_div");
    state.PauseTiming();
    must(c.seq_rm(0, k_len / 4, -1), "seq_rm");
    must(c.update(), "update");
    fill(c, 0, 1, k_len / 4, k_len);
    state.ResumeTiming();
  }
  report_op(state);
}
BENCHMARK(BM_seq_div)->Iterations(40)->Unit(benchmark::kMicrosecond);

/// defragment after sequences 1 and 3 left: every other cell of [0, 48k) is a hole,
/// so 12k of the 24k used cells move (K and V rows, 4 KiB each).
void BM_defragment(benchmark::State& state) {
  cache_t c = make_cache(attention::rope_layout::none);
  auto fragment = [&] {
    c.clear(false);
    fill(c, 0, k_seqs, 0, k_len);
    must(c.seq_rm(1, -1, -1), "seq_rm");
    must(c.seq_rm(3, -1, -1), "seq_rm");
  };
  fragment();
  for (auto _ : state) {
    must(c.defragment(), "defragment");
    state.PauseTiming();
    fragment();
    state.ResumeTiming();
  }
  // Moved rows are read and written once: 12k cells x 4 KiB each way.
  report_op(state, 2.0 * (k_used / 4) * 2 * k_head_kv * k_d * sizeof(E));
}
BENCHMARK(BM_defragment)->Iterations(20)->Unit(benchmark::kMicrosecond);

/// Per-sequence state of sequence 0 (12k cells, 48 MiB of rows plus metadata).
void BM_state_write(benchmark::State& state) {
  cache_t c = make_filled();
  std::vector<std::uint8_t> blob;  // reused, as a server saving sessions in a loop would
  for (auto _ : state) {
    must(memory::state_write(c, 0, blob), "state_write");
    benchmark::DoNotOptimize(blob.data());
  }
  report_op(state, static_cast<double>(blob.size()));
}
BENCHMARK(BM_state_write)->Unit(benchmark::kMillisecond);

/// Restores that state into sequence 0 (its 12k cells are replaced).
void BM_state_read(benchmark::State& state) {
  cache_t c = make_filled();
  auto blob = memory::state_write(c, 0);
  must(blob.is_ok() ? status{} : blob.error(), "state_write");
  const std::vector<std::uint8_t> bytes = std::move(blob).value();
  for (auto _ : state) must(memory::state_read(c, bytes, 0), "state_read");
  report_op(state, static_cast<double>(bytes.size()));
}
BENCHMARK(BM_state_read)->Unit(benchmark::kMillisecond);

}  // namespace

MNEMO_BENCH_MAIN();
