// Sanitizer and unoptimised builds run the randomized tests with fewer seeds or steps:
// they exist there to catch memory errors on every path, not to repeat the release
// build's statistics (which runs the full counts).
#pragma once

#include <cstddef>

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__) || !defined(__OPTIMIZE__)
#define MNEMO_TEST_SLOW_BUILD 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(undefined_behavior_sanitizer) || \
    __has_feature(memory_sanitizer) || __has_feature(thread_sanitizer)
#define MNEMO_TEST_SLOW_BUILD 1
#endif
#endif

namespace mnemo_test {

#if defined(MNEMO_TEST_SLOW_BUILD)
inline constexpr bool k_slow_build = true;
#else
inline constexpr bool k_slow_build = false;
#endif

/// `n` in a release build, n / divisor (at least 1) in a slow one.
constexpr std::size_t scaled_count(std::size_t n, std::size_t divisor) noexcept {
  return k_slow_build ? (n / divisor > 0 ? n / divisor : 1) : n;
}

}  // namespace mnemo_test
