// The rescoring policies' vector kernels (evict/lane_kernels.hpp) on the build's ISA
// and on scalar, against fp64 sums: the key-lane dots for every row count around the
// eight-row tile and partial key tiles, the per-lane moments, the log-sum-exp and the
// exponential accumulation. Seeds and the first difference are printed on failure.
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdio>
#include <vector>

#include <gtest/gtest.h>

#include "mnemo/base/rng.hpp"
#include "mnemo/evict/lane_kernels.hpp"

namespace {

using namespace mnemo;

std::vector<float> normals(std::size_t n, std::uint64_t seed) {
  splitmix64 g{seed};
  std::vector<float> x(n);
  for (float& v : x) v = g.normal();
  return x;
}

/// |got - want| within a few f32 roundings of the terms' magnitude.
bool close(double got, double want, double scale) {
  return std::fabs(got - want) <= 1e-5 * scale + 1e-30;
}

template <class Isa>
void key_lane_dots(std::uint64_t seed) {
  constexpr std::size_t L = evict::key_lanes<Isa>;
  for (std::size_t n : {1u, 7u, 64u, 130u})
    for (std::size_t n_rows : {1u, 7u, 8u, 9u, 17u, 128u}) {
      const std::vector<float> kt = normals(n * L, seed + n), rm = normals(n_rows * n, seed + 7);
      std::vector<const float*> rows(n_rows);
      for (std::size_t r = 0; r < n_rows; ++r) rows[r] = &rm[r * n];
      std::vector<float> out(n_rows * L, NAN);
      evict::dot_key_lanes_f32<Isa>(kt.data(), n, rows.data(), n_rows, out.data());
      for (std::size_t r = 0; r < n_rows; ++r)
        for (std::size_t l = 0; l < L; ++l) {
          double want = 0.0, mag = 0.0;
          for (std::size_t e = 0; e < n; ++e) {
            want += double(rows[r][e]) * kt[e * L + l];
            mag += std::fabs(double(rows[r][e]) * kt[e * L + l]);
          }
          ASSERT_TRUE(close(out[r * L + l], want, mag))
              << Isa::name << " seed " << seed << " n " << n << " rows " << n_rows << ": row " << r
              << " lane " << l << " got " << out[r * L + l] << " want " << want;
        }
    }
}

template <class Isa>
void moments_and_exps(std::uint64_t seed) {
  constexpr std::size_t L = evict::key_lanes<Isa>;
  for (std::size_t n_rows : {1u, 5u, 32u}) {
    const std::vector<float> y = normals(n_rows * L, seed + n_rows);
    float mean[L], spread[L];
    evict::lane_moments_f32<Isa>(y.data(), n_rows, mean, spread);
    for (std::size_t l = 0; l < L; ++l) {
      double m = 0.0, c = 0.0;
      for (std::size_t r = 0; r < n_rows; ++r) m += y[r * L + l];
      m /= double(n_rows);
      for (std::size_t r = 0; r < n_rows; ++r) c += (y[r * L + l] - m) * (y[r * L + l] - m);
      ASSERT_TRUE(close(mean[l], m, 4.0) && close(spread[l], c, 4.0 * double(n_rows)))
          << Isa::name << " seed " << seed << " rows " << n_rows << " lane " << l << ": mean "
          << mean[l] << " want " << m << ", spread " << spread[l] << " want " << c;
    }
  }
  for (std::size_t n : {1u, 3u, 16u, 37u, 1025u}) {
    std::vector<float> z = normals(n, seed + 3 * n);
    for (float& x : z) x *= 8.0f;  // spread enough that the largest term dominates
    double mx = -INFINITY, tot = 0.0;
    for (float x : z) mx = std::max(mx, double(x));
    for (float x : z) tot += std::exp(double(x) - mx);
    const double lse = mx + std::log(tot);
    const float got = evict::log_sum_exp_f32<Isa>(z.data(), n);
    ASSERT_TRUE(close(got, lse, std::fabs(lse) + 1.0))
        << Isa::name << " seed " << seed << " n " << n << ": log-sum-exp " << got << " want "
        << lse;
    std::vector<float> acc(n, 0.5f);
    evict::add_exp_f32<Isa>(z.data(), n, got, acc.data());
    for (std::size_t j = 0; j < n; ++j) {
      const double want = 0.5 + std::exp(double(z[j]) - double(got));
      ASSERT_TRUE(std::fabs(acc[j] - want) <= 4e-6 * want)
          << Isa::name << " seed " << seed << " n " << n << ": acc[" << j << "] " << acc[j]
          << " want " << want;
    }
  }
}

TEST(EvictLaneKernels, KeyLaneDotsMatchFp64) {
  for (std::uint64_t seed : {1u, 2u}) {
    key_lane_dots<simd::native>(seed);
    key_lane_dots<simd::scalar>(seed);
  }
}

TEST(EvictLaneKernels, MomentsAndExponentialsMatchFp64) {
  for (std::uint64_t seed : {1u, 2u}) {
    moments_and_exps<simd::native>(seed);
    moments_and_exps<simd::scalar>(seed);
  }
}

}  // namespace
