// Body of model::detail::matmul_kernels<isa>: the product for a middle number of tokens
// (k_gemm_min_tokens .. k_lanes_max_tokens), the packed product's micro-kernel with the
// roles of W and X swapped. Included only by matmul_kernels.hpp after matmul_gemm.inl.
//
// The packed product transposes every weight panel it decodes, once per call: at 64
// tokens that pack was a fifth of the call (Zen 4, f16 [1024 -> 2816]). Here x is
// transposed instead, once per call for all weights (x^T[k][t], k_nr tokens per block,
// zero past the last token), and the weight rows are only decoded, k_mr rows at a
// time, into an L1 strip whose values gemm_tile_ broadcasts: C[k_mr rows, k_nr tokens]
// += W[k_mr, kc] . x^T[kc, k_nr]. Every output is the same fma chain over k as in the
// packed product (fma(w, x, acc) == fma(x, w, acc)), so both give the same floats.
#if !defined(MNEMO_MODEL_MATMUL_BODY_)
#error "mnemo/model/detail/*.inl are kernel bodies: include mnemo/model/matmul.hpp"
#endif

/// The most tokens that take this kernel: AVX-512 only, where it was measured against
/// the packed product (docs/products.md); 0 elsewhere.
static constexpr std::size_t k_lanes_max_tokens = L == 16 ? 2 * k_nr : 0;
/// Values per strip slice: k_mr rows of 512 f32 are 12 KiB, L1-resident.
static constexpr std::size_t k_lanes_kc = 512;
static_assert(k_lanes_kc % 32 == 0, "a slice must be whole q8_0 / q4_0 blocks");
/// Floats of scratch per thread: the strip, then C for each block of k_nr tokens.
static constexpr std::size_t lanes_scratch_floats =
    k_mr * k_lanes_kc + (k_lanes_max_tokens + k_nr - 1) / k_nr * k_mr * k_nr;

/// Floats of x^T for n_tok tokens of n values: whole blocks of k_nr tokens.
static constexpr std::size_t lanes_x_floats(std::size_t n_tok, std::size_t n) noexcept {
  return (n_tok + k_nr - 1) / k_nr * k_nr * n;
}

/// Columns [k0, k1) of x^T: xt[b][k][j] = x[b * k_nr + j][k], 0 past the last token.
/// Threads may pack disjoint column ranges of one xt at once.
static void pack_lanes_x(const float* x, std::size_t x_stride, std::size_t n_tok, std::size_t n,
                         std::size_t k0, std::size_t k1, float* xt) noexcept {
  for (std::size_t t0 = 0; t0 < n_tok; t0 += k_nr) {
    const std::size_t tokens = n_tok - t0 < k_nr ? n_tok - t0 : k_nr;
    float* block = xt + t0 * n;
    transpose_matrix(x + t0 * x_stride + k0, tokens, k1 - k0, x_stride, block + k0 * k_nr, k_nr);
    for (std::size_t k = k0; k < k1; ++k)
      for (std::size_t j = tokens; j < k_nr; ++j) block[k * k_nr + j] = 0.0f;
  }
}

/// C[rows, k_nr] (+)= the strip's rows (at most k_mr) . x^T[kc, k_nr].
static MNEMO_INLINE void lanes_tile_(std::size_t rows, std::size_t kc, const float* s,
                                     std::size_t s_stride, const float* xt, float* c,
                                     bool accumulate) noexcept {
  switch (rows) {
    case 1: gemm_tile_<1>(kc, s, s_stride, xt, c, k_nr, accumulate); break;
    case 2: gemm_tile_<2>(kc, s, s_stride, xt, c, k_nr, accumulate); break;
    case 3: gemm_tile_<3>(kc, s, s_stride, xt, c, k_nr, accumulate); break;
    case 4: gemm_tile_<4>(kc, s, s_stride, xt, c, k_nr, accumulate); break;
    case 5: gemm_tile_<5>(kc, s, s_stride, xt, c, k_nr, accumulate); break;
    default: gemm_tile_<k_mr>(kc, s, s_stride, xt, c, k_nr, accumulate); break;
  }
}

/// Asks for the strip slice after the one at (r0, k) into the machine's prefetch target:
/// the same rows from k, or the next strip's first slice. Without it the decode of f16
/// [1024 -> 2816] waited on its loads for a fifth of the call; with it (Zen 4) the call
/// took 3-5% less time (L1, one thread), 5-6% less again with L2 (two threads). f32
/// rows, read in place, ran 9% slower with it.
template <class E>
static MNEMO_INLINE void prefetch_next_slice_(const unsigned char* rows, std::size_t row_bytes,
                                              std::size_t n_rows, std::size_t n, std::size_t r0,
                                              std::size_t k,
                                              simd::prefetch_target target) noexcept {
  constexpr std::size_t per_block = dtype::element_traits<E>::block_size;
  if (k >= n) {
    r0 += k_mr;
    k = 0;
  }
  if (r0 >= n_rows) return;
  const std::size_t mr = n_rows - r0 < k_mr ? n_rows - r0 : k_mr;
  const std::size_t bytes = dtype::row_bytes_of<E>(n - k < k_lanes_kc ? n - k : k_lanes_kc);
  const unsigned char* at = rows + r0 * row_bytes + k / per_block * sizeof(E);
  for (std::size_t r = 0; r < mr; ++r)
    for (std::size_t b = 0; b < bytes; b += 64) simd::prefetch(at + r * row_bytes + b, target);
}

/// y[t][r] = x[t] . W[r] for the n_rows rows of W at `rows` (row_bytes apart) and the
/// n_tok tokens packed in xt (pack_lanes_x over [0, n)): [n_tok, n] x [n_rows, n] E ->
/// [n_tok, n_rows] f32 (y_stride). scratch: lanes_scratch_floats floats, 64-byte
/// aligned. @pre n_tok <= k_lanes_max_tokens
template <class E>
static void gemm_lanes(const unsigned char* rows, std::size_t row_bytes, std::size_t n_rows,
                       std::size_t n, const float* xt, std::size_t n_tok, float* y,
                       std::size_t y_stride, float* scratch) noexcept {
  constexpr std::size_t per_block = dtype::element_traits<E>::block_size;
  constexpr bool in_place = std::is_same_v<E, float>;
  const std::size_t n_blocks = (n_tok + k_nr - 1) / k_nr;
  const simd::prefetch_target target = simd::current_prefetch_target();
  float* strip = scratch;                  // [k_mr, k_lanes_kc]
  float* c = scratch + k_mr * k_lanes_kc;  // [n_blocks][k_mr][k_nr]
  for (std::size_t r0 = 0; r0 < n_rows; r0 += k_mr) {
    const std::size_t mr = n_rows - r0 < k_mr ? n_rows - r0 : k_mr;
    const unsigned char* sw = rows + r0 * row_bytes;
    for (std::size_t k0 = 0; k0 < n; k0 += k_lanes_kc) {
      const std::size_t kc = n - k0 < k_lanes_kc ? n - k0 : k_lanes_kc;
      const float* s = strip;
      std::size_t s_stride = k_lanes_kc;
      if constexpr (in_place) {
        s = reinterpret_cast<const float*>(sw) + k0;
        s_stride = row_bytes / sizeof(float);
      } else {
        for (std::size_t r = 0; r < mr; ++r)
          RK::decode(reinterpret_cast<const E*>(sw + r * row_bytes) + k0 / per_block,
                     strip + r * k_lanes_kc, kc);
      }
      if constexpr (!in_place)
        prefetch_next_slice_<E>(rows, row_bytes, n_rows, n, r0, k0 + kc, target);
      for (std::size_t b = 0; b < n_blocks; ++b)
        lanes_tile_(mr, kc, s, s_stride, xt + b * k_nr * n + k0 * k_nr, c + b * k_mr * k_nr,
                    k0 != 0);
    }
    for (std::size_t t = 0; t < n_tok; ++t) {
      const float* ct = c + t / k_nr * k_mr * k_nr + t % k_nr;
      float* yt = y + t * y_stride + r0;
      for (std::size_t r = 0; r < mr; ++r) yt[r] = ct[r * k_nr];
    }
  }
}
