// simd::ops<Isa> against ops<scalar> and std:: functions: loads and stores (full,
// partial, misaligned, every tail length), arithmetic, reductions and exp.
#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <random>
#include <vector>

#include "simd/fixture.hpp"
#include <gtest/gtest.h>

namespace mnemo_test {
namespace {

template <class Isa>
using SimdOps = SimdIsaTest<Isa>;
TYPED_TEST_SUITE(SimdOps, all_isa_types, isa_type_names);

constexpr float k_nan = std::numeric_limits<float>::quiet_NaN();
constexpr float k_inf = std::numeric_limits<float>::infinity();

/// Same bits, or both NaN (NaN payloads of arithmetic results are not compared).
bool same_value(float a, float b) { return bits(a) == bits(b) || (std::isnan(a) && std::isnan(b)); }

std::size_t round_up(std::size_t n, std::size_t m) { return (n + m - 1) / m * m; }

TYPED_TEST(SimdOps, LanesMatchTag) {
  using H = typename TestFixture::H;
  EXPECT_EQ(H::lanes, TypeParam::lanes_f32);
  EXPECT_TRUE(simd::vector_ops<typename H::V>);
}

TYPED_TEST(SimdOps, ZeroAndSet1) {
  using H = typename TestFixture::H;
  std::vector<float> out(H::lanes, 7.0f);
  H::zero(out.data());
  for (std::size_t i = 0; i < H::lanes; ++i) EXPECT_EQ(bits(out[i]), 0u) << "lane " << i;
  H::set1(-2.5f, out.data());
  for (std::size_t i = 0; i < H::lanes; ++i) EXPECT_EQ(out[i], -2.5f) << "lane " << i;
}

TYPED_TEST(SimdOps, LoadStoreThroughMisalignedPointers) {
  using H = typename TestFixture::H;
  for (std::size_t off = 0; off <= 3; ++off) {
    offset_buffer src(H::lanes, off, 0.0f), dst(H::lanes, 3 - off, -1.0f);
    for (std::size_t i = 0; i < H::lanes; ++i) src.data[i] = static_cast<float>(i) + 0.5f;
    H::copy(src.data, dst.data);
    for (std::size_t i = 0; i < H::lanes; ++i)
      ASSERT_EQ(dst.data[i], src.data[i]) << "offset " << off << " lane " << i;
    EXPECT_EQ(dst.data[H::lanes], -1.0f) << "store wrote past the vector, offset " << off;
  }
}

TYPED_TEST(SimdOps, PartialLoadReadsFirstNAndZeroFills) {
  using H = typename TestFixture::H;
  for (std::size_t off = 1; off <= 3; ++off) {
    for (std::size_t n = 0; n < H::lanes; ++n) {
      // Memory after the first n floats holds 99: it must not show up in the vector.
      offset_buffer src(H::lanes, off, 99.0f);
      for (std::size_t i = 0; i < n; ++i) src.data[i] = static_cast<float>(i + 1);
      std::vector<float> out(H::lanes, -1.0f);
      H::load_partial(src.data, n, out.data());
      for (std::size_t i = 0; i < H::lanes; ++i) {
        const float want = i < n ? static_cast<float>(i + 1) : 0.0f;
        ASSERT_EQ(bits(out[i]), bits(want)) << "offset " << off << " n " << n << " lane " << i;
      }
    }
  }
}

TYPED_TEST(SimdOps, PartialStoreWritesOnlyFirstN) {
  using H = typename TestFixture::H;
  for (std::size_t off = 1; off <= 3; ++off) {
    for (std::size_t n = 0; n < H::lanes; ++n) {
      std::vector<float> in(H::lanes);
      for (std::size_t i = 0; i < H::lanes; ++i) in[i] = static_cast<float>(i + 1);
      offset_buffer dst(H::lanes, off, -7.0f);
      H::store_partial(in.data(), dst.data, n);
      for (std::size_t i = 0; i < H::lanes + 4; ++i) {
        const float want = i < n ? in[i] : -7.0f;
        ASSERT_EQ(dst.data[i], want) << "offset " << off << " n " << n << " element " << i;
      }
      EXPECT_EQ(dst.data[-1], -7.0f) << "store wrote before the pointer";
    }
  }
}

// A full-vector loop with a partial tail, for every length 0..2*lanes+1 and
// misaligned source and destination: y[i] = fma(a, x[i], y[i]), guards untouched.
TYPED_TEST(SimdOps, TailLoopEveryLengthAndOffset) {
  using H = typename TestFixture::H;
  std::mt19937_64 rng(k_seed);
  std::uniform_real_distribution<float> dist(-4.0f, 4.0f);
  const float a = 1.25f;
  for (std::size_t n = 0; n <= 2 * H::lanes + 1; ++n) {
    for (std::size_t ox = 1; ox <= 3; ++ox) {
      for (std::size_t oy = 1; oy <= 3; ++oy) {
        offset_buffer x(n, ox, 1000.0f), y(n, oy, -3.0f);
        std::vector<float> want(n);
        for (std::size_t i = 0; i < n; ++i) {
          x.data[i] = dist(rng);
          y.data[i] = dist(rng);
          want[i] = std::fma(a, x.data[i], y.data[i]);
        }
        H::axpy(a, x.data, y.data, n);
        for (std::size_t i = 0; i < n; ++i)
          ASSERT_EQ(bits(y.data[i]), bits(want[i]))
              << "seed " << k_seed << " n " << n << " offsets " << ox << "," << oy
              << ": first difference at element " << i;
        for (std::size_t i = n; i < n + offset_buffer::guard / 2; ++i)
          ASSERT_EQ(y.data[i], -3.0f) << "n " << n << ": wrote past the end at " << i;
        ASSERT_EQ(y.data[-1], -3.0f) << "n " << n << ": wrote before the start";
      }
    }
  }
}

/// Random operands followed by every pair of special values.
void arithmetic_inputs(std::size_t lanes, std::vector<float>& a, std::vector<float>& b) {
  std::mt19937_64 rng(k_seed + 1);
  std::uniform_real_distribution<float> dist(-100.0f, 100.0f);
  const float specials[] = {0.0f,  -0.0f,  1.0f,    -1.0f,    k_inf,   -k_inf,
                            k_nan, -k_nan, FLT_MIN, -FLT_MIN, FLT_MAX, std::nextafter(0.0f, 1.0f)};
  for (int i = 0; i < 4096; ++i) {
    a.push_back(dist(rng));
    b.push_back(i % 7 == 0 ? a.back() : dist(rng));
  }
  for (float x : specials)
    for (float y : specials) {
      a.push_back(x);
      b.push_back(y);
    }
  a.resize(round_up(a.size(), lanes), 0.0f);
  b.resize(a.size(), 0.0f);
}

TYPED_TEST(SimdOps, ArithmeticMatchesScalar) {
  using H = typename TestFixture::H;
  std::vector<float> a, b;
  arithmetic_inputs(H::lanes, a, b);
  const std::size_t n = a.size();
  std::vector<float> out(n), want(n);
  struct named_op {
    binary_op op;
    const char* name;
    float (*ref)(float, float);
    bool exact_bits;  // max/min return one of their operands: compare NaN bits too
  };
  const named_op table[] = {
      {binary_op::add, "add", [](float x, float y) { return x + y; }, false},
      {binary_op::sub, "sub", [](float x, float y) { return x - y; }, false},
      {binary_op::mul, "mul", [](float x, float y) { return x * y; }, false},
      {binary_op::max, "max", [](float x, float y) { return std::max(x, y); }, true},
      {binary_op::min, "min", [](float x, float y) { return std::min(x, y); }, true},
  };
  for (const named_op& t : table) {
    H::binary(t.op, a.data(), b.data(), out.data(), n);
    for (std::size_t i = 0; i < n; ++i) {
      const float w = t.ref(a[i], b[i]);
      const bool ok = t.exact_bits ? bits(out[i]) == bits(w) : same_value(out[i], w);
      ASSERT_TRUE(ok) << t.name << " seed " << k_seed + 1 << ": first difference at element " << i
                      << " (" << a[i] << ", " << b[i] << "): got " << out[i] << " " << hex(out[i])
                      << " want " << w << " " << hex(w);
    }
  }
}

TYPED_TEST(SimdOps, FmaIsFused) {
  using H = typename TestFixture::H;
  std::vector<float> a, b;
  arithmetic_inputs(H::lanes, a, b);
  const std::size_t n = a.size();
  std::vector<float> c(n), out(n);
  std::mt19937_64 rng(k_seed + 2);
  std::uniform_real_distribution<float> dist(-1000.0f, 1000.0f);
  for (std::size_t i = 0; i < n; ++i) c[i] = i % 5 == 0 ? -(a[i] * b[i]) : dist(rng);
  // Unfused a*b - a*b is 0; fused it is the rounding error of a*b, usually not 0.
  H::fma(a.data(), b.data(), c.data(), out.data(), n);
  for (std::size_t i = 0; i < n; ++i) {
    const float w = std::fma(a[i], b[i], c[i]);
    ASSERT_TRUE(same_value(out[i], w))
        << "seed " << k_seed + 2 << ": first difference at element " << i << " fma(" << a[i] << ", "
        << b[i] << ", " << c[i] << "): got " << out[i] << " want " << w;
  }
}

TYPED_TEST(SimdOps, Reductions) {
  using H = typename TestFixture::H;
  std::mt19937_64 rng(k_seed + 3);
  std::uniform_real_distribution<float> dist(-50.0f, 50.0f);
  std::vector<float> v(H::lanes);
  for (int trial = 0; trial < 2000; ++trial) {
    double sum = 0.0, abs_sum = 0.0;
    for (float& x : v) {
      x = dist(rng);
      sum += x;
      abs_sum += std::fabs(x);
    }
    // Any summation order is within (lanes - 1) roundings of the exact sum.
    const double tol = static_cast<double>(H::lanes) * FLT_EPSILON * abs_sum;
    ASSERT_NEAR(H::reduce_add(v.data()), sum, tol) << "seed " << k_seed + 3 << " trial " << trial;
    ASSERT_EQ(H::reduce_max(v.data()), *std::max_element(v.begin(), v.end()))
        << "seed " << k_seed + 3 << " trial " << trial;
  }
}

TYPED_TEST(SimdOps, TransposeMovesEveryElement) {
  using H = typename TestFixture::H;
  const std::size_t n = H::lanes;
  std::vector<float> m(n * n);
  for (std::size_t i = 0; i < m.size(); ++i) m[i] = static_cast<float>(i) + 0.5f;  // all distinct
  std::vector<float> t = m;
  H::transpose(t.data());
  for (std::size_t r = 0; r < n; ++r)
    for (std::size_t c = 0; c < n; ++c)
      ASSERT_EQ(t[c * n + r], m[r * n + c]) << "row " << r << " column " << c;
}

TYPED_TEST(SimdOps, TransposeMatrixAnyShapeAndStrides) {
  using H = typename TestFixture::H;
  std::mt19937_64 rng(k_seed + 7);
  std::uniform_int_distribution<std::size_t> size(0, 3 * H::lanes + 2);
  for (int trial = 0; trial < 200; ++trial) {
    const std::size_t rows = size(rng), cols = size(rng);
    const std::size_t lds = cols + size(rng) % 5, ldd = rows + size(rng) % 5;
    std::vector<float> src(rows * lds + 1), dst(cols * ldd + 1, -1.0f);
    for (std::size_t i = 0; i < src.size(); ++i) src[i] = static_cast<float>(i);
    H::transpose_matrix(src.data(), rows, cols, lds, dst.data(), ldd);
    for (std::size_t c = 0; c < cols; ++c)
      for (std::size_t i = 0; i < ldd; ++i) {  // the padding between rows of dst untouched
        const float want = i < rows ? src[i * lds + c] : -1.0f;
        ASSERT_EQ(dst[c * ldd + i], want)
            << "seed " << k_seed + 7 << " trial " << trial << ": " << rows << " x " << cols
            << ", lds " << lds << ", ldd " << ldd << ", dst[" << c << "][" << i << "]";
      }
  }
}

/// Max relative error of exp over [-87, 88] (the documented bound).
constexpr double k_exp_rel_tol = 2e-7;

TYPED_TEST(SimdOps, ExpAccuracy) {
  using H = typename TestFixture::H;
  std::vector<float> x;
  std::mt19937_64 rng(k_seed + 4);
  std::uniform_real_distribution<float> dist(-87.0f, 88.0f), small(-1.0f, 1.0f);
  for (int i = 0; i < (1 << 17); ++i) x.push_back(dist(rng));
  for (int i = 0; i < (1 << 14); ++i) x.push_back(small(rng));
  // Every 4093rd float bit pattern in [-87, 88], both signs.
  for (std::uint64_t b = 0; b < (1ull << 32); b += 4093) {
    const float f = std::bit_cast<float>(static_cast<std::uint32_t>(b));
    if (f >= -87.0f && f <= 88.0f) x.push_back(f);
  }
  // Range-reduction edges: n = 128 (x > 88.38) and half-integers of x*log2(e).
  for (float f : {88.0f, 88.5f, 88.7f, 88.72f, 88.7228f, 0.0f, -0.0f, 0.34657359f, -0.34657359f,
                  1e-10f, -1e-10f, -87.29f})
    x.push_back(f);
  x.resize(round_up(x.size(), H::lanes), 1.0f);
  std::vector<float> out(x.size());
  H::exp(x.data(), out.data(), x.size());
  double worst = 0.0;
  std::size_t worst_i = 0;
  for (std::size_t i = 0; i < x.size(); ++i) {
    const double want = std::exp(static_cast<double>(x[i]));
    const double rel = std::fabs(static_cast<double>(out[i]) - want) / want;
    if (!(rel <= k_exp_rel_tol)) {
      FAIL() << "seed " << k_seed + 4 << ": first element over tolerance " << i << ": exp(" << x[i]
             << ") got " << out[i] << " want " << want << " rel " << rel;
    }
    if (rel > worst) worst = rel, worst_i = i;
  }
  this->RecordProperty("worst_rel_error", std::to_string(worst));
  EXPECT_LE(worst, k_exp_rel_tol) << "at exp(" << x[worst_i] << ")";
}

TYPED_TEST(SimdOps, ExpSpecialValues) {
  using H = typename TestFixture::H;
  constexpr bool flushes = !std::is_same_v<TypeParam, simd::scalar>;
  struct special {
    float x;
    float want;  // NaN: any NaN
  };
  const special table[] = {
      {0.0f, 1.0f},    {-0.0f, 1.0f},   {-k_inf, 0.0f},   {k_inf, k_inf},
      {k_nan, k_nan},  {-k_nan, k_nan}, {FLT_MAX, k_inf}, {-FLT_MAX, 0.0f},
      {89.0f, k_inf},  {88.8f, k_inf},  {100.0f, k_inf},  {1e30f, k_inf},
      {-87.31f, 0.0f}, {-88.0f, 0.0f},  {-100.0f, 0.0f},  {-1e30f, 0.0f},
  };
  std::vector<float> x;
  for (const special& s : table) x.push_back(s.x);
  x.resize(round_up(x.size(), H::lanes), 0.0f);
  std::vector<float> out(x.size());
  H::exp(x.data(), out.data(), x.size());
  for (std::size_t i = 0; i < std::size(table); ++i) {
    const special& s = table[i];
    if (std::isnan(s.want)) {
      EXPECT_TRUE(std::isnan(out[i])) << "exp(" << s.x << ") = " << out[i];
    } else if (s.want == 0.0f && s.x > -k_inf && !flushes) {
      // ops<scalar>::exp is std::exp: no flush, but no larger than e^-87.3 either.
      EXPECT_LE(out[i], 1.2193e-38f) << "exp(" << s.x << ") = " << out[i];
    } else {
      EXPECT_EQ(bits(out[i]), bits(s.want))
          << "exp(" << s.x << ") = " << out[i] << " want " << s.want;
    }
  }
}

// Below the flush threshold the result is 0, never a subnormal; above it, normal.
TYPED_TEST(SimdOps, ExpNeverReturnsSubnormals) {
  using H = typename TestFixture::H;
  if constexpr (std::is_same_v<TypeParam, simd::scalar>) {
    GTEST_SKIP() << "ops<scalar>::exp is std::exp, which does return subnormals";
  }
  std::vector<float> x;
  for (float f = -110.0f; f < -80.0f; f = std::nextafter(f, 0.0f) + 1e-4f) x.push_back(f);
  x.resize(round_up(x.size(), H::lanes), -90.0f);
  std::vector<float> out(x.size());
  H::exp(x.data(), out.data(), x.size());
  for (std::size_t i = 0; i < x.size(); ++i) {
    const bool ok = out[i] == 0.0f ? x[i] < -87.0f : out[i] >= FLT_MIN;
    ASSERT_TRUE(ok) << "exp(" << x[i] << ") = " << out[i] << " " << hex(out[i]);
  }
}

}  // namespace
}  // namespace mnemo_test
