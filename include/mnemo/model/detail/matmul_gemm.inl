// Body of model::detail::matmul_kernels<isa>: the product for many tokens (prefill),
// Y[M, N] = X[M, K] . W[N, K]^T, compute-bound. Included only by matmul_kernels.hpp
// after matmul_gemv.inl.
//
// One work item is a panel of k_nr outputs (rows of W), optionally for a block of
// tokens. For each k_kc slice of the input width the panel's rows are decoded to f32
// and transposed into P[kc, k_nr] (the layout the micro-kernel streams, kc * k_nr * 4
// bytes = 32 KiB, L1-resident), then every k_mr tokens run the register tile
// Y[k_mr, k_nr] += X[k_mr, kc] . P[kc, k_nr]: each k loads k_nr / L vectors of P and
// broadcasts k_mr values of X, k_mr * k_nr / L independent fma chains (AVX-512: 6 x 4
// = 24, enough to cover 2 pipes x 4 cycles of latency). X is read in place.
#if !defined(MNEMO_MODEL_MATMUL_BODY_)
#error "mnemo/model/detail/*.inl are kernel bodies: include mnemo/model/matmul.hpp"
#endif

static constexpr std::size_t k_nv = L == 1 ? 8 : (L == 8 ? 2 : 4);  // vectors of outputs
static constexpr std::size_t k_nr = k_nv * L;                       // outputs per panel
static constexpr std::size_t k_mr = L == 1 ? 4 : 6;                 // tokens per tile
/// k slice: P fills 32 KiB (AVX-512: 128, AVX2 / NEON: 512); a multiple of 32.
static constexpr std::size_t k_kc = 32768 / (k_nr * sizeof(float));
static_assert(k_kc % k_step == 0);

/// Floats of scratch one thread needs for gemm_item: P, then the decoded rows.
static constexpr std::size_t gemm_scratch_floats = 2 * k_kc * k_nr;

/// P[k][j] = float(W[o0 + j][k0 + k]) for j < nr, 0 for nr <= j < k_nr; k < kc.
/// rows: nr rows of E, row_bytes apart. tmp: [k_nr, kc] scratch.
template <class E>
static void pack_panel_(const unsigned char* rows, std::size_t row_bytes, std::size_t nr,
                        std::size_t k0, std::size_t kc, float* MNEMO_RESTRICT tmp,
                        float* MNEMO_RESTRICT p) noexcept {
  constexpr std::size_t per_block = dtype::element_traits<E>::block_size;
  for (std::size_t j = 0; j < nr; ++j) {
    const E* row = reinterpret_cast<const E*>(rows + j * row_bytes) + k0 / per_block;
    RK::decode(row, tmp + j * kc, kc);
  }
  for (std::size_t j = nr; j < k_nr; ++j)
    for (std::size_t k = 0; k < kc; ++k) tmp[j * kc + k] = 0.0f;
  transpose_matrix(tmp, k_nr, kc, kc, p, k_nr);
}

/// C[MR, k_nr] (ldc floats apart) = (accumulate ? C : 0) + X[MR, kc] . P[kc, k_nr].
template <std::size_t MR>
static MNEMO_INLINE void gemm_tile_(std::size_t kc, const float* x, std::size_t x_stride,
                                    const float* MNEMO_RESTRICT p, float* c, std::size_t ldc,
                                    bool accumulate) noexcept {
  vf acc[MR][k_nv];
#pragma GCC unroll 8
  for (std::size_t r = 0; r < MR; ++r)
#pragma GCC unroll 8
    for (std::size_t v = 0; v < k_nv; ++v)
      acc[r][v] = accumulate ? V::load(c + r * ldc + v * L) : V::zero();
  const float* xr[MR];
#pragma GCC unroll 8
  for (std::size_t r = 0; r < MR; ++r) xr[r] = x + r * x_stride;
  for (std::size_t k = 0; k < kc; ++k) {
    vf b[k_nv];
#pragma GCC unroll 8
    for (std::size_t v = 0; v < k_nv; ++v) b[v] = V::load(p + k * k_nr + v * L);
#pragma GCC unroll 8
    for (std::size_t r = 0; r < MR; ++r) {
      const vf a = V::set1(xr[r][k]);
#pragma GCC unroll 8
      for (std::size_t v = 0; v < k_nv; ++v) acc[r][v] = V::fma(a, b[v], acc[r][v]);
    }
  }
#pragma GCC unroll 8
  for (std::size_t r = 0; r < MR; ++r)
#pragma GCC unroll 8
    for (std::size_t v = 0; v < k_nv; ++v) V::store(c + r * ldc + v * L, acc[r][v]);
}

/// The tile for MR tokens, through a local copy when the panel has fewer than k_nr
/// outputs (y has no room for the padding columns).
template <std::size_t MR>
static void gemm_rows_(std::size_t kc, const float* x, std::size_t x_stride, const float* p,
                       float* y, std::size_t y_stride, std::size_t nr, bool accumulate) noexcept {
  if (nr == k_nr) {
    gemm_tile_<MR>(kc, x, x_stride, p, y, y_stride, accumulate);
    return;
  }
  alignas(64) float c[MR * k_nr];
  for (std::size_t r = 0; r < MR; ++r)
    for (std::size_t j = 0; j < k_nr; ++j)
      c[r * k_nr + j] = accumulate && j < nr ? y[r * y_stride + j] : 0.0f;
  gemm_tile_<MR>(kc, x, x_stride, p, c, k_nr, true);
  for (std::size_t r = 0; r < MR; ++r)
    for (std::size_t j = 0; j < nr; ++j) y[r * y_stride + j] = c[r * k_nr + j];
}

/// Y[t][j] = X[t] . W[j] for the nr <= k_nr rows of W at `rows` and n_tok tokens.
/// [n_tok, n] f32 (x_stride) x [nr, n] E -> [n_tok, nr] f32 (y_stride).
/// scratch: gemm_scratch_floats floats, 64-byte aligned.
template <class E>
static void gemm_panel(const unsigned char* rows, std::size_t row_bytes, std::size_t nr,
                       std::size_t n, const float* x, std::size_t x_stride, std::size_t n_tok,
                       float* y, std::size_t y_stride, float* scratch) noexcept {
  float* p = scratch;
  float* tmp = scratch + k_kc * k_nr;
  for (std::size_t k0 = 0; k0 < n; k0 += k_kc) {
    const std::size_t kc = n - k0 < k_kc ? n - k0 : k_kc;
    const bool acc = k0 != 0;
    pack_panel_<E>(rows, row_bytes, nr, k0, kc, tmp, p);
    std::size_t t = 0;
    for (; t + k_mr <= n_tok; t += k_mr)
      gemm_rows_<k_mr>(kc, x + t * x_stride + k0, x_stride, p, y + t * y_stride, y_stride, nr, acc);
    const float* xt = x + t * x_stride + k0;
    float* yt = y + t * y_stride;
    switch (n_tok - t) {
      case 0: break;
      case 1: gemm_rows_<1>(kc, xt, x_stride, p, yt, y_stride, nr, acc); break;
      case 2: gemm_rows_<2>(kc, xt, x_stride, p, yt, y_stride, nr, acc); break;
      case 3: gemm_rows_<3>(kc, xt, x_stride, p, yt, y_stride, nr, acc); break;
      case 4: gemm_rows_<4>(kc, xt, x_stride, p, yt, y_stride, nr, acc); break;
      default: gemm_rows_<5>(kc, xt, x_stride, p, yt, y_stride, nr, acc); break;
    }
  }
}
