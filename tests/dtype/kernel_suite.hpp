// The row-kernel test suite, typed over (ISA, element type). Each ISA instantiates it
// in its own translation unit (kernels_<isa>_test.cpp) so the suites build in parallel.
// Every check compares against the independent references of reference.hpp (which
// ggml's definitions were transcribed into) with the bounds of tolerances.hpp, over
// lengths 0..2*lanes+1 (in blocks for q8_0/q4_0: 0..4 blocks and 64+), float pointers
// 0..3 floats past a 64-byte boundary, and encoded rows at 2-byte (odd halfword)
// offsets, with sentinel guards around every written buffer.
//
// Float inputs are offset by whole floats, not by 1..3 bytes: a float* that is not
// 4-byte aligned is undefined behaviour in C++ (and the API requires alignof(E)).
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <type_traits>
#include <vector>

#include "dtype/reference.hpp"
#include "dtype/tolerances.hpp"
#include <gtest/gtest.h>

#include "mnemo/dtype/dtype.hpp"
#include "mnemo/simd/simd.hpp"

namespace mnemo_test {

namespace simd = mnemo::simd;

template <class Isa, class E>
struct combo {
  using isa = Isa;
  using elem = E;
};

struct combo_names {
  template <class C>
  static std::string GetName(int) {
    std::string isa(C::isa::name), type(dt::element_traits<typename C::elem>::name), out;
    for (char c : isa + "-" + type)
      if (c != '_') out += c;  // no underscores in test names
    return out;
  }
};

inline constexpr std::uint64_t k_seed = 0x64747970655eedull;

template <class E>
constexpr bool is_block = std::is_same_v<E, dt::block_q8_0> || std::is_same_v<E, dt::block_q4_0>;

/// Row lengths (values) to sweep: every tail for one-value types, 0..4 and 64..67 blocks
/// for the quantised ones (64 blocks = 2048 values covers the unrolled loops' steady state).
template <class Isa, class E>
std::vector<std::size_t> lengths() {
  std::vector<std::size_t> ns;
  if constexpr (is_block<E>) {
    for (std::size_t b : {0, 1, 2, 3, 4, 64, 67}) ns.push_back(32 * b);
  } else {
    for (std::size_t n = 0; n <= 2 * Isa::lanes_f32 + 1; ++n) ns.push_back(n);
    for (std::size_t n : {8 * Isa::lanes_f32 + 3, std::size_t{128}, std::size_t{1000}})
      ns.push_back(n);
  }
  return ns;
}

/// Byte offsets of encoded rows past a 64-byte boundary: aligned, and misaligned by
/// whole elements' alignment (2 bytes: an odd halfword for f16/bf16/blocks).
template <class E>
std::vector<std::size_t> row_offsets() {
  if constexpr (alignof(E) == 4)
    return {0, 4, 12};
  else
    return {0, 2, 6, 34};
}

inline constexpr std::size_t k_float_offsets[] = {0, 1, 2, 3};  // in floats

inline std::string where(std::uint64_t seed, std::size_t n, std::size_t x_off,
                         std::size_t row_off) {
  return "seed " + std::to_string(seed) + ", n " + std::to_string(n) + ", float offset " +
         std::to_string(x_off) + ", row byte offset " + std::to_string(row_off);
}

template <class E>
std::size_t elements(std::size_t n) {
  return n / dt::element_traits<E>::block_size;
}

// ------------------------------------------------------------------------- checks

template <class Isa, class E>
void check_encode() {
  for (std::size_t n : lengths<Isa, E>()) {
    for (std::size_t xo : k_float_offsets) {
      for (std::size_t ro : row_offsets<E>()) {
        const std::uint64_t seed = k_seed ^ (n * 131 + xo * 7 + ro);
        const std::vector<float> values = make_values(n, seed);
        guarded_bytes x(n * sizeof(float), xo * sizeof(float));
        std::copy(values.begin(), values.end(), x.as<float>());
        const std::size_t bytes = dt::row_bytes_of<E>(n);
        guarded_bytes got(bytes, ro);
        std::vector<E> want(elements<E>(n));
        dt::encode_row<Isa>(x.as<const float>(), got.as<E>(), n);
        ref_encode(values.data(), want.data(), n);
        for (std::size_t i = 0; i < want.size(); ++i) {
          if (std::memcmp(got.as<E>() + i, &want[i], sizeof(E)) != 0) {
            const std::size_t v = i * dt::element_traits<E>::block_size;
            ADD_FAILURE() << where(seed, n, xo, ro) << ": first different element " << i
                          << " (value index " << v << ", input " << values[v] << ")";
            break;
          }
        }
        EXPECT_TRUE(got.guards_intact()) << where(seed, n, xo, ro) << ": wrote outside the row";
      }
    }
  }
}

template <class Isa, class E>
void check_decode() {
  for (std::size_t n : lengths<Isa, E>()) {
    for (std::size_t xo : k_float_offsets) {
      for (std::size_t ro : row_offsets<E>()) {
        const std::uint64_t seed = k_seed ^ (n * 137 + xo * 11 + ro);
        const std::vector<float> values = make_values(n, seed);
        guarded_bytes row(dt::row_bytes_of<E>(n), ro);
        ref_encode(values.data(), row.as<E>(), n);
        guarded_bytes out(n * sizeof(float), xo * sizeof(float));
        dt::decode_row<Isa>(row.as<const E>(), out.as<float>(), n);
        for (std::size_t i = 0; i < n; ++i) {
          const float want = ref_value(row.as<const E>(), i);
          const float got = out.as<float>()[i];
          if (std::memcmp(&got, &want, sizeof(float)) != 0) {
            ADD_FAILURE() << where(seed, n, xo, ro) << ": first different value " << i << ": got "
                          << got << " want " << want;
            break;
          }
        }
        EXPECT_TRUE(out.guards_intact()) << where(seed, n, xo, ro) << ": wrote outside the output";
      }
    }
  }
}

template <class Isa, class E>
void check_dot() {
  const tol::type_tolerance& t = tol::for_type<E>();
  for (std::size_t n : lengths<Isa, E>()) {
    for (std::size_t xo : k_float_offsets) {
      for (std::size_t ro : row_offsets<E>()) {
        const std::uint64_t seed = k_seed ^ (n * 139 + xo * 13 + ro);
        const std::vector<float> values = make_values(n, seed);
        const std::vector<float> xs = make_values(n, seed + 1);
        guarded_bytes row(dt::row_bytes_of<E>(n), ro);
        ref_encode(values.data(), row.as<E>(), n);
        guarded_bytes x(n * sizeof(float), xo * sizeof(float));
        std::copy(xs.begin(), xs.end(), x.as<float>());
        const float got = dt::dot<Isa>(x.as<const float>(), row.as<const E>(), n);
        double want = 0, abs_sum = 0;
        ref_dot(xs.data(), row.as<const E>(), n, want, abs_sum);
        EXPECT_NEAR(got, want, tol::dot_tolerance(t, n, abs_sum))
            << where(seed, n, xo, ro) << ", type " << t.name;
      }
    }
  }
}

template <class Isa, class E>
void check_axpy() {
  for (std::size_t n : lengths<Isa, E>()) {
    for (std::size_t xo : k_float_offsets) {
      for (std::size_t ro : row_offsets<E>()) {
        const std::uint64_t seed = k_seed ^ (n * 149 + xo * 17 + ro);
        const std::vector<float> values = make_values(n, seed);
        const std::vector<float> ys = make_values(n, seed + 1);
        const float a = rng{seed}.uniform() * 3.0f;
        guarded_bytes row(dt::row_bytes_of<E>(n), ro);
        ref_encode(values.data(), row.as<E>(), n);
        guarded_bytes y(n * sizeof(float), xo * sizeof(float));
        std::copy(ys.begin(), ys.end(), y.as<float>());
        dt::axpy<Isa>(a, row.as<const E>(), y.as<float>(), n);
        for (std::size_t i = 0; i < n; ++i) {
          const float want = ref_axpy_element(a, row.as<const E>(), ys[i], i);
          const float got = y.as<float>()[i];
          if (std::memcmp(&got, &want, sizeof(float)) != 0) {
            ADD_FAILURE() << where(seed, n, xo, ro) << ": first different value " << i << ": got "
                          << got << " want " << want;
            break;
          }
        }
        EXPECT_TRUE(y.guards_intact()) << where(seed, n, xo, ro) << ": wrote outside y";
      }
    }
  }
}

template <class Isa, class E>
void check_dot_rows() {
  const tol::type_tolerance& t = tol::for_type<E>();
  for (std::size_t n : lengths<Isa, E>()) {
    for (std::size_t n_rows : {0, 1, 3, 8}) {
      for (std::size_t pad : {std::size_t{0}, alignof(E), 3 * alignof(E)}) {
        const std::size_t ro = row_offsets<E>().back();
        const std::uint64_t seed = k_seed ^ (n * 151 + n_rows * 19 + pad);
        const std::size_t stride = dt::row_bytes_of<E>(n) + pad;
        const std::vector<float> xs = make_values(n, seed);
        guarded_bytes rows(stride * n_rows, ro);
        for (std::size_t r = 0; r < n_rows; ++r) {
          const std::vector<float> values = make_values(n, seed + 1 + r);
          ref_encode(values.data(), reinterpret_cast<E*>(rows.begin + r * stride), n);
        }
        guarded_bytes x(n * sizeof(float), sizeof(float));
        std::copy(xs.begin(), xs.end(), x.as<float>());
        guarded_bytes out(n_rows * sizeof(float), 1 * sizeof(float));
        dt::dot_rows<Isa>(x.as<const float>(), rows.as<const E>(), stride, n_rows, n,
                          out.as<float>());
        for (std::size_t r = 0; r < n_rows; ++r) {
          const E* row = reinterpret_cast<const E*>(rows.begin + r * stride);
          const float single = dt::dot<Isa>(x.as<const float>(), row, n);
          const float got = out.as<float>()[r];
          EXPECT_EQ(std::memcmp(&got, &single, sizeof(float)), 0)
              << where(seed, n, 1, ro) << ", row " << r << ": dot_rows " << got << " but dot "
              << single;
          double want = 0, abs_sum = 0;
          ref_dot(xs.data(), row, n, want, abs_sum);
          EXPECT_NEAR(got, want, tol::dot_tolerance(t, n, abs_sum))
              << where(seed, n, 1, ro) << ", row " << r << ", type " << t.name;
        }
        EXPECT_TRUE(out.guards_intact()) << where(seed, n, 1, ro) << ": wrote outside out";
      }
    }
  }
}

template <class Isa, class E>
void check_axpy_rows() {
  for (std::size_t n : lengths<Isa, E>()) {
    for (std::size_t n_rows : {0, 1, 3, 8}) {
      for (std::size_t pad : {std::size_t{0}, alignof(E), 3 * alignof(E)}) {
        const std::size_t ro = row_offsets<E>().back();
        const std::uint64_t seed = k_seed ^ (n * 157 + n_rows * 23 + pad);
        const std::size_t stride = dt::row_bytes_of<E>(n) + pad;
        guarded_bytes rows(stride * n_rows, ro);
        std::vector<float> a(n_rows);
        rng g{seed};
        for (std::size_t r = 0; r < n_rows; ++r) {
          const std::vector<float> values = make_values(n, seed + 1 + r);
          ref_encode(values.data(), reinterpret_cast<E*>(rows.begin + r * stride), n);
          a[r] = 2.0f * g.uniform();
        }
        const std::vector<float> ys = make_values(n, seed);
        guarded_bytes y(n * sizeof(float), 3 * sizeof(float));
        std::copy(ys.begin(), ys.end(), y.as<float>());
        dt::axpy_rows<Isa>(a.data(), rows.as<const E>(), stride, n_rows, n, y.as<float>());
        for (std::size_t i = 0; i < n; ++i) {
          float want = ys[i];
          for (std::size_t r = 0; r < n_rows; ++r)
            want = ref_axpy_element(a[r], reinterpret_cast<const E*>(rows.begin + r * stride), want,
                                    i);
          const float got = y.as<float>()[i];
          if (std::memcmp(&got, &want, sizeof(float)) != 0) {
            ADD_FAILURE() << where(seed, n, 3, ro) << ", " << n_rows
                          << " rows: first different value " << i << ": got " << got << " want "
                          << want;
            break;
          }
        }
        EXPECT_TRUE(y.guards_intact()) << where(seed, n, 3, ro) << ": wrote outside y";
      }
    }
  }
}

/// q8_0 / q4_0: load_lanes, the in-register decode of one vector that attention's decode
/// passes use, gives decode's values bit for bit at every vector of every row.
template <class Isa, class E>
void check_load_lanes() {
  if constexpr (is_block<E>) {
    constexpr std::size_t L = Isa::lanes_f32;
    for (std::size_t n : lengths<Isa, E>()) {
      for (std::size_t ro : row_offsets<E>()) {
        const std::uint64_t seed = k_seed ^ (n * 139 + ro);
        const std::vector<float> values = make_values(n, seed);
        guarded_bytes row(dt::row_bytes_of<E>(n), ro);
        ref_encode(values.data(), row.as<E>(), n);
        float got[L];
        for (std::size_t i = 0; i < n; i += L) {
          dt::row_kernels<Isa>::store_lanes(row.as<const E>(), i, got);
          for (std::size_t l = 0; l < L; ++l) {
            const float want = ref_value(row.as<const E>(), i + l);
            ASSERT_EQ(std::memcmp(&got[l], &want, sizeof(float)), 0)
                << where(seed, n, 0, ro) << ": value " << i + l << ": got " << got[l] << " want "
                << want;
          }
        }
      }
    }
  }
}

// ---------------------------------------------------------------------- the suite

template <class C>
class DtypeKernels : public ::testing::Test {
 protected:
  void SetUp() override {
    using Isa = typename C::isa;
    if constexpr (!simd::is_compiled<Isa>) {
      GTEST_SKIP() << Isa::name << " is not compiled for this architecture";
    } else if (!simd::supported<Isa>()) {
      GTEST_SKIP() << Isa::name << " is not supported by this CPU";
    }
  }
};

TYPED_TEST_SUITE_P(DtypeKernels);

#define MNEMO_DTYPE_CHECK_(fn)                                                 \
  do {                                                                         \
    using Isa = typename TypeParam::isa;                                       \
    if constexpr (simd::is_compiled<Isa>) fn<Isa, typename TypeParam::elem>(); \
  } while (0)

TYPED_TEST_P(DtypeKernels, EncodeMatchesReference) { MNEMO_DTYPE_CHECK_(check_encode); }
TYPED_TEST_P(DtypeKernels, DecodeMatchesReference) { MNEMO_DTYPE_CHECK_(check_decode); }
TYPED_TEST_P(DtypeKernels, DotWithinBound) { MNEMO_DTYPE_CHECK_(check_dot); }
TYPED_TEST_P(DtypeKernels, AxpyMatchesReference) { MNEMO_DTYPE_CHECK_(check_axpy); }
TYPED_TEST_P(DtypeKernels, DotRowsMatchesDot) { MNEMO_DTYPE_CHECK_(check_dot_rows); }
TYPED_TEST_P(DtypeKernels, AxpyRowsMatchesReference) { MNEMO_DTYPE_CHECK_(check_axpy_rows); }
TYPED_TEST_P(DtypeKernels, LoadLanesIsTheDecode) { MNEMO_DTYPE_CHECK_(check_load_lanes); }

REGISTER_TYPED_TEST_SUITE_P(DtypeKernels, EncodeMatchesReference, DecodeMatchesReference,
                            DotWithinBound, AxpyMatchesReference, DotRowsMatchesDot,
                            AxpyRowsMatchesReference, LoadLanesIsTheDecode);

#undef MNEMO_DTYPE_CHECK_

template <class Isa>
using all_types_for = ::testing::Types<combo<Isa, float>, combo<Isa, dt::f16>, combo<Isa, dt::bf16>,
                                       combo<Isa, dt::block_q8_0>, combo<Isa, dt::block_q4_0>>;

}  // namespace mnemo_test
