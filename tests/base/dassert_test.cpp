// MNEMO_DASSERT (tier 2 of the error model): aborts with a message in debug builds,
// compiles to nothing (the condition is not even evaluated) in release builds.
#include <cstddef>
#include <vector>

#include <gtest/gtest.h>

#include "mnemo/base/aligned_buffer.hpp"
#include "mnemo/base/assert.hpp"
#include "mnemo/base/tensor_view.hpp"

#if defined(NDEBUG) && !defined(MNEMO_ENABLE_DASSERT)
#define MNEMO_TEST_DASSERT_ON 0
#else
#define MNEMO_TEST_DASSERT_ON 1
#endif

namespace {

#define SKIP_UNLESS_DASSERT_ON() \
  if (!MNEMO_TEST_DASSERT_ON) GTEST_SKIP() << "MNEMO_DASSERT is compiled out (NDEBUG build)"

[[maybe_unused]] int bump(int* n) { return ++*n; }

TEST(DAssert, ConditionIsEvaluatedOnlyWhenEnabled) {
  int n = 0;
  MNEMO_DASSERT(bump(&n) > 0);
  EXPECT_EQ(n, MNEMO_TEST_DASSERT_ON ? 1 : 0);
}

TEST(DAssertDeathTest, FailureAbortsWithTheCondition) {
  SKIP_UNLESS_DASSERT_ON();
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  [[maybe_unused]] const int cells = 3;
  EXPECT_DEATH(MNEMO_DASSERT(cells > 4), "internal invariant violated: cells > 4");
}

TEST(DAssertDeathTest, BufferIndexOutOfRange) {
  SKIP_UNLESS_DASSERT_ON();
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  auto r = mnemo::aligned_buffer<float>::make(4);
  ASSERT_TRUE(r.is_ok());
  EXPECT_DEATH((void)(*r)[4], "i < size_");
}

TEST(DAssertDeathTest, ViewIndexOutOfRange) {
  SKIP_UNLESS_DASSERT_ON();
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  std::vector<float> storage(12);
  mnemo::matrix_view<float> m(storage.data(), {3, 4});
  EXPECT_DEATH((void)m(3, 0), "extents_");
  EXPECT_DEATH((void)m.row(5), "extents_");
  mnemo::matrix_view<float> strided(storage.data(), {4, 3}, {1, 4});
  EXPECT_DEATH((void)strided.row(0), "strides_");
}

}  // namespace
