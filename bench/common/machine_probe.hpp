// Measurements behind machine_limits(): DRAM read bandwidth and FP32 FMA peak, on one
// thread or on n pinned threads. bench/machine.cpp shows the same loops through Google
// Benchmark; this file times them directly so any bench binary can get the figures in
// well under a second.
#pragma once

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdlib>
#include <utility>
#include <vector>

#if defined(__linux__)
#include <sys/mman.h>
#endif

#include "common/probe_kernels.hpp"
#include "common/threads.hpp"

#include "mnemo/simd/isa.hpp"

namespace mnemo_bench {

/// Buffers of the read-bandwidth probes: 16x and 32x the 32 MiB L3 of the reference
/// machine, so nothing a pass reads is still cached from an earlier pass.
/// machine_limits() uses the smaller one to stay fast; bench_machine the larger one.
inline constexpr std::size_t k_limits_read_bytes = std::size_t{512} << 20;
inline constexpr std::size_t k_bench_read_bytes = std::size_t{1} << 30;

/// A page-touched f32 buffer for streaming reads. Pages are written before any timing
/// (an untouched page would read the shared zero page, from cache) and backed by
/// transparent huge pages where the kernel allows it: fewer TLB misses, and far fewer
/// page faults, which cost ~2 s per GiB of 4 KiB pages under KVM on the reference
/// machine against ~0.05-0.3 s per GiB with 2 MiB pages.
class stream_buffer {
 public:
  stream_buffer() = default;
  stream_buffer(const stream_buffer&) = delete;
  stream_buffer& operator=(const stream_buffer&) = delete;
  ~stream_buffer() { std::free(data_); }

  /// Allocates and touches `bytes` (rounded down to whole 2 MiB pages), thread i of
  /// `threads` touching the i-th contiguous part. Returns false when out of memory.
  /// (First touch places pages on a NUMA node; the probes assume one node.)
  bool allocate(std::size_t bytes, int threads) {
    constexpr std::size_t huge = std::size_t{2} << 20;
    std::free(data_);
    data_ = nullptr;
    n_ = 0;
    bytes = std::max(huge, bytes / huge * huge);
    data_ = static_cast<float*>(std::aligned_alloc(huge, bytes));
    if (data_ == nullptr) return false;
#if defined(__linux__) && defined(MADV_HUGEPAGE)
    madvise(data_, bytes, MADV_HUGEPAGE);  // advice only; failure is harmless
#endif
    n_ = bytes / sizeof(float);
    run_pinned_threads(threads, [&](int t) {
      const std::size_t T = static_cast<std::size_t>(threads), i = static_cast<std::size_t>(t);
      std::fill(data_ + n_ * i / T, data_ + n_ * (i + 1) / T, 1.0f);
    });
    return true;
  }

  /// Thread t's contiguous share when `threads` threads split the buffer, [p, p + n).
  /// Chunks are whole multiples of 64 floats (one AVX-512 register per cache line).
  std::pair<float*, std::size_t> chunk(int t, int threads) const noexcept {
    const std::size_t per = n_ / static_cast<std::size_t>(threads) / 64 * 64;
    return {data_ + per * static_cast<std::size_t>(t), per};
  }

  std::size_t size() const noexcept { return n_; }
  std::size_t bytes() const noexcept { return n_ * sizeof(float); }
  const float* data() const noexcept { return data_; }

 private:
  float* data_ = nullptr;
  std::size_t n_ = 0;
};

/// Keeps a probe result alive (stored once per pass, outside the loops).
inline void keep(float x) noexcept {
  static std::atomic<float> sink{0.0f};
  sink.store(x, std::memory_order_relaxed);
}

/// Repeats pass() (returning one pass's figure) until `budget_seconds` are spent and
/// at least `min_passes` ran, and returns the best figure. Best, not median: the
/// machine is shared, and interference only ever lowers a pass.
template <class Pass>
double best_of_passes(double budget_seconds, int min_passes, Pass&& pass) {
  using clock = std::chrono::steady_clock;
  const auto t0 = clock::now();
  double best = 0.0;
  for (int r = 0;; ++r) {
    const double elapsed = std::chrono::duration<double>(clock::now() - t0).count();
    if (r >= min_passes && elapsed >= budget_seconds) break;
    best = std::max(best, pass());
  }
  return best;
}

/// Read bandwidth, GB/s (1e9 bytes/s): best pass in which `threads` pinned threads each
/// stream their contiguous share of one `pass_bytes` region of `buf` (0: all of it).
/// Successive passes walk the buffer region by region, so a region was last read
/// buf.bytes() / pass_bytes passes ago and has long left the caches.
///
/// Pass length is a trade-off measured on the reference machine (2 vCPUs, KVM, shared
/// with other jobs): short passes (64 MiB, ~2 ms) dodge preemption, so the best pass is
/// robust on a busy machine, and one thread shows the same ~40 GB/s in 64 MiB passes as
/// in 1 GiB ones. But two threads sometimes reach ~80 GB/s in passes of <= 256 MiB
/// while no pass of 1 GiB, nor Google Benchmark's sustained runs, exceed ~43 GB/s: the
/// host lets short bursts through. So machine_limits() uses short passes for one thread
/// and whole-buffer passes for all threads (never reporting less than one thread).
inline double measure_read_gbps(const stream_buffer& buf, int threads, double budget_seconds,
                                std::size_t pass_bytes = 0, int min_passes = 3) {
  using isa = mnemo::simd::native;
  const std::size_t region =
      pass_bytes == 0 ? buf.size() : std::min(buf.size(), pass_bytes / sizeof(float));
  const std::size_t regions = std::max<std::size_t>(1, buf.size() / region);
  const std::size_t per = region / static_cast<std::size_t>(threads) / 64 * 64;  // [floats]
  const double bytes = static_cast<double>(per) * sizeof(float) * threads;
  std::vector<float> sums(static_cast<std::size_t>(threads));
  std::size_t pass = 0;
  const double best = best_of_passes(budget_seconds, min_passes, [&] {
    const float* base = buf.data() + (pass++ % regions) * region;
    const double s = run_pinned_threads(threads, [&](int t) {
      sums[static_cast<std::size_t>(t)] =
          probe::read_sum<isa>(base + per * static_cast<std::size_t>(t), per);
    });
    return bytes / s * 1e-9;
  });
  for (float x : sums) keep(x);
  return best;
}

/// FP32 FMA throughput, GFLOP/s (2 FLOPs per FMA lane): best pass of about
/// `pass_seconds` in which `threads` pinned threads run independent chains of the
/// native ISA. Many short passes rather than a few long ones: on a shared machine a
/// short pass is more likely to find every core free.
inline double measure_fma_gflops(int threads, double budget_seconds, double pass_seconds = 0.002,
                                 int min_passes = 5) {
  using isa = mnemo::simd::native;
  using clock = std::chrono::steady_clock;
  // Runtime constants so the chains cannot be folded.
  static volatile float mul_src = 0.999999f, add_src = 1e-6f;
  const float mul = mul_src, add = add_src;
  // Calibrate the step count on this thread (this also wakes the FMA units).
  std::size_t iters = std::size_t{1} << 12;
  for (;;) {
    const auto t0 = clock::now();
    keep(probe::fma_chains<isa>(iters, mul, add));
    const double s = std::chrono::duration<double>(clock::now() - t0).count();
    if (s >= pass_seconds / 4 || iters >= (std::size_t{1} << 34)) {
      iters =
          static_cast<std::size_t>(static_cast<double>(iters) * pass_seconds / std::max(s, 1e-9));
      break;
    }
    iters *= 4;
  }
  iters = std::max<std::size_t>(iters, 1);
  std::vector<float> sums(static_cast<std::size_t>(threads));
  const double flops = probe::fma_chains_flops<isa>(iters) * threads;
  const double best = best_of_passes(budget_seconds, min_passes, [&] {
    const double s = run_pinned_threads(threads, [&](int t) {
      sums[static_cast<std::size_t>(t)] = probe::fma_chains<isa>(iters, mul, add);
    });
    return flops / s * 1e-9;
  });
  for (float x : sums) keep(x);
  return best;
}

}  // namespace mnemo_bench
