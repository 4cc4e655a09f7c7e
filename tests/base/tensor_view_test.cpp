// tensor_view: row-major strides, explicit strides, sub-views, row() spans, const views.
// The reference is plain offset arithmetic written out in each test.
#include <array>
#include <cstddef>
#include <numeric>
#include <span>
#include <type_traits>
#include <vector>

#include <gtest/gtest.h>

#include "mnemo/base/tensor_view.hpp"

namespace {

using mnemo::matrix_view;
using mnemo::tensor_view;
using mnemo::vector_view;

// [2, 3, 4] filled with 0..23, so an element's value is its row-major offset.
std::vector<float> iota_storage(std::size_t n) {
  std::vector<float> v(n);
  std::iota(v.begin(), v.end(), 0.0f);
  return v;
}

TEST(TensorView, DefaultIsEmpty) {
  tensor_view<float, 3> t;
  EXPECT_EQ(t.data(), nullptr);
  EXPECT_EQ(t.size(), 0u);
  EXPECT_TRUE(t.empty());
}

TEST(TensorView, RowMajorStrides) {
  auto storage = iota_storage(24);
  tensor_view<float, 3> t(storage.data(), {2, 3, 4});  // [2, 3, 4]
  EXPECT_EQ(t.stride(0), 12u);
  EXPECT_EQ(t.stride(1), 4u);
  EXPECT_EQ(t.stride(2), 1u);
  EXPECT_EQ(t.extent(1), 3u);
  EXPECT_EQ(t.size(), 24u);
  EXPECT_FALSE(t.empty());
  EXPECT_TRUE(t.is_contiguous());
  for (std::size_t i = 0; i < 2; ++i)
    for (std::size_t j = 0; j < 3; ++j)
      for (std::size_t k = 0; k < 4; ++k)
        ASSERT_EQ(t(i, j, k), static_cast<float>(i * 12 + j * 4 + k))
            << "at (" << i << ", " << j << ", " << k << ")";
  t(1, 2, 3) = -1.0f;  // element access is by reference
  EXPECT_EQ(storage[23], -1.0f);
}

TEST(TensorView, ZeroExtentIsEmpty) {
  auto storage = iota_storage(4);
  matrix_view<float> m(storage.data(), {0, 4});
  EXPECT_EQ(m.size(), 0u);
  EXPECT_TRUE(m.empty());
}

TEST(TensorView, ExplicitStridesGiveATransposedView) {
  auto storage = iota_storage(12);
  matrix_view<float> a(storage.data(), {3, 4});           // [3, 4]
  matrix_view<float> at(storage.data(), {4, 3}, {1, 4});  // [4, 3], a transposed
  EXPECT_FALSE(at.is_contiguous());
  for (std::size_t i = 0; i < 3; ++i)
    for (std::size_t j = 0; j < 4; ++j) ASSERT_EQ(at(j, i), a(i, j)) << "i=" << i << " j=" << j;
}

TEST(TensorView, PaddedRowsAreNotContiguous) {
  // [3, 4] rows inside a [3, 8] allocation: stride 8 between rows (as a padded KV row).
  auto storage = iota_storage(24);
  matrix_view<float> m(storage.data(), {3, 4}, {8, 1});
  EXPECT_FALSE(m.is_contiguous());
  EXPECT_EQ(m(2, 3), 19.0f);
  // Extent-1 dimensions do not break contiguity, whatever their stride.
  matrix_view<float> one(storage.data(), {1, 4}, {99, 1});
  EXPECT_TRUE(one.is_contiguous());
}

TEST(TensorView, SubViewsShareDataAndStrides) {
  auto storage = iota_storage(24);
  tensor_view<float, 3> t(storage.data(), {2, 3, 4});
  auto s = t[1];  // [3, 4]
  static_assert(std::is_same_v<decltype(s), tensor_view<float, 2>>);
  EXPECT_EQ(s.data(), storage.data() + 12);
  EXPECT_EQ(s.extent(0), 3u);
  EXPECT_EQ(s.extent(1), 4u);
  EXPECT_EQ(s.stride(0), 4u);
  EXPECT_EQ(s.stride(1), 1u);
  auto r = s[2];  // [4]
  static_assert(std::is_same_v<decltype(r), vector_view<float>>);
  EXPECT_EQ(r.data(), storage.data() + 20);
  EXPECT_EQ(r(3), 23.0f);
  EXPECT_EQ(r[3], 23.0f);
  s(0, 0) = 100.0f;
  EXPECT_EQ(storage[12], 100.0f);

  // A sub-view of a strided view keeps the strides.
  matrix_view<float> at(storage.data(), {4, 3}, {1, 4});
  auto col = at[2];  // the third column of the [3, 4] original
  EXPECT_EQ(col.stride(0), 4u);
  EXPECT_EQ(col(0), 2.0f);
  EXPECT_EQ(col(2), 10.0f);
}

TEST(TensorView, RowIsAContiguousSpanOfTheLastExtent) {
  auto storage = iota_storage(24);
  tensor_view<float, 3> t(storage.data(), {2, 3, 4});
  std::span<float> row = t.row(1, 2);
  EXPECT_EQ(row.data(), storage.data() + 20);
  EXPECT_EQ(row.size(), 4u);
  row[0] = -5.0f;
  EXPECT_EQ(t(1, 2, 0), -5.0f);

  matrix_view<float> padded(storage.data(), {3, 4}, {8, 1});
  EXPECT_EQ(padded.row(2).data(), storage.data() + 16);
  EXPECT_EQ(padded.row(2).size(), 4u);

  vector_view<float> v(storage.data() + 3, {5});
  EXPECT_EQ(v.row().data(), storage.data() + 3);
  EXPECT_EQ(v.row().size(), 5u);
}

TEST(TensorView, ConstViewFromMutableView) {
  auto storage = iota_storage(6);
  matrix_view<float> m(storage.data(), {2, 3});
  matrix_view<const float> c = m;
  static_assert(std::is_same_v<decltype(c.row(0)), std::span<const float>>);
  static_assert(!std::is_convertible_v<matrix_view<const float>, matrix_view<float>>);
  EXPECT_EQ(c.data(), m.data());
  EXPECT_EQ(c.strides(), m.strides());
  EXPECT_EQ(c.extents(), m.extents());
  EXPECT_EQ(c(1, 2), 5.0f);
}

}  // namespace

TEST(TensorViewRankOne, SubscriptWritesThrough) {
  float data[3] = {1, 2, 3};
  mnemo::vector_view<float> v(data, {3});
  v[1] = 7.0f;
  EXPECT_EQ(data[1], 7.0f);
  static_assert(std::is_same_v<decltype(v[0]), float&>);
}
