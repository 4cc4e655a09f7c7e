// Body of attention::detail::block_kernels<Isa>: the per-ISA inner loops of the
// attention kernels, included once per ISA inside that ISA's target region (see
// docs/simd.md, "the kernel pattern"). Requires in scope: `isa`, `V = simd::ops<isa>`,
// `rows = dtype::detail::row_kernels<isa>`.
//
// Everything here works on f32 tiles in per-thread scratch; element-type decoding is
// done by the dtype row kernels of the same ISA.

using vf = typename V::vf;
static constexpr std::size_t L = V::lanes;

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
static void gemm_strip(std::size_t M, std::size_t N, std::size_t K, const float* A,
                       std::size_t lda, const float* B, std::size_t ldb, float* C,
                       std::size_t ldc) noexcept {
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
static void gemm_acc(std::size_t M, std::size_t N, std::size_t K, const float* A,
                     std::size_t lda, const float* B, std::size_t ldb, float* C,
                     std::size_t ldc) noexcept {
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

/// out[h] = q[h] . k for the G query rows of one GQA group (q rows ldq floats apart):
/// k is loaded once for all of them. @pre d % L == 0 || L == 1
template <std::size_t G>
static MNEMO_INLINE void dot_group(const float* q, std::size_t ldq, const float* k, std::size_t d,
                                   float* out) noexcept {
  vf acc[G];
#pragma GCC unroll 8
  for (std::size_t h = 0; h < G; ++h) acc[h] = V::zero();
  std::size_t i = 0;
  for (; i + L <= d; i += L) {
    const vf kv = V::load(k + i);
#pragma GCC unroll 8
    for (std::size_t h = 0; h < G; ++h) acc[h] = V::fma(V::load(q + h * ldq + i), kv, acc[h]);
  }
  if (i < d) {
    const vf kv = V::load_partial(k + i, d - i);
#pragma GCC unroll 8
    for (std::size_t h = 0; h < G; ++h)
      acc[h] = V::fma(V::load_partial(q + h * ldq + i, d - i), kv, acc[h]);
  }
#pragma GCC unroll 8
  for (std::size_t h = 0; h < G; ++h) out[h] = V::reduce_add(acc[h]);
}

/// out[h] = q[h] . k for any number of rows, in groups of up to 8 (register budget).
static void dot_rows_f32(const float* q, std::size_t ldq, std::size_t n_rows, const float* k,
                         std::size_t d, float* out, std::size_t out_stride) noexcept {
  float tmp[8];
  for (std::size_t r0 = 0; r0 < n_rows; r0 += 8) {
    const std::size_t n = n_rows - r0 < 8 ? n_rows - r0 : 8;
    const float* qr = q + r0 * ldq;
    switch (n) {
      case 1: dot_group<1>(qr, ldq, k, d, tmp); break;
      case 2: dot_group<2>(qr, ldq, k, d, tmp); break;
      case 3: dot_group<3>(qr, ldq, k, d, tmp); break;
      case 4: dot_group<4>(qr, ldq, k, d, tmp); break;
      case 5: dot_group<5>(qr, ldq, k, d, tmp); break;
      case 6: dot_group<6>(qr, ldq, k, d, tmp); break;
      case 7: dot_group<7>(qr, ldq, k, d, tmp); break;
      default: dot_group<8>(qr, ldq, k, d, tmp); break;
    }
    for (std::size_t r = 0; r < n; ++r) out[(r0 + r) * out_stride] = tmp[r];
  }
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

/// logits: x = scale * x, then softcap * tanh(x / softcap) when softcap > 0
/// (Gemma-2/3 logit soft-capping). tanh stays scalar: only soft-capped models pay it.
static void scale_and_cap(float* x, std::size_t n, float scale, float softcap) noexcept {
  if (softcap <= 0.0f) {
    scale_row(x, n, scale);
    return;
  }
  const float inner = scale / softcap;
  for (std::size_t i = 0; i < n; ++i) x[i] = softcap * std::tanh(x[i] * inner);
}

/// Gathers the tile's query rows for KV head `hk` into w.q: row ti * g + hh holds
/// token order[first + ti], query head hk * g + hh.   [rows, d_k]
static void gather_queries(const detail::call& c, const detail::tile& t, std::size_t hk,
                           float* dst) noexcept {
  const std::size_t g = c.sh.group(), dk = c.sh.d_k;
  for (std::size_t ti = 0; ti < t.count; ++ti) {
    const std::size_t tok = c.order[t.first + ti];
    const float* src = c.q->q + (tok * c.sh.n_head + hk * g) * dk;
    for (std::size_t i = 0; i < g * dk; ++i) dst[ti * g * dk + i] = src[i];
  }
}

/// Fills w.keep for cells [j0, j0 + nb) of `seg` and returns whether any is kept;
/// cell_any[j] says whether some token of the tile keeps cell j.
static bool block_mask(const detail::call& c, const detail::tile& t, const kv_segment& seg,
                       std::size_t j0, std::size_t nb, const detail::scratch& w,
                       bool* cell_any) noexcept {
  for (std::size_t j = 0; j < nb; ++j) cell_any[j] = false;
  bool any = false;
  for (std::size_t ti = 0; ti < t.count; ++ti) {
    const std::size_t tok = c.order[t.first + ti];
    const pos_t pq = c.q->pos[tok];
    const seq_id sq = c.q->seq[tok];
    std::uint8_t* kr = w.keep + ti * detail::k_block_cells;
    for (std::size_t j = 0; j < nb; ++j) {
      const seq_set* own = seg.owners != nullptr ? &seg.owners[j0 + j] : nullptr;
      const bool k = keeps(c.p, pq, sq, seg.pos[j0 + j], own);
      kr[j] = k;
      cell_any[j] |= k;
      any |= k;
    }
  }
  return any;
}

/// w.s[r, j] = masked, scaled, soft-capped logits of the tile's rows against cells
/// [j0, j0 + nb) of `seg` (-inf where masked). Rows: w.q. @pre block_mask() ran.
template <class KE>
static void block_logits(const detail::call& c, const detail::tile& t, std::size_t hk,
                         const kv_segment& seg, std::size_t j0, std::size_t nb,
                         const detail::scratch& w, const bool* cell_any) noexcept {
  constexpr std::size_t Bc = detail::k_block_cells;
  const std::size_t g = c.sh.group(), dk = c.sh.d_k, R = t.count * g;
  const auto* kbase = static_cast<const std::byte*>(seg.k) + hk * c.k_head_bytes;
  auto k_row = [&](std::size_t j) { return reinterpret_cast<const KE*>(kbase + (j0 + j) * seg.k_stride); };

  if (R <= detail::k_dot_form_max_rows) {
    // Decode: one K row at a time, shared by the g heads of each token that keeps it.
    for (std::size_t r = 0; r < R; ++r)
      for (std::size_t j = 0; j < nb; ++j) w.s[r * Bc + j] = 0.0f;
    for (std::size_t j = 0; j < nb; ++j) {
      if (!cell_any[j]) continue;
      const float* kr;
      if constexpr (std::is_same_v<KE, float>) {
        kr = k_row(j);
      } else {
        rows::decode(k_row(j), w.kf, dk);
        kr = w.kf;
      }
      for (std::size_t ti = 0; ti < t.count; ++ti)
        if (w.keep[ti * Bc + j])
          dot_rows_f32(w.q + ti * g * dk, dk, g, kr, dk, w.s + ti * g * Bc + j, Bc);
    }
  } else {
    // Prefill: decode the block, transpose it to [d_k, nbp] and run the GEMM.
    const std::size_t nbp = (nb + L - 1) / L * L;
    for (std::size_t j = 0; j < nb; ++j) {
      float* dst = w.kf + j * dk;
      if (!cell_any[j]) {
        for (std::size_t i = 0; i < dk; ++i) dst[i] = 0.0f;
      } else {
        rows::decode(k_row(j), dst, dk);
      }
    }
    for (std::size_t i = 0; i < dk; ++i) {
      float* dst = w.kt + i * nbp;
      for (std::size_t j = 0; j < nb; ++j) dst[j] = w.kf[j * dk + i];
      for (std::size_t j = nb; j < nbp; ++j) dst[j] = 0.0f;
    }
    for (std::size_t r = 0; r < R; ++r)
      for (std::size_t j = 0; j < nbp; ++j) w.s[r * Bc + j] = 0.0f;
    gemm_acc(R, nbp, dk, w.q, dk, w.kt, nbp, w.s, Bc);
  }
  for (std::size_t ti = 0; ti < t.count; ++ti) {
    const std::uint8_t* kr = w.keep + ti * Bc;
    for (std::size_t hh = 0; hh < g; ++hh) {
      float* s = w.s + (ti * g + hh) * Bc;
      scale_and_cap(s, nb, c.p.scale, c.p.softcap);
      for (std::size_t j = 0; j < nb; ++j)
        if (!kr[j]) s[j] = -__builtin_inff();
    }
  }
}

/// Calls fn(seg, j0, nb) for every block of the chunk [it.cell_begin, it.cell_end),
/// blocks never crossing a segment.
template <class Fn>
static void for_each_block(const kv_view& view, std::size_t begin, std::size_t end, Fn&& fn) {
  std::size_t base = 0;
  for (const kv_segment& seg : view.segments) {
    const std::size_t lo = begin > base ? begin : base;
    const std::size_t hi = end < base + seg.n_cells ? end : base + seg.n_cells;
    for (std::size_t b = lo; b < hi; b += detail::k_block_cells) {
      const std::size_t nb = hi - b < detail::k_block_cells ? hi - b : detail::k_block_cells;
      fn(seg, b - base, nb, b);
    }
    base += seg.n_cells;
  }
}

/// Runs one work item: on return w.o, w.m, w.l hold the partial state {o, m, l} of
/// each of the tile's rows over the item's cells.
template <class KE, class VE>
static void run_item(const detail::call& c, const detail::item& it,
                     const detail::scratch& w) noexcept {
  constexpr std::size_t Bc = detail::k_block_cells;
  const detail::tile& t = *it.t;
  const std::size_t g = c.sh.group(), dv = c.sh.d_v, R = t.count * g;
  gather_queries(c, t, it.head_kv, w.q);
  for (std::size_t i = 0; i < R * dv; ++i) w.o[i] = 0.0f;
  for (std::size_t r = 0; r < R; ++r) {
    w.m[r] = -__builtin_inff();
    w.l[r] = 0.0f;
  }
  bool cell_any[Bc];
  for_each_block(c.streams[t.stream], it.cell_begin, it.cell_end,
                 [&](const kv_segment& seg, std::size_t j0, std::size_t nb, std::size_t) {
    if (!block_mask(c, t, seg, j0, nb, w, cell_any)) return;  // no K/V bytes read
    block_logits<KE>(c, t, it.head_kv, seg, j0, nb, w, cell_any);
    for (std::size_t r = 0; r < R; ++r) {
      const float alpha = softmax_block(w.s + r * Bc, nb, w.m[r], w.l[r]);
      if (alpha != 1.0f) scale_row(w.o + r * dv, dv, alpha);
    }
    const auto* vbase = static_cast<const std::byte*>(seg.v) + it.head_kv * c.v_head_bytes;
    for (std::size_t j = 0; j < nb; ++j) {
      float* dst = w.vf + j * dv;
      if (!cell_any[j]) {
        for (std::size_t i = 0; i < dv; ++i) dst[i] = 0.0f;
      } else {
        rows::decode(reinterpret_cast<const VE*>(vbase + (j0 + j) * seg.v_stride), dst, dv);
      }
    }
    gemm_acc(R, dv, nb, w.s, Bc, w.vf, dv, w.o, dv);
  });
}

/// Adds the attention mass of every row of tile t (that the sink wants) to
/// mass[cell - it.cell_begin ...] for the item's cells: mass[cell] += sum over rows
/// of e^(logit - lse_row). lse: [n_tokens, n_head] final log-sum-exp of each row.
template <class KE, class Sink>
static void export_mass(const detail::call& c, const detail::tile& t, const detail::item& it,
                        const detail::scratch& w, const float* lse, const Sink& sink,
                        float* mass) noexcept {
  constexpr std::size_t Bc = detail::k_block_cells;
  const std::size_t g = c.sh.group();
  gather_queries(c, t, it.head_kv, w.q);
  bool cell_any[Bc];
  for_each_block(c.streams[t.stream], it.cell_begin, it.cell_end,
                 [&](const kv_segment& seg, std::size_t j0, std::size_t nb, std::size_t cell0) {
    if (!block_mask(c, t, seg, j0, nb, w, cell_any)) return;
    block_logits<KE>(c, t, it.head_kv, seg, j0, nb, w, cell_any);
    for (std::size_t ti = 0; ti < t.count; ++ti) {
      const std::size_t tok = c.order[t.first + ti];
      if (!sink.row_contributes(tok)) continue;
      for (std::size_t hh = 0; hh < g; ++hh) {
        const float row_lse = lse[tok * c.sh.n_head + it.head_kv * g + hh];
        if (row_lse == -__builtin_inff()) continue;
        const float* s = w.s + (ti * g + hh) * Bc;
        for (std::size_t j = 0; j < nb; ++j)
          if (s[j] != -__builtin_inff()) mass[cell0 + j] += std::exp(s[j] - row_lse);
      }
    }
  });
}
