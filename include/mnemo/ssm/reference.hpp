// Scalar references of the SSM kernels, in double, written straight from the
// definitions in ssm/types.hpp (the formulas of docs/ssm.md). Tests compare
// every ISA against these; they are slow on purpose (no reordering, no vectors).
#pragma once

#include <cmath>
#include <vector>

#include "mnemo/ssm/types.hpp"

namespace mnemo::ssm {

/// ggml_compute_softplus_f32 in double: the identity above 20.
inline double reference_softplus(double x) { return x > 20.0 ? x : std::log1p(std::exp(x)); }
inline double reference_silu(double x) { return x / (1.0 + std::exp(-x)); }

inline status reference_conv1d(const conv_args& a) {
  MNEMO_RETURN_IF_ERROR(a.validate());
  const std::size_t K = a.d_conv, Km1 = K - 1;
  for (std::size_t c = 0; c < a.d_inner; ++c) {
    std::vector<double> win(Km1 + a.n_tokens);  // state ++ x of this channel
    for (std::size_t k = 0; k < Km1; ++k) win[k] = a.state[c * Km1 + k];
    for (std::size_t t = 0; t < a.n_tokens; ++t) win[Km1 + t] = a.x[t * a.ld_x + c];
    for (std::size_t t = 0; t < a.n_tokens; ++t) {
      double acc = a.bias != nullptr ? a.bias[c] : 0.0;
      for (std::size_t k = 0; k < K; ++k) acc += win[t + k] * a.w[c * K + k];
      a.out[t * a.ld_out + c] = static_cast<float>(a.silu ? reference_silu(acc) : acc);
    }
    for (std::size_t k = 0; k < Km1; ++k)
      a.state[c * Km1 + k] = static_cast<float>(win[a.n_tokens + k]);
  }
  return {};
}

/// The state is carried in double over the call and rounded to f32 at its end.
inline status reference_scan(const scan_args& a) {
  MNEMO_RETURN_IF_ERROR(a.validate());
  const std::size_t S = a.d_state;
  std::vector<double> st(S);
  for (std::size_t c = 0; c < a.d_inner; ++c) {
    for (std::size_t s = 0; s < S; ++s) st[s] = a.state[c * S + s];
    for (std::size_t t = 0; t < a.n_tokens; ++t) {
      const double sp = reference_softplus(a.dt[t * a.ld_dt + c]);
      const double x = a.x[t * a.ld_x + c];
      double y = 0;
      for (std::size_t s = 0; s < S; ++s) {
        st[s] = st[s] * std::exp(sp * a.A[c * S + s]) + a.B[t * a.ld_bc + s] * (x * sp);
        y += st[s] * a.C[t * a.ld_bc + s];
      }
      if (a.D != nullptr) y += x * a.D[c];
      if (a.z != nullptr) y *= reference_silu(a.z[t * a.ld_z + c]);
      a.y[t * a.ld_y + c] = static_cast<float>(y);
    }
    for (std::size_t s = 0; s < S; ++s) a.state[c * S + s] = static_cast<float>(st[s]);
  }
  return {};
}

}  // namespace mnemo::ssm
