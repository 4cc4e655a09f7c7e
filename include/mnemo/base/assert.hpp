// Debug-only assertions for kernels (tier 2 of the error model). They compile out
// when NDEBUG is set and never throw, so they are safe inside OpenMP regions.
#pragma once

#include <cstdio>
#include <cstdlib>

#if defined(NDEBUG) && !defined(MNEMO_ENABLE_DASSERT)
#define MNEMO_DASSERT(cond) ((void)0)
#else
#define MNEMO_DASSERT(cond) \
  ((cond) ? (void)0 : ::mnemo::detail::dassert_fail(#cond, __FILE__, __LINE__))
#endif

namespace mnemo::detail {
[[noreturn]] inline void dassert_fail(const char* cond, const char* file, int line) {
  std::fprintf(stderr, "mnemo: internal invariant violated: %s (%s:%d)\n", cond, file, line);
  std::abort();
}
}  // namespace mnemo::detail
