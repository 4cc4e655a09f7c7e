// The 8-bit roundings of f32 activations that ggml's integer dot products take
// (its vec_dot_type), for the weight-only types: q8_K (blocks of 256) for the
// k-quants, q8_1 (blocks of 32 with a scaled code sum) for q4_1 / q5_1. q4_0, q5_0 and
// q8_0 take q8_0, dtype's encoder (dtype/rows.hpp). Scalar: one row of activations per
// token is small next to the weights it multiplies.
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>

#include "mnemo/dtype/weight_blocks.hpp"

namespace mnemo::dtype {

/// ggml's quantize_row_q8_K_ref: per 256 values, `max` the first value of largest
/// magnitude (with its sign), iscale = -127 / max, codes min(127, round-half-even(iscale
/// x)), d = 1 / iscale kept in f32; bsums the sums of each 16 codes. An all-zero block
/// is d = 0 and zero codes. [n] f32 -> n / 256 blocks. @pre n % 256 == 0
inline void quantize_row_q8_K(const float* x, block_q8_K* out, std::size_t n) noexcept {
  for (std::size_t b = 0; b < n / k_super_block; ++b, x += k_super_block) {
    block_q8_K& y = out[b];
    float amax = 0.0f, max = 0.0f;
    for (std::size_t j = 0; j < k_super_block; ++j)
      if (std::fabs(x[j]) > amax) {
        amax = std::fabs(x[j]);
        max = x[j];
      }
    if (amax == 0.0f) {
      y = block_q8_K{};
      continue;
    }
    const float iscale = -127.0f / max;
    for (std::size_t j = 0; j < k_super_block; ++j) {
      // nearbyint rounds half to even in the default rounding mode, as ggml's
      // nearest_int; |iscale x| <= 127 up to one rounding of the product.
      // (fmax / fmin also map a NaN from a non-finite x to a code, never to a cast of NaN)
      const float v = std::fmin(std::fmax(std::nearbyint(iscale * x[j]), -127.0f), 127.0f);
      y.qs[j] = static_cast<std::int8_t>(v);
    }
    for (std::size_t g = 0; g < 16; ++g) {
      int s = 0;
      for (std::size_t i = 0; i < 16; ++i) s += y.qs[16 * g + i];
      y.bsums[g] = static_cast<std::int16_t>(s);
    }
    y.d = 1.0f / iscale;
  }
}

/// ggml's quantize_row_q8_1_ref: per 32 values d = max|x| / 127, codes roundf(x / d)
/// (ties away from zero, as dtype's q8_0 encoder), d stored as f16 and s = f16(d * the
/// sum of the codes), with the f32 d. [n] f32 -> n / 32 blocks. @pre n % 32 == 0
inline void quantize_row_q8_1(const float* x, block_q8_1* out, std::size_t n) noexcept {
  for (std::size_t b = 0; b < n / k_legacy_block; ++b, x += k_legacy_block) {
    float amax = 0.0f;
    for (std::size_t j = 0; j < k_legacy_block; ++j) amax = std::fmax(amax, std::fabs(x[j]));
    const float d = amax / 127.0f, id = d != 0.0f ? 1.0f / d : 0.0f;
    int sum = 0;
    for (std::size_t j = 0; j < k_legacy_block; ++j) {
      const float v = std::fmin(std::fmax(std::round(x[j] * id), -127.0f), 127.0f);  // NaN: -127
      out[b].qs[j] = static_cast<std::int8_t>(v);
      sum += out[b].qs[j];
    }
    out[b].d = f16::from_float(d);
    out[b].s = f16::from_float(static_cast<float>(sum) * d);
  }
}

}  // namespace mnemo::dtype
