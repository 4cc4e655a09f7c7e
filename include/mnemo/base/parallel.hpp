// The one place mnemo starts threads: OpenMP when the build has it, else serial.
// Callers give independent work items; a kernel never synchronises inside an item.
//
//   parallel_for(n_items, n_threads, fn)   fn(item, thread) for every item
//   run_team(n_threads, body)              body() on this thread, with n_threads - 1
//                                          threads in one parallel region serving its
//                                          parallel_for calls (a decode step: one region
//                                          instead of one per product)
#pragma once

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <optional>
#include <thread>
#include <type_traits>
#include <utility>

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

/// How often this process synchronised threads (relaxed counts, for tests and
/// benchmarks): parallel regions opened, and parallel_for calls a team served.
struct parallel_counts {
  std::uint64_t regions = 0;
  std::uint64_t team_jobs = 0;
};

namespace detail {

struct parallel_counters {
  std::atomic<std::uint64_t> regions{0}, team_jobs{0};
};
inline parallel_counters& counters() noexcept {
  static parallel_counters c;
  return c;
}

/// Spins briefly, then yields: a waiting thread gives its core back when another
/// process wants it (a shared machine), and reacts within ~100 ns when not.
class backoff {
 public:
  void pause() noexcept {
    if (++spins_ < 2048) {
#if defined(__x86_64__) || defined(__i386__)
      __builtin_ia32_pause();
#endif
      return;
    }
    std::this_thread::yield();
  }

 private:
  unsigned spins_ = 0;
};

/// The threads of one run_team region. Thread 0 (the leader) runs the body; the others
/// wait in serve() for jobs, each a parallel_for of the body, until close().
///
/// A job's items are claimed from `ticket_`, (job number << 32) | next item, by
/// compare-and-swap; `done_` counts finished items and the leader returns once it is
/// the job's item count. A thread that wakes late, after the job is over, claims
/// nothing: the leader closes the ticket (next item = k_closed) before it writes the
/// next job, and a claim succeeds only on the ticket the thread read the job under. So
/// the leader waits for items, never for threads: no thread has to reach any point, and
/// the body may return (an error status) between any two jobs.
class team {
 public:
  explicit team(int size) noexcept : size_(size) {}
  int size() const noexcept { return size_; }

  /// Items a job can have (the ticket holds the next one in 32 bits).
  static constexpr std::size_t k_max_items = 0xfffffffeu;

  /// fn(item, thread) for items [0, n_items) on threads [0, min(n_threads, size())),
  /// the leader included; returns when every item is done. Leader only.
  template <class Fn>
  void run(std::size_t n_items, int n_threads, Fn& fn) {
    // Release stores: a thread that reads one of these also sees the previous job's
    // ticket closed, so its claim on that job fails.
    const std::uint64_t job = ++jobs_;
    call_.store(&call_fn<Fn>, std::memory_order_release);
    fn_.store(&fn, std::memory_order_release);
    n_items_.store(n_items, std::memory_order_release);
    limit_.store(std::min(n_threads, size_), std::memory_order_release);
    done_.store(0, std::memory_order_relaxed);
    ticket_.store(job << 32, std::memory_order_release);  // publishes the job
    work(0, job << 32);
    backoff b;
    while (done_.load(std::memory_order_acquire) != n_items) b.pause();
    ticket_.store((job << 32) | k_closed, std::memory_order_release);
  }

  /// A worker's loop: the jobs of the region until close(). Threads other than 0.
  void serve(int thread) {
    std::uint64_t seen = 0;  // the last job this thread looked at
    backoff b;
    while (!closed_.load(std::memory_order_acquire)) {
      const std::uint64_t t = ticket_.load(std::memory_order_acquire);
      if ((t >> 32) == seen || (t & k_item_mask) == k_closed) {
        b.pause();
        continue;
      }
      seen = t >> 32;
      b = backoff{};
      if (thread < limit_.load(std::memory_order_acquire)) work(thread, t);
    }
  }

  void close() noexcept { closed_.store(true, std::memory_order_release); }

 private:
  static constexpr std::uint64_t k_item_mask = 0xffffffffu;
  static constexpr std::uint64_t k_closed = k_item_mask;

  template <class Fn>
  static void call_fn(void* fn, std::size_t item, int thread) {
    (*static_cast<Fn*>(fn))(item, thread);
  }

  /// Claims and runs items of the job whose ticket was t (when read) until none is left.
  void work(int thread, std::uint64_t t);

  int size_;
  std::uint64_t jobs_ = 0;  // leader only
  // The job: written by the leader while the ticket is closed, read after a claim
  // succeeded (acquire: a field of the next job read here means the claim fails).
  std::atomic<void (*)(void*, std::size_t, int)> call_{nullptr};
  std::atomic<void*> fn_{nullptr};
  std::atomic<std::size_t> n_items_{0};
  std::atomic<int> limit_{0};
  alignas(64) std::atomic<std::uint64_t> ticket_{k_closed};
  alignas(64) std::atomic<std::size_t> done_{0};
  alignas(64) std::atomic<bool> closed_{false};
};

/// The team the calling thread leads (null outside run_team), and whether it runs an
/// item now (a parallel_for inside an item runs serially, as a nested region would).
inline thread_local team* current_team = nullptr;
inline thread_local bool in_item = false;

inline void team::work(int thread, std::uint64_t t) {
  const std::uint64_t job = t >> 32;
  for (;;) {
    // Read the job before claiming: the claim succeeds only if the ticket did not move
    // on since, so these are the fields of job `job`.
    const std::size_t n = n_items_.load(std::memory_order_acquire);
    const auto call = call_.load(std::memory_order_acquire);
    void* fn = fn_.load(std::memory_order_acquire);
    const std::uint64_t item = t & k_item_mask;
    if ((t >> 32) != job || item >= n || item == k_closed) return;
    if (!ticket_.compare_exchange_weak(t, t + 1, std::memory_order_acq_rel,
                                       std::memory_order_acquire))
      continue;  // t now holds the current ticket
    in_item = true;
    call(fn, static_cast<std::size_t>(item), thread);
    in_item = false;
    done_.fetch_add(1, std::memory_order_release);
    t = ticket_.load(std::memory_order_acquire);
  }
}

}  // namespace detail

inline parallel_counts parallel_stats() noexcept {
  const auto& c = detail::counters();
  return {c.regions.load(std::memory_order_relaxed), c.team_jobs.load(std::memory_order_relaxed)};
}

/// Calls fn(item, thread) for every item in [0, n_items), spread over n_threads
/// (0 = default_thread_count()); `thread` is in [0, n_threads) so callers can index
/// per-thread scratch. Items are handed out dynamically: their costs differ. Inside
/// run_team the team's threads take the items (no region of its own); inside an item,
/// the items run serially on the calling thread.
template <class Fn>
void parallel_for(std::size_t n_items, int n_threads, Fn&& fn) {
  if (n_threads <= 0) n_threads = default_thread_count();
#if MNEMO_HAS_OPENMP
  if (n_threads > 1 && n_items > 1 && !detail::in_item) {
    if (detail::team* t = detail::current_team) {
      if (t->size() > 1 && n_items <= detail::team::k_max_items) {
        detail::counters().team_jobs.fetch_add(1, std::memory_order_relaxed);
        t->run(n_items, n_threads, fn);
        return;
      }
    } else {
      detail::counters().regions.fetch_add(1, std::memory_order_relaxed);
#pragma omp parallel num_threads(n_threads)
      {
        const int th = omp_get_thread_num();
#pragma omp for schedule(dynamic, 1)
        for (std::ptrdiff_t i = 0; i < static_cast<std::ptrdiff_t>(n_items); ++i)
          fn(static_cast<std::size_t>(i), th);
      }
      return;
    }
  }
#endif
  for (std::size_t i = 0; i < n_items; ++i) fn(i, 0);
}

/// Returns body(), run on the calling thread while n_threads - 1 more threads (0 =
/// default_thread_count() in all) wait in one parallel region to take the items of the
/// parallel_for calls body makes on this thread. The work between those calls runs on
/// this thread alone. Any return path of body is safe: the other threads wait only for
/// jobs, and leave when body returns. Inside another team, an item, or with one
/// thread, body() simply runs.
template <class Body>
auto run_team(int n_threads, Body&& body) -> decltype(body()) {
  if (n_threads <= 0) n_threads = default_thread_count();
#if MNEMO_HAS_OPENMP
  if (n_threads > 1 && detail::current_team == nullptr && !detail::in_item) {
    using R = decltype(body());
    detail::counters().regions.fetch_add(1, std::memory_order_relaxed);
    // Sized as asked: if the runtime gives fewer threads, the missing ones claim no
    // items and the others (the leader at least) take them all.
    detail::team t(n_threads);
    std::optional<std::conditional_t<std::is_void_v<R>, bool, R>> result;
#pragma omp parallel num_threads(n_threads)
    {
      if (omp_get_thread_num() == 0) {
        detail::current_team = &t;
        if constexpr (std::is_void_v<R>) {
          body();
          result.emplace(true);
        } else {
          result.emplace(body());
        }
        detail::current_team = nullptr;
        t.close();
      } else {
        t.serve(omp_get_thread_num());
      }
    }
    if constexpr (!std::is_void_v<R>)
      return std::move(*result);
    else
      return;
  }
#endif
  return body();
}

}  // namespace mnemo
