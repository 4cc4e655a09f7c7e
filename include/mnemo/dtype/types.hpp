// Storage types of K/V rows and weights, with the byte layouts of GGUF / ggml so that
// a GGUF tensor or a ggml KV cache can be read in place:
//
//   f32        4 bytes, IEEE binary32
//   f16        2 bytes, IEEE binary16                                     (ggml type 1)
//   bf16       2 bytes, the upper half of a binary32                      (ggml type 30)
//   block_q8_0 34 bytes per 32 values: { f16 d; int8 qs[32] },  x = d * qs[i]        (8)
//   block_q4_0 18 bytes per 32 values: { f16 d; uint8 qs[16] }, x = d * (q - 8),
//              q of element j < 16 = low nibble of qs[j], of j + 16 = its high nibble (2)
//
// All multi-byte fields are little-endian (as in GGUF files); mnemo only builds for
// little-endian targets.
#pragma once

#include <bit>
#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "mnemo/simd/half.hpp"

namespace mnemo::dtype {

static_assert(std::endian::native == std::endian::little,
              "mnemo::dtype: GGUF block layouts are little-endian and mnemo reads them in "
              "place, so only little-endian targets are supported");

/// IEEE binary16 storage. Conversions round to nearest even and are bit-exact with
/// F16C / NEON hardware conversion.
struct f16 {
  std::uint16_t bits;

  static constexpr f16 from_bits(std::uint16_t b) noexcept { return f16{b}; }
  static constexpr f16 from_float(float x) noexcept { return f16{simd::f32_to_f16_bits(x)}; }
  constexpr float to_float() const noexcept { return simd::f16_bits_to_f32(bits); }
  friend constexpr bool operator==(f16 a, f16 b) noexcept { return a.bits == b.bits; }
};

/// bfloat16 storage: the upper 16 bits of a binary32 (round to nearest even, NaN kept
/// quiet), same as ggml's GGML_FP32_TO_BF16.
struct bf16 {
  std::uint16_t bits;

  static constexpr bf16 from_bits(std::uint16_t b) noexcept { return bf16{b}; }
  static constexpr bf16 from_float(float x) noexcept { return bf16{simd::f32_to_bf16_bits(x)}; }
  constexpr float to_float() const noexcept { return simd::bf16_bits_to_f32(bits); }
  friend constexpr bool operator==(bf16 a, bf16 b) noexcept { return a.bits == b.bits; }
};

/// Values per block of the quantised types (ggml's QK8_0 and QK4_0).
inline constexpr std::size_t k_q8_0_block = 32;
inline constexpr std::size_t k_q4_0_block = 32;

/// 32 values as int8 codes with one f16 scale: value[i] = d * qs[i].
struct block_q8_0 {
  f16 d;
  std::int8_t qs[k_q8_0_block];
};

/// 32 values as 4-bit codes with one f16 scale: value[j] = d * (code[j] - 8), where
/// code[j] = qs[j] & 0xF and code[j + 16] = qs[j] >> 4 for j < 16.
struct block_q4_0 {
  f16 d;
  std::uint8_t qs[k_q4_0_block / 2];
};

// The layouts are the on-disk format: no padding, 2-byte alignment so that blocks
// pack back to back in a row exactly as in a GGUF tensor.
static_assert(sizeof(f16) == 2 && alignof(f16) == 2 && std::is_standard_layout_v<f16>);
static_assert(sizeof(bf16) == 2 && alignof(bf16) == 2 && std::is_standard_layout_v<bf16>);
static_assert(sizeof(block_q8_0) == 34 && alignof(block_q8_0) == 2);
static_assert(sizeof(block_q4_0) == 18 && alignof(block_q4_0) == 2);
static_assert(std::is_standard_layout_v<block_q8_0> && std::is_trivially_copyable_v<block_q8_0>);
static_assert(std::is_standard_layout_v<block_q4_0> && std::is_trivially_copyable_v<block_q4_0>);
static_assert(offsetof(block_q8_0, qs) == 2 && offsetof(block_q4_0, qs) == 2);

}  // namespace mnemo::dtype
