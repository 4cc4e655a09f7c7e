// Element-wise layer math of the decoders: RMSNorm (Zhang & Sennrich 2019), SwiGLU and
// GeGLU (Shazeer 2020), the residual add and the logit soft-cap (Gemma 2). The products
// live in matmul.hpp; these are the cheap steps between them, vectorised because a
// prefill runs them over n_ubatch x n_ff values per layer.
//
// layer_kernels<Isa> holds one specialisation per ISA (stamped by simd/foreach_target.hpp, bodies
// in detail/layer_kernels.inl); the free functions below forward to it.
#pragma once

#include <cmath>
#include <cstddef>

#include "mnemo/base/config.hpp"
#include "mnemo/simd/simd.hpp"

namespace mnemo::model {

template <class Isa>
struct layer_kernels {
  static_assert(simd::isa_tag<Isa> && simd::is_compiled<Isa>,
                "model::layer_kernels<Isa>: Isa must be an ISA tag compiled for this target "
                "(check simd::is_compiled<Isa>)");
};

#define MNEMO_FOREACH_TARGET_BODY "mnemo/model/detail/layer_kernels_for_isa.inl"
#include "mnemo/simd/foreach_target.hpp"

/// y = x / sqrt(mean(x^2) + eps) * w   [n]; y may alias x.
template <simd::isa_tag Isa = simd::native>
void rms_norm(const float* x, const float* w, float* y, std::size_t n, float eps) noexcept {
  layer_kernels<Isa>::rms_norm(x, w, y, n, eps);
}

/// gate = silu(gate) * up   [n]
template <simd::isa_tag Isa = simd::native>
void swiglu(float* gate, const float* up, std::size_t n) noexcept {
  layer_kernels<Isa>::swiglu(gate, up, n);
}

/// gate = gelu_tanh(gate) * up   [n] (Gemma's GeGLU)
template <simd::isa_tag Isa = simd::native>
void geglu(float* gate, const float* up, std::size_t n) noexcept {
  layer_kernels<Isa>::geglu(gate, up, n);
}

/// x += y   [n]
template <simd::isa_tag Isa = simd::native>
void add_to(float* x, const float* y, std::size_t n) noexcept {
  layer_kernels<Isa>::add_to(x, y, n);
}

/// x = cap * tanh(x / cap)   [n]; cap <= 0 leaves x unchanged. Runs once per output
/// row, so the scalar tanh is fine.
inline void softcap(float* x, std::size_t n, float cap) noexcept {
  if (!(cap > 0.0f)) return;
  for (std::size_t i = 0; i < n; ++i) x[i] = cap * std::tanh(x[i] / cap);
}

}  // namespace mnemo::model
