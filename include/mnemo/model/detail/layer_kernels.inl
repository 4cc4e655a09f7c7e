// Body of model::layer_kernels<Isa> (docs/simd.md, "the kernel pattern"): included once
// per ISA inside that ISA's target region, written against V = simd::ops<isa>. No
// include guard and no #includes on purpose.

/// y = x / sqrt(mean(x^2) + eps) * w   x, w, y: [n]; y may alias x.
/// The scale is applied before the weight, as ggml_rms_norm followed by ggml_mul does.
static void rms_norm(const float* x, const float* MNEMO_RESTRICT w, float* y, std::size_t n,
                     float eps) noexcept {
  vf acc = V::zero();
  std::size_t i = 0;
  for (; i + lanes <= n; i += lanes) {
    const vf a = V::load(x + i);
    acc = V::fma(a, a, acc);
  }
  float ss = V::reduce_add(acc);
  for (; i < n; ++i) ss += x[i] * x[i];
  const float scale = 1.0f / std::sqrt(ss / static_cast<float>(n) + eps);
  const vf s = V::set1(scale);
  for (i = 0; i + lanes <= n; i += lanes)
    V::store(y + i, V::mul(V::mul(V::load(x + i), s), V::load(w + i)));
  for (; i < n; ++i) y[i] = x[i] * scale * w[i];
}

/// gate = silu(gate) * up = gate / (1 + e^-gate) * up   gate, up: [n] (SwiGLU,
/// Shazeer 2020; the activation is on the gate, as in ggml_swiglu_split).
static void swiglu(float* MNEMO_RESTRICT gate, const float* MNEMO_RESTRICT up,
                   std::size_t n) noexcept {
  // e^-g with the vector exp first, then the division in a loop the compiler
  // vectorises in this target region (the ops set has no division).
  alignas(64) float e[256];
  for (std::size_t i0 = 0; i0 < n; i0 += 256) {
    const std::size_t m = n - i0 < 256 ? n - i0 : 256;
    std::size_t i = 0;
    for (; i + lanes <= m; i += lanes)
      V::store(e + i, V::exp(V::sub(V::zero(), V::load(gate + i0 + i))));
    for (; i < m; ++i) e[i] = std::exp(-gate[i0 + i]);
    float* g = gate + i0;
    const float* u = up + i0;
    for (i = 0; i < m; ++i) g[i] = g[i] / (1.0f + e[i]) * u[i];
  }
}

/// gate = gelu(gate) * up   gate, up: [n] (GeGLU, Shazeer 2020; Gemma). GELU is the tanh
/// approximation 0.5 g (1 + tanh(u)), u = sqrt(2/pi) (g + 0.044715 g^3), written as
/// g / (1 + e^-2u) (the same identity), so it shares swiglu's shape.
static void geglu(float* MNEMO_RESTRICT gate, const float* MNEMO_RESTRICT up,
                  std::size_t n) noexcept {
  constexpr float c = 0.79788456080286535588f, a = 0.044715f;
  alignas(64) float e[256];
  for (std::size_t i0 = 0; i0 < n; i0 += 256) {
    const std::size_t m = n - i0 < 256 ? n - i0 : 256;
    const vf vc = V::set1(-2.0f * c), va = V::set1(a), one = V::set1(1.0f);
    std::size_t i = 0;
    for (; i + lanes <= m; i += lanes) {
      const vf g = V::load(gate + i0 + i);
      const vf u = V::mul(V::mul(g, vc), V::fma(V::mul(g, g), va, one));  // -2u
      V::store(e + i, V::exp(u));
    }
    for (; i < m; ++i) {
      const float g = gate[i0 + i];
      e[i] = std::exp(-2.0f * c * g * (1.0f + a * g * g));
    }
    float* g = gate + i0;
    const float* u = up + i0;
    for (i = 0; i < m; ++i) g[i] = g[i] / (1.0f + e[i]) * u[i];
  }
}

/// x += y   [n]
static void add_to(float* MNEMO_RESTRICT x, const float* MNEMO_RESTRICT y, std::size_t n) noexcept {
  std::size_t i = 0;
  for (; i + lanes <= n; i += lanes) V::store(x + i, V::add(V::load(x + i), V::load(y + i)));
  for (; i < n; ++i) x[i] += y[i];
}
