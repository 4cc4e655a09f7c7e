// The Mamba-1 selective scan of one sequence (args and layouts: ssm/types.hpp;
// llama.cpp: ggml_compute_forward_ssm_scan_f32, Mamba-1 branch, then D skip and
// ggml_swiglu_split(z, y)). Gu & Dao, "Mamba" (2023), Algorithm 2, discretised as
// ggml does: dA = exp(dt A), dB x = dt B x.
#pragma once

#include "mnemo/simd/simd.hpp"
#include "mnemo/ssm/detail/kernels.hpp"
#include "mnemo/ssm/types.hpp"

namespace mnemo::ssm {

/// Which loop order runs (scan.inl): across d_state per token, or across channels
/// with the state tile held over the tokens. `automatic` picks step for one token
/// and chunk for more (measured, bench_ssm: docs/ssm.md).
enum class scan_path { automatic, step, chunk };

/// Runs the scan over a.n_tokens tokens, updating a.state and writing a.y. Both
/// paths leave a bit-identical state for one ISA; y differs only in the order of its
/// sum over d_state. Returns invalid_argument (nothing written) on bad arguments.
template <class Isa = simd::native>
status selective_scan(const scan_args& a, scan_path path = scan_path::automatic) {
  MNEMO_RETURN_IF_ERROR(a.validate());
  if (a.n_tokens == 0) return {};
  if (path == scan_path::step || (path == scan_path::automatic && a.n_tokens == 1))
    detail::kernels<Isa>::scan_step(a);
  else
    detail::kernels<Isa>::scan_chunk(a);
  return {};
}

}  // namespace mnemo::ssm
