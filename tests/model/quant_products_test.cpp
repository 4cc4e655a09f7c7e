// model::mul_mat and get_row for the weight-only quantised types (q4_1, q5_0, q5_1,
// q2_K .. q6_K), typed over (ISA, type):
// - every ISA the CPU runs gives the scalar reference path's values bit for bit (the
//   integer sums are exact and the f32 part is shared), for one token, a few, and
//   prefill counts, on 1, 2 and 3 threads;
// - the scalar path against a double-precision product of the decoded weights (exact,
//   tests/dtype/weight_decode_test.cpp) and x rounded to the type's 8-bit blocks
//   (q8_K, q8_1, q8_0, as ggml), within a bound of the f32 sums;
// - get_row is the decoded row.
// Weights are random bytes with random finite scales (every code pattern occurs).
// Failures print the seed and the first differing output.
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "mnemo/dtype/dtype.hpp"
#include "mnemo/dtype/q8_activations.hpp"
#include "mnemo/dtype/weight_decode.hpp"
#include "mnemo/model/matmul.hpp"
#include "mnemo/simd/cpu.hpp"
#include "mnemo/simd/simd.hpp"

namespace {

namespace dt = mnemo::dtype;
namespace simd = mnemo::simd;
using mnemo::model::weight;

template <class Isa, class E>
struct combo {
  using isa = Isa;
  using elem = E;
};

struct combo_names {
  template <class C>
  static std::string GetName(int) {
    std::string s = std::string(C::isa::name) + "-" +
                    std::string(dt::element_traits<typename C::elem>::name),
                out;
    for (char c : s)
      if (c != '_') out += c;
    return out;
  }
};

constexpr std::uint64_t k_seed = 0x6b7175616e74ull;

template <class Isa>
bool runnable() {
  if constexpr (!simd::is_compiled<Isa>)
    return false;
  else
    return simd::supported<Isa>();
}

/// The f16 fields of a block (scales and mins), set to finite values of the size a
/// quantiser gives.
template <class E>
void set_scales(E& b, std::mt19937_64& rng) {
  std::uniform_real_distribution<float> u(-0.02f, 0.02f);
  const auto f = [&] { return dt::f16::from_float(u(rng)); };
  if constexpr (requires { b.dmin; }) b.dmin = f();
  if constexpr (requires { b.m; }) b.m = f();
  b.d = f();
}

/// A random [n_out, n_in] weight of type E (GGUF layout) and its decoded values.
template <class E>
struct random_weight {
  std::vector<std::uint16_t> storage;
  std::vector<float> decoded;
  weight w;

  random_weight(std::size_t n_in, std::size_t n_out, std::uint64_t seed) {
    std::mt19937_64 rng(seed);
    const std::size_t rb = dt::row_bytes_of<E>(n_in), nb = n_in / dt::block_size_of<E>;
    storage.assign((rb * n_out + 1) / 2, 0);
    auto* bytes = reinterpret_cast<unsigned char*>(storage.data());
    for (std::size_t i = 0; i < rb * n_out; ++i) bytes[i] = static_cast<unsigned char>(rng());
    decoded.resize(n_in * n_out);
    for (std::size_t r = 0; r < n_out; ++r) {
      E* row = reinterpret_cast<E*>(bytes + r * rb);
      for (std::size_t b = 0; b < nb; ++b) set_scales(row[b], rng);
      dt::decode_any_row(dt::element_type_of<E>, row, decoded.data() + r * n_in, n_in);
    }
    w.type = dt::element_type_of<E>;
    w.n_in = n_in;
    w.n_out = n_out;
    w.row_bytes = rb;
    w.data = reinterpret_cast<const std::byte*>(bytes);
  }
};

std::vector<float> random_x(std::size_t n, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  std::vector<float> x(n);
  for (float& v : x) v = nd(rng);
  return x;
}

template <class E>
constexpr bool k_quant = dt::element_traits<E>::block_size == 256;

/// x [n] rounded to E's activation blocks and back, and per block the term m_w * s_a
/// of q4_1 / q5_1 that ggml uses in place of m_w * sum(a) (bounded separately).
template <class E>
std::vector<double> rounded_x(const float* x, std::size_t n) {
  std::vector<double> out(n);
  if constexpr (k_quant<E>) {
    std::vector<dt::block_q8_K> q(n / 256);
    dt::quantize_row_q8_K(x, q.data(), n);
    for (std::size_t i = 0; i < n; ++i) out[i] = double(q[i / 256].d) * q[i / 256].qs[i % 256];
  } else if constexpr (std::is_same_v<E, dt::block_q5_0>) {
    std::vector<dt::block_q8_0> q(n / 32);
    dt::encode_row<simd::scalar>(x, q.data(), n);
    for (std::size_t i = 0; i < n; ++i)
      out[i] = double(q[i / 32].d.to_float()) * q[i / 32].qs[i % 32];
  } else {
    std::vector<dt::block_q8_1> q(n / 32);
    dt::quantize_row_q8_1(x, q.data(), n);
    for (std::size_t i = 0; i < n; ++i)
      out[i] = double(q[i / 32].d.to_float()) * q[i / 32].qs[i % 32];
  }
  return out;
}

template <class C>
class QuantProducts : public ::testing::Test {};
TYPED_TEST_SUITE_P(QuantProducts);

/// The scalar path against double sums of decoded weights times rounded x. Bound: the
/// f32 additions (block by block) and the rounding of each block's scale products,
/// relative to S = sum |w a|; for q4_1 / q5_1, also ggml's f16 s = d_a sum(q_a).
TYPED_TEST_P(QuantProducts, ScalarMatchesDoubleReference) {
  using E = typename TypeParam::elem;
  if (!std::is_same_v<typename TypeParam::isa, simd::scalar>) GTEST_SKIP() << "scalar only";
  const std::size_t n_in = 768, n_out = 37, n_tok = 3;
  const std::uint64_t seed = k_seed + 1;
  random_weight<E> rw(n_in, n_out, seed);
  const std::vector<float> x = random_x(n_in * n_tok, seed + 1);
  std::vector<float> y(n_tok * n_out);
  mnemo::model::matmul_workspace ws;
  mnemo::model::mul_mat<simd::scalar>(rw.w, x.data(), n_in, n_tok, y.data(), n_out, 1, ws);
  for (std::size_t t = 0; t < n_tok; ++t) {
    const std::vector<double> a = rounded_x<E>(x.data() + t * n_in, n_in);
    for (std::size_t o = 0; o < n_out; ++o) {
      double ref = 0, s_abs = 0, m_abs = 0;
      for (std::size_t i = 0; i < n_in; ++i) {
        const double p = double(rw.decoded[o * n_in + i]) * a[i];
        ref += p;
        s_abs += std::abs(p);
      }
      if constexpr (std::is_same_v<E, dt::block_q4_1> || std::is_same_v<E, dt::block_q5_1>) {
        const auto* row = reinterpret_cast<const E*>(rw.w.row(o));
        for (std::size_t b = 0; b < n_in / 32; ++b) {
          double sa = 0;
          for (std::size_t i = 0; i < 32; ++i) sa += a[32 * b + i];
          m_abs += std::abs(double(row[b].m.to_float()) * sa);
        }
      }
      const double tol = 1e-5 * s_abs + 1e-3 * m_abs + 1e-30;
      ASSERT_NEAR(y[t * n_out + o], ref, tol)
          << "seed " << seed << ", token " << t << ", output " << o;
    }
  }
}

/// Every ISA against the scalar path, bit for bit, over token counts of both kernels'
/// ranges and uneven thread splits.
TYPED_TEST_P(QuantProducts, IsaMatchesScalarBitForBit) {
  using Isa = typename TypeParam::isa;
  using E = typename TypeParam::elem;
  if (!runnable<Isa>()) GTEST_SKIP() << Isa::name << " is not available here";
  const std::size_t n_ins[] = {256, 512, 1280};
  for (std::size_t n_in : n_ins) {
    const std::size_t n_out = 45;
    const std::uint64_t seed = k_seed + n_in;
    random_weight<E> rw(n_in, n_out, seed);
    for (std::size_t n_tok : {std::size_t{1}, std::size_t{3}, std::size_t{17}, std::size_t{50}}) {
      const std::vector<float> x = random_x((n_in + 5) * n_tok, seed + n_tok);
      const std::size_t y_stride = n_out + 3;
      std::vector<float> ref(n_tok * y_stride, -1.0f);
      mnemo::model::matmul_workspace ws;
      mnemo::model::mul_mat<simd::scalar>(rw.w, x.data(), n_in + 5, n_tok, ref.data(), y_stride, 1,
                                          ws);
      for (int threads : {1, 2, 3}) {
        std::vector<float> y(n_tok * y_stride, -1.0f);
        mnemo::model::mul_mat<Isa>(rw.w, x.data(), n_in + 5, n_tok, y.data(), y_stride, threads,
                                   ws);
        for (std::size_t i = 0; i < y.size(); ++i)
          ASSERT_EQ(std::memcmp(&y[i], &ref[i], 4), 0)
              << "seed " << seed << ", n_in " << n_in << ", " << n_tok << " tokens, " << threads
              << " threads: first difference at token " << i / y_stride << ", output "
              << i % y_stride << ": " << y[i] << " vs scalar " << ref[i];
      }
    }
  }
}

TYPED_TEST_P(QuantProducts, GetRowIsTheDecodedRow) {
  using Isa = typename TypeParam::isa;
  using E = typename TypeParam::elem;
  if (!runnable<Isa>()) GTEST_SKIP() << Isa::name << " is not available here";
  const std::size_t n_in = 512, n_out = 5;
  random_weight<E> rw(n_in, n_out, k_seed + 7);
  std::vector<float> out(n_in);
  for (std::size_t r = 0; r < n_out; ++r) {
    mnemo::model::get_row<Isa>(rw.w, r, out.data());
    for (std::size_t i = 0; i < n_in; ++i)
      ASSERT_EQ(out[i], rw.decoded[r * n_in + i]) << "row " << r << ", value " << i;
  }
}

REGISTER_TYPED_TEST_SUITE_P(QuantProducts, ScalarMatchesDoubleReference, IsaMatchesScalarBitForBit,
                            GetRowIsTheDecodedRow);

template <class Isa>
using types_for = ::testing::Types<combo<Isa, dt::block_q4_1>, combo<Isa, dt::block_q5_0>,
                                   combo<Isa, dt::block_q5_1>, combo<Isa, dt::block_q2_K>,
                                   combo<Isa, dt::block_q3_K>, combo<Isa, dt::block_q4_K>,
                                   combo<Isa, dt::block_q5_K>, combo<Isa, dt::block_q6_K>>;

INSTANTIATE_TYPED_TEST_SUITE_P(Scalar, QuantProducts, types_for<simd::scalar>, combo_names);
#if defined(MNEMO_ARCH_X86_64)
INSTANTIATE_TYPED_TEST_SUITE_P(Avx2, QuantProducts, types_for<simd::avx2>, combo_names);
INSTANTIATE_TYPED_TEST_SUITE_P(Avx512, QuantProducts, types_for<simd::avx512>, combo_names);
#elif defined(MNEMO_ARCH_AARCH64)
INSTANTIATE_TYPED_TEST_SUITE_P(Neon, QuantProducts, types_for<simd::neon>, combo_names);
#endif

TEST(QuantActivations, Q8KKeepsTheLargestValueAndItsGroupSums) {
  std::vector<float> x = random_x(512, k_seed + 9);
  x[300] = -9.0f;  // block 1's largest magnitude, negative
  std::vector<dt::block_q8_K> q(2);
  dt::quantize_row_q8_K(x.data(), q.data(), 512);
  // iscale = -127 / max: the largest value is always code -127, d = -max / 127
  EXPECT_EQ(int{q[1].qs[300 - 256]}, -127);
  EXPECT_FLOAT_EQ(q[1].d, 9.0f / 127.0f);
  for (std::size_t b = 0; b < 2; ++b)
    for (std::size_t g = 0; g < 16; ++g) {
      int s = 0;
      for (std::size_t i = 0; i < 16; ++i) s += q[b].qs[16 * g + i];
      EXPECT_EQ(q[b].bsums[g], s) << "block " << b << ", group " << g;
    }
  for (std::size_t i = 0; i < 512; ++i)
    EXPECT_NEAR(double(q[i / 256].d) * q[i / 256].qs[i % 256], x[i],
                0.5 * std::abs(double(q[i / 256].d)) * (1 + 1e-6))
        << "value " << i;
  std::vector<float> zeros(256, 0.0f);
  dt::quantize_row_q8_K(zeros.data(), q.data(), 256);
  EXPECT_EQ(q[0].d, 0.0f);
}

/// Blocks that probe q8_K's rounding: a normal block, exact ties of x * iscale (half
/// to even), the largest magnitude twice with both signs (the first one wins), NaN and
/// infinities, an all-NaN block, zeros and subnormals.
std::vector<float> q8_K_probe_blocks(std::uint64_t seed) {
  std::vector<float> x = random_x(8 * 256, seed);
  float* tie = x.data() + 256;  // iscale = 1: every k + 0.5 is a tie
  tie[0] = -127.0f;
  for (std::size_t i = 1; i < 256; ++i) tie[i] = static_cast<float>(int(i % 254) - 127) + 0.5f;
  float* twin = x.data() + 2 * 256;
  twin[7] = 5.0f;
  twin[201] = -5.0f;
  x[3 * 256 + 17] = std::nanf("");
  x[3 * 256 + 90] = 7.0f;
  x[4 * 256 + 40] = -INFINITY;
  x[4 * 256 + 41] = INFINITY;
  std::fill(x.begin() + 5 * 256, x.begin() + 6 * 256, std::nanf(""));
  std::fill(x.begin() + 6 * 256, x.begin() + 7 * 256, 0.0f);
  x[6 * 256 + 3] = -0.0f;
  for (std::size_t i = 7 * 256; i < 8 * 256; ++i) x[i] *= 1e-39f;  // subnormal
  return x;
}

template <class Isa>
void expect_q8_K_rows_match_scalar() {
  if (!runnable<Isa>()) return;
  const std::uint64_t seed = k_seed + 17;
  const std::vector<float> x = q8_K_probe_blocks(seed);
  const std::size_t nb = x.size() / 256;
  std::vector<dt::block_q8_K> want(nb), got(nb);
  dt::quantize_row_q8_K(x.data(), want.data(), x.size());
  mnemo::model::detail::quant_dot<Isa>::template quantize_x<dt::block_q4_K>(x.data(), got.data(),
                                                                            x.size());
  for (std::size_t b = 0; b < nb; ++b) {
    ASSERT_EQ(std::memcmp(&want[b].d, &got[b].d, sizeof(float)), 0)
        << Isa::name << " seed " << seed << " block " << b << ": d " << got[b].d << ", want "
        << want[b].d;
    for (std::size_t i = 0; i < 256; ++i)
      ASSERT_EQ(int{got[b].qs[i]}, int{want[b].qs[i]})
          << Isa::name << " seed " << seed << " block " << b << " code " << i << " of x "
          << x[256 * b + i];
    for (std::size_t g = 0; g < 16; ++g)
      ASSERT_EQ(got[b].bsums[g], want[b].bsums[g])
          << Isa::name << " seed " << seed << " block " << b << " group " << g;
  }
}

TEST(QuantActivations, Q8KRowsOfEveryIsaAreTheScalarBytes) {
  expect_q8_K_rows_match_scalar<simd::scalar>();
#if defined(MNEMO_ARCH_X86_64)
  expect_q8_K_rows_match_scalar<simd::avx2>();
  expect_q8_K_rows_match_scalar<simd::avx512>();
#elif defined(MNEMO_ARCH_AARCH64)
  expect_q8_K_rows_match_scalar<simd::neon>();
#endif
}

}  // namespace
