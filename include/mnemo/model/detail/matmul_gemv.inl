// Body of model::detail::matmul_kernels<isa>: the product for few tokens (decode and
// batched decode), y[t][o] = x[t] . W[o]. Included only by matmul_kernels.hpp, inside
// each ISA's specialisation and target region; `isa`, `V`, `vf`, `L`, `RK`
// (dtype::row_kernels<isa>) and `C` (its block codes) are the specialisation's.
//
// Decode is bound by the weight bytes, so each weight row is read from memory once per
// call. One token goes to dtype's dot_rows; for more, a tile of k_gemv_rows rows is decoded 32
// values (one quantised block) at a time into registers and multiplied with up to k_gemv_tokens
// rows of x at once; further token groups re-read the tile from L1 (a tile of 4 f16 rows of 1024 is
// 8 KiB).
#if !defined(MNEMO_MODEL_MATMUL_BODY_)
#error "mnemo/model/detail/*.inl are kernel bodies: include mnemo/model/matmul.hpp"
#endif

/// Values per decode step: one q8_0 / q4_0 block, whole vectors on every ISA.
static constexpr std::size_t k_step = 32;
static constexpr std::size_t k_step_vecs = k_step / L;
static_assert(k_step % L == 0, "matmul: a 32-value step must be whole vectors");
static constexpr std::size_t k_gemv_rows = 4;
static constexpr std::size_t k_gemv_tokens = 4;

template <class E>
static constexpr bool is_block_type_ =
    std::is_same_v<E, dtype::block_q8_0> || std::is_same_v<E, dtype::block_q4_0>;

/// Bytes of one 32-value step of a row of E.
template <class E>
static constexpr std::size_t step_bytes_ = is_block_type_<E> ? sizeof(E) : k_step * sizeof(E);

/// The decoded values s * 32 .. s * 32 + 31 of a row, exactly (d * code is an exact
/// product); `d` is the block's scale, already converted (unused for f32 / f16 / bf16).
/// [32] E -> k_step_vecs x [L] f32
///
/// The block types widen their codes with integer ops (no cross-lane permute, no
/// per-block broadcast + convert of the f16 scale: those share the shuffle pipes) and
/// multiply by the scale, broadcast from memory. The values are computed once per row
/// and step and reused by every token of the tile: 4 and 16 tokens on one core ran at
/// 85-93 GFLOP/s for q8_0 / q4_0 rows, against 64-68 for dtype's dot_rows per token.
template <class E>
static MNEMO_INLINE void step_values(const E* row, std::size_t s, float d,
                                     vf (&v)[k_step_vecs]) noexcept {
  if constexpr (std::is_same_v<E, dtype::block_q8_0>) {
    C::q8(row[s].qs, v);
    const vf vd = V::set1(d);
#pragma GCC unroll 32
    for (std::size_t j = 0; j < k_step_vecs; ++j) v[j] = V::mul(vd, v[j]);
  } else if constexpr (std::is_same_v<E, dtype::block_q4_0>) {
    C::q4(row[s].qs, v);
    const vf vd = V::set1(d);
#pragma GCC unroll 32
    for (std::size_t j = 0; j < k_step_vecs; ++j) v[j] = V::mul(vd, v[j]);
  } else {
    (void)d;
#pragma GCC unroll 32
    for (std::size_t j = 0; j < k_step_vecs; ++j) v[j] = RK::load_values(row + s * k_step + j * L);
  }
}

/// Accumulator chains per (row, token): with one token, 2 so that the step's vectors
/// do not form one fma chain (R x 2 chains cover the fma latency).
template <std::size_t T>
static constexpr std::size_t chains_ = T == 1 && k_step_vecs > 1 ? 2 : 1;

/// One 32-value step of the tile: acc[r][t][j % J] += x[t][s * 32 ..] . row r's values.
template <class E, std::size_t R, std::size_t T, std::size_t J>
static MNEMO_INLINE void dot_step_(const E* const (&rows)[R], std::size_t s, const float* d,
                                   std::size_t d_stride, const float* x, std::size_t x_stride,
                                   vf (&acc)[R][T][J]) noexcept {
  if constexpr (!is_block_type_<E>) {
    // One vector of k at a time: R weight vectors live, not R x k_step_vecs (the 4 x 4
    // f16 tile kept 16 widened vectors and spilled most of them on AVX2's 16 registers).
    // The same order of additions per accumulator as below.
    (void)d;
    (void)d_stride;
#pragma GCC unroll 32
    for (std::size_t j = 0; j < k_step_vecs; ++j) {
      vf wv[R];
#pragma GCC unroll 8
      for (std::size_t r = 0; r < R; ++r) wv[r] = RK::load_values(rows[r] + s * k_step + j * L);
#pragma GCC unroll 8
      for (std::size_t t = 0; t < T; ++t) {
        const vf xv = V::load(x + t * x_stride + s * k_step + j * L);
#pragma GCC unroll 8
        for (std::size_t r = 0; r < R; ++r) acc[r][t][j % J] = V::fma(xv, wv[r], acc[r][t][j % J]);
      }
    }
    return;
  }
  vf v[R][k_step_vecs];
#pragma GCC unroll 8
  for (std::size_t r = 0; r < R; ++r) step_values(rows[r], s, d[r * d_stride], v[r]);
#pragma GCC unroll 32
  for (std::size_t j = 0; j < k_step_vecs; ++j) {
#pragma GCC unroll 8
    for (std::size_t t = 0; t < T; ++t) {
      const vf xv = V::load(x + t * x_stride + s * k_step + j * L);
#pragma GCC unroll 8
      for (std::size_t r = 0; r < R; ++r) acc[r][t][j % J] = V::fma(xv, v[r][j], acc[r][t][j % J]);
    }
  }
}

/// out[0..3] = the horizontal sums of a, b, c, d by a transpose-and-add tree (the
/// 4-row tiles reduce 4 x T accumulators per call; separate reductions were ~15% of
/// a 4 x 4 tile over 1024 values). A template so that other ISAs' branches drop out.
template <class T>
static MNEMO_INLINE void sum4_(T a, T b, T c, T d, float* out) noexcept {
#if defined(MNEMO_ARCH_X86_64)
  if constexpr (std::is_same_v<isa, simd::avx512>) {
    const __m512 ab = _mm512_add_ps(_mm512_unpacklo_ps(a, b), _mm512_unpackhi_ps(a, b));
    const __m512 cd = _mm512_add_ps(_mm512_unpacklo_ps(c, d), _mm512_unpackhi_ps(c, d));
    // lanes (a b a b | c d c d ...) -> (a b c d) per 128-bit quarter
    const __m512 q = _mm512_add_ps(_mm512_shuffle_ps(ab, cd, _MM_SHUFFLE(1, 0, 1, 0)),
                                   _mm512_shuffle_ps(ab, cd, _MM_SHUFFLE(3, 2, 3, 2)));
    const __m256 h = _mm256_add_ps(_mm512_castps512_ps256(q), _mm512_extractf32x8_ps(q, 1));
    _mm_storeu_ps(out, _mm_add_ps(_mm256_castps256_ps128(h), _mm256_extractf128_ps(h, 1)));
    return;
  } else if constexpr (std::is_same_v<isa, simd::avx2>) {
    const __m256 ab = _mm256_add_ps(_mm256_unpacklo_ps(a, b), _mm256_unpackhi_ps(a, b));
    const __m256 cd = _mm256_add_ps(_mm256_unpacklo_ps(c, d), _mm256_unpackhi_ps(c, d));
    const __m256 q = _mm256_add_ps(_mm256_shuffle_ps(ab, cd, _MM_SHUFFLE(1, 0, 1, 0)),
                                   _mm256_shuffle_ps(ab, cd, _MM_SHUFFLE(3, 2, 3, 2)));
    _mm_storeu_ps(out, _mm_add_ps(_mm256_castps256_ps128(q), _mm256_extractf128_ps(q, 1)));
    return;
  }
#endif
  out[0] = V::reduce_add(a);
  out[1] = V::reduce_add(b);
  out[2] = V::reduce_add(c);
  out[3] = V::reduce_add(d);
}

/// Prefetches step s of the R rows that start at `ahead` (the next tile). The address is
/// formed as an integer: past the last row it is never dereferenced, and never faults.
template <class E, std::size_t R>
static MNEMO_INLINE void prefetch_step_(std::uintptr_t ahead, std::size_t row_bytes, std::size_t s,
                                        simd::prefetch_target t) noexcept {
#pragma GCC unroll 8
  for (std::size_t r = 0; r < R; ++r)
    simd::prefetch(reinterpret_cast<const void*>(ahead + r * row_bytes + s * step_bytes_<E>), t);
}

/// y[t * y_stride + r] = x[t] . row r for R rows (row_bytes apart) and T tokens.
/// [T, n] f32 x [R, n] E -> [T, R] f32 (strided). Prefetches the next tile's rows.
template <class E, std::size_t R, std::size_t T>
static MNEMO_INLINE void dot_tile_(const unsigned char* w, std::size_t row_bytes, std::size_t n,
                                   const float* x, std::size_t x_stride, float* y,
                                   std::size_t y_stride, bool prefetch) noexcept {
  constexpr std::size_t J = chains_<T>;
  vf acc[R][T][J];
#pragma GCC unroll 8
  for (std::size_t r = 0; r < R; ++r)
#pragma GCC unroll 8
    for (std::size_t t = 0; t < T; ++t)
#pragma GCC unroll 2
      for (std::size_t j = 0; j < J; ++j) acc[r][t][j] = V::zero();
  const E* rows[R];
#pragma GCC unroll 8
  for (std::size_t r = 0; r < R; ++r) rows[r] = reinterpret_cast<const E*>(w + r * row_bytes);
  const std::size_t n_steps = n / k_step;
  const std::uintptr_t ahead = reinterpret_cast<std::uintptr_t>(w) + R * row_bytes;
  const simd::prefetch_target target = simd::current_prefetch_target();
  if constexpr (is_block_type_<E>) {
    // The scales of up to k_chunk blocks per row, converted ahead (scalar F16C).
    constexpr std::size_t k_chunk = 64;
    float d[R][k_chunk];
    for (std::size_t s0 = 0; s0 < n_steps; s0 += k_chunk) {
      const std::size_t se = n_steps - s0 < k_chunk ? n_steps : s0 + k_chunk;
#pragma GCC unroll 8
      for (std::size_t r = 0; r < R; ++r)
        for (std::size_t s = s0; s < se; ++s) d[r][s - s0] = C::scale(rows[r][s].d);
      for (std::size_t s = s0; s < se; ++s) {
        if (prefetch) prefetch_step_<E, R>(ahead, row_bytes, s, target);
        dot_step_<E, R, T, J>(rows, s, &d[0][s - s0], k_chunk, x, x_stride, acc);
      }
    }
  } else {
    const float d[R] = {};
    for (std::size_t s = 0; s < n_steps; ++s) {
      if (prefetch) prefetch_step_<E, R>(ahead, row_bytes, s, target);
      dot_step_<E, R, T, J>(rows, s, d, 1, x, x_stride, acc);
    }
  }
  if constexpr (!is_block_type_<E>) {  // f32 / f16 / bf16 rows: n % 32 values left
    for (std::size_t i = n_steps * k_step; i < n; i += L) {
      const std::size_t m = n - i < L ? n - i : L;
#pragma GCC unroll 8
      for (std::size_t r = 0; r < R; ++r) {
        const vf wv =
            m == L ? RK::load_values(rows[r] + i) : RK::load_values_partial(rows[r] + i, m);
#pragma GCC unroll 8
        for (std::size_t t = 0; t < T; ++t) {
          const float* xt = x + t * x_stride + i;
          acc[r][t][0] = V::fma(m == L ? V::load(xt) : V::load_partial(xt, m), wv, acc[r][t][0]);
        }
      }
    }
  }
  vf sums[R][T];
#pragma GCC unroll 8
  for (std::size_t r = 0; r < R; ++r)
#pragma GCC unroll 8
    for (std::size_t t = 0; t < T; ++t) {
      sums[r][t] = acc[r][t][0];
#pragma GCC unroll 2
      for (std::size_t j = 1; j < J; ++j) sums[r][t] = V::add(sums[r][t], acc[r][t][j]);
    }
#pragma GCC unroll 8
  for (std::size_t t = 0; t < T; ++t) {
    if constexpr (R == 4) {
      sum4_(sums[0][t], sums[1][t], sums[2][t], sums[3][t], y + t * y_stride);
    } else {
#pragma GCC unroll 8
      for (std::size_t r = 0; r < R; ++r) y[t * y_stride + r] = V::reduce_add(sums[r][t]);
    }
  }
}

/// All token groups of one tile of R rows.
template <class E, std::size_t R>
static MNEMO_INLINE void dot_tile_tokens_(const unsigned char* w, std::size_t row_bytes,
                                          std::size_t n, const float* x, std::size_t x_stride,
                                          std::size_t n_tok, float* y,
                                          std::size_t y_stride) noexcept {
  std::size_t t = 0;
  for (; t + k_gemv_tokens <= n_tok; t += k_gemv_tokens)
    dot_tile_<E, R, k_gemv_tokens>(w, row_bytes, n, x + t * x_stride, x_stride, y + t * y_stride,
                                   y_stride, t == 0);
  const bool pf = t == 0;
  switch (n_tok - t) {
    case 0: break;
    case 1:
      dot_tile_<E, R, 1>(w, row_bytes, n, x + t * x_stride, x_stride, y + t * y_stride, y_stride,
                         pf);
      break;
    case 2:
      dot_tile_<E, R, 2>(w, row_bytes, n, x + t * x_stride, x_stride, y + t * y_stride, y_stride,
                         pf);
      break;
    default:
      dot_tile_<E, R, 3>(w, row_bytes, n, x + t * x_stride, x_stride, y + t * y_stride, y_stride,
                         pf);
      break;
  }
}

/// How far ahead of the row being read the one-token product prefetches, in bytes of
/// the thread's contiguous range of rows: 8 KiB is 200-400 ns of reading at 20-40 GB/s
/// per core, beyond the DRAM latency. 4, 8, 16 and 32 KiB measured alike within the
/// noise of a loaded machine (one thread, min of 300 calls).
static constexpr std::size_t k_decode_prefetch_bytes = 8192;

/// And the first line of every 4 KiB page this far beyond that: the weights of a GGUF
/// mapping sit on 4 KiB pages, and the touch starts a page's walk before the prefetch
/// front needs it. Page walks cost here: with the weights on huge pages the q4_0 one-token
/// product read up to 0.1 more of the paired read bandwidth; the touch gave +0.03-0.1 to
/// the f32 / f16 / bf16 loop on most shapes and +0.01-0.03 to the 8-bit kernel (paired A/B).
static constexpr std::size_t k_page_touch_ahead = 4096;

/// Touches the pages from `page` (4 KiB aligned) up to `stop`; page moves on.
static MNEMO_INLINE void touch_pages(std::uintptr_t& page, std::uintptr_t stop,
                                     simd::prefetch_target t) noexcept {
  for (; page < stop; page += 4096) simd::prefetch(reinterpret_cast<const void*>(page), t);
}

/// The first page a range from `begin` touches: the one after begin's (whose walk the
/// first prefetches start anyway).
static MNEMO_INLINE std::uintptr_t first_touched_page(std::uintptr_t begin) noexcept {
  return (begin & ~std::uintptr_t{4095}) + 4096;
}

/// Prefetches the lines from `pf` up to `stop`; pf moves on.
static MNEMO_INLINE void prefetch_lines(std::uintptr_t& pf, std::uintptr_t stop,
                                        simd::prefetch_target t) noexcept {
  for (; pf < stop; pf += 64) simd::prefetch(reinterpret_cast<const void*>(pf), t);
}

/// The one-token stream: the prefetch front `ahead` bytes past the read position, never
/// past `end`, and the page touches beyond it.
struct decode_stream {
  std::uintptr_t pf, page, end;
  simd::prefetch_target target;

  decode_stream(std::uintptr_t begin, std::uintptr_t end_, simd::prefetch_target t) noexcept
      : pf(begin & ~std::uintptr_t{63}), page(first_touched_page(begin)), end(end_), target(t) {}

  /// Moves the front to `at` + k_decode_prefetch_bytes.
  MNEMO_INLINE void advance(std::uintptr_t at) noexcept {
    const std::uintptr_t want = at + k_decode_prefetch_bytes;
    prefetch_lines(pf, want < end ? want : end, target);
  }
  /// Starts the page walks up to k_page_touch_ahead past `at` + k_decode_prefetch_bytes
  /// (once per row, `at` its end).
  MNEMO_INLINE void touch(std::uintptr_t at) noexcept {
    const std::uintptr_t want = at + k_decode_prefetch_bytes + k_page_touch_ahead;
    touch_pages(page, want < end ? want : end, target);
  }
};

/// dtype's dot_one_ step hook: moves the stream's prefetch front on with the reads.
struct front_follows_ {
  decode_stream& s;
  MNEMO_INLINE void operator()(const void* at) const noexcept {
    s.advance(reinterpret_cast<std::uintptr_t>(at));
  }
};

/// y[r] = x . row r for n_rows rows (row_bytes apart), one token: [n] f32 x [n_rows, n] E
/// -> [n_rows] f32. The rows are one contiguous stream per thread; it is prefetched a
/// fixed distance ahead (into the current simd::prefetch_target), never past the range
/// (the other thread's rows). Each row is dtype's dot (per-block scale applied once for
/// q8_0 / q4_0: measured faster than the tile kernel for one token, L2-resident
/// [1024 -> 256], 1 thread: q8_0 35 vs 25 GB/s, q4_0 19 vs 13 GB/s, and equal for the
/// others).
template <class E>
static void gemv1_(const unsigned char* w, std::size_t row_bytes, std::size_t n_rows, std::size_t n,
                   const float* x, float* y) noexcept {
  const std::uintptr_t begin = reinterpret_cast<std::uintptr_t>(w);
  decode_stream s(begin, begin + n_rows * row_bytes, simd::current_prefetch_target());
  for (std::size_t r = 0; r < n_rows; ++r) {
    const unsigned char* p = w + r * row_bytes;
    const E* row = reinterpret_cast<const E*>(p);
    s.touch(reinterpret_cast<std::uintptr_t>(p) + row_bytes);
    if constexpr (is_block_type_<E>) {  // the row's lines ahead at once, then dtype's dot
      s.advance(reinterpret_cast<std::uintptr_t>(p) + row_bytes);
      if constexpr (std::is_same_v<E, dtype::block_q8_0>)
        y[r] = RK::dot_q8_(x, row, n);
      else
        y[r] = RK::dot_q4_(x, row, n);
    } else {  // the front moved on every 4 vectors: a whole row's lines at once were a
              // burst (rows of 2816 f32 values are 176 lines)
      y[r] = RK::dot_one_(x, row, n, front_follows_{s});
    }
  }
}

/// Vector registers of the ISA: AVX2 16, AVX-512 and NEON 32 (scalar: as many as it likes).
static constexpr std::size_t k_vector_registers = L == 8 ? 16 : 32;

/// Rows of the f32 / f16 / bf16 tile for T tokens: 4, or 2 or 1 where R x T
/// accumulators, the R weight vectors and an x vector would not fit the registers
/// (AVX2: 2 rows for 3-6 tokens, 1 for 7 and 8).
template <std::size_t T>
static constexpr std::size_t few_tokens_rows_ = 4 * T + 4 + 1 <= k_vector_registers   ? 4
                                                : 2 * T + 2 + 1 <= k_vector_registers ? 2
                                                                                      : 1;

/// The most tokens the f32 / f16 / bf16 rows take in one register tile (few_tokens_).
static constexpr std::size_t k_few_tokens_tile_max = 8;

/// The most tokens the f32 / f16 / bf16 rows take through few_tokens_ (two tiles of up
/// to k_few_tokens_tile_max tokens over the same rows); more go to the small-M kernel.
/// AVX-512 takes every count below the packed product's k_gemm_min_tokens as two or four
/// such calls, each reading the rows again: on Zen 4 (2 threads, f16 [1024 -> 2816]) 32
/// tokens reach 0.76-0.82 of the FMA peak that way and 40-47 tokens 0.76-0.81, against
/// 0.55-0.60 through the small-M strips (docs/products.md).
static constexpr std::size_t k_few_tokens_call_max = 2 * k_few_tokens_tile_max;
static constexpr std::size_t k_few_tokens_max =
    L == 16 ? 4 * k_few_tokens_call_max : k_few_tokens_call_max;

/// f32 / f16 / bf16 rows and TA + TB + TC tokens (TA >= TB >= TC, 0 for no tile): each weight
/// vector is loaded (and widened) once per tile and multiplied by every token of the
/// tile, where token groups of k_gemv_tokens widened it once per group (on Zen 1
/// vcvtph2ps costs about as much FMA pipe time as two FMAs, docs/performance.md). The
/// later tiles read the same rows from L1 right after the first (R rows of 2816 f16
/// values are 5.5-11 KiB), so the weights come from memory once and are widened as often
/// per token as with TA tokens alone; the small-M strips' 4 x 2-4 tiles reached less.
template <class E, std::size_t TA, std::size_t TB = 0, std::size_t TC = 0>
static void few_tokens_(const unsigned char* w, std::size_t row_bytes, std::size_t n_rows,
                        std::size_t n, const float* x, std::size_t x_stride, float* y,
                        std::size_t y_stride) noexcept {
  static_assert(TA >= TB && TB >= TC && TA <= k_few_tokens_tile_max);
  const auto tiles = [&]<std::size_t R>(std::size_t r) {
    const unsigned char* rows = w + r * row_bytes;
    dot_tile_<E, R, TA>(rows, row_bytes, n, x, x_stride, y + r, y_stride, true);
    if constexpr (TB > 0)
      dot_tile_<E, R, TB>(rows, row_bytes, n, x + TA * x_stride, x_stride, y + TA * y_stride + r,
                          y_stride, false);
    if constexpr (TC > 0)
      dot_tile_<E, R, TC>(rows, row_bytes, n, x + (TA + TB) * x_stride, x_stride,
                          y + (TA + TB) * y_stride + r, y_stride, false);
  };
  constexpr std::size_t R = few_tokens_rows_<TA>;
  std::size_t r = 0;
  for (; r + R <= n_rows; r += R) tiles.template operator()<R>(r);
  for (; r < n_rows; ++r) tiles.template operator()<1>(r);
}

/// y[t][r] = x[t] . row r for n_rows rows of n values (row_bytes apart) and n_tok
/// tokens: [n_tok, n] f32 (x_stride) x [n_rows, n] E -> [n_tok, n_rows] f32 (y_stride).
/// @pre n % 32 == 0 for q8_0 / q4_0
template <class E>
static void gemv(const unsigned char* w, std::size_t row_bytes, std::size_t n_rows, std::size_t n,
                 const float* x, std::size_t x_stride, std::size_t n_tok, float* y,
                 std::size_t y_stride) noexcept {
  if (n_tok == 1) {
    gemv1_<E>(w, row_bytes, n_rows, n, x, y);
    return;
  }
  if constexpr (!is_block_type_<E>) {
    if (n_tok > k_few_tokens_call_max && n_tok <= k_few_tokens_max) {
      const std::size_t half = (n_tok + 1) / 2;
      gemv<E>(w, row_bytes, n_rows, n, x, x_stride, half, y, y_stride);
      gemv<E>(w, row_bytes, n_rows, n, x + half * x_stride, x_stride, n_tok - half,
              y + half * y_stride, y_stride);
      return;
    }
    if constexpr (L == 16) {
      // AVX-512: tiles of at most 6 tokens, so that every tile has 4 rows (24
      // accumulators): per vector of k, 4 + T loads feed 4 T fmas, where 2 rows x 8 tokens
      // loaded 10 vectors for 16 fmas and the loads, not the FMAs, set the pace on Zen 4.
      switch (n_tok) {
        case 7: few_tokens_<E, 4, 3>(w, row_bytes, n_rows, n, x, x_stride, y, y_stride); return;
        case 8: few_tokens_<E, 4, 4>(w, row_bytes, n_rows, n, x, x_stride, y, y_stride); return;
        case 13: few_tokens_<E, 5, 4, 4>(w, row_bytes, n_rows, n, x, x_stride, y, y_stride); return;
        case 14: few_tokens_<E, 5, 5, 4>(w, row_bytes, n_rows, n, x, x_stride, y, y_stride); return;
        case 15: few_tokens_<E, 5, 5, 5>(w, row_bytes, n_rows, n, x, x_stride, y, y_stride); return;
        case 16: few_tokens_<E, 6, 5, 5>(w, row_bytes, n_rows, n, x, x_stride, y, y_stride); return;
        default: break;
      }
    }
    switch (n_tok) {  // one tile (up to 8 tokens) or two over the same rows
      case 2: few_tokens_<E, 2>(w, row_bytes, n_rows, n, x, x_stride, y, y_stride); return;
      case 3: few_tokens_<E, 3>(w, row_bytes, n_rows, n, x, x_stride, y, y_stride); return;
      case 4: few_tokens_<E, 4>(w, row_bytes, n_rows, n, x, x_stride, y, y_stride); return;
      case 5: few_tokens_<E, 5>(w, row_bytes, n_rows, n, x, x_stride, y, y_stride); return;
      case 6: few_tokens_<E, 6>(w, row_bytes, n_rows, n, x, x_stride, y, y_stride); return;
      case 7: few_tokens_<E, 7>(w, row_bytes, n_rows, n, x, x_stride, y, y_stride); return;
      case 8: few_tokens_<E, 8>(w, row_bytes, n_rows, n, x, x_stride, y, y_stride); return;
      case 9: few_tokens_<E, 5, 4>(w, row_bytes, n_rows, n, x, x_stride, y, y_stride); return;
      case 10: few_tokens_<E, 5, 5>(w, row_bytes, n_rows, n, x, x_stride, y, y_stride); return;
      case 11: few_tokens_<E, 6, 5>(w, row_bytes, n_rows, n, x, x_stride, y, y_stride); return;
      case 12: few_tokens_<E, 6, 6>(w, row_bytes, n_rows, n, x, x_stride, y, y_stride); return;
      case 13: few_tokens_<E, 7, 6>(w, row_bytes, n_rows, n, x, x_stride, y, y_stride); return;
      case 14: few_tokens_<E, 7, 7>(w, row_bytes, n_rows, n, x, x_stride, y, y_stride); return;
      case 15: few_tokens_<E, 8, 7>(w, row_bytes, n_rows, n, x, x_stride, y, y_stride); return;
      case 16: few_tokens_<E, 8, 8>(w, row_bytes, n_rows, n, x, x_stride, y, y_stride); return;
      default: break;
    }
  }
  std::size_t r = 0;
  for (; r + k_gemv_rows <= n_rows; r += k_gemv_rows)
    dot_tile_tokens_<E, k_gemv_rows>(w + r * row_bytes, row_bytes, n, x, x_stride, n_tok, y + r,
                                     y_stride);
  for (; r < n_rows; ++r)
    dot_tile_tokens_<E, 1>(w + r * row_bytes, row_bytes, n, x, x_stride, n_tok, y + r, y_stride);
}
