// The precision of the decode path's dot products, a process-wide choice between
// exactness and speed (docs/attention.md, "bf16 products"):
// - f32 (the default): every product an f32 FMA of widened K/V values;
// - bf16: where the CPU has AVX512_BF16 (Zen 4, Zen 5, Cooper Lake, Sapphire Rapids and
//   later), decode items of four or more query rows per KV head (GQA 4 and up, or
//   several tokens of a sequence) with K and V stored as f16 or bf16 round the scaled
//   query, K, V and the softmax probabilities to bf16 (round to nearest even) and sum
//   pairs of exact products in f32 (vdpbf16ps): 32 products per instruction instead of
//   16, where grouped queries make decode bound by its arithmetic. Everything else
//   (fewer rows, prefill, quantised K/V, a CPU without BF16) stays f32.
//
//   attention::set_product_precision(attention::product_precision::bf16);
#pragma once

#include <cstdint>

#include "mnemo/base/process_setting.hpp"
#include "mnemo/simd/cpu.hpp"

namespace mnemo::attention {

enum class product_precision : std::uint8_t { f32, bf16 };

namespace detail {
inline process_setting<product_precision>& product_precision_setting() noexcept {
  static process_setting<product_precision> p{product_precision::f32};
  return p;
}
}  // namespace detail

/// The precision requested for calls that start now (read once per call).
inline product_precision current_product_precision() noexcept {
  return detail::product_precision_setting().get();
}

/// Requests a precision for calls that start afterwards (calls running keep theirs).
inline void set_product_precision(product_precision p) noexcept {
  detail::product_precision_setting().set(p);
}

/// Whether this CPU computes bf16 products when they are requested (AVX512_BF16 with
/// the AVX-512 kernels); without it every product stays f32.
inline bool bf16_products_supported() noexcept { return simd::detail::cpu().avx512_bf16; }

}  // namespace mnemo::attention
