// Internal to the simd layer (included by the ISA headers, not by users): the
// constants of the vectorised e^x shared by every ISA, so all of them round alike.
//
//   e^x = 2^n * e^r,  n = round(x * log2(e)),  r = x - n*ln2 in [-ln2/2, ln2/2]
//   e^r ~ 1 + r + r^2 * (c2 + c3 r + c4 r^2 + c5 r^3 + c6 r^4)
//
// c2..c6 interpolate (e^r - 1 - r) / r^2 at the 5 Chebyshev nodes of [-ln2/2, ln2/2]
// (near-minimax); the polynomial's relative error is 1.04e-8, so the float rounding
// of the evaluation (about 1 ulp) dominates. ln2 is split hi + lo: n * ln2_hi is
// exact inside an fma, so r carries no cancellation error. Arguments below
// exp_lo give 0 (e^-87.3 = 1.22e-38 is still normal, so no subnormal is produced).
#pragma once

namespace mnemo::simd::detail {

struct exp_f32 {
  static constexpr float log2e = 0x1.715476p+0f;
  static constexpr float ln2_hi = 0x1.62e430p-1f;
  static constexpr float ln2_lo = -0x1.05c610p-29f;
  static constexpr float c2 = 0x1.000000p-1f;
  static constexpr float c3 = 0x1.5554dcp-3f;
  static constexpr float c4 = 0x1.555518p-5f;
  static constexpr float c5 = 0x1.120be2p-7f;
  static constexpr float c6 = 0x1.6d117cp-10f;
  /// Below this, e^x is 0 (flush instead of subnormal results).
  static constexpr float lo = -87.3f;
  /// Arguments are clamped to this before the integer conversion; e^89 overflows to
  /// +inf through the 2^n scaling, which is the correct result for x > ln(FLT_MAX).
  static constexpr float hi = 89.0f;
};

}  // namespace mnemo::simd::detail
