// parallel_for and run_team: every item runs once with a thread index below the count
// asked for, a team serves every call of its body in one parallel region, the body may
// return after any call (no thread is left waiting: a hang fails the test through a
// watchdog instead of stalling it), items that call parallel_for run it serially, and
// thousands of short calls in one team lose no item.
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <future>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "mnemo/base/parallel.hpp"
#include "mnemo/base/status.hpp"

namespace {

using mnemo::parallel_for;
using mnemo::run_team;

/// Runs f on another thread and fails the process if it does not finish in time (a
/// deadlocked team cannot be joined).
template <class F>
void within_seconds(int seconds, F f) {
  std::packaged_task<void()> task(std::move(f));
  auto done = task.get_future();
  std::thread th(std::move(task));
  if (done.wait_for(std::chrono::seconds(seconds)) == std::future_status::timeout) {
    std::fprintf(stderr, "parallel_test: no return within %d s (deadlock)\n", seconds);
    std::fflush(stderr);
    std::_Exit(1);
  }
  th.join();
}

/// Runs parallel_for(n, n_threads) and checks every item ran once on a thread index
/// below min(n_threads, max_thread).
void check_cover(std::size_t n, int n_threads, int max_thread) {
  std::vector<std::atomic<int>> hits(n);
  std::atomic<int> bad_thread{-1};
  parallel_for(n, n_threads, [&](std::size_t i, int t) {
    if (t < 0 || t >= std::min(n_threads, max_thread)) bad_thread = t;
    hits[i].fetch_add(1);
  });
  for (std::size_t i = 0; i < n; ++i)
    ASSERT_EQ(hits[i].load(), 1) << "item " << i << " of " << n << ", " << n_threads << " threads";
  EXPECT_EQ(bad_thread.load(), -1) << n << " items, " << n_threads << " threads";
}

TEST(ParallelFor, EveryItemOnceOnAThreadBelowTheCount) {
  for (std::size_t n : {0, 1, 2, 7, 100})
    for (int threads : {1, 2, 3}) check_cover(n, threads, threads);
}

TEST(RunTeam, ServesEveryCallInOneRegion) {
  within_seconds(60, [] {
    const mnemo::parallel_counts before = mnemo::parallel_stats();
    const int calls = run_team(2, [] {
      int multi = 0;  // calls that can use more than one thread
      for (std::size_t n : {0, 1, 2, 7, 100})
        for (int threads : {1, 2, 3}) {
          check_cover(n, threads, 2);  // the team has 2 threads
          multi += n > 1 && threads > 1;
        }
      return multi;
    });
    const mnemo::parallel_counts after = mnemo::parallel_stats();
#if MNEMO_HAS_OPENMP
    EXPECT_EQ(after.regions - before.regions, 1u);
    EXPECT_EQ(after.team_jobs - before.team_jobs, static_cast<std::uint64_t>(calls));
#else
    EXPECT_EQ(after.regions, before.regions);
    (void)calls;
#endif
  });
}

TEST(RunTeam, TheBodyMayReturnAfterAnyCall) {
  within_seconds(60, [] {
    for (int stop = 0; stop <= 4; ++stop)
      for (int threads : {2, 3}) {
        std::vector<int> out(64, 0);
        const mnemo::status st = run_team(threads, [&]() -> mnemo::status {
          for (int call = 0;; ++call) {
            if (call == stop)
              return mnemo::make_status(mnemo::status_code::aborted, "stopped at %d", call);
            parallel_for(out.size(), threads, [&](std::size_t i, int) { out[i] += 1; });
          }
        });
        EXPECT_EQ(st.code(), mnemo::status_code::aborted);
        for (int v : out) ASSERT_EQ(v, stop) << "stop " << stop << ", " << threads << " threads";
      }
  });
}

TEST(RunTeam, WaitsForSlowItemsAndNestsSerially) {
  within_seconds(60, [] {
    std::vector<int> out(8, 0);
    run_team(2, [&] {
      parallel_for(out.size(), 2, [&](std::size_t i, int) {
        if (i % 3 == 0) std::this_thread::sleep_for(std::chrono::milliseconds(2));
        // A call inside an item runs on this thread alone, as thread 0.
        int inner = 0;
        parallel_for(4, 2, [&](std::size_t, int t) { inner += t == 0 ? 1 : 100; });
        // So does a team inside an item.
        run_team(2, [&] { parallel_for(3, 2, [&](std::size_t, int t) { inner += t == 0; }); });
        out[i] = inner;
      });
      for (std::size_t i = 0; i < out.size(); ++i) EXPECT_EQ(out[i], 7) << "item " << i;
    });
  });
}

TEST(RunTeam, ManyShortCallsLoseNoItem) {
  within_seconds(60, [] {
    std::vector<std::size_t> sums(3000, 0);
    run_team(3, [&] {
      for (std::size_t c = 0; c < sums.size(); ++c) {
        std::vector<std::size_t> part(1 + c % 5, 0);
        parallel_for(part.size(), 1 + static_cast<int>(c % 3),
                     [&](std::size_t i, int) { part[i] = c + i; });
        for (std::size_t v : part) sums[c] += v;
      }
    });
    for (std::size_t c = 0; c < sums.size(); ++c) {
      const std::size_t n = 1 + c % 5;
      ASSERT_EQ(sums[c], n * c + n * (n - 1) / 2) << "call " << c;
    }
  });
}

TEST(RunTeam, ReturnsTheBodysValue) {
  EXPECT_EQ(run_team(2, [] { return 42; }), 42);
  EXPECT_EQ(run_team(1, [] { return 7; }), 7);
  int ran = 0;
  run_team(2, [&] { ++ran; });
  EXPECT_EQ(ran, 1);
}

}  // namespace
