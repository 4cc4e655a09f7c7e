// The one place mnemo starts threads: OpenMP when the build has it, else serial.
// Callers give independent work items; a kernel never synchronises inside an item.
#pragma once

#include <cstddef>
#include <cstdlib>

#include "mnemo/base/config.hpp"
#include "mnemo/base/cpu_topology.hpp"

#if MNEMO_HAS_OPENMP
#include <omp.h>
#endif

namespace mnemo {

/// Threads a parallel region uses when the caller asks for 0: the physical cores
/// available to the process (cpu_topology.hpp), capped by OMP_NUM_THREADS when the
/// user set it; 1 without OpenMP. Read once: the topology does not change under a
/// running process often enough to pay a sysfs walk per call.
inline int default_thread_count() noexcept {
#if MNEMO_HAS_OPENMP
  static const int n = [] {
    int cores = physical_cores_available();
    if (std::getenv("OMP_NUM_THREADS") != nullptr) cores = std::min(cores, omp_get_max_threads());
    return cores < 1 ? 1 : cores;
  }();
  return n;
#else
  return 1;
#endif
}

/// Calls fn(item, thread) for every item in [0, n_items), spread over n_threads
/// (0 = default_thread_count()); `thread` is in [0, n_threads) so callers can index
/// per-thread scratch. Items are handed out dynamically: their costs differ.
template <class Fn>
void parallel_for(std::size_t n_items, int n_threads, Fn&& fn) {
  if (n_threads <= 0) n_threads = default_thread_count();
#if MNEMO_HAS_OPENMP
  if (n_threads > 1 && n_items > 1) {
#pragma omp parallel num_threads(n_threads)
    {
      const int t = omp_get_thread_num();
#pragma omp for schedule(dynamic, 1)
      for (std::ptrdiff_t i = 0; i < static_cast<std::ptrdiff_t>(n_items); ++i)
        fn(static_cast<std::size_t>(i), t);
    }
    return;
  }
#endif
  for (std::size_t i = 0; i < n_items; ++i) fn(i, 0);
}

}  // namespace mnemo
