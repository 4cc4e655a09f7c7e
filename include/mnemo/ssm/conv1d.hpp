// Causal depthwise conv1d of a recurrent (Mamba) layer over one sequence's tokens,
// continuing from and updating the sequence's conv state (args and layouts:
// ssm/types.hpp; llama.cpp: ggml_compute_forward_ssm_conv_f32 plus the bias add and
// silu of build_mamba_layer).
#pragma once

#include "mnemo/simd/simd.hpp"
#include "mnemo/ssm/detail/kernels.hpp"
#include "mnemo/ssm/types.hpp"

namespace mnemo::ssm {

/// out = [silu](conv(state ++ x) + bias); state := the last d_conv - 1 rows of state ++ x.
/// Returns invalid_argument (nothing written) when the arguments are inconsistent.
template <class Isa = simd::native>
status causal_conv1d(const conv_args& a) {
  MNEMO_RETURN_IF_ERROR(a.validate());
  if (a.n_tokens > 0) detail::kernels<Isa>::conv1d(a);
  return {};
}

}  // namespace mnemo::ssm
