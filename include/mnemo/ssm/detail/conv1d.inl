// Body of ssm::detail::kernels<isa>: causal depthwise conv1d (args: ssm/types.hpp).
// Included only by ssm/detail/kernels.hpp; `isa`, `V`, `vf`, `lanes` are the
// enclosing specialisation's.
//
// Vectorised across channels: a block of `lanes` channels keeps its d_conv taps and
// its sliding window of d_conv values in registers while the tokens stream through.
// Taps and state are stored time-fastest per channel, so they are transposed into the
// block once (in) and once (out) per call; for one token that is about as much work as
// the convolution itself, which is small beside the scan (d_conv vs d_state x exp).
#if !defined(MNEMO_SSM_KERNEL_BODY_)
#error "mnemo/ssm/detail/*.inl are kernel bodies: include mnemo/ssm/ssm.hpp"
#endif

/// @pre a.validate() is ok, a.n_tokens > 0
static void conv1d(const conv_args& a) noexcept {
  const std::size_t K = a.d_conv, Km1 = K - 1;
  alignas(64) float tmp[lanes];
  for (std::size_t c0 = 0; c0 < a.d_inner; c0 += lanes) {
    const std::size_t n = std::min(lanes, a.d_inner - c0);
    vf w[k_max_conv], win[k_max_conv];
    for (std::size_t k = 0; k < K; ++k) {  // [d_conv][lanes] <- [lanes][d_conv]
      for (std::size_t l = 0; l < n; ++l) tmp[l] = a.w[(c0 + l) * K + k];
      w[k] = load_n(tmp, n);
    }
    for (std::size_t k = 0; k < Km1; ++k) {
      for (std::size_t l = 0; l < n; ++l) tmp[l] = a.state[(c0 + l) * Km1 + k];
      win[k] = load_n(tmp, n);
    }
    const vf bias = a.bias != nullptr ? load_n(a.bias + c0, n) : V::zero();
    for (std::size_t t = 0; t < a.n_tokens; ++t) {
      win[Km1] = load_n(a.x + t * a.ld_x + c0, n);
      vf acc = V::mul(win[0], w[0]);
      for (std::size_t k = 1; k < K; ++k) acc = V::fma(win[k], w[k], acc);
      acc = V::add(acc, bias);  // ggml adds the bias after the sum
      if (a.silu) acc = silu(acc);
      store_n(a.out + t * a.ld_out + c0, acc, n);
      for (std::size_t k = 0; k < Km1; ++k) win[k] = win[k + 1];
    }
    for (std::size_t k = 0; k < Km1; ++k) {
      V::store(tmp, win[k]);
      for (std::size_t l = 0; l < n; ++l) a.state[(c0 + l) * Km1 + k] = tmp[l];
    }
  }
}
