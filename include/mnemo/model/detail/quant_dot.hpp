// model::detail::quant_dot<Isa>: x . row for the weight-only quantised types, with x
// rounded to 8 bits as ggml's vec_dot_type (q8_K for q2_K .. q6_K, q8_1 for q4_1 /
// q5_1, q8_0 for q5_0), one specialisation per ISA (stamped by simd/foreach_target.hpp).
//
// Per block the integer sum of code products is exact, so every ISA computes the same
// integers; the f32 part (block scales times those sums, added block by block in row
// order) is this file's combine_* on every ISA, each product rounded on its own
// (round_product), so all ISAs give the same float bit for bit. The ISAs differ only in
// how they unpack codes and sum their products: the scalar body below, or 256-bit
// integer ops on AVX2 / AVX-512, 512-bit ones in AVX-512's 8-row tile (quant_dot_x86.inl).
//
// Per 256-value super-block of a k-quant, with q the codes, a the activation codes and
// g the 16 groups of 16 values (q4_K / q5_K sub-blocks of 32 are two groups each):
//   isum = sum_g scale_g sum_{i in g} q_i a_i,  msum = sum_g min_g bsums_g (q2, q4, q5)
//   dot += (d_w d_a) isum - (dmin_w d_a) msum
// For the legacy blocks of 32: dot += (d_w d_a) sum_i q_i a_i (+ m_w s_a for q4_1 / q5_1).
#pragma once

#if !defined(MNEMO_MODEL_MATMUL_INTERNAL_)
#error "mnemo/model/detail/quant_dot.hpp is internal: include mnemo/model/matmul.hpp"
#endif

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "mnemo/base/config.hpp"
#include "mnemo/dtype/concepts.hpp"
#include "mnemo/dtype/q8_activations.hpp"
#include "mnemo/dtype/types.hpp"
#include "mnemo/dtype/weight_blocks.hpp"
#include "mnemo/dtype/weight_decode.hpp"
#include "mnemo/simd/simd.hpp"

namespace mnemo::model::detail {

/// The activation block a weight block's dot product takes.
template <class E>
struct activation_block {
  using type = dtype::block_q8_K;
};
template <>
struct activation_block<dtype::block_q4_1> {
  using type = dtype::block_q8_1;
};
template <>
struct activation_block<dtype::block_q5_1> {
  using type = dtype::block_q8_1;
};
template <>
struct activation_block<dtype::block_q5_0> {
  using type = dtype::block_q8_0;
};
template <class E>
using activation_block_t = typename activation_block<E>::type;

template <class E>
inline constexpr bool is_k_quant = std::is_same_v<activation_block_t<E>, dtype::block_q8_K>;

/// x [n] f32 -> n / block activation blocks for weights of type E.
template <class E>
void quantize_activations(const float* x, activation_block_t<E>* out, std::size_t n) noexcept {
  if constexpr (is_k_quant<E>)
    dtype::quantize_row_q8_K(x, out, n);
  else if constexpr (std::is_same_v<activation_block_t<E>, dtype::block_q8_1>)
    dtype::quantize_row_q8_1(x, out, n);
  else
    dtype::encode_row<simd::scalar>(x, out, n);
}

/// The integer scales (and mins) of a k-quant super-block per group of 16 values.
struct k_group_scales {
  std::int16_t scale[16];
  std::int16_t min[16];
};

template <class E>
inline constexpr bool has_min =
    std::is_same_v<E, dtype::block_q2_K> || std::is_same_v<E, dtype::block_q4_K> ||
    std::is_same_v<E, dtype::block_q5_K> || std::is_same_v<E, dtype::block_q4_1> ||
    std::is_same_v<E, dtype::block_q5_1>;

/// Codes are signed (q3_K, q6_K, q5_0) or 0..2^bits - 1 (the others).
template <class E>
inline constexpr bool signed_codes =
    std::is_same_v<E, dtype::block_q3_K> || std::is_same_v<E, dtype::block_q6_K> ||
    std::is_same_v<E, dtype::block_q5_0>;

/// The 6-bit scales and mins of a q4_K / q5_K super-block as bytes of two u32 words each
/// (sub-block j in byte j % 4 of word j / 4): pairs 0..3 are the low 6 bits of bytes 0..3
/// (scales) and 4..7 (mins); pairs 4..7 the nibbles of bytes 8..11 below the top 2 bits
/// of bytes 0..3 (scales) and 4..7 (mins).
template <class E>
MNEMO_INLINE void k4_scale_words(const E& b, std::uint32_t (&sc)[2],
                                 std::uint32_t (&mn)[2]) noexcept {
  std::uint32_t w[3];
  std::memcpy(w, b.scales, 12);
  sc[0] = w[0] & 0x3f3f3f3fu;
  sc[1] = (w[2] & 0x0f0f0f0fu) | ((w[0] >> 2) & 0x30303030u);
  mn[0] = w[1] & 0x3f3f3f3fu;
  mn[1] = ((w[2] >> 4) & 0x0f0f0f0fu) | ((w[1] >> 2) & 0x30303030u);
}

template <class E>
MNEMO_INLINE void group_scales(const E& b, k_group_scales& s) noexcept {
  if constexpr (std::is_same_v<E, dtype::block_q2_K>) {
    for (std::size_t g = 0; g < 16; ++g) {
      s.scale[g] = static_cast<std::int16_t>(b.scales[g] & 15);
      s.min[g] = static_cast<std::int16_t>(b.scales[g] >> 4);
    }
  } else if constexpr (std::is_same_v<E, dtype::block_q3_K>) {
    for (std::size_t g = 0; g < 16; ++g)
      s.scale[g] = static_cast<std::int16_t>(dtype::detail::q3_scale(b.scales, g));
  } else if constexpr (std::is_same_v<E, dtype::block_q6_K>) {
    for (std::size_t g = 0; g < 16; ++g) s.scale[g] = b.scales[g];
  } else {  // q4_K, q5_K: 8 (scale, min) pairs for sub-blocks of 32, four per u32
    std::uint32_t sc[2], mn[2];
    k4_scale_words(b, sc, mn);
    for (std::size_t j = 0; j < 8; ++j) {
      const auto scale = static_cast<std::int16_t>((sc[j / 4] >> (8 * (j % 4))) & 0xff);
      const auto min = static_cast<std::int16_t>((mn[j / 4] >> (8 * (j % 4))) & 0xff);
      s.scale[2 * j] = s.scale[2 * j + 1] = scale;
      s.min[2 * j] = s.min[2 * j + 1] = min;
    }
  }
}

/// The codes q of one block (256 or 32 values), as its decoder reads them.
template <class E>
MNEMO_INLINE void unpack_codes(const E& b, std::int8_t* q) noexcept {
  using dtype::legacy_nibble;
  if constexpr (std::is_same_v<E, dtype::block_q4_1>) {
    for (std::size_t e = 0; e < 32; ++e) q[e] = static_cast<std::int8_t>(legacy_nibble(b.qs, e));
  } else if constexpr (std::is_same_v<E, dtype::block_q5_0> ||
                       std::is_same_v<E, dtype::block_q5_1>) {
    const std::uint32_t qh = dtype::detail::q5_high_bits(b.qh);
    const int offset = std::is_same_v<E, dtype::block_q5_0> ? 16 : 0;
    for (std::size_t e = 0; e < 32; ++e)
      q[e] = static_cast<std::int8_t>(
          (legacy_nibble(b.qs, e) | static_cast<int>((qh >> e) & 1) << 4) - offset);
  } else if constexpr (std::is_same_v<E, dtype::block_q2_K> ||
                       std::is_same_v<E, dtype::block_q3_K>) {
    for (std::size_t e = 0; e < 256; ++e) {
      const std::size_t h = e / 128, j = e / 32 % 4, w = e % 32;
      int v = (b.qs[32 * h + w] >> (2 * j)) & 3;
      if constexpr (std::is_same_v<E, dtype::block_q3_K>)
        v -= (b.hmask[w] >> (4 * h + j)) & 1 ? 0 : 4;
      q[e] = static_cast<std::int8_t>(v);
    }
  } else if constexpr (std::is_same_v<E, dtype::block_q4_K> ||
                       std::is_same_v<E, dtype::block_q5_K>) {
    for (std::size_t e = 0; e < 256; ++e) {
      const std::size_t sb = e / 32, i = e % 32;
      const std::uint8_t byte = b.qs[32 * (sb / 2) + i];
      int v = sb % 2 == 0 ? byte & 15 : byte >> 4;
      if constexpr (std::is_same_v<E, dtype::block_q5_K>) v += (b.qh[i] >> sb) & 1 ? 16 : 0;
      q[e] = static_cast<std::int8_t>(v);
    }
  } else {  // q6_K
    for (std::size_t e = 0; e < 256; ++e) {
      const std::size_t h = e / 128, k = e / 32 % 4, l = e % 32;
      const std::uint8_t lo = b.ql[64 * h + l + 32 * (k % 2)];
      q[e] = static_cast<std::int8_t>(
          ((k < 2 ? lo & 15 : lo >> 4) | ((b.qh[32 * h + l] >> (2 * k)) & 3) << 4) - 32);
    }
  }
}

/// The f32 part of one k-quant super-block (scales converted from f16 already), the
/// same on every ISA. dmin is unused without mins.
template <class E>
MNEMO_INLINE void combine_k(float d, float dmin, float da, std::int32_t isum, std::int32_t msum,
                            float& acc) noexcept {
  using dtype::detail::round_product;
  acc += round_product(d * da, static_cast<float>(isum));
  if constexpr (has_min<E>) acc -= round_product(dmin * da, static_cast<float>(msum));
}

/// The f32 part of one legacy block, the same on every ISA (ggml's vec_dot_q4_1_q8_1
/// etc.): m s is m_w s_x for q4_1 / q5_1, unused for q5_0.
template <class E>
MNEMO_INLINE void combine_legacy(float d, float da, float m, float s, std::int32_t sum,
                                 float& acc) noexcept {
  using dtype::detail::round_product;
  const float p = round_product(d * da, static_cast<float>(sum));
  if constexpr (has_min<E>)
    acc += p + round_product(m, s);
  else
    acc += p;
}

template <class Isa>
struct quant_dot {
  static_assert(simd::isa_tag<Isa> && simd::is_compiled<Isa>,
                "model::detail::quant_dot<Isa>: this ISA is not compiled for the target "
                "architecture (x86 ISAs on x86-64, neon on AArch64, scalar everywhere)");
};

#define MNEMO_FOREACH_TARGET_BODY "mnemo/model/detail/quant_dot_for_isa.inl"
#include "mnemo/simd/foreach_target.hpp"

}  // namespace mnemo::model::detail
