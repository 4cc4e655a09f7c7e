// Reference quantisers of the weight-only types (dtype/weight_blocks.hpp): f32 values
// to blocks that dtype/weight_decode.hpp decodes. For writing test and benchmark
// models (examples/make-llama), not for quality: each block takes its range from the
// minimum and maximum (or the value of largest magnitude) of its values, with no search
// for a better scale as llama.cpp's quantiser does; the error is measured against f32 in
// tests/dtype/weight_encode_test.cpp. Codes are computed from the stored (f16, 6- or
// 4-bit) scales, so they round to the nearest value the block can represent.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "mnemo/dtype/element_type.hpp"
#include "mnemo/dtype/rows.hpp"
#include "mnemo/dtype/weight_blocks.hpp"
#include "mnemo/simd/isa.hpp"

namespace mnemo::dtype {

namespace detail {

/// round(x / step) clamped to [lo, hi]; 0 when the step is 0 (or not finite).
inline int code_of(float x, float step, int lo, int hi) noexcept {
  if (!(std::fabs(step) > 0.0f) || !std::isfinite(step)) return std::clamp(0, lo, hi);
  const float v = std::round(x / step);
  if (!(v > static_cast<float>(lo))) return lo;  // NaN too
  return v >= static_cast<float>(hi) ? hi : static_cast<int>(v);
}

/// The value of largest magnitude among n (the first such, with its sign).
inline float signed_abs_max(const float* x, std::size_t n) noexcept {
  float m = 0.0f;
  for (std::size_t i = 0; i < n; ++i)
    if (std::fabs(x[i]) > std::fabs(m)) m = x[i];
  return m;
}

/// Codes 0..levels of x[n] with min(0, min x) as offset: value = step * q - offset.
struct range_fit {
  float step, offset;  // offset >= 0
};
inline range_fit fit_range(const float* x, std::size_t n, int levels) noexcept {
  float lo = 0.0f, hi = 0.0f;
  for (std::size_t i = 0; i < n; ++i) {
    lo = std::min(lo, x[i]);
    hi = std::max(hi, x[i]);
  }
  return {(hi - lo) / static_cast<float>(levels), -lo};
}

/// Packs 8 (scale, min) pairs of 6 bits as q4_K / q5_K store them (k_scale_min's inverse).
inline void pack_k_scales(const std::uint8_t* sc, const std::uint8_t* m, std::uint8_t* b) noexcept {
  for (std::size_t j = 0; j < 4; ++j) {
    b[j] = static_cast<std::uint8_t>((sc[j] & 63) | (sc[j + 4] >> 4) << 6);
    b[j + 4] = static_cast<std::uint8_t>((m[j] & 63) | (m[j + 4] >> 4) << 6);
    b[j + 8] = static_cast<std::uint8_t>((sc[j + 4] & 15) | (m[j + 4] & 15) << 4);
  }
}

/// q4_K / q5_K: 8 sub-blocks of 32 with `levels` + 1 codes each; codes out [256].
template <class B>
void encode_k_offset(const float* x, B& b, int levels, std::uint8_t* q) noexcept {
  range_fit fit[8];
  float max_step = 0.0f, max_offset = 0.0f;
  for (std::size_t j = 0; j < 8; ++j) {
    fit[j] = fit_range(x + 32 * j, 32, levels);
    max_step = std::max(max_step, fit[j].step);
    max_offset = std::max(max_offset, fit[j].offset);
  }
  b.d = f16::from_float(max_step / 63.0f);
  b.dmin = f16::from_float(max_offset / 63.0f);
  const float d = b.d.to_float(), dmin = b.dmin.to_float();
  std::uint8_t sc[8], m[8];
  for (std::size_t j = 0; j < 8; ++j) {
    sc[j] = static_cast<std::uint8_t>(code_of(fit[j].step, d, 0, 63));
    m[j] = static_cast<std::uint8_t>(code_of(fit[j].offset, dmin, 0, 63));
    const float step = d * sc[j], offset = dmin * m[j];
    for (std::size_t i = 0; i < 32; ++i)
      q[32 * j + i] = static_cast<std::uint8_t>(code_of(x[32 * j + i] + offset, step, 0, levels));
  }
  pack_k_scales(sc, m, b.scales);
}

}  // namespace detail

inline void encode_block(const float* x, block_q4_1& b) noexcept {
  float lo = x[0], hi = x[0];
  for (std::size_t i = 1; i < 32; ++i) lo = std::min(lo, x[i]), hi = std::max(hi, x[i]);
  b.d = f16::from_float((hi - lo) / 15.0f);
  b.m = f16::from_float(lo);
  const float d = b.d.to_float(), m = b.m.to_float();
  for (std::size_t e = 0; e < 16; ++e)
    b.qs[e] = static_cast<std::uint8_t>(detail::code_of(x[e] - m, d, 0, 15) |
                                        detail::code_of(x[e + 16] - m, d, 0, 15) << 4);
}

template <class B>
void encode_q5_block_(const float* x, B& b) noexcept {
  constexpr bool with_min = std::is_same_v<B, block_q5_1>;
  float d, m = 0.0f;
  if constexpr (with_min) {
    float lo = x[0], hi = x[0];
    for (std::size_t i = 1; i < 32; ++i) lo = std::min(lo, x[i]), hi = std::max(hi, x[i]);
    b.d = f16::from_float((hi - lo) / 31.0f);
    b.m = f16::from_float(lo);
    m = b.m.to_float();
  } else {
    b.d = f16::from_float(detail::signed_abs_max(x, 32) / -16.0f);
  }
  d = b.d.to_float();
  std::uint32_t qh = 0;
  for (std::size_t e = 0; e < 32; ++e) {
    const int q =
        with_min ? detail::code_of(x[e] - m, d, 0, 31) : detail::code_of(x[e], d, -16, 15) + 16;
    if (e < 16)
      b.qs[e] = static_cast<std::uint8_t>(q & 15);
    else
      b.qs[e - 16] = static_cast<std::uint8_t>(b.qs[e - 16] | (q & 15) << 4);
    qh |= static_cast<std::uint32_t>(q >> 4) << e;
  }
  std::memcpy(b.qh, &qh, 4);
}

inline void encode_block(const float* x, block_q5_0& b) noexcept { encode_q5_block_(x, b); }
inline void encode_block(const float* x, block_q5_1& b) noexcept { encode_q5_block_(x, b); }

inline void encode_block(const float* x, block_q2_K& b) noexcept {
  detail::range_fit fit[16];
  float max_step = 0.0f, max_offset = 0.0f;
  for (std::size_t g = 0; g < 16; ++g) {
    fit[g] = detail::fit_range(x + 16 * g, 16, 3);
    max_step = std::max(max_step, fit[g].step);
    max_offset = std::max(max_offset, fit[g].offset);
  }
  b.d = f16::from_float(max_step / 15.0f);
  b.dmin = f16::from_float(max_offset / 15.0f);
  const float d = b.d.to_float(), dmin = b.dmin.to_float();
  std::memset(b.qs, 0, sizeof(b.qs));
  for (std::size_t g = 0; g < 16; ++g) {
    const int sc = detail::code_of(fit[g].step, d, 0, 15);
    const int m = detail::code_of(fit[g].offset, dmin, 0, 15);
    b.scales[g] = static_cast<std::uint8_t>(sc | m << 4);
    for (std::size_t i = 0; i < 16; ++i) {
      const std::size_t e = 16 * g + i, h = e / 128, j = e / 32 % 4, w = e % 32;
      const int q =
          detail::code_of(x[e] + dmin * static_cast<float>(m), d * static_cast<float>(sc), 0, 3);
      b.qs[32 * h + w] = static_cast<std::uint8_t>(b.qs[32 * h + w] | q << (2 * j));
    }
  }
}

inline void encode_block(const float* x, block_q3_K& b) noexcept {
  float scale[16], max_abs = 0.0f;
  for (std::size_t g = 0; g < 16; ++g) {
    scale[g] = detail::signed_abs_max(x + 16 * g, 16) / -4.0f;
    max_abs = std::max(max_abs, std::fabs(scale[g]));
  }
  b.d = f16::from_float(max_abs / 31.0f);
  const float d = b.d.to_float();
  std::memset(b.qs, 0, sizeof(b.qs));
  std::memset(b.hmask, 0, sizeof(b.hmask));
  std::memset(b.scales, 0, sizeof(b.scales));
  for (std::size_t g = 0; g < 16; ++g) {
    const int sc = detail::code_of(scale[g], d, -32, 31);
    const auto u = static_cast<std::uint8_t>(sc + 32);  // 6 bits: 4 low, 2 high
    if (g < 8)
      b.scales[g] = static_cast<std::uint8_t>(b.scales[g] | (u & 15));
    else
      b.scales[g - 8] = static_cast<std::uint8_t>(b.scales[g - 8] | (u & 15) << 4);
    b.scales[8 + g % 4] =
        static_cast<std::uint8_t>(b.scales[8 + g % 4] | (u >> 4) << (2 * (g / 4)));
    for (std::size_t i = 0; i < 16; ++i) {
      const std::size_t e = 16 * g + i, h = e / 128, j = e / 32 % 4, w = e % 32;
      const int level = detail::code_of(x[e], d * static_cast<float>(sc), -4, 3) + 4;  // 0..7
      b.qs[32 * h + w] = static_cast<std::uint8_t>(b.qs[32 * h + w] | (level & 3) << (2 * j));
      b.hmask[w] = static_cast<std::uint8_t>(b.hmask[w] | (level >> 2) << (4 * h + j));
    }
  }
}

inline void encode_block(const float* x, block_q4_K& b) noexcept {
  std::uint8_t q[256];
  detail::encode_k_offset(x, b, 15, q);
  for (std::size_t c = 0; c < 4; ++c)
    for (std::size_t i = 0; i < 32; ++i)
      b.qs[32 * c + i] = static_cast<std::uint8_t>(q[64 * c + i] | q[64 * c + 32 + i] << 4);
}

inline void encode_block(const float* x, block_q5_K& b) noexcept {
  std::uint8_t q[256];
  detail::encode_k_offset(x, b, 31, q);
  std::memset(b.qh, 0, sizeof(b.qh));
  for (std::size_t c = 0; c < 4; ++c)
    for (std::size_t i = 0; i < 32; ++i)
      b.qs[32 * c + i] =
          static_cast<std::uint8_t>((q[64 * c + i] & 15) | (q[64 * c + 32 + i] & 15) << 4);
  for (std::size_t sb = 0; sb < 8; ++sb)
    for (std::size_t i = 0; i < 32; ++i)
      b.qh[i] = static_cast<std::uint8_t>(b.qh[i] | (q[32 * sb + i] >> 4) << sb);
}

inline void encode_block(const float* x, block_q6_K& b) noexcept {
  float scale[16], max_abs = 0.0f;
  for (std::size_t g = 0; g < 16; ++g) {
    scale[g] = detail::signed_abs_max(x + 16 * g, 16) / -32.0f;
    max_abs = std::max(max_abs, std::fabs(scale[g]));
  }
  b.d = f16::from_float(max_abs / 127.0f);
  const float d = b.d.to_float();
  std::memset(b.ql, 0, sizeof(b.ql));
  std::memset(b.qh, 0, sizeof(b.qh));
  for (std::size_t g = 0; g < 16; ++g) {
    b.scales[g] = static_cast<std::int8_t>(detail::code_of(scale[g], d, -127, 127));
    for (std::size_t i = 0; i < 16; ++i) {
      const std::size_t e = 16 * g + i, h = e / 128, k = e / 32 % 4, l = e % 32;
      const int level = detail::code_of(x[e], d * static_cast<float>(b.scales[g]), -32, 31) + 32;
      std::uint8_t& lo = b.ql[64 * h + l + 32 * (k % 2)];
      lo = static_cast<std::uint8_t>(lo | (level & 15) << (k < 2 ? 0 : 4));
      b.qh[32 * h + l] = static_cast<std::uint8_t>(b.qh[32 * h + l] | (level >> 4) << (2 * k));
    }
  }
}

/// [n] f32 -> a row of n values of weight block type E. @pre n % block size == 0
template <weight_block E>
void encode_weight_row(const float* src, E* dst, std::size_t n) noexcept {
  for (std::size_t b = 0; b < n / element_traits<E>::block_size; ++b)
    encode_block(src + b * element_traits<E>::block_size, dst[b]);
}

/// [n] f32 -> a row of n values stored as `t` (any valid type); the K/V types through
/// dtype's encode_row<Isa>. @pre is_valid(t), n % block_size(t) == 0
template <simd::isa_tag Isa = simd::native>
void encode_any_row(element_type t, const float* src, void* dst, std::size_t n) noexcept {
  switch (t) {
    case element_type::f32: encode_row<Isa>(src, static_cast<float*>(dst), n); return;
    case element_type::f16: encode_row<Isa>(src, static_cast<f16*>(dst), n); return;
    case element_type::bf16: encode_row<Isa>(src, static_cast<bf16*>(dst), n); return;
    case element_type::q8_0: encode_row<Isa>(src, static_cast<block_q8_0*>(dst), n); return;
    case element_type::q4_0: encode_row<Isa>(src, static_cast<block_q4_0*>(dst), n); return;
    case element_type::q4_1: encode_weight_row(src, static_cast<block_q4_1*>(dst), n); return;
    case element_type::q5_0: encode_weight_row(src, static_cast<block_q5_0*>(dst), n); return;
    case element_type::q5_1: encode_weight_row(src, static_cast<block_q5_1*>(dst), n); return;
    case element_type::q2_K: encode_weight_row(src, static_cast<block_q2_K*>(dst), n); return;
    case element_type::q3_K: encode_weight_row(src, static_cast<block_q3_K*>(dst), n); return;
    case element_type::q4_K: encode_weight_row(src, static_cast<block_q4_K*>(dst), n); return;
    case element_type::q5_K: encode_weight_row(src, static_cast<block_q5_K*>(dst), n); return;
    case element_type::q6_K: encode_weight_row(src, static_cast<block_q6_K*>(dst), n); return;
  }
}

}  // namespace mnemo::dtype
