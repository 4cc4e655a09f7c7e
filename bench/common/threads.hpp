// Thread helpers for the benches: the CPUs this process may run on, pinning, and
// running one callable on n pinned threads that start together.
#pragma once

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <thread>
#include <vector>

#if defined(__linux__)
#include <pthread.h>
#include <sched.h>
#endif

namespace mnemo_bench {

/// CPUs this process may run on (its affinity mask, so `taskset` and cgroup cpusets
/// are honoured), in increasing order; at least one entry. Read once, on first use, so
/// that a thread pinned later by these helpers does not shrink it; the bench mains
/// make that first use before any pinning.
inline const std::vector<int>& allowed_cpus() {
  static const std::vector<int> cpus = [] {
    std::vector<int> cpus;
#if defined(__linux__)
    cpu_set_t set;
    CPU_ZERO(&set);
    if (sched_getaffinity(0, sizeof(set), &set) == 0) {
      for (int c = 0; c < CPU_SETSIZE; ++c)
        if (CPU_ISSET(c, &set)) cpus.push_back(c);
    }
#endif
    if (cpus.empty()) {
      const unsigned n = std::max(1u, std::thread::hardware_concurrency());
      for (unsigned c = 0; c < n; ++c) cpus.push_back(static_cast<int>(c));
    }
    return cpus;
  }();
  return cpus;
}

/// Number of CPUs this process may use: the "all threads" count of the benches.
inline int usable_threads() { return static_cast<int>(allowed_cpus().size()); }

/// Affinity of the calling thread, saved so a pin can be undone (the main thread of a
/// Google Benchmark run is reused by later benchmarks and must not stay pinned).
struct saved_affinity {
#if defined(__linux__)
  cpu_set_t set{};
  bool valid = false;
#endif
};

inline saved_affinity save_affinity() {
  saved_affinity s;
#if defined(__linux__)
  CPU_ZERO(&s.set);
  s.valid = pthread_getaffinity_np(pthread_self(), sizeof(s.set), &s.set) == 0;
#endif
  return s;
}

inline void restore_affinity([[maybe_unused]] const saved_affinity& s) {
#if defined(__linux__)
  if (s.valid) pthread_setaffinity_np(pthread_self(), sizeof(s.set), &s.set);
#endif
}

/// Pins the calling thread to the `index`-th allowed CPU (modulo their count). Returns
/// false where pinning is unavailable or refused (containers may forbid it); the
/// measurement then runs unpinned, which only costs some noise.
inline bool pin_this_thread(int index) {
#if defined(__linux__)
  const std::vector<int>& cpus = allowed_cpus();
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpus[static_cast<std::size_t>(index) % cpus.size()], &set);
  return pthread_setaffinity_np(pthread_self(), sizeof(set), &set) == 0;
#else
  (void)index;
  return false;
#endif
}

/// Runs fn(thread_index) on n threads, thread i pinned to allowed CPU i, all released
/// at once after every thread is up and pinned. Returns the wall time in seconds from
/// the release to the end of the slowest thread. The calling thread only waits.
template <class Fn>
double run_pinned_threads(int n, Fn&& fn) {
  using clock = std::chrono::steady_clock;
  n = std::max(n, 1);
  std::atomic<int> ready{0};
  std::atomic<bool> go{false};
  std::vector<clock::time_point> end(static_cast<std::size_t>(n));
  std::vector<std::thread> pool;
  pool.reserve(static_cast<std::size_t>(n));
  for (int i = 0; i < n; ++i) {
    pool.emplace_back([&, i] {
      pin_this_thread(i);
      ready.fetch_add(1, std::memory_order_acq_rel);
      while (!go.load(std::memory_order_acquire)) std::this_thread::yield();
      fn(i);
      end[static_cast<std::size_t>(i)] = clock::now();
    });
  }
  while (ready.load(std::memory_order_acquire) < n) std::this_thread::yield();
  const clock::time_point start = clock::now();
  go.store(true, std::memory_order_release);
  for (auto& t : pool) t.join();
  const clock::time_point last = *std::max_element(end.begin(), end.end());
  return std::chrono::duration<double>(last - start).count();
}

}  // namespace mnemo_bench
