// Exact decoders of the weight-only quantised types (dtype/weight_blocks.hpp): one
// block to f32 values, and a row of any stored type to f32 by its run-time type.
//
// Each value is computed in f32 in ggml's order, e.g. (d * scale) * q - dmin * min for
// q4_K, so the values are ggml's (dequantize_row_*) bit for bit. Every product is
// rounded before the addition that follows it (round_product): a fused multiply-add,
// which compilers may contract the expression to, rounds once and gives other values.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "mnemo/base/assert.hpp"
#include "mnemo/dtype/element_type.hpp"
#include "mnemo/dtype/rows.hpp"
#include "mnemo/dtype/weight_blocks.hpp"
#include "mnemo/simd/isa.hpp"

namespace mnemo::dtype {

namespace detail {

/// a * b rounded to f32 and kept out of any fused multiply-add: the empty asm makes
/// the rounded product a value the compiler must materialise.
inline float round_product(float a, float b) noexcept {
  float p = a * b;
#if defined(__GNUC__) && (defined(__x86_64__) || defined(_M_X64))
  __asm__("" : "+x"(p));
#elif defined(__GNUC__) && defined(__aarch64__)
  __asm__("" : "+w"(p));
#else
  volatile float v = p;
  p = v;
#endif
  return p;
}

/// The 32-bit fifth-bit mask of q5_0 / q5_1 (a little-endian u32 in the file).
inline std::uint32_t q5_high_bits(const std::uint8_t (&qh)[4]) noexcept {
  std::uint32_t h;
  std::memcpy(&h, qh, 4);
  return h;
}

/// Scale and min j (0..7) of q4_K / q5_K: 6 bits each, packed in 12 bytes.
inline void k_scale_min(const std::uint8_t* b, std::size_t j, std::uint8_t& sc,
                        std::uint8_t& m) noexcept {
  if (j < 4) {
    sc = b[j] & 63;
    m = b[j + 4] & 63;
  } else {
    sc = static_cast<std::uint8_t>((b[j + 4] & 15) | ((b[j - 4] >> 6) << 4));
    m = static_cast<std::uint8_t>((b[j + 4] >> 4) | ((b[j] >> 6) << 4));
  }
}

/// Scale k (0..15) of q3_K: 6 bits from 12 bytes, minus 32.
inline int q3_scale(const std::uint8_t* b, std::size_t k) noexcept {
  const int low = k < 8 ? b[k] & 15 : b[k - 8] >> 4;
  const int high = (b[8 + k % 4] >> (2 * (k / 4))) & 3;
  return (low | high << 4) - 32;
}

}  // namespace detail

/// The 4-bit code e (0..31) of a legacy block: low nibbles first, then high nibbles.
inline int legacy_nibble(const std::uint8_t (&qs)[16], std::size_t e) noexcept {
  return e < 16 ? qs[e] & 15 : qs[e - 16] >> 4;
}

/// [32] or [256] values of one block. The codes each type's integer dot product uses
/// are the q below; model/detail/quant_dot.hpp unpacks the same ones.
inline void decode_block(const block_q4_1& b, float* out) noexcept {
  const float d = b.d.to_float(), m = b.m.to_float();
  for (std::size_t e = 0; e < 32; ++e)
    out[e] = detail::round_product(static_cast<float>(legacy_nibble(b.qs, e)), d) + m;
}

inline void decode_block(const block_q5_0& b, float* out) noexcept {
  const float d = b.d.to_float();
  const std::uint32_t qh = detail::q5_high_bits(b.qh);
  for (std::size_t e = 0; e < 32; ++e) {
    const int q = legacy_nibble(b.qs, e) | static_cast<int>((qh >> e) & 1) << 4;
    out[e] = static_cast<float>(q - 16) * d;
  }
}

inline void decode_block(const block_q5_1& b, float* out) noexcept {
  const float d = b.d.to_float(), m = b.m.to_float();
  const std::uint32_t qh = detail::q5_high_bits(b.qh);
  for (std::size_t e = 0; e < 32; ++e) {
    const int q = legacy_nibble(b.qs, e) | static_cast<int>((qh >> e) & 1) << 4;
    out[e] = detail::round_product(static_cast<float>(q), d) + m;
  }
}

/// e = 128 h + 32 j + w: q = (qs[32 h + w] >> 2 j) & 3, sub-block e / 16.
inline void decode_block(const block_q2_K& b, float* out) noexcept {
  const float d = b.d.to_float(), dmin = b.dmin.to_float();
  for (std::size_t e = 0; e < 256; ++e) {
    const std::size_t h = e / 128, j = e / 32 % 4, w = e % 32;
    const int q = (b.qs[32 * h + w] >> (2 * j)) & 3;
    const std::uint8_t s = b.scales[e / 16];
    const float dl = d * static_cast<float>(s & 15),
                ml = detail::round_product(dmin, static_cast<float>(s >> 4));
    out[e] = detail::round_product(dl, static_cast<float>(q)) - ml;
  }
}

/// As q2_K, minus 4 where bit 4 h + j of hmask[w] is clear; signed scales.
inline void decode_block(const block_q3_K& b, float* out) noexcept {
  const float d = b.d.to_float();
  for (std::size_t e = 0; e < 256; ++e) {
    const std::size_t h = e / 128, j = e / 32 % 4, w = e % 32;
    const int q = ((b.qs[32 * h + w] >> (2 * j)) & 3) - ((b.hmask[w] >> (4 * h + j)) & 1 ? 0 : 4);
    const float dl = d * static_cast<float>(detail::q3_scale(b.scales, e / 16));
    out[e] = dl * static_cast<float>(q);
  }
}

/// e = 64 c + r: the low (r < 32) or high nibble of qs[32 c + r % 32], sub-block e / 32.
inline void decode_block(const block_q4_K& b, float* out) noexcept {
  const float d = b.d.to_float(), dmin = b.dmin.to_float();
  for (std::size_t sb = 0; sb < 8; ++sb) {
    std::uint8_t sc, m;
    detail::k_scale_min(b.scales, sb, sc, m);
    const float dl = d * static_cast<float>(sc),
                ml = detail::round_product(dmin, static_cast<float>(m));
    for (std::size_t i = 0; i < 32; ++i) {
      const std::uint8_t byte = b.qs[32 * (sb / 2) + i];
      const int q = sb % 2 == 0 ? byte & 15 : byte >> 4;
      out[32 * sb + i] = detail::round_product(dl, static_cast<float>(q)) - ml;
    }
  }
}

/// As q4_K, plus 16 where bit sb of qh[i] is set.
inline void decode_block(const block_q5_K& b, float* out) noexcept {
  const float d = b.d.to_float(), dmin = b.dmin.to_float();
  for (std::size_t sb = 0; sb < 8; ++sb) {
    std::uint8_t sc, m;
    detail::k_scale_min(b.scales, sb, sc, m);
    const float dl = d * static_cast<float>(sc),
                ml = detail::round_product(dmin, static_cast<float>(m));
    for (std::size_t i = 0; i < 32; ++i) {
      const std::uint8_t byte = b.qs[32 * (sb / 2) + i];
      const int q = (sb % 2 == 0 ? byte & 15 : byte >> 4) + ((b.qh[i] >> sb) & 1 ? 16 : 0);
      out[32 * sb + i] = detail::round_product(dl, static_cast<float>(q)) - ml;
    }
  }
}

/// e = 128 h + 32 k + l: 4 bits of ql[64 h + l + 32 (k % 2)] (low for k < 2) and 2 of
/// qh[32 h + l] >> 2 k, minus 32; sub-block e / 16.
inline void decode_block(const block_q6_K& b, float* out) noexcept {
  const float d = b.d.to_float();
  for (std::size_t e = 0; e < 256; ++e) {
    const std::size_t h = e / 128, k = e / 32 % 4, l = e % 32;
    const std::uint8_t lo = b.ql[64 * h + l + 32 * (k % 2)];
    const int q = ((k < 2 ? lo & 15 : lo >> 4) | ((b.qh[32 * h + l] >> (2 * k)) & 3) << 4) - 32;
    const float dl = d * static_cast<float>(b.scales[e / 16]);
    out[e] = dl * static_cast<float>(q);
  }
}

/// Row of n values of a weight block type -> [n] f32. @pre n % block size == 0
template <weight_block E>
void decode_weight_row(const E* src, float* dst, std::size_t n) noexcept {
  for (std::size_t b = 0; b < n / element_traits<E>::block_size; ++b)
    decode_block(src[b], dst + b * element_traits<E>::block_size);
}

/// A row of n values stored as `t` (any valid type) -> [n] f32, exactly. The K/V types
/// go through dtype's decode_row<Isa>. @pre is_valid(t), n % block_size(t) == 0
template <simd::isa_tag Isa = simd::native>
void decode_any_row(element_type t, const void* src, float* dst, std::size_t n) noexcept {
  MNEMO_DASSERT(is_valid(t) && n % block_size(t) == 0);
  switch (t) {
    case element_type::f32: decode_row<Isa>(static_cast<const float*>(src), dst, n); return;
    case element_type::f16: decode_row<Isa>(static_cast<const f16*>(src), dst, n); return;
    case element_type::bf16: decode_row<Isa>(static_cast<const bf16*>(src), dst, n); return;
    case element_type::q8_0: decode_row<Isa>(static_cast<const block_q8_0*>(src), dst, n); return;
    case element_type::q4_0: decode_row<Isa>(static_cast<const block_q4_0*>(src), dst, n); return;
    case element_type::q4_1: decode_weight_row(static_cast<const block_q4_1*>(src), dst, n); return;
    case element_type::q5_0: decode_weight_row(static_cast<const block_q5_0*>(src), dst, n); return;
    case element_type::q5_1: decode_weight_row(static_cast<const block_q5_1*>(src), dst, n); return;
    case element_type::q2_K: decode_weight_row(static_cast<const block_q2_K*>(src), dst, n); return;
    case element_type::q3_K: decode_weight_row(static_cast<const block_q3_K*>(src), dst, n); return;
    case element_type::q4_K: decode_weight_row(static_cast<const block_q4_K*>(src), dst, n); return;
    case element_type::q5_K: decode_weight_row(static_cast<const block_q5_K*>(src), dst, n); return;
    case element_type::q6_K: decode_weight_row(static_cast<const block_q6_K*>(src), dst, n); return;
  }
}

}  // namespace mnemo::dtype
