// Block layouts of the weight-only quantised types (ggml's legacy 32-value blocks and
// its k-quants, super-blocks of 256 values), and of the two activation blocks their
// integer dot products take (q8_1, q8_K). Byte for byte the GGUF / ggml layouts, so a
// tensor is read in place; how each decodes is in dtype/weight_decode.hpp.
//
// Unlike f32 .. q4_0 (dtype/types.hpp) these are not K/V cache types: nothing but the
// weight products (model/matmul.hpp) and their decoders read them.
#pragma once

#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "mnemo/dtype/types.hpp"

namespace mnemo::dtype {

/// Values per block of the legacy types and per super-block of the k-quants (ggml's
/// QK4_1 .. QK5_1 and QK_K).
inline constexpr std::size_t k_legacy_block = 32;
inline constexpr std::size_t k_super_block = 256;

/// value[e] = d * q + m, q = low nibble of qs[e] (e < 16) or high nibble of qs[e - 16].
struct block_q4_1 {
  f16 d, m;
  std::uint8_t qs[16];
};

/// value[e] = d * (q - 16), q = the nibble as in q4_1 | (bit e of qh) << 4. qh is a
/// little-endian u32 in the file; bytes here keep the block's alignment at 2.
struct block_q5_0 {
  f16 d;
  std::uint8_t qh[4];
  std::uint8_t qs[16];
};

/// value[e] = d * q + m, q as in q5_0.
struct block_q5_1 {
  f16 d, m;
  std::uint8_t qh[4];
  std::uint8_t qs[16];
};

/// 16 sub-blocks of 16 values, 2-bit codes; scales[i] = scale (low 4 bits) | min << 4.
struct block_q2_K {
  std::uint8_t scales[16];
  std::uint8_t qs[64];
  f16 d, dmin;
};

/// 16 sub-blocks of 16, 3-bit codes (2 in qs, the third in hmask), 6-bit signed scales
/// packed in 12 bytes.
struct block_q3_K {
  std::uint8_t hmask[32];
  std::uint8_t qs[64];
  std::uint8_t scales[12];
  f16 d;
};

/// 8 sub-blocks of 32, 4-bit codes; 8 (scale, min) pairs of 6 bits packed in 12 bytes.
struct block_q4_K {
  f16 d, dmin;
  std::uint8_t scales[12];
  std::uint8_t qs[128];
};

/// As q4_K with a fifth bit per value in qh.
struct block_q5_K {
  f16 d, dmin;
  std::uint8_t scales[12];
  std::uint8_t qh[32];
  std::uint8_t qs[128];
};

/// 16 sub-blocks of 16, 6-bit codes (4 in ql, 2 in qh), int8 scales.
struct block_q6_K {
  std::uint8_t ql[128];
  std::uint8_t qh[64];
  std::int8_t scales[16];
  f16 d;
};

/// Activations for q4_1 / q5_1 weights: q8_0 plus s = d * sum(qs) as f16.
struct block_q8_1 {
  f16 d, s;
  std::int8_t qs[32];
};

/// Activations for k-quant weights: an f32 scale, 256 codes and the sums of each 16.
struct block_q8_K {
  float d;
  std::int8_t qs[256];
  std::int16_t bsums[16];
};

// The on-disk sizes (ggml's static_asserts) and no padding between blocks.
static_assert(sizeof(block_q4_1) == 20 && alignof(block_q4_1) == 2);
static_assert(sizeof(block_q5_0) == 22 && alignof(block_q5_0) == 2);
static_assert(sizeof(block_q5_1) == 24 && alignof(block_q5_1) == 2);
static_assert(sizeof(block_q2_K) == 84 && alignof(block_q2_K) == 2);
static_assert(sizeof(block_q3_K) == 110 && alignof(block_q3_K) == 2);
static_assert(sizeof(block_q4_K) == 144 && alignof(block_q4_K) == 2);
static_assert(sizeof(block_q5_K) == 176 && alignof(block_q5_K) == 2);
static_assert(sizeof(block_q6_K) == 210 && alignof(block_q6_K) == 2);
static_assert(sizeof(block_q8_1) == 36);
static_assert(sizeof(block_q8_K) == 292);
static_assert(offsetof(block_q2_K, d) == 80 && offsetof(block_q3_K, d) == 108 &&
              offsetof(block_q6_K, d) == 208 && offsetof(block_q5_K, qs) == 48);

}  // namespace mnemo::dtype
