// Body of model::detail::matmul_kernels<isa>: the product for a few tokens (short
// prompts, several sequences decoding together), k_small_m_min_tokens ..
// k_small_m_max_tokens tokens.
// Included only by matmul_kernels.hpp after matmul_gemv.inl.
//
// Compute-bound from a few tokens on (32 tokens of f16 weights do 16 FLOPs per weight
// byte), so the weights must be decoded once per call, not once per group of tokens,
// and the register tile must fit the register file. A strip of k_small_m_rows weight
// rows is decoded to f32, k_small_m_kc values at a time, into an L1-resident buffer
// (f32 rows are read in place); then every k_small_m_tokens tokens run the tile
// acc[R][T] += W[R, kc] . X[T, kc]^T, accumulators in registers: per vector of k, T
// loads of x, R loads of the strip and R x T independent fma chains. The lanes'
// partial sums carry over the slices in the workspace and are reduced once per strip.
// Each output's order of additions is the streaming tile's (dot_tile_), so both give
// the same floats.
#if !defined(MNEMO_MODEL_MATMUL_BODY_)
#error "mnemo/model/detail/*.inl are kernel bodies: include mnemo/model/matmul.hpp"
#endif

/// Rows per strip: the streaming kernels' tile (thread ranges are whole 4-row tiles).
static constexpr std::size_t k_small_m_rows = 4;
/// Tokens per register tile: R x T accumulators + T x vectors + one weight vector must
/// fit the registers. AVX2 has 16: 4 x 3 (one thread, [1024 -> 2816], 32 tokens: 4 x 3
/// ran 1.2x the FMAs per second of 4 x 2 and 1.4x those of 4 x 4, which spills);
/// AVX-512 and NEON have 32: 4 x 4.
static constexpr std::size_t k_small_m_tokens = L == 8 ? 3 : (L == 1 ? 2 : 4);
/// The fewest tokens that take this kernel: below, decoding the strip to L1 costs more
/// than it saves, and the tile that decodes 32 values at a time into registers (gemv)
/// is faster (AVX2, f16 / q8_0 / f32 [1024 -> 2816], one thread: 2 tokens 1.15-1.8x,
/// 4 tokens 1.03-1.3x faster there; 6 tokens even for f16 / f32, slower for q8_0;
/// docs/products.md).
static constexpr std::size_t k_small_m_min_tokens = 6;
/// Values per slice: the strip's 4 x 512 f32 are 8 KiB, L1-resident with the x slices.
static constexpr std::size_t k_small_m_kc = 512;
/// The most tokens one call takes (the partial sums' room in the scratch).
static constexpr std::size_t k_small_m_max_tokens = 64;
/// Floats of scratch per thread: the strip, then the partial sums [tokens][rows][L].
static constexpr std::size_t small_m_scratch_floats =
    k_small_m_rows * k_small_m_kc + k_small_m_max_tokens * k_small_m_rows * L;

/// part[t][r] (+)= lanes of x[t][0..kc) * w[r][0..kc) for R rows (w_stride floats apart)
/// and T tokens; `first` starts from zero. The last partial vector (kc % L values) is
/// read with partial loads. part: [T][R][L] floats, L-aligned.
template <std::size_t R, std::size_t T>
static MNEMO_INLINE void small_m_tile_(const float* w, std::size_t w_stride, const float* x,
                                       std::size_t x_stride, std::size_t kc, float* part,
                                       bool first) noexcept {
  vf acc[R][T];
#pragma GCC unroll 8
  for (std::size_t r = 0; r < R; ++r)
#pragma GCC unroll 8
    for (std::size_t t = 0; t < T; ++t)
      acc[r][t] = first ? V::zero() : V::load(part + (t * R + r) * L);
  const std::size_t n_vec = kc - kc % L;
  std::size_t k = 0;
  for (; k < n_vec; k += L) {
    vf xv[T];
#pragma GCC unroll 8
    for (std::size_t t = 0; t < T; ++t) xv[t] = V::load(x + t * x_stride + k);
#pragma GCC unroll 8
    for (std::size_t r = 0; r < R; ++r) {
      const vf wv = V::load(w + r * w_stride + k);
#pragma GCC unroll 8
      for (std::size_t t = 0; t < T; ++t) acc[r][t] = V::fma(xv[t], wv, acc[r][t]);
    }
  }
  if (k < kc) {
    const std::size_t m = kc - k;
#pragma GCC unroll 8
    for (std::size_t r = 0; r < R; ++r) {
      const vf wv = V::load_partial(w + r * w_stride + k, m);
#pragma GCC unroll 8
      for (std::size_t t = 0; t < T; ++t)
        acc[r][t] = V::fma(V::load_partial(x + t * x_stride + k, m), wv, acc[r][t]);
    }
  }
#pragma GCC unroll 8
  for (std::size_t r = 0; r < R; ++r)
#pragma GCC unroll 8
    for (std::size_t t = 0; t < T; ++t) V::store(part + (t * R + r) * L, acc[r][t]);
}

/// One slice for all n_tok tokens: full tiles of T tokens, then the rest.
template <std::size_t T>
static MNEMO_INLINE void small_m_slice_(const float* w, std::size_t w_stride, const float* x,
                                        std::size_t x_stride, std::size_t n_tok, std::size_t kc,
                                        float* part, bool first) noexcept {
  constexpr std::size_t R = k_small_m_rows;
  static_assert(T >= 2 && T <= 4);
  std::size_t t = 0;
  for (; t + T <= n_tok; t += T)
    small_m_tile_<R, T>(w, w_stride, x + t * x_stride, x_stride, kc, part + t * R * L, first);
  const float* xt = x + t * x_stride;
  float* pt = part + t * R * L;
  switch (n_tok - t) {
    case 0: break;
    case 1: small_m_tile_<R, 1>(w, w_stride, xt, x_stride, kc, pt, first); break;
    case 2:
      if constexpr (T > 2) small_m_tile_<R, 2>(w, w_stride, xt, x_stride, kc, pt, first);
      break;
    default:
      if constexpr (T > 3) small_m_tile_<R, 3>(w, w_stride, xt, x_stride, kc, pt, first);
      break;
  }
}

/// y[t][r] = x[t] . row r for n_rows rows of n values (row_bytes apart) and n_tok tokens:
/// [n_tok, n] f32 (x_stride) x [n_rows, n] E -> [n_tok, n_rows] f32 (y_stride).
/// Prefetches each slice of the next strip while it decodes the current one, never past
/// n_rows (the next rows are another thread's). scratch: small_m_scratch_floats floats,
/// 64-byte aligned. @pre 1 <= n_tok <= k_small_m_max_tokens
template <class E, std::size_t T = k_small_m_tokens>
static void gemv_small_m(const unsigned char* w, std::size_t row_bytes, std::size_t n_rows,
                         std::size_t n, const float* x, std::size_t x_stride, std::size_t n_tok,
                         float* y, std::size_t y_stride, float* scratch) noexcept {
  constexpr std::size_t R = k_small_m_rows, kc_max = k_small_m_kc;
  constexpr std::size_t per_block = dtype::element_traits<E>::block_size;
  constexpr bool in_place = std::is_same_v<E, float>;
  static_assert(kc_max % 32 == 0, "a slice must be whole q8_0 / q4_0 blocks");
  float* strip = scratch;              // [R, kc_max]
  float* part = scratch + R * kc_max;  // [n_tok][R][L]
  const simd::prefetch_target target = simd::current_prefetch_target();
  const std::size_t slice_bytes = dtype::row_bytes_of<E>(kc_max);
  for (std::size_t r0 = 0; r0 < n_rows; r0 += R) {
    const std::size_t rows = n_rows - r0 < R ? n_rows - r0 : R;
    const unsigned char* sw = w + r0 * row_bytes;
    const bool next = r0 + 2 * R <= n_rows;  // a whole next strip in the range
    for (std::size_t k0 = 0; k0 < n; k0 += kc_max) {
      const std::size_t kc = n - k0 < kc_max ? n - k0 : kc_max;
      if (next) {
        const std::uintptr_t ahead =
            reinterpret_cast<std::uintptr_t>(sw) + R * row_bytes + k0 / per_block * sizeof(E);
        const std::size_t bytes = kc == kc_max ? slice_bytes : dtype::row_bytes_of<E>(kc);
        for (std::size_t r = 0; r < R; ++r)
          for (std::size_t b = 0; b < bytes; b += 64)
            simd::prefetch(reinterpret_cast<const void*>(ahead + r * row_bytes + b), target);
      }
      const float* sv = strip;
      std::size_t sv_stride = kc_max;
      if (in_place && rows == R) {
        sv = reinterpret_cast<const float*>(sw) + k0;
        sv_stride = row_bytes / sizeof(float);
      } else {
        for (std::size_t r = 0; r < rows; ++r)
          RK::decode(reinterpret_cast<const E*>(sw + r * row_bytes) + k0 / per_block,
                     strip + r * kc_max, kc);
        for (std::size_t r = rows; r < R; ++r)  // a short last strip: zero rows
          for (std::size_t k = 0; k < kc; ++k) strip[r * kc_max + k] = 0.0f;
      }
      small_m_slice_<T>(sv, sv_stride, x + k0, x_stride, n_tok, kc, part, k0 == 0);
    }
    for (std::size_t t = 0; t < n_tok; ++t) {
      const float* pt = part + t * R * L;
      float* yt = y + t * y_stride + r0;
      if (rows == R) {
        sum4_(V::load(pt), V::load(pt + L), V::load(pt + 2 * L), V::load(pt + 3 * L), yt);
      } else {
        for (std::size_t r = 0; r < rows; ++r) yt[r] = V::reduce_add(V::load(pt + r * L));
      }
    }
  }
}
