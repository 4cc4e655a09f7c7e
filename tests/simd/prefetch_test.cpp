// simd::prefetch_target: the per-CPU default is stable, set/current round-trip, and a
// prefetch of any address (null, unmapped, past a mapping's end) never faults.
#include <cstddef>
#include <cstdint>

#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>

#include "mnemo/simd/prefetch.hpp"

namespace {

namespace simd = mnemo::simd;

TEST(SimdPrefetch, DefaultIsTheDetectedTargetAndStable) {
  const simd::prefetch_target a = simd::detect_prefetch_target();
  EXPECT_EQ(a, simd::detect_prefetch_target());
  EXPECT_TRUE(a == simd::prefetch_target::l1 || a == simd::prefetch_target::l2);
}

TEST(SimdPrefetch, SetIsWhatCallsSeeNext) {
  const simd::prefetch_target before = simd::current_prefetch_target();
  for (simd::prefetch_target t :
       {simd::prefetch_target::l2, simd::prefetch_target::l1, simd::prefetch_target::l2}) {
    simd::set_prefetch_target(t);
    EXPECT_EQ(simd::current_prefetch_target(), t);
  }
  simd::set_prefetch_target(before);
  EXPECT_EQ(simd::current_prefetch_target(), before);
}

TEST(SimdPrefetch, NeverFaults) {
  const std::size_t page = static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
  // Two pages mapped, the second unmapped again: a prefetch into the hole, past the end of
  // the mapping and of null must all be harmless hints.
  void* m = mmap(nullptr, 2 * page, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  ASSERT_NE(m, MAP_FAILED);
  auto* p = static_cast<char*>(m);
  ASSERT_EQ(munmap(p + page, page), 0);
  for (simd::prefetch_target t : {simd::prefetch_target::l1, simd::prefetch_target::l2}) {
    simd::prefetch(p, t);
    simd::prefetch(p + page, t);
    simd::prefetch(p + page + 64, t);
    simd::prefetch(nullptr, t);
    simd::prefetch(reinterpret_cast<const void*>(std::uintptr_t{64}), t);
  }
  EXPECT_EQ(munmap(p, page), 0);
}

}  // namespace
