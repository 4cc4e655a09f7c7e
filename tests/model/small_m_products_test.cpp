// model::mul_mat for a few tokens (short prompts, batched decode: M = 1..9, 11, 13..17,
// 31, 32, 40, 47, 64) against the scalar ISA's product run one token at a time, for every
// weight type and every x86 ISA the CPU runs, on random shapes. The few-token kernels (the small-M
// register tiles for f32 .. q4_0, the token groups of the weight-only types) read each
// weight once for all the tokens of a call; one token at a time on the scalar ISA takes
// none of them, so this compares them with an independent path:
// - the weight-only types (q4_1 .. q6_K) bit for bit (exact integer sums, the f32 part
//   is the same code on every ISA);
// - f32, f16, bf16, q8_0, q4_0 within a bound of the f32 sums' rounding (the order of
//   the sums depends on the ISA and the kernel).
// Also 1 and 2 threads bit for bit. Failures print the seed, the shape and the first
// differing output.
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "mnemo/dtype/dtype.hpp"
#include "mnemo/dtype/weight_encode.hpp"
#include "mnemo/model/matmul.hpp"
#include "mnemo/simd/cpu.hpp"
#include "mnemo/simd/simd.hpp"

namespace {

namespace dt = mnemo::dtype;
namespace simd = mnemo::simd;
using mnemo::model::weight;

constexpr std::uint64_t k_seed = 0x736d616c6c6dull;
constexpr std::size_t k_token_counts[] = {1,  2,  3,  4,  5,  6,  7,  8,  9,  11,
                                          13, 14, 15, 16, 17, 31, 32, 40, 47, 64};
constexpr dt::element_type k_types[] = {
    dt::element_type::f32,  dt::element_type::f16,  dt::element_type::bf16, dt::element_type::q8_0,
    dt::element_type::q4_0, dt::element_type::q4_1, dt::element_type::q5_0, dt::element_type::q5_1,
    dt::element_type::q2_K, dt::element_type::q3_K, dt::element_type::q4_K, dt::element_type::q5_K,
    dt::element_type::q6_K};

/// A random [n_out, n_in] weight of type t (encoded from normal values), rows back to back.
struct random_weight {
  std::vector<std::uint64_t> storage;
  weight w;

  random_weight(dt::element_type t, std::size_t n_in, std::size_t n_out, std::mt19937_64& rng) {
    const std::size_t rb = dt::row_bytes(t, n_in).value();
    storage.assign((rb * n_out + 7) / 8 + 1, 0);
    auto* bytes = reinterpret_cast<unsigned char*>(storage.data());
    std::normal_distribution<float> nd(0.0f, 1.0f);
    std::vector<float> row(n_in);
    for (std::size_t r = 0; r < n_out; ++r) {
      for (float& v : row) v = nd(rng);
      dt::encode_any_row(t, row.data(), bytes + r * rb, n_in);
    }
    w.type = t;
    w.n_in = n_in;
    w.n_out = n_out;
    w.row_bytes = rb;
    w.data = reinterpret_cast<const std::byte*>(bytes);
    w.name = "test";
  }
};

/// A random input width for type t: whole blocks, crossing the small-M kernel's 512-value
/// slices; for the one-value types also widths with every vector tail.
std::size_t random_n_in(dt::element_type t, std::mt19937_64& rng) {
  const std::size_t block = dt::block_size(t);
  if (block == 1) return std::uniform_int_distribution<std::size_t>(1, 1100)(rng);
  const std::size_t max_blocks = 1024 / block;
  return block * std::uniform_int_distribution<std::size_t>(1, max_blocks)(rng);
}

template <class Isa>
void check_isa() {
  if constexpr (!simd::is_compiled<Isa>) {
    GTEST_SKIP() << "not compiled for this architecture";
  } else {
    if (!simd::supported<Isa>()) GTEST_SKIP() << Isa::name << " is not available here";
    std::size_t case_no = 0;
    for (dt::element_type t : k_types)
      for (std::size_t n_tok : k_token_counts) {
        const std::uint64_t seed = k_seed + 7919 * case_no++;
        std::mt19937_64 rng(seed);
        const std::size_t n_in = random_n_in(t, rng);
        const std::size_t n_out = std::uniform_int_distribution<std::size_t>(1, 160)(rng);
        const random_weight rw(t, n_in, n_out, rng);
        const std::size_t x_stride = n_in + 5, y_stride = n_out + 3;
        std::vector<float> x(n_tok * x_stride);
        std::uniform_real_distribution<float> ud(-1.0f, 1.0f);
        for (float& v : x) v = ud(rng);

        std::vector<float> got1(n_tok * y_stride), got2(n_tok * y_stride), want(n_tok * y_stride);
        mnemo::model::matmul_workspace ws, ws_ref;
        mnemo::model::mul_mat<Isa>(rw.w, x.data(), x_stride, n_tok, got1.data(), y_stride, 1, ws);
        mnemo::model::mul_mat<Isa>(rw.w, x.data(), x_stride, n_tok, got2.data(), y_stride, 2, ws);
        for (std::size_t k = 0; k < n_tok; ++k)
          mnemo::model::mul_mat<simd::scalar>(rw.w, x.data() + k * x_stride, x_stride, 1,
                                              want.data() + k * y_stride, y_stride, 1, ws_ref);

        const bool exact = !dt::is_kv_type(t);
        const std::string where = std::string(Isa::name) + " " + std::string(dt::to_string(t)) +
                                  ", seed " + std::to_string(seed) + ", n_in " +
                                  std::to_string(n_in) + ", n_out " + std::to_string(n_out) +
                                  ", n_tok " + std::to_string(n_tok);
        std::vector<float> rows(exact ? 0 : n_out * n_in);  // decoded, for the bound
        for (std::size_t o = 0; o < rows.size() / n_in; ++o)
          mnemo::model::get_row<simd::scalar>(rw.w, o, rows.data() + o * n_in);
        for (std::size_t k = 0; k < n_tok; ++k) {
          for (std::size_t o = 0; o < n_out; ++o) {
            const std::size_t i = k * y_stride + o;
            ASSERT_EQ(std::memcmp(&got1[i], &got2[i], sizeof(float)), 0)
                << where << ": 1 and 2 threads differ at y[" << k << "][" << o << "]: " << got1[i]
                << " vs " << got2[i];
            if (exact) {
              ASSERT_EQ(std::memcmp(&got1[i], &want[i], sizeof(float)), 0)
                  << where << ": first difference at y[" << k << "][" << o << "]: " << got1[i]
                  << ", one token on scalar " << want[i];
              continue;
            }
            // Two f32 sums of the same n_in products in different orders differ by at most
            // 2 n_in u sum_i |x_i w_i| (x as rounded for q8_0 / q4_0 is within 1% of x).
            double abs_sum = 0;
            for (std::size_t j = 0; j < n_in; ++j)
              abs_sum += std::fabs(static_cast<double>(rows[o * n_in + j]) * x[k * x_stride + j]);
            abs_sum *= 1.01;
            const double tol = 2.0 * (static_cast<double>(n_in) + 4) * abs_sum / 16777216.0;
            ASSERT_LE(std::fabs(static_cast<double>(got1[i]) - want[i]), tol)
                << where << ": first difference at y[" << k << "][" << o << "]: " << got1[i]
                << ", one token on scalar " << want[i];
          }
        }
      }
  }
}

TEST(SmallMProducts, Avx2MatchesOneTokenAtATimeOnScalar) {
#if defined(MNEMO_ARCH_X86_64)
  check_isa<simd::avx2>();
#else
  GTEST_SKIP() << "x86-64 only";
#endif
}

TEST(SmallMProducts, Avx512MatchesOneTokenAtATimeOnScalar) {
#if defined(MNEMO_ARCH_X86_64)
  check_isa<simd::avx512>();
#else
  GTEST_SKIP() << "x86-64 only";
#endif
}

TEST(SmallMProducts, ScalarManyTokensMatchOneTokenAtATime) { check_isa<simd::scalar>(); }

}  // namespace
