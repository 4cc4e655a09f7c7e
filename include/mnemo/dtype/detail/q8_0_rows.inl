// Body of dtype::row_kernels<isa> for q8_0 rows (blocks of 32 values, 34 bytes).
// Included only by row_kernels.hpp; `isa`, `V`, `vf`, `lanes` and `C`
// (detail::block_codes<isa>) are the enclosing specialisation's.
//
// A row of n values is n / 32 blocks (@pre n % 32 == 0). A decoded value is d * code,
// an exact product (f16 d times an int8), so decode and axpy are bit-identical on every
// ISA. dot applies the scale once per block: d * (x . codes).
#if !defined(MNEMO_DTYPE_ROW_KERNEL_BODY_)
#error "mnemo/dtype/detail/*.inl are kernel bodies: include mnemo/dtype/row_kernels.hpp"
#endif

static constexpr std::size_t q8_vecs_ = k_q8_0_block / lanes;  // vectors per block

/// ggml's quantize_row_q8_0_ref: d = max|x| / 127, code = roundf(x / d) computed as
/// x * (1/d), d stored as f16 (the codes use the f32 d, as in ggml). [n] -> [n/32]
static void encode(const float* MNEMO_RESTRICT src, block_q8_0* MNEMO_RESTRICT dst,
                   std::size_t n) noexcept {
  MNEMO_DASSERT(n % k_q8_0_block == 0);
  for (std::size_t b = 0; b < n / k_q8_0_block; ++b) {
    const float* x = src + b * k_q8_0_block;
    const float d = C::abs_max(x) / 127.0f;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    dst[b].d = f16::from_bits(simd::f32_to_f16_bits(d));
    C::quantize_q8(x, id, dst[b].qs);
  }
}

/// [n/32] blocks -> [n] f32, value = d * code.
static void decode(const block_q8_0* MNEMO_RESTRICT src, float* MNEMO_RESTRICT dst,
                   std::size_t n) noexcept {
  MNEMO_DASSERT(n % k_q8_0_block == 0);
  for (std::size_t b = 0; b < n / k_q8_0_block; ++b) {
    vf c[q8_vecs_];
    C::q8(src[b].qs, c);
    const vf d = C::splat_scale(src[b].d);
    for (std::size_t k = 0; k < q8_vecs_; ++k)
      V::store(dst + b * k_q8_0_block + k * lanes, V::mul(d, c[k]));
  }
}

/// Values [i, i + lanes) of a q8_0 row as decode gives them (d * code), in registers:
/// for kernels that use each vector as they load it. @pre i % lanes == 0
static MNEMO_INLINE vf load_lanes(const block_q8_0* row, std::size_t i) noexcept {
  const block_q8_0& b = row[i / k_q8_0_block];
  return V::mul(C::splat_scale(b.d), C::q8_lanes(b.qs + i % k_q8_0_block));
}

/// out[0, lanes) = load_lanes(row, i), callable from outside the target region (tests).
static void store_lanes(const block_q8_0* row, std::size_t i, float* out) noexcept {
  V::store(out, load_lanes(row, i));
}

/// sum_j x[j] * code[j] over one block, as a vector of partial sums (two chains).
static MNEMO_INLINE vf block_dot_q8_(const float* x, const block_q8_0& blk) noexcept {
  vf c[q8_vecs_];
  C::q8(blk.qs, c);
  if constexpr (q8_vecs_ == 1) {
    return V::mul(V::load(x), c[0]);
  } else {
    vf s0 = V::mul(V::load(x), c[0]);
    vf s1 = V::mul(V::load(x + lanes), c[1]);
    for (std::size_t k = 2; k + 1 < q8_vecs_; k += 2) {
      s0 = V::fma(V::load(x + k * lanes), c[k], s0);
      s1 = V::fma(V::load(x + (k + 1) * lanes), c[k + 1], s1);
    }
    return V::add(s0, s1);
  }
}

/// sum_i x[i] * value[i]; per block acc += d * (x . codes). Two blocks per step so the
/// per-block chains of consecutive blocks overlap. [n] . [n/32] -> f32
static MNEMO_INLINE float dot_q8_(const float* x, const block_q8_0* row, std::size_t n) noexcept {
  MNEMO_DASSERT(n % k_q8_0_block == 0);
  const std::size_t nb = n / k_q8_0_block;
  const std::size_t nb2 = nb - nb % 2;
  vf a0 = V::zero(), a1 = V::zero();
  std::size_t b = 0;
  for (; b < nb2; b += 2) {
    const float* xb = x + b * k_q8_0_block;
    a0 = V::fma(C::splat_scale(row[b].d), block_dot_q8_(xb, row[b]), a0);
    a1 = V::fma(C::splat_scale(row[b + 1].d), block_dot_q8_(xb + k_q8_0_block, row[b + 1]), a1);
  }
  if (b < nb)
    a0 = V::fma(C::splat_scale(row[b].d), block_dot_q8_(x + b * k_q8_0_block, row[b]), a0);
  return V::reduce_add(V::add(a0, a1));
}

static float dot(const float* x, const block_q8_0* row, std::size_t n) noexcept {
  return dot_q8_(x, row, n);
}

/// y[i] += a * value[i] with one rounding, fma(a, d * code, y), as for f32 rows.
static MNEMO_INLINE void axpy_q8_(float a, const block_q8_0* MNEMO_RESTRICT row,
                                  float* MNEMO_RESTRICT y, std::size_t n) noexcept {
  MNEMO_DASSERT(n % k_q8_0_block == 0);
  const vf va = V::set1(a);
  for (std::size_t b = 0; b < n / k_q8_0_block; ++b) {
    vf c[q8_vecs_];
    C::q8(row[b].qs, c);
    const vf d = C::splat_scale(row[b].d);
    float* yb = y + b * k_q8_0_block;
    for (std::size_t k = 0; k < q8_vecs_; ++k)
      V::store(yb + k * lanes, V::fma(va, V::mul(d, c[k]), V::load(yb + k * lanes)));
  }
}

static void axpy(float a, const block_q8_0* MNEMO_RESTRICT row, float* MNEMO_RESTRICT y,
                 std::size_t n) noexcept {
  axpy_q8_(a, row, y, n);
}
