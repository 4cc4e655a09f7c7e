// Body of ssm::detail::kernels<isa>: the element functions the conv and scan share.
// Included only by ssm/detail/kernels.hpp inside each ISA's specialisation and target
// region; `isa`, `V`, `vf` and `lanes` are the enclosing specialisation's.
#if !defined(MNEMO_SSM_KERNEL_BODY_)
#error "mnemo/ssm/detail/*.inl are kernel bodies: include mnemo/ssm/ssm.hpp"
#endif

/// a / b per lane. The vector op set has no division; a template, so that the other
/// ISAs' branches are discarded.
template <class T>
static MNEMO_INLINE T div_(T a, T b) noexcept {
#if defined(MNEMO_ARCH_X86_64)
  if constexpr (std::is_same_v<isa, simd::avx512>) {
    return _mm512_div_ps(a, b);
  } else if constexpr (std::is_same_v<isa, simd::avx2>) {
    return _mm256_div_ps(a, b);
  } else {
    return a / b;
  }
#elif defined(MNEMO_ARCH_AARCH64)
  if constexpr (std::is_same_v<isa, simd::neon>) {
    return vdivq_f32(a, b);
  } else {
    return a / b;
  }
#else
  return a / b;
#endif
}

/// n <= lanes values (the op set's partial forms take n < lanes only).
static MNEMO_INLINE vf load_n(const float* p, std::size_t n) noexcept {
  return n == lanes ? V::load(p) : V::load_partial(p, n);
}
static MNEMO_INLINE void store_n(float* p, vf v, std::size_t n) noexcept {
  if (n == lanes)
    V::store(p, v);
  else
    V::store_partial(p, v, n);
}

/// softplus(x) = max(x, 0) + log1p(e^-|x|), with log1p(u) = 2 atanh(u / (2 + u)): the
/// atanh argument lies in [0, 1/3], so 8 odd terms reach 1e-9 relative without the
/// exponent bit tricks a vector log needs. Equals ggml's cut (x for x > 20) in f32:
/// there log1p(e^-20) = 2e-9 is below half an ulp of x.
static MNEMO_INLINE vf softplus(vf x) noexcept {
  const vf u = V::exp(V::min(x, V::sub(V::zero(), x)));  // (0, 1]
  const vf z = div_(u, V::add(V::set1(2.0f), u));        // [0, 1/3]
  const vf z2 = V::mul(z, z);
  vf p = V::set1(1.0f / 15.0f);
  p = V::fma(p, z2, V::set1(1.0f / 13.0f));
  p = V::fma(p, z2, V::set1(1.0f / 11.0f));
  p = V::fma(p, z2, V::set1(1.0f / 9.0f));
  p = V::fma(p, z2, V::set1(1.0f / 7.0f));
  p = V::fma(p, z2, V::set1(1.0f / 5.0f));
  p = V::fma(p, z2, V::set1(1.0f / 3.0f));
  p = V::fma(p, z2, V::set1(1.0f));
  return V::add(V::max(x, V::zero()), V::mul(V::add(z, z), p));
}

/// silu(x) = x / (1 + e^-x); -0 for x below -88 (e^-x overflows to inf).
static MNEMO_INLINE vf silu(vf x) noexcept {
  return div_(x, V::add(V::set1(1.0f), V::exp(V::sub(V::zero(), x))));
}
