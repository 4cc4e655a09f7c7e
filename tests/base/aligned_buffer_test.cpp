// aligned_buffer: 64-byte alignment, zero fill, move-only ownership, clone, and
// allocation failures reported as a status (never an abort or an exception).
#include <cstddef>
#include <cstdint>
#include <limits>
#include <string>
#include <type_traits>
#include <utility>

#include <gtest/gtest.h>

#include "mnemo/base/aligned_buffer.hpp"

#if defined(__SANITIZE_ADDRESS__)
#define MNEMO_TEST_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define MNEMO_TEST_ASAN 1
#endif
#endif

namespace {

using mnemo::aligned_buffer;
using mnemo::k_buffer_alignment;
using mnemo::status_code;

struct rgb {  // a 3-byte element: sizes that are not a multiple of the alignment
  std::uint8_t r, g, b;
};

template <class T>
class AlignedBufferTyped : public ::testing::Test {};
using element_types = ::testing::Types<float, double, std::uint16_t, std::int8_t, rgb>;
TYPED_TEST_SUITE(AlignedBufferTyped, element_types);

TYPED_TEST(AlignedBufferTyped, AlignedAndZeroFilledForManySizes) {
  for (std::size_t n : {1u, 2u, 3u, 15u, 16u, 17u, 63u, 64u, 65u, 1000u, 4099u}) {
    auto r = aligned_buffer<TypeParam>::make(n);
    ASSERT_TRUE(r.is_ok()) << "n=" << n << ": " << r.error().to_string();
    const auto& b = *r;
    ASSERT_EQ(b.size(), n);
    EXPECT_EQ(b.size_bytes(), n * sizeof(TypeParam));
    EXPECT_FALSE(b.empty());
    EXPECT_EQ(reinterpret_cast<std::uintptr_t>(b.data()) % k_buffer_alignment, 0u) << "n=" << n;
    const auto* bytes = reinterpret_cast<const unsigned char*>(b.data());
    for (std::size_t i = 0; i < b.size_bytes(); ++i)
      ASSERT_EQ(bytes[i], 0u) << "n=" << n << ", first non-zero byte at " << i;
  }
}

TEST(AlignedBuffer, ZeroFilledEvenWhenTheAllocatorReusesDirtyMemory) {
  // Fresh pages are zero anyway; a recycled chunk is not. Dirty one, free it, and
  // allocate the same size again (glibc hands the same chunk back).
  constexpr std::size_t n = 300;
  for (int round = 0; round < 4; ++round) {
    {
      auto dirty = aligned_buffer<std::uint32_t>::make(n);
      ASSERT_TRUE(dirty.is_ok());
      for (auto& x : *dirty) x = 0xDEADBEEFu;
    }
    auto b = aligned_buffer<std::uint32_t>::make(n);
    ASSERT_TRUE(b.is_ok());
    for (std::size_t i = 0; i < n; ++i) ASSERT_EQ((*b)[i], 0u) << "round " << round << ", i=" << i;
  }
}

TEST(AlignedBuffer, FillZeroClearsEveryElement) {
  auto b = aligned_buffer<float>::make(37);
  ASSERT_TRUE(b.is_ok());
  for (auto& x : *b) x = 1.5f;
  b->fill_zero();
  for (std::size_t i = 0; i < b->size(); ++i) ASSERT_EQ((*b)[i], 0.0f) << "i=" << i;
}

TEST(AlignedBuffer, EmptyBuffers) {
  aligned_buffer<float> d;
  EXPECT_TRUE(d.empty());
  EXPECT_EQ(d.data(), nullptr);
  EXPECT_EQ(d.begin(), d.end());
  EXPECT_TRUE(d.span().empty());
  auto z = aligned_buffer<float>::make(0);
  ASSERT_TRUE(z.is_ok());
  EXPECT_TRUE(z->empty());
  EXPECT_EQ(z->size_bytes(), 0u);
  z->fill_zero();  // must not touch a null pointer
  auto c = z->clone();
  ASSERT_TRUE(c.is_ok());
  EXPECT_TRUE(c->empty());
}

TEST(AlignedBuffer, MoveTransfersOwnership) {
  static_assert(!std::is_copy_constructible_v<aligned_buffer<float>>);
  static_assert(!std::is_copy_assignable_v<aligned_buffer<float>>);
  static_assert(std::is_nothrow_move_constructible_v<aligned_buffer<float>>);
  static_assert(std::is_nothrow_move_assignable_v<aligned_buffer<float>>);

  auto r = aligned_buffer<int>::make(10);
  ASSERT_TRUE(r.is_ok());
  aligned_buffer<int> a = std::move(r).value();
  a[3] = 42;
  int* p = a.data();

  aligned_buffer<int> b(std::move(a));
  EXPECT_EQ(b.data(), p);
  EXPECT_EQ(b.size(), 10u);
  EXPECT_EQ(b[3], 42);
  EXPECT_EQ(a.data(), nullptr);  // NOLINT: the moved-from state is specified
  EXPECT_EQ(a.size(), 0u);

  // Assigning over a live buffer frees it (LeakSanitizer checks this in debug-asan).
  auto other = aligned_buffer<int>::make(5);
  ASSERT_TRUE(other.is_ok());
  aligned_buffer<int> c = std::move(other).value();
  c = std::move(b);
  EXPECT_EQ(c.data(), p);
  EXPECT_EQ(c[3], 42);
  EXPECT_TRUE(b.empty());  // NOLINT

  // Self-move keeps the buffer (through a reference, as generic code would do it).
  aligned_buffer<int>& alias = c;
  c = std::move(alias);
  EXPECT_EQ(c.data(), p);
  EXPECT_EQ(c.size(), 10u);
}

TEST(AlignedBuffer, CloneIsADeepCopy) {
  auto r = aligned_buffer<double>::make(129);
  ASSERT_TRUE(r.is_ok());
  for (std::size_t i = 0; i < r->size(); ++i) (*r)[i] = 0.5 * static_cast<double>(i);
  auto c = r->clone();
  ASSERT_TRUE(c.is_ok());
  ASSERT_EQ(c->size(), r->size());
  EXPECT_NE(c->data(), r->data());
  EXPECT_EQ(reinterpret_cast<std::uintptr_t>(c->data()) % k_buffer_alignment, 0u);
  for (std::size_t i = 0; i < r->size(); ++i) ASSERT_EQ((*c)[i], (*r)[i]) << "i=" << i;
  (*c)[7] = -1.0;
  EXPECT_EQ((*r)[7], 3.5);  // the original is untouched
}

TEST(AlignedBuffer, SpanAndIteratorsCoverTheElements) {
  auto r = aligned_buffer<std::int16_t>::make(9);
  ASSERT_TRUE(r.is_ok());
  auto s = r->span();
  EXPECT_EQ(s.data(), r->data());
  EXPECT_EQ(s.size(), 9u);
  EXPECT_EQ(r->end() - r->begin(), 9);
  const auto& cr = *r;
  EXPECT_EQ(cr.span().data(), r->data());
}

TEST(AlignedBuffer, SizeThatOverflowsIsAStatus) {
  constexpr std::size_t max = std::numeric_limits<std::size_t>::max();
  for (std::size_t n : {max, max / 2, max / sizeof(float), max / sizeof(float) - 63}) {
    auto r = aligned_buffer<float>::make(n);
    ASSERT_FALSE(r.is_ok()) << "n=" << n;
    EXPECT_EQ(r.error().code(), status_code::no_space) << r.error().to_string();
    EXPECT_FALSE(r.error().message().empty());
  }
}

TEST(AlignedBuffer, AllocationFailureIsAStatus) {
#if defined(MNEMO_TEST_ASAN)
  // ASan aborts on an impossible allocation unless allocator_may_return_null=1.
  GTEST_SKIP() << "AddressSanitizer intercepts the failing allocation";
#else
  // 2^62 bytes: representable, but larger than any x86-64 or AArch64 address space.
  auto r = aligned_buffer<float>::make(std::size_t{1} << 60);
  ASSERT_FALSE(r.is_ok());
  EXPECT_EQ(r.error().code(), status_code::no_space);
  EXPECT_NE(r.error().message().find("bytes"), std::string::npos) << r.error().to_string();
#endif
}

}  // namespace
