// A process-wide setting: a value the library's calls read once when they start and a
// host (or a test) may change between calls: the software prefetch target, the cost of
// widening f16, whether models get weight tiles, the attention's product precision.
// Relaxed atomics: a call that runs
// while the value changes keeps the value it read.
#pragma once

#include <atomic>

namespace mnemo {

template <class T>
class process_setting {
 public:
  explicit process_setting(T initial) noexcept : value_(initial) {}
  T get() const noexcept { return value_.load(std::memory_order_relaxed); }
  void set(T v) noexcept { value_.store(v, std::memory_order_relaxed); }

 private:
  std::atomic<T> value_;
};

}  // namespace mnemo
