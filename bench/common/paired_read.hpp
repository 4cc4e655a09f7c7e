// Paired read passes: the read bandwidth of the same milliseconds as a kernel's calls.
//
// On the reference machine the DRAM bandwidth a VM gets moves by +-10-20% from one
// minute to the next (docs/performance.md, "Method"), so a kernel's
// frac_read_bw, measured against a probe taken when the process started, mixes the
// kernel's efficiency with the machine's mood. With MNEMO_BENCH_PAIRED=1 every timed
// call is followed by one read pass over as many bytes, streamed with the probe's
// loop (probe::read_sum) by the kernels' own threads (mnemo::parallel_for: pinned
// probe threads would compete with the OpenMP workers still spinning after the call)
// from a buffer far larger than the L3, with the benchmark's timer paused.
// frac_paired_read = total pass time / total call time is then the call's byte rate
// as a fraction of the read bandwidth of the same moments; frac_paired_read_med is
// the median over calls of each call's own ratio (pass / call), which a call or pass
// that lost its thread to another process for a time slice does not move (on a busy
// VM the totals did: a 60 us product took 800 us in most calls). Off by default: it doubles
// a run's time and evicts the caches between calls (a context that would stay in the
// L3 is read cold).
#pragma once

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "common/machine_probe.hpp"
#include <benchmark/benchmark.h>

#include "mnemo/base/parallel.hpp"
#include "mnemo/simd/isa.hpp"

namespace mnemo_bench {

/// MNEMO_BENCH_PAIRED=1 (read once).
inline bool paired_read_enabled() {
  static const bool on = [] {
    const char* v = std::getenv("MNEMO_BENCH_PAIRED");
    return v != nullptr && std::atoi(v) != 0;
  }();
  return on;
}

/// The buffer the paired passes walk: allocated and touched on first use, once per
/// process (k_limits_read_bytes, 16x the L3, like the probe's).
inline const stream_buffer& paired_read_buffer(int threads) {
  static stream_buffer buf;
  [[maybe_unused]] static const bool once = [&] {
    const bool ok = buf.allocate(k_limits_read_bytes, threads);
    if (!ok) std::fprintf(stderr, "paired read: cannot allocate the buffer\n");
    return ok;
  }();
  return buf;
}

/// Times a benchmark's calls and, when enabled, pairs each with one read pass.
class paired_read {
 public:
  /// `bytes`: what one call reads; `threads`: how many threads it runs on.
  paired_read(benchmark::State& state, double bytes, int threads)
      : state_(state), threads_(std::max(threads, 1)) {
    if (!paired_read_enabled()) return;
    const stream_buffer& buf = paired_read_buffer(threads_);
    if (buf.size() == 0) return;
    // Whole 64-float chunks per thread; a call larger than half the buffer is paired
    // with a pass over half of it and its time scaled (so no pass reads cached data).
    const std::size_t want = static_cast<std::size_t>(bytes / sizeof(float));
    const std::size_t cap = buf.size() / 2;
    const std::size_t unit = 64 * static_cast<std::size_t>(threads_);
    pass_floats_ = std::max(unit, std::min(want, cap) / unit * unit);
    scale_ = bytes / (static_cast<double>(pass_floats_) * sizeof(float));
    sums_.resize(static_cast<std::size_t>(threads_));
  }

  /// The seconds a call's FMAs take at the FMA peak: the roofline of a call is then
  /// the longer of its read pass and this (frac_paired_roofline).
  void set_fma_seconds(double seconds) { fma_seconds_ = seconds; }

  /// Runs call() timed, then (timer paused) one read pass; returns the call's seconds.
  template <class Fn>
  double call(Fn&& fn) {
    using clock = std::chrono::steady_clock;
    const auto t0 = clock::now();
    fn();
    const double s = std::chrono::duration<double>(clock::now() - t0).count();
    call_seconds_ += s;
    if (pass_floats_ != 0) {
      state_.PauseTiming();
      const double p = pass() * scale_;
      pass_seconds_ += p;
      roofline_seconds_ += std::max(p, fma_seconds_);
      if (s > 0.0) {
        ratios_.push_back(p / s);
        roofline_ratios_.push_back(std::max(p, fma_seconds_) / s);
      }
      state_.ResumeTiming();
    }
    return s;
  }

  /// frac_paired_read and frac_paired_read_med (only when passes ran), and with
  /// set_fma_seconds frac_paired_roofline and frac_paired_roofline_med: the same with
  /// max(pass, FMA seconds) in place of the pass.
  void add_counter() {
    if (pass_floats_ == 0 || call_seconds_ <= 0.0) return;
    state_.counters["frac_paired_read"] = pass_seconds_ / call_seconds_;
    if (fma_seconds_ > 0.0)
      state_.counters["frac_paired_roofline"] = roofline_seconds_ / call_seconds_;
    if (ratios_.empty()) return;
    state_.counters["frac_paired_read_med"] = median(ratios_);
    if (fma_seconds_ > 0.0) state_.counters["frac_paired_roofline_med"] = median(roofline_ratios_);
  }

 private:
  double pass() {
    using isa = mnemo::simd::native;
    const stream_buffer& buf = paired_read_buffer(threads_);
    if (cursor_ + pass_floats_ > buf.size()) cursor_ = 0;
    const float* base = buf.data() + cursor_;
    cursor_ += pass_floats_;
    const std::size_t per = pass_floats_ / static_cast<std::size_t>(threads_);
    const auto t0 = std::chrono::steady_clock::now();
    mnemo::parallel_for(static_cast<std::size_t>(threads_), threads_, [&](std::size_t part, int) {
      sums_[part] = probe::read_sum<isa>(base + per * part, per);
    });
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    for (float x : sums_) keep(x);
    return s;
  }

  static double median(std::vector<double>& v) {
    const auto mid = v.begin() + static_cast<std::ptrdiff_t>(v.size() / 2);
    std::nth_element(v.begin(), mid, v.end());
    return *mid;
  }

  benchmark::State& state_;
  int threads_;
  std::size_t pass_floats_ = 0, cursor_ = 0;
  double scale_ = 1.0, call_seconds_ = 0.0, pass_seconds_ = 0.0;
  double fma_seconds_ = 0.0, roofline_seconds_ = 0.0;
  std::vector<float> sums_;
  std::vector<double> ratios_;           // per call: pass seconds / call seconds
  std::vector<double> roofline_ratios_;  // per call: max(pass, FMA seconds) / call seconds
};

}  // namespace mnemo_bench
