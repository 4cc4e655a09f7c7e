// Body of dtype::row_kernels<isa> for the one-value element types f32, f16 and bf16.
// Included only by row_kernels.hpp, inside each ISA's specialisation and target region;
// `isa`, `V` (simd::ops<isa>), `vf` and `lanes` are the enclosing specialisation's.
//
// Rows are read and written with unaligned loads; a row of n values is n elements.
// The tail (n % lanes values) goes through a zeroed stack copy for f16/bf16 (the ops set
// has masked loads for f32 only).
#if !defined(MNEMO_DTYPE_ROW_KERNEL_BODY_)
#error "mnemo/dtype/detail/*.inl are kernel bodies: include mnemo/dtype/row_kernels.hpp"
#endif

template <class E>
static constexpr bool is_one_value_ =
    std::is_same_v<E, float> || std::is_same_v<E, f16> || std::is_same_v<E, bf16>;

// `lanes` consecutive values of a row.
static MNEMO_INLINE vf load_values(const float* p) noexcept { return V::load(p); }
static MNEMO_INLINE vf load_values(const f16* p) noexcept { return V::load_f16(&p->bits); }
static MNEMO_INLINE vf load_values(const bf16* p) noexcept { return V::load_bf16(&p->bits); }
static MNEMO_INLINE void store_values(float* p, vf v) noexcept { V::store(p, v); }
static MNEMO_INLINE void store_values(f16* p, vf v) noexcept { V::store_f16(&p->bits, v); }
static MNEMO_INLINE void store_values(bf16* p, vf v) noexcept { V::store_bf16(&p->bits, v); }

// The first n < lanes values; the others read as zero / are not written.
static MNEMO_INLINE vf load_values_partial(const float* p, std::size_t n) noexcept {
  return V::load_partial(p, n);
}
template <class E>
static MNEMO_INLINE vf load_values_partial(const E* p, std::size_t n) noexcept {
  E tmp[lanes] = {};
  std::memcpy(tmp, p, n * sizeof(E));
  return load_values(tmp);
}
static MNEMO_INLINE void store_values_partial(float* p, vf v, std::size_t n) noexcept {
  V::store_partial(p, v, n);
}
template <class E>
static MNEMO_INLINE void store_values_partial(E* p, vf v, std::size_t n) noexcept {
  E tmp[lanes];
  store_values(tmp, v);
  std::memcpy(p, tmp, n * sizeof(E));
}

/// dst[i] = E(src[i]), round to nearest even. [n] f32 -> [n] E
template <class E>
requires is_one_value_<E>
static void encode(const float* MNEMO_RESTRICT src, E* MNEMO_RESTRICT dst, std::size_t n) noexcept {
  const std::size_t n_vec = n - n % lanes;
  std::size_t i = 0;
  for (; i < n_vec; i += lanes) store_values(dst + i, V::load(src + i));
  if (i < n) store_values_partial(dst + i, V::load_partial(src + i, n - i), n - i);
}

/// dst[i] = float(src[i]), exact. [n] E -> [n] f32
template <class E>
requires is_one_value_<E>
static void decode(const E* MNEMO_RESTRICT src, float* MNEMO_RESTRICT dst, std::size_t n) noexcept {
  const std::size_t n_vec = n - n % lanes;
  std::size_t i = 0;
  for (; i < n_vec; i += lanes) V::store(dst + i, load_values(src + i));
  if (i < n) V::store_partial(dst + i, load_values_partial(src + i, n - i), n - i);
}

/// Does nothing: dot_one_'s default step hook.
struct no_step_hook_ {
  template <class P>
  MNEMO_INLINE void operator()(P) const noexcept {}
};

/// sum_i x[i] * row[i]. Four accumulators: the loop is bound by loads and FMA latency,
/// not by the adds, once there are four independent chains. on_step(row + i) runs before
/// each group of four vectors and before the rest (model's one-token product moves its
/// prefetch front there); it cannot change the sum.
template <class E, class OnStep = no_step_hook_>
requires is_one_value_<E>
static MNEMO_INLINE float dot_one_(const float* x, const E* row, std::size_t n,
                                   OnStep on_step = {}) noexcept {
  vf a0 = V::zero(), a1 = V::zero(), a2 = V::zero(), a3 = V::zero();
  const std::size_t n_vec = n - n % lanes;
  const std::size_t n_4vec = n - n % (4 * lanes);
  std::size_t i = 0;
  for (; i < n_4vec; i += 4 * lanes) {
    on_step(row + i);
    a0 = V::fma(V::load(x + i), load_values(row + i), a0);
    a1 = V::fma(V::load(x + i + lanes), load_values(row + i + lanes), a1);
    a2 = V::fma(V::load(x + i + 2 * lanes), load_values(row + i + 2 * lanes), a2);
    a3 = V::fma(V::load(x + i + 3 * lanes), load_values(row + i + 3 * lanes), a3);
  }
  on_step(row + i);
  for (; i < n_vec; i += lanes) a0 = V::fma(V::load(x + i), load_values(row + i), a0);
  if (i < n) a1 = V::fma(V::load_partial(x + i, n - i), load_values_partial(row + i, n - i), a1);
  return V::reduce_add(V::add(V::add(a0, a1), V::add(a2, a3)));
}

template <class E>
requires is_one_value_<E>
static float dot(const float* x, const E* row, std::size_t n) noexcept {
  return dot_one_(x, row, n);
}

/// y[i] += a * row[i], one fused rounding per element (bit-identical on every ISA).
template <class E>
requires is_one_value_<E>
static MNEMO_INLINE void axpy_one_(float a, const E* MNEMO_RESTRICT row, float* MNEMO_RESTRICT y,
                                   std::size_t n) noexcept {
  const vf va = V::set1(a);
  const std::size_t n_vec = n - n % lanes;
  const std::size_t n_2vec = n - n % (2 * lanes);
  std::size_t i = 0;
  for (; i < n_2vec; i += 2 * lanes) {
    V::store(y + i, V::fma(va, load_values(row + i), V::load(y + i)));
    V::store(y + i + lanes, V::fma(va, load_values(row + i + lanes), V::load(y + i + lanes)));
  }
  for (; i < n_vec; i += lanes) V::store(y + i, V::fma(va, load_values(row + i), V::load(y + i)));
  if (i < n) {
    const std::size_t r = n - i;
    V::store_partial(y + i, V::fma(va, load_values_partial(row + i, r), V::load_partial(y + i, r)),
                     r);
  }
}

template <class E>
requires is_one_value_<E>
static void axpy(float a, const E* MNEMO_RESTRICT row, float* MNEMO_RESTRICT y,
                 std::size_t n) noexcept {
  axpy_one_(a, row, y, n);
}
