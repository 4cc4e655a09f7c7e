// The one place mnemo starts threads: OpenMP when the build has it, else serial.
// Callers give independent work items; a kernel never synchronises inside an item.
#pragma once

#include <cstddef>

#include "mnemo/base/config.hpp"

#if MNEMO_HAS_OPENMP
#include <omp.h>
#endif

namespace mnemo {

/// Threads a parallel region uses when the caller asks for 0 ("all").
inline int default_thread_count() noexcept {
#if MNEMO_HAS_OPENMP
  return omp_get_max_threads();
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
