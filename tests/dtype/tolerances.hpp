// THE tolerance table of the dtype tests: every bound the dtype tests allow, per storage
// type, with the reason it is what it is. Tests read these; none hard-codes its own.
//
//   encode / decode / axpy: bit-identical across ISAs and to the independent reference
//     (tests/dtype/reference.hpp), so there is no tolerance for them at all. Encode is
//     exact by construction (same IEEE operations, same rounding rule per ISA); decode
//     is an exact product (f16 d times a small integer); axpy is one fma per element
//     with the same operands on every ISA.
//   dot: the summation order depends on the ISA (lanes, accumulators), so dot is
//     compared with a double-precision sum of the decoded row. For any order, a sum of
//     n products with fma accumulation is within n * u * sum|x_i v_i| of the exact
//     value (u = 2^-24); the block scale multiply of q8_0/q4_0 adds two roundings.
//   round trip (encode then decode, against the f32 input):
//     f16  |x - y| <= 2^-11 |x| for |x| in the normal f16 range (round to nearest even)
//     bf16 |x - y| <= 2^-8  |x| for normal f32 x
//     q8_0 |x - y| <= (1/2 + slack) d + |q| |d - d16|, d = max|x| / 127 of the block,
//          d16 the stored f16 scale: half a step, plus the f16 rounding of the scale
//     q4_0 as q8_0 with d = m / -8, except that codes are clamped to [0, 15]: values on
//          the side opposite to m beyond 7.5 steps decode to 7 d, an error of up to one
//          whole step (ggml's reference behaves the same).
#pragma once

#include <cstddef>
#include <type_traits>

#include "mnemo/dtype/types.hpp"

namespace mnemo_test::tol {

inline constexpr double u = 1.0 / 16777216.0;  // 2^-24, unit roundoff of f32

/// Allowed |dot - exact| as a multiple of u * sum|x_i v_i|, for n values: n + extra.
struct dot_bound {
  double extra_roundings;  // roundings on top of the n of the sum
};

struct type_tolerance {
  const char* name;
  dot_bound dot;
  double roundtrip_rel;          // f16/bf16: relative round-trip bound
  double roundtrip_step_slack;   // q8_0/q4_0: allowed excess over half a step (fraction of d)
  double roundtrip_clamp_steps;  // q4_0: bound in steps for a clamped code (15)
};

inline constexpr type_tolerance f32{"f32", {2}, 0.0, 0.0, 0.0};
inline constexpr type_tolerance f16{"f16", {2}, 1.0 / 2048.0, 0.0, 0.0};
inline constexpr type_tolerance bf16{"bf16", {2}, 1.0 / 256.0, 0.0, 0.0};
// slack: the codes are round(x * (1/d)) with 1/d and the product rounded (2 u each,
// times at most 127 steps), well under 1e-4 of a step.
inline constexpr type_tolerance q8_0{"q8_0", {4}, 0.0, 1e-4, 0.0};
inline constexpr type_tolerance q4_0{"q4_0", {4}, 0.0, 1e-4, 1.0 + 1e-4};

/// |dot - exact| <= (n + extra) * u * sum|x_i v_i| (plus a few denormal units).
inline double dot_tolerance(const type_tolerance& t, std::size_t n, double abs_sum) {
  return (static_cast<double>(n) + t.dot.extra_roundings) * u * abs_sum + 1e-37;
}

template <class E>
constexpr const type_tolerance& for_type() {
  namespace dt = mnemo::dtype;
  if constexpr (std::is_same_v<E, float>)
    return f32;
  else if constexpr (std::is_same_v<E, dt::f16>)
    return f16;
  else if constexpr (std::is_same_v<E, dt::bf16>)
    return bf16;
  else if constexpr (std::is_same_v<E, dt::block_q8_0>)
    return q8_0;
  else
    return q4_0;
}

}  // namespace mnemo_test::tol
