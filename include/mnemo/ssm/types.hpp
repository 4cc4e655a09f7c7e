// Shapes and argument packs of the state-space kernels (causal conv1d and the
// Mamba-1 selective scan), with the checks every public entry point runs. Tensor
// layouts follow llama.cpp / ggml (docs/ssm.md): shapes below are
// [outer, inner] with the inner index contiguous, i.e. ggml ne reversed.
#pragma once

#include <cstddef>

#include "mnemo/base/status.hpp"

namespace mnemo::ssm {

/// The widest convolution the kernels handle (Mamba uses 4).
inline constexpr std::size_t k_max_conv = 16;

/// Causal depthwise conv1d over one sequence's tokens.
///   x        [n_tokens, d_inner]   rows ld_x floats apart (raw x, before bias)
///   w        [d_inner, d_conv]     taps per channel, oldest first (ggml ne [d_conv, d_inner])
///   bias     [d_inner]             or null
///   state    [d_inner, d_conv - 1] the previous d_conv - 1 raw x values per channel,
///                                  oldest first (ggml ne [d_conv - 1, d_inner]); updated
///   out      [n_tokens, d_inner]   rows ld_out floats apart; must not overlap x or state
/// out[t][c] = sum_k window[t + k][c] * w[c][k] + bias[c], window = state ++ x rows;
/// tap d_conv - 1 multiplies the current token (PyTorch's causal conv1d).
struct conv_args {
  std::size_t d_inner = 0, d_conv = 0, n_tokens = 0;
  const float* x = nullptr;
  std::size_t ld_x = 0;
  const float* w = nullptr;
  const float* bias = nullptr;
  float* state = nullptr;
  float* out = nullptr;
  std::size_t ld_out = 0;
  bool silu = true;  // out = silu(conv + bias), as Mamba's mixer does

  status validate() const {
    if (d_inner == 0 || d_conv == 0 || d_conv > k_max_conv)
      return make_status(status_code::invalid_argument,
                         "causal_conv1d: d_inner %zu must be > 0 and d_conv %zu in [1, %zu]",
                         d_inner, d_conv, k_max_conv);
    if (n_tokens == 0) return {};
    if (x == nullptr || w == nullptr || out == nullptr || (d_conv > 1 && state == nullptr))
      return make_status(status_code::invalid_argument,
                         "causal_conv1d: x, w, out and (for d_conv > 1) state are required");
    if (ld_x < d_inner || ld_out < d_inner)
      return make_status(status_code::invalid_argument,
                         "causal_conv1d: row strides (x %zu, out %zu) are below d_inner %zu", ld_x,
                         ld_out, d_inner);
    return {};
  }
};

/// The Mamba-1 selective scan of one sequence (one B/C group shared by every channel;
/// ggml_ssm_scan with head_dim 1). Per token t, channel c, state s:
///   sp         = softplus(dt[t][c])          (dt if dt > 20, else log(1 + e^dt))
///   state[c][s] = state[c][s] * exp(sp * A[c][s]) + B[t][s] * (x[t][c] * sp)
///   y[t][c]    = (sum_s state[c][s] * C[t][s] + x[t][c] * D[c]) * silu(z[t][c])
/// with the D term dropped when D is null and the gate when z is null.
///   x, dt, z   [n_tokens, d_inner]  rows ld_x, ld_dt, ld_z floats apart
///   B, C       [n_tokens, d_state]  rows ld_bc floats apart (ssm_x's output rows)
///   A          [d_inner, d_state]   (ggml ne [d_state, d_inner]; A = -exp(A_log))
///   D          [d_inner]
///   state      [d_inner, d_state]   updated in place
///   y          [n_tokens, d_inner]  rows ld_y apart; must not overlap the inputs
struct scan_args {
  std::size_t d_inner = 0, d_state = 0, n_tokens = 0;
  const float* x = nullptr;
  std::size_t ld_x = 0;
  const float* dt = nullptr;
  std::size_t ld_dt = 0;
  const float* B = nullptr;
  const float* C = nullptr;
  std::size_t ld_bc = 0;
  const float* z = nullptr;
  std::size_t ld_z = 0;
  const float* A = nullptr;
  const float* D = nullptr;
  float* state = nullptr;
  float* y = nullptr;
  std::size_t ld_y = 0;

  status validate() const {
    if (d_inner == 0 || d_state == 0)
      return make_status(status_code::invalid_argument,
                         "selective_scan: d_inner %zu and d_state %zu must be > 0", d_inner,
                         d_state);
    if (n_tokens == 0) return {};
    if (x == nullptr || dt == nullptr || B == nullptr || C == nullptr || A == nullptr ||
        state == nullptr || y == nullptr)
      return make_status(status_code::invalid_argument,
                         "selective_scan: x, dt, B, C, A, state and y are required");
    if (ld_x < d_inner || ld_dt < d_inner || ld_y < d_inner || ld_bc < d_state ||
        (z != nullptr && ld_z < d_inner))
      return make_status(status_code::invalid_argument,
                         "selective_scan: a row stride is below its row width (x %zu, dt %zu, "
                         "z %zu, y %zu vs d_inner %zu; B/C %zu vs d_state %zu)",
                         ld_x, ld_dt, ld_z, ld_y, d_inner, ld_bc, d_state);
    return {};
  }
};

}  // namespace mnemo::ssm
