// Body of dtype::row_kernels<isa> for q4_0 rows (blocks of 32 values, 18 bytes).
// Included only by row_kernels.hpp; `isa`, `V`, `vf`, `lanes` and `C`
// (detail::block_codes<isa>) are the enclosing specialisation's.
//
// A row of n values is n / 32 blocks (@pre n % 32 == 0). A decoded value is
// d * (code - 8), an exact product, so decode and axpy are bit-identical on every ISA.
// dot applies the scale once per block, either as d * (x . (codes - 8)) or, where
// C::q4_dot_by_values (AVX-512: a 16-entry table of d * (k - 8) looked up by vpermps),
// as x . values.
#if !defined(MNEMO_DTYPE_ROW_KERNEL_BODY_)
#error "mnemo/dtype/detail/*.inl are kernel bodies: include mnemo/dtype/row_kernels.hpp"
#endif

static constexpr std::size_t q4_vecs_ = k_q4_0_block / lanes;  // vectors per block

/// ggml's quantize_row_q4_0_ref: m = the value of largest magnitude (the first one on
/// ties; +0 for an all-zero block), d = m / -8, code = min(15, trunc(x * (1/d) + 8.5)),
/// d stored as f16 (the codes use the f32 d, as in ggml). x * (1/d) + 8.5 is one fused
/// rounding here (ggml rounds twice): the codes can differ from ggml's only when that sum
/// is within half an ulp of an integer. [n] -> [n/32]
static void encode(const float* MNEMO_RESTRICT src, block_q4_0* MNEMO_RESTRICT dst,
                   std::size_t n) noexcept {
  MNEMO_DASSERT(n % k_q4_0_block == 0);
  for (std::size_t b = 0; b < n / k_q4_0_block; ++b) {
    const float* x = src + b * k_q4_0_block;
    const float amax = C::abs_max(x);
    float m = 0.0f;
    if (amax != 0.0f) {  // the first element of magnitude amax keeps its sign
      for (std::size_t j = 0; j < k_q4_0_block; ++j) {
        if (std::fabs(x[j]) == amax) {
          m = x[j];
          break;
        }
      }
    }
    const float d = m / -8.0f;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    dst[b].d = f16::from_bits(simd::f32_to_f16_bits(d));
    C::quantize_q4(x, id, dst[b].qs);
  }
}

/// [n/32] blocks -> [n] f32, value = d * (code - 8).
static void decode(const block_q4_0* MNEMO_RESTRICT src, float* MNEMO_RESTRICT dst,
                   std::size_t n) noexcept {
  MNEMO_DASSERT(n % k_q4_0_block == 0);
  for (std::size_t b = 0; b < n / k_q4_0_block; ++b) {
    vf v[q4_vecs_];
    C::q4_values(src[b].qs, C::splat_scale(src[b].d), v);
    for (std::size_t k = 0; k < q4_vecs_; ++k) V::store(dst + b * k_q4_0_block + k * lanes, v[k]);
  }
}

/// Values [i, i + lanes) of a q4_0 row as decode gives them (d * (code - 8)), in
/// registers: for kernels that use each vector as they load it. @pre i % lanes == 0
static MNEMO_INLINE vf load_lanes(const block_q4_0* row, std::size_t i) noexcept {
  const block_q4_0& b = row[i / k_q4_0_block];
  return V::mul(C::splat_scale(b.d), C::q4_lanes(b.qs, i % k_q4_0_block));
}

/// out[0, lanes) = load_lanes(row, i), callable from outside the target region (tests).
static void store_lanes(const block_q4_0* row, std::size_t i, float* out) noexcept {
  V::store(out, load_lanes(row, i));
}

/// sum_j x[j] * (code[j] - 8) over one block, as a vector of partial sums (two chains).
static MNEMO_INLINE vf block_dot_q4_(const float* x, const block_q4_0& blk) noexcept {
  vf c[q4_vecs_];
  C::q4(blk.qs, c);
  if constexpr (q4_vecs_ == 1) {
    return V::mul(V::load(x), c[0]);
  } else {
    vf s0 = V::mul(V::load(x), c[0]);
    vf s1 = V::mul(V::load(x + lanes), c[1]);
    for (std::size_t k = 2; k + 1 < q4_vecs_; k += 2) {
      s0 = V::fma(V::load(x + k * lanes), c[k], s0);
      s1 = V::fma(V::load(x + (k + 1) * lanes), c[k + 1], s1);
    }
    return V::add(s0, s1);
  }
}

/// sum_i x[i] * value[i], two blocks per step. [n] . [n/32] -> f32
static MNEMO_INLINE float dot_q4_(const float* x, const block_q4_0* row, std::size_t n) noexcept {
  MNEMO_DASSERT(n % k_q4_0_block == 0);
  const std::size_t nb = n / k_q4_0_block;
  const std::size_t nb2 = nb - nb % 2;
  vf a0 = V::zero(), a1 = V::zero();
  std::size_t b = 0;
  if constexpr (C::q4_dot_by_values) {
    // one fma chain per vector of the block, for each of the two blocks in flight
    vf a[2][q4_vecs_];
    for (auto& r : a)
      for (vf& v : r) v = V::zero();
    for (; b < nb2; b += 2) {
      for (std::size_t h = 0; h < 2; ++h) {
        vf v[q4_vecs_];
        C::q4_values(row[b + h].qs, C::splat_scale(row[b + h].d), v);
        const float* xb = x + (b + h) * k_q4_0_block;
        for (std::size_t k = 0; k < q4_vecs_; ++k)
          a[h][k] = V::fma(V::load(xb + k * lanes), v[k], a[h][k]);
      }
    }
    if (b < nb) {
      vf v[q4_vecs_];
      C::q4_values(row[b].qs, C::splat_scale(row[b].d), v);
      for (std::size_t k = 0; k < q4_vecs_; ++k)
        a[0][k] = V::fma(V::load(x + b * k_q4_0_block + k * lanes), v[k], a[0][k]);
    }
    for (std::size_t k = 0; k < q4_vecs_; ++k) {
      a0 = V::add(a0, a[0][k]);
      a1 = V::add(a1, a[1][k]);
    }
  } else {
    for (; b < nb2; b += 2) {
      const float* xb = x + b * k_q4_0_block;
      a0 = V::fma(C::splat_scale(row[b].d), block_dot_q4_(xb, row[b]), a0);
      a1 = V::fma(C::splat_scale(row[b + 1].d), block_dot_q4_(xb + k_q4_0_block, row[b + 1]), a1);
    }
    if (b < nb)
      a0 = V::fma(C::splat_scale(row[b].d), block_dot_q4_(x + b * k_q4_0_block, row[b]), a0);
  }
  return V::reduce_add(V::add(a0, a1));
}

static float dot(const float* x, const block_q4_0* row, std::size_t n) noexcept {
  return dot_q4_(x, row, n);
}

/// y[i] += a * value[i] with one rounding, fma(a, d * (code - 8), y), as for f32 rows.
static MNEMO_INLINE void axpy_q4_(float a, const block_q4_0* MNEMO_RESTRICT row,
                                  float* MNEMO_RESTRICT y, std::size_t n) noexcept {
  MNEMO_DASSERT(n % k_q4_0_block == 0);
  const vf va = V::set1(a);
  for (std::size_t b = 0; b < n / k_q4_0_block; ++b) {
    vf v[q4_vecs_];
    C::q4_values(row[b].qs, C::splat_scale(row[b].d), v);
    float* yb = y + b * k_q4_0_block;
    for (std::size_t k = 0; k < q4_vecs_; ++k)
      V::store(yb + k * lanes, V::fma(va, v[k], V::load(yb + k * lanes)));
  }
}

static void axpy(float a, const block_q4_0* MNEMO_RESTRICT row, float* MNEMO_RESTRICT y,
                 std::size_t n) noexcept {
  axpy_q4_(a, row, y, n);
}
