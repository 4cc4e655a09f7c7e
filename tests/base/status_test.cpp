#include <gtest/gtest.h>

#include "mnemo/base/base.hpp"
#include "mnemo/simd/simd.hpp"

namespace {

mnemo::result<int> parse_positive(int x) {
  if (x <= 0)
    return mnemo::make_status(mnemo::status_code::invalid_argument, "x=%d is not positive", x);
  return x;
}

TEST(Status, DefaultIsOk) {
  mnemo::status s;
  EXPECT_TRUE(s.is_ok());
  EXPECT_EQ(s.to_string(), "ok");
}

TEST(Status, ErrorCarriesCodeAndMessage) {
  auto s = mnemo::make_status(mnemo::status_code::no_space, "need %d cells", 4);
  EXPECT_FALSE(s.is_ok());
  EXPECT_EQ(s.code(), mnemo::status_code::no_space);
  EXPECT_EQ(s.to_string(), "no space: need 4 cells");
  s.with_context("decode");
  EXPECT_EQ(s.message(), "decode: need 4 cells");
}

TEST(Result, ValueAndError) {
  auto a = parse_positive(3);
  ASSERT_TRUE(a.is_ok());
  EXPECT_EQ(*a, 3);
  auto b = parse_positive(-1);
  ASSERT_FALSE(b.is_ok());
  EXPECT_EQ(b.error().code(), mnemo::status_code::invalid_argument);
  EXPECT_EQ(b.value_or(7), 7);
}

}  // namespace
