// Independent references for the dtype tests, written from the GGUF / ggml definitions
// one element at a time (no mnemo kernel code), plus deterministic test data and
// byte-exact buffers at chosen misalignments.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

#include "mnemo/base/rng.hpp"
#include "mnemo/dtype/element_type.hpp"
#include "mnemo/dtype/types.hpp"
#include "mnemo/simd/half.hpp"

namespace mnemo_test {

namespace dt = mnemo::dtype;

// ---------------------------------------------------------------- deterministic data

/// mnemo::splitmix64 with uniform values in [-1, 1).
struct rng : mnemo::splitmix64 {
  float uniform() { return 2.0f * splitmix64::uniform() - 1.0f; }
};

/// n values with per-32-block magnitudes from 2^-20 to 2^10 (finite in f16), and special
/// blocks the quantisers must get right: all zero, a +a/-a magnitude tie, one spike,
/// codes exactly on rounding ties (q8_0 and q4_0), a negative zero.
inline std::vector<float> make_values(std::size_t n, std::uint64_t seed) {
  rng g{seed};
  std::vector<float> x(n);
  for (std::size_t b = 0; b * 32 < n; ++b) {
    const std::size_t lo = b * 32, hi = std::min(n, lo + 32);
    const int kind = static_cast<int>(g.next() % 10);
    const float scale = std::ldexp(1.0f, static_cast<int>(g.next() % 31) - 20);
    for (std::size_t i = lo; i < hi; ++i) x[i] = scale * g.uniform();
    switch (kind) {
      case 0: std::fill(x.begin() + lo, x.begin() + hi, 0.0f); break;
      case 1:  // tie of magnitudes, positive first
        x[lo] = 2 * scale;
        if (hi - lo > 5) x[lo + 5] = -2 * scale;
        break;
      case 2:  // tie of magnitudes, negative first
        x[lo] = -2 * scale;
        if (hi - lo > 7) x[lo + 7] = 2 * scale;
        break;
      case 3: x[lo + (g.next() % (hi - lo))] = 30 * scale; break;  // stays in f16 range
      case 4:  // q8_0: amax 127 makes d = 1, so k + 0.5 is an exact rounding tie
        for (std::size_t i = lo; i < hi; ++i)
          x[i] = static_cast<float>(static_cast<int>(g.next() % 253) - 126) + 0.5f;
        x[lo] = 127.0f;
        break;
      case 5: x[lo] = -0.0f; break;
      case 6:  // q4_0: m = -8 makes d = 1, so x * id + 8.5 lands exactly on integers
        for (std::size_t i = lo; i < hi; ++i)
          x[i] = static_cast<float>(static_cast<int>(g.next() % 16) - 8) + 0.5f;
        x[lo] = -8.0f;
        break;
      default: break;
    }
  }
  return x;
}

// --------------------------------------------------------------------- references

inline float ref_value(const float* row, std::size_t i) { return row[i]; }
inline float ref_value(const dt::f16* row, std::size_t i) {
  return mnemo::simd::f16_bits_to_f32(row[i].bits);
}
inline float ref_value(const dt::bf16* row, std::size_t i) {
  return mnemo::simd::bf16_bits_to_f32(row[i].bits);
}
/// The integer code of value i of a block row (q8_0: qs; q4_0: nibble - 8).
inline int ref_code(const dt::block_q8_0* row, std::size_t i) { return row[i / 32].qs[i % 32]; }
inline int ref_code(const dt::block_q4_0* row, std::size_t i) {
  const dt::block_q4_0& b = row[i / 32];
  const std::size_t j = i % 32;
  return (j < 16 ? (b.qs[j] & 0x0f) : (b.qs[j - 16] >> 4)) - 8;
}
inline float ref_scale(const dt::block_q8_0* row, std::size_t i) {
  return mnemo::simd::f16_bits_to_f32(row[i / 32].d.bits);
}
inline float ref_scale(const dt::block_q4_0* row, std::size_t i) {
  return mnemo::simd::f16_bits_to_f32(row[i / 32].d.bits);
}
inline float ref_value(const dt::block_q8_0* row, std::size_t i) {
  return ref_scale(row, i) * static_cast<float>(ref_code(row, i));
}
inline float ref_value(const dt::block_q4_0* row, std::size_t i) {
  return ref_scale(row, i) * static_cast<float>(ref_code(row, i));
}

/// quantize_row_q8_0_ref of ggml, per element.
inline dt::block_q8_0 ref_block_q8_0(const float* x) {
  float amax = 0.0f;
  for (int j = 0; j < 32; ++j) amax = std::max(amax, std::fabs(x[j]));
  const float d = amax / 127.0f;
  const float id = d != 0.0f ? 1.0f / d : 0.0f;
  dt::block_q8_0 b{};
  b.d.bits = mnemo::simd::f32_to_f16_bits(d);
  for (int j = 0; j < 32; ++j) b.qs[j] = static_cast<std::int8_t>(std::roundf(x[j] * id));
  return b;
}

/// quantize_row_q4_0_ref of ggml, per element; `fused` computes x * id + 8.5 with one
/// rounding (mnemo's definition), otherwise with two (ggml's C code).
inline dt::block_q4_0 ref_block_q4_0(const float* x, bool fused = true) {
  float amax = 0.0f, max = 0.0f;
  for (int j = 0; j < 32; ++j) {
    if (amax < std::fabs(x[j])) {
      amax = std::fabs(x[j]);
      max = x[j];
    }
  }
  const float d = max / -8.0f;
  const float id = d != 0.0f ? 1.0f / d : 0.0f;
  dt::block_q4_0 b{};
  b.d.bits = mnemo::simd::f32_to_f16_bits(d);
  auto code = [&](float v) {
    volatile float prod = v * id;  // volatile: keep the two roundings when asked to
    const float s = fused ? std::fma(v, id, 8.5f) : prod + 8.5f;
    return static_cast<std::uint8_t>(std::min(15, static_cast<int>(s)));
  };
  for (int j = 0; j < 16; ++j)
    b.qs[j] = static_cast<std::uint8_t>(code(x[j]) | code(x[j + 16]) << 4);
  return b;
}

inline void ref_encode(const float* x, float* out, std::size_t n) { std::copy(x, x + n, out); }
inline void ref_encode(const float* x, dt::f16* out, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) out[i].bits = mnemo::simd::f32_to_f16_bits(x[i]);
}
inline void ref_encode(const float* x, dt::bf16* out, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) out[i].bits = mnemo::simd::f32_to_bf16_bits(x[i]);
}
inline void ref_encode(const float* x, dt::block_q8_0* out, std::size_t n) {
  for (std::size_t b = 0; b < n / 32; ++b) out[b] = ref_block_q8_0(x + 32 * b);
}
inline void ref_encode(const float* x, dt::block_q4_0* out, std::size_t n) {
  for (std::size_t b = 0; b < n / 32; ++b) out[b] = ref_block_q4_0(x + 32 * b);
}

/// The exact-ish dot product (double accumulation) and sum |x_i v_i|.
template <class E>
void ref_dot(const float* x, const E* row, std::size_t n, double& dot, double& abs_sum) {
  dot = 0;
  abs_sum = 0;
  for (std::size_t i = 0; i < n; ++i) {
    const double p = static_cast<double>(x[i]) * static_cast<double>(ref_value(row, i));
    dot += p;
    abs_sum += std::fabs(p);
  }
}

/// y[i] + a * value[i] with one rounding, as mnemo defines axpy for every type.
template <class E>
float ref_axpy_element(float a, const E* row, float y, std::size_t i) {
  return std::fma(a, ref_value(row, i), y);
}

// ------------------------------------------------------------------------ buffers

/// Bytes with a sentinel pattern, holding one object array at `offset` bytes past a
/// 64-byte boundary, so tests see misaligned rows and catch writes outside them.
struct guarded_bytes {
  static constexpr std::size_t guard = 64;
  static constexpr unsigned char sentinel = 0xa5;

  guarded_bytes(std::size_t bytes, std::size_t offset) : size(bytes), offset(offset) {
    storage.assign(bytes + offset + 2 * guard + 64, sentinel);
    const auto base = reinterpret_cast<std::uintptr_t>(storage.data());
    const std::size_t skew = (64 - base % 64) % 64;
    begin = storage.data() + skew + guard + offset;
  }

  template <class T>
  T* as() {
    return reinterpret_cast<T*>(begin);
  }

  /// True when no byte outside [begin, begin + size) was written.
  bool guards_intact() const {
    for (const unsigned char* p = storage.data(); p < begin; ++p)
      if (*p != sentinel) return false;
    for (const unsigned char* p = begin + size; p < storage.data() + storage.size(); ++p)
      if (*p != sentinel) return false;
    return true;
  }

  std::size_t size, offset;
  std::vector<unsigned char> storage;
  unsigned char* begin = nullptr;
};

}  // namespace mnemo_test
