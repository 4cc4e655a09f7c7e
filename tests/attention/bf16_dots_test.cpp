// The bf16 decode tiles (attention/detail/bf16_dots.hpp) against double-precision sums
// of the same bf16-rounded operands: Q.K tiles of 1-8 rows x 1-4 cells (the pair tiles
// of four and eight rows among them), and P.V over pairs of V rows for 1-16 rows, with
// d that leaves half a bf16 vector. Runs where the CPU has AVX512_BF16.
#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

#include <gtest/gtest.h>

#include "mnemo/attention/detail/bf16_dots.hpp"
#include "mnemo/attention/product_precision.hpp"
#include "mnemo/dtype/dtype.hpp"
#include "mnemo/simd/half.hpp"

namespace {

using namespace mnemo;

#if defined(MNEMO_ARCH_X86_64)
using attention::detail::bf16_dots;

float to_bf16(float x) { return simd::bf16_bits_to_f32(simd::f32_to_bf16_bits(x)); }

template <class E>
std::vector<E> random_rows(std::mt19937& rng, std::size_t n) {
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  std::vector<E> v(n);
  for (auto& x : v) x = E::from_float(u(rng));
  return v;
}

template <class E>
class Bf16DotsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!attention::bf16_products_supported()) GTEST_SKIP() << "this CPU has no AVX512_BF16";
  }
};
using Elements = ::testing::Types<dtype::f16, dtype::bf16>;
TYPED_TEST_SUITE(Bf16DotsTest, Elements);

TYPED_TEST(Bf16DotsTest, LogitTilesEqualSumsOfRoundedProducts) {
  using E = TypeParam;
  for (std::uint32_t seed = 1; seed <= 96; ++seed) {
    std::mt19937 rng(seed);
    const std::size_t d = std::size_t{16} * (1 + seed % 8), G = 1 + seed % 8, C = 1 + seed / 8 % 4,
                      ldo = 4 + seed % 3;
    std::uniform_real_distribution<float> u(-2.0f, 2.0f);
    std::vector<float> q(G * d), qr(G * d);
    for (std::size_t i = 0; i < q.size(); ++i) q[i] = qr[i] = u(rng);
    bf16_dots::round_rows(qr.data(), G, d, d);
    const std::vector<E> k = random_rows<E>(rng, C * d);
    const E* rows[4];
    for (std::size_t c = 0; c < C; ++c) rows[c] = k.data() + c * d;
    std::vector<float> out(G * ldo, NAN);
    bf16_dots::tile_rows<E>(G, C, qr.data(), d, rows, d, out.data(), ldo);
    for (std::size_t h = 0; h < G; ++h)
      for (std::size_t c = 0; c < C; ++c) {
        double want = 0, size = 0;
        for (std::size_t i = 0; i < d; ++i) {
          const double x = double{to_bf16(q[h * d + i])} * to_bf16(k[c * d + i].to_float());
          want += x;
          size += std::fabs(x);
        }
        ASSERT_NEAR(out[h * ldo + c], want, 1e-6 * size + 1e-30)
            << "seed " << seed << " d " << d << " tile " << G << " x " << C << " row " << h
            << " cell " << c;
      }
  }
}

/// Counts pair_values' calls of step(), which must be pair_value_steps.
struct counting_cursor {
  std::size_t steps = 0;
  void step() noexcept { ++steps; }
};

// P.V of 1-16 rows over 1-17 cells, consecutive (pair_words' vector path) or with
// holes (its scalar path), against double sums of the rounded operands.
TYPED_TEST(Bf16DotsTest, PairValuesEqualSumsOfRoundedProducts) {
  using E = TypeParam;
  for (std::uint32_t seed = 1; seed <= 96; ++seed) {
    std::mt19937 rng(seed + 100);
    const std::size_t d = std::size_t{16} * (1 + seed % 8), R = 1 + seed % 16,
                      cells = 1 + seed / 3 % 17, ldp = 64, ldw = 32;
    const bool holes = seed % 2 == 0;
    std::vector<std::uint32_t> js(cells);  // the cells' columns in p's rows
    for (std::size_t c = 0; c < cells; ++c)
      js[c] = static_cast<std::uint32_t>(holes ? 3 * c + 1 : c + 5);
    std::uniform_real_distribution<float> u(0.0f, 1.0f);
    std::vector<float> p(R * ldp, NAN);  // NaN where no kept cell is: must not be read
    for (std::size_t r = 0; r < R; ++r)
      for (std::size_t c = 0; c < cells; ++c) p[r * ldp + js[c]] = u(rng);
    const std::vector<E> v = random_rows<E>(rng, cells * d);
    std::vector<const E*> rows(cells);
    for (std::size_t c = 0; c < cells; ++c) rows[c] = v.data() + c * d;
    std::vector<std::uint32_t> pw(R * ldw);
    bf16_dots::pair_words(R, p.data(), ldp, js.data(), cells, pw.data(), ldw);
    std::vector<float> o(R * d);
    for (std::size_t i = 0; i < o.size(); ++i) o[i] = static_cast<float>(i % 7) - 3.0f;
    const std::vector<float> o0 = o;
    counting_cursor cur;
    bf16_dots::pair_values(R, pw.data(), ldw, rows.data(), cells, d, o.data(), d, cur);
    ASSERT_EQ(cur.steps, bf16_dots::pair_value_steps(R, cells, d)) << "seed " << seed;
    for (std::size_t r = 0; r < R; ++r)
      for (std::size_t i = 0; i < d; ++i) {
        double want = o0[r * d + i], size = std::fabs(want);
        for (std::size_t c = 0; c < cells; ++c) {
          const double x = double{to_bf16(p[r * ldp + js[c]])} * to_bf16(v[c * d + i].to_float());
          want += x;
          size += std::fabs(x);
        }
        ASSERT_NEAR(o[r * d + i], want, 1e-6 * size)
            << "seed " << seed << " d " << d << " rows " << R << " cells " << cells
            << (holes ? " with holes" : " consecutive") << " row " << r << " column " << i;
      }
  }
}
#endif

}  // namespace
