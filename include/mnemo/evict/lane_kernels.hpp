// The vector kernels of the rescoring policies (KeyDiff, Expected Attention) over f32
// rows, for the build's ISA: a plain float sum is not vectorised without fast-math,
// which made KeyDiff's pass ~15% of attention.
#pragma once

#include <cmath>
#include <cstddef>

#include "mnemo/simd/simd.hpp"

namespace mnemo::evict {

/// a . b over n floats.
template <class Isa = simd::native>
float dot_f32(const float* a, const float* b, std::size_t n) noexcept {
  using O = simd::ops<Isa>;
  constexpr std::size_t W = O::lanes;
  typename O::vf acc = O::zero();
  std::size_t i = 0;
  for (; i + W <= n; i += W) acc = O::fma(O::load(a + i), O::load(b + i), acc);
  float s = O::reduce_add(acc);
  for (; i < n; ++i) s += a[i] * b[i];
  return s;
}

/// How many keys dot_key_lanes_f32 takes at once: the vector's lanes.
template <class Isa = simd::native>
inline constexpr std::size_t key_lanes = simd::ops<Isa>::lanes;

namespace detail {

/// NR rows against the lanes' keys: out[r][lane] = rows[r] . key over n floats.
template <class Isa, std::size_t NR>
MNEMO_INLINE void dot_key_lanes_tile(const float* keys_t, std::size_t n, const float* const* rows,
                                     float* out) noexcept {
  using O = simd::ops<Isa>;
  constexpr std::size_t W = O::lanes;
  typename O::vf acc[NR];
  const float* row[NR];
#pragma GCC unroll 8
  for (std::size_t r = 0; r < NR; ++r) {
    acc[r] = O::zero();
    row[r] = rows[r];
  }
  for (std::size_t e = 0; e < n; ++e) {
    const typename O::vf k = O::load(keys_t + e * W);
#pragma GCC unroll 8
    for (std::size_t r = 0; r < NR; ++r) acc[r] = O::fma(O::set1(row[r][e]), k, acc[r]);
  }
#pragma GCC unroll 8
  for (std::size_t r = 0; r < NR; ++r) O::store(out + r * W, acc[r]);
}

}  // namespace detail

/// Dots of key_lanes<Isa> keys at once, one key per vector lane: out[r * lanes + l] =
/// rows[r] . (key l) over n floats for r < n_rows, where keys_t is [n, lanes] (key l's
/// element e at keys_t[e * lanes + l]). Each row element is broadcast once for all the
/// keys and no dot needs a horizontal sum, so scoring many keys against many rows (a
/// rescore of every cell against the query window) runs at the FMA rate; eight rows per
/// register tile. Each output is one fma chain over e in order.
template <class Isa = simd::native>
void dot_key_lanes_f32(const float* keys_t, std::size_t n, const float* const* rows,
                       std::size_t n_rows, float* out) noexcept {
  constexpr std::size_t W = simd::ops<Isa>::lanes;
  std::size_t r = 0;
  for (; r + 8 <= n_rows; r += 8)
    detail::dot_key_lanes_tile<Isa, 8>(keys_t, n, rows + r, out + r * W);
  for (; r < n_rows; ++r) detail::dot_key_lanes_tile<Isa, 1>(keys_t, n, rows + r, out + r * W);
}

/// Per lane l, over the n_rows rows of y ([n_rows, lanes]): mean[l] = the rows' mean and
/// spread[l] = the sum of their squared deviations from it.
template <class Isa = simd::native>
void lane_moments_f32(const float* y, std::size_t n_rows, float* mean, float* spread) noexcept {
  using O = simd::ops<Isa>;
  constexpr std::size_t W = O::lanes;
  typename O::vf s = O::zero();
  for (std::size_t r = 0; r < n_rows; ++r) s = O::add(s, O::load(y + r * W));
  const typename O::vf m = O::mul(s, O::set1(1.0f / static_cast<float>(n_rows)));
  typename O::vf c = O::zero();
  for (std::size_t r = 0; r < n_rows; ++r) {
    const typename O::vf e = O::sub(O::load(y + r * W), m);
    c = O::fma(e, e, c);
  }
  O::store(mean, m);
  O::store(spread, c);
}

/// log(sum of e^z[j]) over j < n (n > 0), shifted by the largest z.
template <class Isa = simd::native>
float log_sum_exp_f32(const float* z, std::size_t n) noexcept {
  using O = simd::ops<Isa>;
  constexpr std::size_t W = O::lanes;
  float mx = -INFINITY;
  std::size_t j = 0;
  if (n >= W) {
    typename O::vf v = O::load(z);
    for (j = W; j + W <= n; j += W) v = O::max(v, O::load(z + j));
    mx = O::reduce_max(v);
  }
  for (; j < n; ++j) mx = z[j] > mx ? z[j] : mx;
  const typename O::vf shift = O::set1(mx);
  typename O::vf acc = O::zero();
  for (j = 0; j + W <= n; j += W) acc = O::add(acc, O::exp(O::sub(O::load(z + j), shift)));
  float tot = O::reduce_add(acc);
  for (; j < n; ++j) tot += std::exp(z[j] - mx);
  return mx + std::log(tot);
}

/// acc[j] += e^(z[j] - shift) for j < n.
template <class Isa = simd::native>
void add_exp_f32(const float* z, std::size_t n, float shift, float* acc) noexcept {
  using O = simd::ops<Isa>;
  constexpr std::size_t W = O::lanes;
  const typename O::vf s = O::set1(shift);
  std::size_t j = 0;
  for (; j + W <= n; j += W)
    O::store(acc + j, O::add(O::load(acc + j), O::exp(O::sub(O::load(z + j), s))));
  for (; j < n; ++j) acc[j] += std::exp(z[j] - shift);
}

}  // namespace mnemo::evict
