// result<T>, MNEMO_ASSIGN_OR_RETURN and MNEMO_RETURN_IF_ERROR, including move-only
// values (buffers are the common case) and the short-circuit on the first error.
#include <memory>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "mnemo/base/aligned_buffer.hpp"
#include "mnemo/base/result.hpp"
#include "mnemo/base/status.hpp"

namespace {

using mnemo::make_status;
using mnemo::result;
using mnemo::status;
using mnemo::status_code;

result<std::unique_ptr<int>> make_boxed(int v) {
  if (v < 0) return make_status(status_code::invalid_argument, "v=%d < 0", v);
  return std::make_unique<int>(v);
}

status check_even(int v, int* calls) {
  ++*calls;
  if (v % 2 != 0) return make_status(status_code::out_of_range, "v=%d is odd", v);
  return {};
}

// Two MNEMO_ASSIGN_OR_RETURN in one scope (distinct hidden temporaries), a move-only
// lhs, and an existing variable as lhs.
result<int> sum_boxed(int a, int b, int* after) {
  MNEMO_ASSIGN_OR_RETURN(auto pa, make_boxed(a));
  MNEMO_ASSIGN_OR_RETURN(std::unique_ptr<int> pb, make_boxed(b));
  int total = 0;
  MNEMO_ASSIGN_OR_RETURN(total, result<int>(*pa + *pb));
  ++*after;
  return total;
}

// MNEMO_RETURN_IF_ERROR in a function returning status and one returning result<T>.
status both_even(int a, int b, int* calls) {
  MNEMO_RETURN_IF_ERROR(check_even(a, calls));
  MNEMO_RETURN_IF_ERROR(check_even(b, calls));
  return status::ok();
}

result<std::vector<int>> evens_up_to(int n, int* calls) {
  MNEMO_RETURN_IF_ERROR(check_even(n, calls));
  std::vector<int> v;
  for (int i = 0; i <= n; i += 2) v.push_back(i);
  return v;
}

result<mnemo::aligned_buffer<float>> filled(std::size_t n, float x) {
  MNEMO_ASSIGN_OR_RETURN(auto buf, mnemo::aligned_buffer<float>::make(n));
  for (auto& e : buf) e = x;
  return buf;
}

TEST(Result, HoldsAMoveOnlyValue) {
  static_assert(!std::is_copy_constructible_v<result<std::unique_ptr<int>>>);
  static_assert(std::is_move_constructible_v<result<std::unique_ptr<int>>>);
  auto r = make_boxed(5);
  ASSERT_TRUE(r.is_ok());
  ASSERT_TRUE(static_cast<bool>(r));
  EXPECT_TRUE(r.to_status().is_ok());
  EXPECT_EQ(**r, 5);
  std::unique_ptr<int> p = std::move(r).value();
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(*p, 5);
}

TEST(Result, CarriesTheErrorStatus) {
  auto r = make_boxed(-2);
  ASSERT_FALSE(r.is_ok());
  EXPECT_FALSE(static_cast<bool>(r));
  EXPECT_EQ(r.error().code(), status_code::invalid_argument);
  EXPECT_EQ(r.to_status().to_string(), "invalid argument: v=-2 < 0");
}

TEST(Result, BuiltFromAnOkStatusIsAnInternalError) {
  result<int> r{status::ok()};
  ASSERT_FALSE(r.is_ok());
  EXPECT_EQ(r.error().code(), status_code::internal);
}

TEST(Result, ValueOrAndArrow) {
  result<std::string> ok = std::string("kv");
  result<std::string> bad = make_status(status_code::not_found, "no such key");
  EXPECT_EQ(ok.value_or("x"), "kv");
  EXPECT_EQ(bad.value_or("x"), "x");
  EXPECT_EQ(ok->size(), 2u);
  ok->append("-cache");
  EXPECT_EQ(*ok, "kv-cache");
}

TEST(Result, AssignOrReturnPassesValuesThrough) {
  int after = 0;
  auto r = sum_boxed(2, 3, &after);
  ASSERT_TRUE(r.is_ok()) << r.error().to_string();
  EXPECT_EQ(*r, 5);
  EXPECT_EQ(after, 1);
}

TEST(Result, AssignOrReturnStopsAtTheFirstError) {
  int after = 0;
  auto r = sum_boxed(2, -7, &after);
  ASSERT_FALSE(r.is_ok());
  EXPECT_EQ(r.error().code(), status_code::invalid_argument);
  EXPECT_EQ(r.error().message(), "v=-7 < 0");
  EXPECT_EQ(after, 0);  // nothing after the failing line ran
}

TEST(Result, AssignOrReturnMovesBuffers) {
  auto r = filled(33, 2.5f);
  ASSERT_TRUE(r.is_ok());
  ASSERT_EQ(r->size(), 33u);
  for (std::size_t i = 0; i < r->size(); ++i) ASSERT_EQ((*r)[i], 2.5f) << "i=" << i;
  auto bad = filled(~std::size_t{0}, 1.0f);
  ASSERT_FALSE(bad.is_ok());
  EXPECT_EQ(bad.error().code(), status_code::no_space);
}

TEST(ReturnIfError, ShortCircuits) {
  int calls = 0;
  EXPECT_TRUE(both_even(2, 4, &calls).is_ok());
  EXPECT_EQ(calls, 2);
  calls = 0;
  status s = both_even(3, 4, &calls);
  EXPECT_EQ(s.code(), status_code::out_of_range);
  EXPECT_EQ(s.message(), "v=3 is odd");
  EXPECT_EQ(calls, 1);  // the second check never ran
}

TEST(ReturnIfError, InAResultFunction) {
  int calls = 0;
  auto ok = evens_up_to(6, &calls);
  ASSERT_TRUE(ok.is_ok());
  EXPECT_EQ(*ok, (std::vector<int>{0, 2, 4, 6}));
  auto bad = evens_up_to(5, &calls);
  ASSERT_FALSE(bad.is_ok());
  EXPECT_EQ(bad.error().code(), status_code::out_of_range);
}

TEST(StatusCode, EveryCodeHasAName) {
  for (int c = 0; c <= static_cast<int>(status_code::internal); ++c) {
    const auto name = mnemo::to_string(static_cast<status_code>(c));
    EXPECT_NE(name, "unknown") << "status_code " << c;
    EXPECT_FALSE(name.empty()) << "status_code " << c;
  }
  EXPECT_EQ(mnemo::to_string(status_code::no_space), "no space");
}

TEST(StatusContext, OkIgnoresContext) {
  status s;
  s.with_context("decode");
  EXPECT_TRUE(s.is_ok());
  EXPECT_TRUE(s.message().empty());
  status e =
      make_status(status_code::corrupt_data, "bad magic %#x", 0x46554747u).with_context("gguf");
  EXPECT_EQ(e.to_string(), "corrupt data: gguf: bad magic 0x46554747");
}

}  // namespace
