// Tile arithmetic of attention::detail::block_kernels<Isa>: register-tiled products,
// the online softmax step and logit scaling. Included once per ISA inside that ISA's
// target region (docs/simd.md, "the kernel pattern"); needs `isa` and
// `V = simd::ops<isa>` in scope.

using vf = typename V::vf;
static constexpr std::size_t L = V::lanes;

/// Vector registers of the ISA (16 ymm on AVX2; 32 zmm on AVX-512, 32 on NEON), which
/// size the P.V tiles (pv_tile_vectors).
static constexpr std::size_t k_vector_registers = std::is_same_v<isa, simd::avx2> ? 16 : 32;

/// Register tile of C[MR, NV*L] += A[MR, K] . B[K, NV*L] (row-major, leading dims in
/// floats). B rows are loaded once per k and reused by the MR rows of A.
template <std::size_t MR, std::size_t NV>
static MNEMO_INLINE void gemm_tile(std::size_t K, const float* A, std::size_t lda, const float* B,
                                   std::size_t ldb, float* C, std::size_t ldc) noexcept {
  vf acc[MR][NV];
#pragma GCC unroll 8
  for (std::size_t r = 0; r < MR; ++r)
#pragma GCC unroll 8
    for (std::size_t v = 0; v < NV; ++v) acc[r][v] = V::load(C + r * ldc + v * L);
  for (std::size_t k = 0; k < K; ++k) {
    vf b[NV];
#pragma GCC unroll 8
    for (std::size_t v = 0; v < NV; ++v) b[v] = V::load(B + k * ldb + v * L);
#pragma GCC unroll 8
    for (std::size_t r = 0; r < MR; ++r) {
      const vf a = V::set1(A[r * lda + k]);
#pragma GCC unroll 8
      for (std::size_t v = 0; v < NV; ++v) acc[r][v] = V::fma(a, b[v], acc[r][v]);
    }
  }
#pragma GCC unroll 8
  for (std::size_t r = 0; r < MR; ++r)
#pragma GCC unroll 8
    for (std::size_t v = 0; v < NV; ++v) V::store(C + r * ldc + v * L, acc[r][v]);
}

/// One column strip of width < NV*L (and possibly not a multiple of L), row by row.
static void gemm_strip(std::size_t M, std::size_t N, std::size_t K, const float* A, std::size_t lda,
                       const float* B, std::size_t ldb, float* C, std::size_t ldc) noexcept {
  for (std::size_t r = 0; r < M; ++r) {
    for (std::size_t n0 = 0; n0 < N; n0 += L) {
      const std::size_t w = N - n0 < L ? N - n0 : L;
      vf acc = w == L ? V::load(C + r * ldc + n0) : V::load_partial(C + r * ldc + n0, w);
      for (std::size_t k = 0; k < K; ++k) {
        const vf b = w == L ? V::load(B + k * ldb + n0) : V::load_partial(B + k * ldb + n0, w);
        acc = V::fma(V::set1(A[r * lda + k]), b, acc);
      }
      if (w == L)
        V::store(C + r * ldc + n0, acc);
      else
        V::store_partial(C + r * ldc + n0, acc, w);
    }
  }
}

static constexpr std::size_t gemm_mr = L >= 8 ? 6 : 4;
static constexpr std::size_t gemm_nv = 2;

template <std::size_t MR>
static MNEMO_INLINE void gemm_rows(std::size_t N, std::size_t K, const float* A, std::size_t lda,
                                   const float* B, std::size_t ldb, float* C,
                                   std::size_t ldc) noexcept {
  constexpr std::size_t NB = gemm_nv * L;
  std::size_t n0 = 0;
  for (; n0 + NB <= N; n0 += NB) gemm_tile<MR, gemm_nv>(K, A, lda, B + n0, ldb, C + n0, ldc);
  if (n0 < N) gemm_strip(MR, N - n0, K, A, lda, B + n0, ldb, C + n0, ldc);
}

/// C[M, N] += A[M, K] . B[K, N], all f32, row-major.
static void gemm_acc(std::size_t M, std::size_t N, std::size_t K, const float* A, std::size_t lda,
                     const float* B, std::size_t ldb, float* C, std::size_t ldc) noexcept {
  std::size_t r = 0;
  for (; r + gemm_mr <= M; r += gemm_mr)
    gemm_rows<gemm_mr>(N, K, A + r * lda, lda, B, ldb, C + r * ldc, ldc);
  switch (M - r) {
    case 0: break;
    case 1: gemm_rows<1>(N, K, A + r * lda, lda, B, ldb, C + r * ldc, ldc); break;
    case 2: gemm_rows<2>(N, K, A + r * lda, lda, B, ldb, C + r * ldc, ldc); break;
    case 3: gemm_rows<3>(N, K, A + r * lda, lda, B, ldb, C + r * ldc, ldc); break;
    case 4: gemm_rows<4>(N, K, A + r * lda, lda, B, ldb, C + r * ldc, ldc); break;
    default: gemm_rows<5>(N, K, A + r * lda, lda, B, ldb, C + r * ldc, ldc); break;
  }
}

/// A vector of L values of row `row` from element i on (i % L == 0): loaded in place
/// for f32, f16 and bf16, decoded in registers for q8_0 and q4_0 (the values
/// dtype's decode gives, bit for bit).
template <class RE>
static MNEMO_INLINE vf load_row(const RE* row, std::size_t i) noexcept {
  if constexpr (std::is_same_v<RE, float>) {
    return V::load(row + i);
  } else if constexpr (std::is_same_v<RE, dtype::f16>) {
    return V::load_f16(&row[i].bits);
  } else if constexpr (std::is_same_v<RE, dtype::bf16>) {
    return V::load_bf16(&row[i].bits);
  } else {
    static_assert(std::is_same_v<RE, dtype::block_q8_0> || std::is_same_v<RE, dtype::block_q4_0>,
                  "load_row: a K/V element type");
    return rows::load_lanes(row, i);
  }
}

/// out[0..3] = the horizontal sums of a, b, c, d: a transpose-and-add tree, about
/// 10 instructions for four sums instead of four separate reductions (decode QK
/// spends most of its non-FMA time here; AVX-512's in bf16_dots.hpp).
template <class T>  // a template, so that the other ISAs' branches are discarded
static MNEMO_INLINE void reduce_add4(T a, T b, T c, T d, float* out) noexcept {
#if defined(MNEMO_ARCH_X86_64)
  if constexpr (std::is_same_v<isa, simd::avx512>) {
    reduce_add4_avx512(a, b, c, d, out);
    return;
  } else if constexpr (std::is_same_v<isa, simd::avx2>) {
    const auto t0 = _mm256_add_ps(_mm256_unpacklo_ps(a, b), _mm256_unpackhi_ps(a, b));
    const auto t1 = _mm256_add_ps(_mm256_unpacklo_ps(c, d), _mm256_unpackhi_ps(c, d));
    const auto u = _mm256_add_ps(_mm256_shuffle_ps(t0, t1, _MM_SHUFFLE(1, 0, 1, 0)),
                                 _mm256_shuffle_ps(t0, t1, _MM_SHUFFLE(3, 2, 3, 2)));
    _mm_storeu_ps(out, _mm_add_ps(_mm256_castps256_ps128(u), _mm256_extractf128_ps(u, 1)));
    return;
  }
#endif
  out[0] = V::reduce_add(a);
  out[1] = V::reduce_add(b);
  out[2] = V::reduce_add(c);
  out[3] = V::reduce_add(d);
}

/// Makes the compiler hold x in a register: without it GCC folded one load of the
/// same query vector into each of its C FMAs (C loads instead of one; load-bound).
static MNEMO_INLINE void keep_in_register([[maybe_unused]] vf& x) noexcept {
#if defined(MNEMO_ARCH_X86_64)
  asm("" : "+v"(x));
#endif
}

/// out[h * ldo + c] = q_h . k_c for G query rows (ldq floats apart) and C key rows:
/// each K vector is loaded once for the G rows, and the G x C independent chains
/// hide the FMA latency. @pre d % L == 0
template <class RE, std::size_t G, std::size_t C>
static MNEMO_INLINE void dot_tile(const float* q, std::size_t ldq, const RE* const* k,
                                  std::size_t d, float* out, std::size_t ldo) noexcept {
  vf acc[G][C];
#pragma GCC unroll 8
  for (std::size_t h = 0; h < G; ++h)
#pragma GCC unroll 4
    for (std::size_t c = 0; c < C; ++c) acc[h][c] = V::zero();
  for (std::size_t i = 0; i < d; i += L) {
    vf kv[C];
#pragma GCC unroll 4
    for (std::size_t c = 0; c < C; ++c) kv[c] = load_row(k[c], i);
#pragma GCC unroll 8
    for (std::size_t h = 0; h < G; ++h) {
      vf qv = V::load(q + h * ldq + i);
      keep_in_register(qv);
#pragma GCC unroll 4
      for (std::size_t c = 0; c < C; ++c) acc[h][c] = V::fma(qv, kv[c], acc[h][c]);
    }
  }
  if constexpr (k_vector_registers == 16 && C < 4 && G % 4 == 0) {
    // The narrow tiles of 16-register ISAs (head_logits): each cell's sums four rows at
    // a time, as cheap per cell as the 4 x 4 tile's (a full reduction per sum cost twice).
    float sums[4];
#pragma GCC unroll 4
    for (std::size_t c = 0; c < C; ++c)
#pragma GCC unroll 2
      for (std::size_t h = 0; h < G; h += 4) {
        reduce_add4<vf>(acc[h][c], acc[h + 1][c], acc[h + 2][c], acc[h + 3][c], sums);
#pragma GCC unroll 4
        for (std::size_t x = 0; x < 4; ++x) out[(h + x) * ldo + c] = sums[x];
      }
    return;
  }
#pragma GCC unroll 8
  for (std::size_t h = 0; h < G; ++h) {
    if constexpr (C == 4) {
      reduce_add4<vf>(acc[h][0], acc[h][1], acc[h][2], acc[h][3], out + h * ldo);
    } else {
#pragma GCC unroll 4
      for (std::size_t c = 0; c < C; ++c) out[h * ldo + c] = V::reduce_add(acc[h][c]);
    }
  }
}

template <class RE, std::size_t G>
static MNEMO_INLINE void dot_tile_c(std::size_t C, const float* q, std::size_t ldq,
                                    const RE* const* k, std::size_t d, float* out,
                                    std::size_t ldo) noexcept {
  switch (C) {
    case 1: dot_tile<RE, G, 1>(q, ldq, k, d, out, ldo); break;
    case 2: dot_tile<RE, G, 2>(q, ldq, k, d, out, ldo); break;
    case 3: dot_tile<RE, G, 3>(q, ldq, k, d, out, ldo); break;
    default: dot_tile<RE, G, 4>(q, ldq, k, d, out, ldo); break;
  }
}

/// out[h * ldo + c] = q_h . k_c for G <= 4 rows and C <= 4 key rows. @pre d % L == 0
template <class RE>
static void dot_tile_any(std::size_t G, std::size_t C, const float* q, std::size_t ldq,
                         const RE* const* k, std::size_t d, float* out,
                         std::size_t ldo = 4) noexcept {
  switch (G) {
    case 1: dot_tile_c<RE, 1>(C, q, ldq, k, d, out, ldo); break;
    case 2: dot_tile_c<RE, 2>(C, q, ldq, k, d, out, ldo); break;
    case 3: dot_tile_c<RE, 3>(C, q, ldq, k, d, out, ldo); break;
    default: dot_tile_c<RE, 4>(C, q, ldq, k, d, out, ldo); break;
  }
}

/// Software prefetch spread over a loop: each step() asks for the next `per_step`
/// cache lines of [p, end) into the machine's simd::prefetch_target (on x86, L1 was
/// 5-15% faster than L2 from DRAM on the Zen 5 reference; L2 ~0.8 against ~0.6 of the
/// read bandwidth on a Zen 4 VM).
struct prefetch_cursor {
  const char* p = nullptr;
  const char* end = nullptr;
  std::size_t per_step = 0;
  simd::prefetch_target target = simd::current_prefetch_target();
  MNEMO_INLINE void step() noexcept {
    for (std::size_t i = 0; i < per_step && p < end; ++i, p += 64) simd::prefetch(p, target);
  }
};

/// o[r, n0 : n0 + NV*L] += sum over cells j of p[r, j] v_j for RR rows, the
/// accumulators in registers across all the cells; one pf step per cell.
/// @pre dv % L == 0
template <class RE, std::size_t RR, std::size_t NV>
static MNEMO_INLINE void pv_tile(const float* p, std::size_t ldp, const std::uint32_t* js,
                                 std::size_t n_js, const RE* const* v, std::size_t n0, float* o,
                                 std::size_t ldo, prefetch_cursor& pf) noexcept {
  vf acc[RR][NV];
#pragma GCC unroll 8
  for (std::size_t r = 0; r < RR; ++r)
#pragma GCC unroll 8
    for (std::size_t x = 0; x < NV; ++x) acc[r][x] = V::load(o + r * ldo + n0 + x * L);
  for (std::size_t jj = 0; jj < n_js; ++jj) {
    const std::uint32_t j = js[jj];
    pf.step();
    vf vv[NV];
#pragma GCC unroll 8
    for (std::size_t x = 0; x < NV; ++x) vv[x] = load_row(v[jj], n0 + x * L);
#pragma GCC unroll 8
    for (std::size_t r = 0; r < RR; ++r) {
      const vf pr = V::set1(p[r * ldp + j]);
#pragma GCC unroll 8
      for (std::size_t x = 0; x < NV; ++x) acc[r][x] = V::fma(pr, vv[x], acc[r][x]);
    }
  }
#pragma GCC unroll 8
  for (std::size_t r = 0; r < RR; ++r)
#pragma GCC unroll 8
    for (std::size_t x = 0; x < NV; ++x) V::store(o + r * ldo + n0 + x * L, acc[r][x]);
}

/// Output vectors of a P.V tile of RR rows: RR x NV accumulators, the NV vectors of
/// a V row (one at a time for one row) and a probability fit the registers.
static constexpr std::size_t pv_tile_vectors(std::size_t RR) noexcept {
  std::size_t NV = RR == 1 ? 8 : 4;
  while (NV > 1 && RR * NV + (RR == 1 ? 1 : NV) + 1 > k_vector_registers) NV /= 2;
  return NV;
}

/// o[R, dv] += P[R, cells js] . V[js, dv] for few rows, V rows read in place.
/// Not inlined: inlined into the decode item, GCC spilled V vectors and row pointers
/// to the stack (15-20% of the in-cache decode time, measured). @pre dv % L == 0
template <class RE, std::size_t RR>
MNEMO_NOINLINE static void pv_rows(const float* p, std::size_t ldp, const std::uint32_t* js,
                                   std::size_t n_js, const RE* const* v, std::size_t dv, float* o,
                                   std::size_t ldo, prefetch_cursor& pf) noexcept {
  constexpr std::size_t NV = pv_tile_vectors(RR);
  prefetch_cursor cur = pf;  // a local copy stays in registers (pf may alias o)
  std::size_t n0 = 0;
  for (; n0 + NV * L <= dv; n0 += NV * L) pv_tile<RE, RR, NV>(p, ldp, js, n_js, v, n0, o, ldo, cur);
  for (; n0 < dv; n0 += L) pv_tile<RE, RR, 1>(p, ldp, js, n_js, v, n0, o, ldo, cur);
  pf = cur;
}

/// pv_rows over R rows in groups of 4; pf advances one step per (cell, row group,
/// column strip).
template <class RE>
static void pv_any(std::size_t R, const float* p, std::size_t ldp, const std::uint32_t* js,
                   std::size_t n_js, const RE* const* v, std::size_t dv, float* o, std::size_t ldo,
                   prefetch_cursor& pf) noexcept {
  std::size_t r = 0;
  for (; r + 4 <= R; r += 4)
    pv_rows<RE, 4>(p + r * ldp, ldp, js, n_js, v, dv, o + r * ldo, ldo, pf);
  switch (R - r) {
    case 0: break;
    case 1: pv_rows<RE, 1>(p + r * ldp, ldp, js, n_js, v, dv, o + r * ldo, ldo, pf); break;
    case 2: pv_rows<RE, 2>(p + r * ldp, ldp, js, n_js, v, dv, o + r * ldo, ldo, pf); break;
    default: pv_rows<RE, 3>(p + r * ldp, ldp, js, n_js, v, dv, o + r * ldo, ldo, pf); break;
  }
}

/// pv_any steps (calls of prefetch_cursor::step) for R rows and n_js cells.
static constexpr std::size_t pv_steps(std::size_t R, std::size_t n_js, std::size_t dv) noexcept {
  std::size_t strips = 0;
  for (std::size_t r = 0; r < R; r += 4) {
    const std::size_t rows = R - r < 4 ? R - r : 4, w = pv_tile_vectors(rows) * L;
    strips += dv / w + (dv % w) / L;
  }
  return strips * n_js;
}

/// Online-softmax step for one row of a block (Milakov & Gimelshein 2018):
/// s[0, n) holds masked logits (-inf where masked); on return s holds
/// p = e^(s - m_new); returns the factor e^(m_old - m_new) the caller must apply to
/// o and l, or 1 when the block adds nothing. l is updated.
static float softmax_block(float* s, std::size_t n, float& m, float& l) noexcept {
  vf mx = V::set1(-__builtin_inff());
  std::size_t j = 0;
  for (; j + L <= n; j += L) mx = V::max(mx, V::load(s + j));
  float bm = V::reduce_max(mx);
  for (; j < n; ++j) bm = s[j] > bm ? s[j] : bm;
  if (bm == -__builtin_inff()) {  // nothing kept in this row and block
    for (j = 0; j < n; ++j) s[j] = 0.0f;
    return 1.0f;
  }
  const float m_new = bm > m ? bm : m;
  const float alpha = m == -__builtin_inff() ? 0.0f : std::exp(m - m_new);
  const vf mn = V::set1(m_new);
  vf sum = V::zero();
  for (j = 0; j + L <= n; j += L) {
    const vf p = V::exp(V::sub(V::load(s + j), mn));
    V::store(s + j, p);
    sum = V::add(sum, p);
  }
  float tail = 0.0f;
  for (; j < n; ++j) {
    s[j] = std::exp(s[j] - m_new);
    tail += s[j];
  }
  l = l * alpha + V::reduce_add(sum) + tail;
  m = m_new;
  return alpha;
}

/// x[0, n) *= a.
static MNEMO_INLINE void scale_row(float* x, std::size_t n, float a) noexcept {
  const vf av = V::set1(a);
  std::size_t i = 0;
  for (; i + L <= n; i += L) V::store(x + i, V::mul(V::load(x + i), av));
  for (; i < n; ++i) x[i] *= a;
}

/// Gemma-2/3 logit soft-capping: x = cap * tanh(x / cap). Scalar tanh: only
/// soft-capped models pay it.
static void soft_cap(float* x, std::size_t n, float cap) noexcept {
  const float inv = 1.0f / cap;
  for (std::size_t i = 0; i < n; ++i) x[i] = cap * std::tanh(x[i] * inv);
}
