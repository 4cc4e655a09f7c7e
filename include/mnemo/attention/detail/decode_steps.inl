// The decode path of attention::detail::block_kernels<Isa>: a few query rows per KV
// head, every KV head in one item, in 64-cell blocks of two passes (Q.K, then P.V after
// the online softmax). q8_0 and q4_0 vectors are decoded in registers as they are loaded
// (load_row): decoding each cell row into a buffer first costs about twice as much.
//
// A block's passes read its cells in one of four orders, chosen by the rows per KV head,
// because that number decides whether memory or arithmetic bounds the call
// (docs/attention.md, "Algorithm"):
// - address order (one row): no tile of rows shares a vector, so both passes go cell by
//   cell and the hardware prefetchers follow the demand loads alongside cell_ahead's;
// - in groups (two or three rows, K/V read in place): eight cells at a time in address
//   order, each head by head, so output rows are written back once per group;
// - K in groups, V head by head (four to seven rows): a write-back per group would add
//   about a fifth to the arithmetic, so only the K pass follows address order;
// - head by head (eight rows and more, and q8_0/q4_0 from two rows; every item with
//   AVX2 where widening f16 is costly, simd::f16_widening): the arithmetic bounds the
//   call, so each pass works from cache with spread software prefetches (K pass: this
//   block's V; V pass: the next block's K) and keeps output rows in registers.
// Included after tile_math.inl and block_steps.inl; @pre d_k % L == 0, d_v % L == 0.

/// The register tiles of a decode head (head_logits, pv_decode). Q.K goes four query
/// rows x four cells, each K vector widened once for four rows, and P.V pv_any's tiles.
/// With AVX2's 16 vector registers the 4 x 4 tile spills four of its accumulators, so
/// there the tiles follow the cost of widening f16 (simd::f16_widening):
/// - cheap (measured on a Zen 4 core running the AVX2 build): four rows x three cells
///   (12 accumulators, no spill) wherever a head has four rows or more: 11-17% less CPU
///   time per call than 4 x 4 and the eight-row tiles below at GQA 4 and 8; two or three
///   rows keep four cells (three were 10% slower at two rows);
/// - costly (Zen 1): from eight rows, eight at a time with one cell (8 accumulators,
///   each K vector widened once for all eight rows, the query vectors loaded by the
///   FMAs; each cell's K row prefetched into L1 k_dot_row_ahead cells ahead, since it
///   comes from L2 otherwise, one wait per cell) and P.V in pv_eight_rows; 4 x 4 below
///   (four rows x two cells without spills was 5-8% slower at GQA 4 there).
/// With bf16 products (AVX-512 with BF16, attention::product_precision, from four rows
/// per KV head) Q.K goes eight (or four) rows x four cells in bf16_dots's pair tiles and
/// P.V in its interleaved pairs (pv_decode_bf16). run_decode_item chooses them once per item
/// and hands them to every pass.
struct head_tiles {
  bool eight_rows = false;    // eight-row tiles from eight rows per KV head
  std::size_t dot_cells = 4;  // cells of a Q.K tile when a head has four rows or more
  bool bf16 = false;          // bf16 products (bf16_dots)
  static constexpr head_tiles for_widening(simd::f16_widening w) noexcept {
    if (k_vector_registers != 16) return {};
    if (w == simd::f16_widening::costly) return {.eight_rows = true, .dot_cells = 4};
    return {.eight_rows = false, .dot_cells = 3};
  }
  /// Rows of R that the eight-row tiles take.
  constexpr std::size_t eight_row_rows(std::size_t R) const noexcept {
    return eight_rows ? R / 8 * 8 : 0;
  }
  /// Cells of head_logits's four-row tiles over `rows` rows.
  constexpr std::size_t cells_for(std::size_t rows) const noexcept {
    return rows >= 4 ? dot_cells : 4;
  }
  /// Rows of one of head_logits's tiles below the eight-row ones.
  constexpr std::size_t dot_rows() const noexcept { return bf16 ? 8 : 4; }
};
static constexpr std::size_t k_dot_row_ahead = 2;

/// head_logits's steps (tiles) for R rows and n_js cells: its cursor steps once per tile.
static constexpr std::size_t head_logits_steps(std::size_t R, std::size_t n_js,
                                               const head_tiles& tiles) noexcept {
  const std::size_t r8 = tiles.eight_row_rows(R), cm = tiles.cells_for(R - r8);
  const std::size_t gm = tiles.dot_rows();
  return n_js * (r8 / 8) + (n_js + cm - 1) / cm * ((R - r8 + gm - 1) / gm);
}

/// s[r * Bc + j] = q[r] . k_j for the R rows of one KV head and its kept cells js
/// (krow[x]: cell js[x]'s row of that head), in the tiles above: each K vector is loaded
/// once for four or eight rows and each query vector once per tile's cells. pf steps
/// once per tile (an idle cursor in groups).
template <class RE>
MNEMO_NOINLINE static void head_logits(const float* q, std::size_t R, std::size_t dk,
                                       const RE* const* krow, const std::uint32_t* js,
                                       std::size_t n_js, float* s, const head_tiles& tiles,
                                       prefetch_cursor& pf) noexcept {
  constexpr std::size_t Bc = detail::k_block_cells;
  prefetch_cursor cur = pf;  // a local copy stays in registers (pf may alias s)
  const std::size_t r8 = tiles.eight_row_rows(R), Cm = tiles.cells_for(R - r8);
  const std::size_t Gm = tiles.dot_rows();
  auto dots = [&](std::size_t G, std::size_t C, const float* qr, const RE* const* kr, float* out,
                  std::size_t ldo) {
#if defined(MNEMO_ARCH_X86_64)
    if constexpr (std::is_same_v<isa, simd::avx512> && bf16_dots::reads<RE>)
      if (tiles.bf16) return bf16_dots::tile_rows<RE>(G, C, qr, dk, kr, dk, out, ldo);
#endif
    dot_tile_any<RE>(G, C, qr, dk, kr, dk, out, ldo);
  };
  if constexpr (k_vector_registers == 16) {
    const std::size_t row_bytes = dtype::blocks_in_row<RE>(dk) * sizeof(RE);
    for (std::size_t x = 0; x < n_js && r8 != 0; ++x) {
      if (x + k_dot_row_ahead < n_js)
        for (std::size_t b = 0; b < row_bytes; b += 64)
          simd::prefetch(reinterpret_cast<const char*>(krow[x + k_dot_row_ahead]) + b,
                         simd::prefetch_target::l1);
      for (std::size_t r0 = 0; r0 < r8; r0 += 8) {
        cur.step();
        dot_tile<RE, 8, 1>(q + r0 * dk, dk, krow + x, dk, s + r0 * Bc + js[x], Bc);
      }
    }
  }
  float tmp[32];
  for (std::size_t x0 = 0; x0 < n_js && r8 < R; x0 += Cm) {
    const std::size_t C = n_js - x0 < Cm ? n_js - x0 : Cm;
    for (std::size_t r0 = r8; r0 < R; r0 += Gm) {
      const std::size_t G = R - r0 < Gm ? R - r0 : Gm;
      cur.step();
      if (js[x0 + C - 1] - js[x0] == C - 1) {  // consecutive cells: store the sums in place
        dots(G, C, q + r0 * dk, krow + x0, s + r0 * Bc + js[x0], Bc);
        continue;
      }
      dots(G, C, q + r0 * dk, krow + x0, tmp, 4);
      for (std::size_t r = 0; r < G; ++r)
        for (std::size_t x = 0; x < C; ++x) s[(r0 + r) * Bc + js[x0 + x]] = tmp[r * 4 + x];
    }
  }
  pf = cur;
}

/// o[8, dv] += P[8, cells js] . V[js, dv], one output vector of the eight rows at a
/// time (8 accumulators), each V vector widened once for all eight rows. The
/// probabilities are broadcast once into a table [cells, 8 rows, L] that the FMAs load:
/// broadcasting them again for every output vector cost as much as the widening
/// (bench_machine's BM_f16_widen_once, broadcast against dots). @pre dv % L == 0
template <class RE>
MNEMO_NOINLINE static void pv_eight_rows(const float* p, std::size_t ldp, const std::uint32_t* js,
                                         std::size_t n_js, const RE* const* v, std::size_t dv,
                                         float* o, std::size_t ldo, prefetch_cursor& pf) noexcept {
  constexpr std::size_t Bc = detail::k_block_cells;
  alignas(64) float pb[Bc * 8 * L];  // [cells, 8 rows, L]
  for (std::size_t x = 0; x < n_js; ++x)
#pragma GCC unroll 8
    for (std::size_t r = 0; r < 8; ++r) V::store(pb + (x * 8 + r) * L, V::set1(p[r * ldp + js[x]]));
  prefetch_cursor cur = pf;  // a local copy stays in registers (pf may alias o)
  for (std::size_t n0 = 0; n0 < dv; n0 += L) {
    vf acc[8];
#pragma GCC unroll 8
    for (std::size_t r = 0; r < 8; ++r) acc[r] = V::load(o + r * ldo + n0);
    for (std::size_t x = 0; x < n_js; ++x) {
      cur.step();
      const vf vv = load_row(v[x], n0);
      const float* px = pb + x * 8 * L;
#pragma GCC unroll 8
      for (std::size_t r = 0; r < 8; ++r) acc[r] = V::fma(V::load(px + r * L), vv, acc[r]);
    }
#pragma GCC unroll 8
    for (std::size_t r = 0; r < 8; ++r) V::store(o + r * ldo + n0, acc[r]);
  }
  pf = cur;
}

/// o[R, dv] += P[R, cells js] . V[js, dv] for one decode head: pv_any, except that with
/// the eight-row tiles rows go eight at a time first (pv_eight_rows), where pv_any's
/// four-row tiles widened every V vector twice. pf steps as pv_decode_steps counts.
template <class RE>
static void pv_decode(std::size_t R, const float* p, std::size_t ldp, const std::uint32_t* js,
                      std::size_t n_js, const RE* const* v, std::size_t dv, float* o,
                      std::size_t ldo, const head_tiles& tiles, prefetch_cursor& pf) noexcept {
  std::size_t r = 0;
  if constexpr (k_vector_registers == 16)
    for (; r < tiles.eight_row_rows(R); r += 8)
      pv_eight_rows<RE>(p + r * ldp, ldp, js, n_js, v, dv, o + r * ldo, ldo, pf);
  if (r < R) pv_any<RE>(R - r, p + r * ldp, ldp, js, n_js, v, dv, o + r * ldo, ldo, pf);
}

/// The V pass's steps (calls of prefetch_cursor::step) for R rows and n_js cells:
/// pv_decode's, or pv_decode_bf16's (one per pair of cells and tile).
static constexpr std::size_t pv_decode_steps(std::size_t R, std::size_t n_js, std::size_t dv,
                                             const head_tiles& tiles) noexcept {
#if defined(MNEMO_ARCH_X86_64)
  if constexpr (std::is_same_v<isa, simd::avx512>)
    if (tiles.bf16) return bf16_dots::pair_value_steps(R, n_js, dv);
#endif
  const std::size_t r8 = tiles.eight_row_rows(R);
  return (r8 / 8) * (dv / L) * n_js + pv_steps(R - r8, n_js, dv);
}

/// s[h * Bc + j] = q_h . k_h for the H heads of one cell row k, one query row per head
/// (q: [H, d_k]), four heads at a time: the address-order K pass.
template <class RE>
MNEMO_NOINLINE static void cell_dots_one_row(const float* q, std::size_t H, std::size_t dk,
                                             const RE* k, float* s, std::size_t j) noexcept {
  constexpr std::size_t Bc = detail::k_block_cells;
  const std::size_t kh = dtype::blocks_in_row<RE>(dk);  // elements of one head's row
  std::size_t h0 = 0;
  for (; h0 + 4 <= H; h0 += 4) {
    vf acc[4] = {V::zero(), V::zero(), V::zero(), V::zero()};
    for (std::size_t i = 0; i < dk; i += L)
#pragma GCC unroll 4
      for (std::size_t h = 0; h < 4; ++h)
        acc[h] = V::fma(V::load(q + (h0 + h) * dk + i), load_row(k + (h0 + h) * kh, i), acc[h]);
    float tmp[4];
    reduce_add4<vf>(acc[0], acc[1], acc[2], acc[3], tmp);
    for (std::size_t h = 0; h < 4; ++h) s[(h0 + h) * Bc + j] = tmp[h];
  }
  for (; h0 < H; ++h0) {
    vf acc = V::zero();
    for (std::size_t i = 0; i < dk; i += L)
      acc = V::fma(V::load(q + h0 * dk + i), load_row(k + h0 * kh, i), acc);
    s[h0 * Bc + j] = V::reduce_add(acc);
  }
}

/// o[h] += p[h, j] v_h for the H heads of one cell row v, one query row per head (o:
/// [H, d_v]): the address-order V pass, each output row read and written once per cell.
template <class RE>
MNEMO_NOINLINE static void cell_values_one_row(const float* s, std::size_t H, std::size_t dv,
                                               const RE* v, float* o, std::size_t j) noexcept {
  constexpr std::size_t Bc = detail::k_block_cells;
  const std::size_t vh_elems = dtype::blocks_in_row<RE>(dv);  // elements of one head's row
  for (std::size_t h = 0; h < H; ++h) {
    const vf p = V::set1(s[h * Bc + j]);
    const RE* vh = v + h * vh_elems;
    float* oh = o + h * dv;
#pragma GCC unroll 8
    for (std::size_t i = 0; i < dv; i += L)
      V::store(oh + i, V::fma(p, load_row(vh, i), V::load(oh + i)));
  }
}

/// Asks for bytes [p, p + n) to be brought into the machine's simd::prefetch_target.
static MNEMO_INLINE void prefetch_rows(const void* p, std::size_t n) noexcept {
  const char* b = static_cast<const char*>(p);
  const simd::prefetch_target t = simd::current_prefetch_target();
#pragma GCC unroll 8
  for (std::size_t i = 0; i < n; i += 64) simd::prefetch(b + i, t);
}

/// How far ahead of a pass that reads cell rows in address order its prefetches run:
/// 8-32 KiB measured alike on a Zen 4 VM (GQA 1, 32k cells, 2 threads), 4 KiB slower.
/// A pass in groups runs two groups (2 x 8 x 2 KiB at 8 x 128 f16) ahead: one group
/// read 0.87-0.95 at GQA 2 against 0.91-0.96, 64 KiB alike.
static constexpr std::size_t k_cell_ahead_bytes = 16 * 1024;
static constexpr std::size_t k_group_ahead_bytes = 32 * 1024;
static constexpr std::size_t k_group_cells = 8;

/// Block-local cell x's number: js[x], or x where js is null (cells 0, 1, ...).
static MNEMO_INLINE std::size_t cell_at(const std::uint32_t* js, std::size_t x) noexcept {
  return js != nullptr ? js[x] : x;
}

/// The prefetches of a pass that reads a block's kept cells (js) in address order: while
/// the pass reads its x-th cell, the row of its (x + ahead)-th, or past its last cell the
/// first rows the next pass reads (V after K: the same cells; the next block's K after
/// V: its first cells, whose mask is not known yet), so that DRAM never waits for a pass
/// to start and no masked row is fetched within a block.
struct cell_ahead {
  const char* own = nullptr;  // this pass's row of block-local cell 0
  std::size_t own_stride = 0, own_bytes = 0;
  const std::uint32_t* js = nullptr;  // the block-local cells this pass reads
  std::size_t n_js = 0;
  const char* next = nullptr;  // the next pass's row of its block-local cell 0
  std::size_t next_stride = 0, next_bytes = 0;
  const std::uint32_t* next_js = nullptr;  // its cells, or null: cells 0, 1, ...
  std::size_t next_cells = 0;
  std::size_t ahead = 0;
  MNEMO_INLINE void at(std::size_t x) const noexcept {
    std::size_t y = x + ahead;
    if (y < n_js) {
      prefetch_rows(own + js[y] * own_stride, own_bytes);
    } else if ((y -= n_js) < next_cells) {
      next_row(y);
    }
    // A pass of fewer cells than `ahead` (a short segment) reaches only the next pass's
    // rows from ahead - n_js on: its first cell asks for those before.
    if (x == 0 && n_js < ahead)
      for (std::size_t z = 0; z < ahead - n_js && z < next_cells; ++z) next_row(z);
  }
  MNEMO_INLINE void next_row(std::size_t y) const noexcept {
    prefetch_rows(next + cell_at(next_js, y) * next_stride, next_bytes);
  }
};

/// The rows (`bytes` each, `stride` apart) of block-local cells js (null: 0 .. n-1): one
/// range where rows are contiguous, else row by row, so that an item of some heads (or
/// a segment of one head's rows, as Quest reads per KV head) does not fetch the other
/// heads' rows between.
static void prefetch_cells(const char* cell0, std::size_t stride, std::size_t bytes,
                           const std::uint32_t* js, std::size_t n) noexcept {
  if (stride == bytes) {
    const std::size_t first = cell_at(js, 0);
    prefetch_rows(cell0 + first * stride, (cell_at(js, n - 1) - first) * stride + bytes);
    return;
  }
  for (std::size_t x = 0; x < n; ++x) prefetch_rows(cell0 + cell_at(js, x) * stride, bytes);
}

/// A cursor that prefetches the rows of prefetch_cells spread over `steps` steps where
/// they are contiguous; rows with other heads' bytes between are asked for at once, row
/// by row, and the cursor stays idle.
static prefetch_cursor spread_cells(const char* cell0, std::size_t stride, std::size_t bytes,
                                    const std::uint32_t* js, std::size_t n,
                                    std::size_t steps) noexcept {
  prefetch_cursor pf;
  if (stride != bytes) {
    prefetch_cells(cell0, stride, bytes, js, n);
    return pf;
  }
  pf.p = cell0 + cell_at(js, 0) * stride;
  pf.end = cell0 + cell_at(js, n - 1) * stride + bytes;
  const std::size_t lines = static_cast<std::size_t>(pf.end - pf.p + 63) / 64;
  pf.per_step = (lines + steps - 1) / steps;
  return pf;
}

/// The first cells of the block after the current one, which the current block's passes
/// prefetch: later in the same segment, or the next segment's first block, so that a view
/// of short segments (Quest's pages, a paged per-head lane) does not wait for memory at
/// each segment's start.
struct next_block {
  const char* k = nullptr;  // the K row of its first cell for the item's first head
  const char* v = nullptr;
  std::size_t k_stride = 0, v_stride = 0;
  std::size_t cells = 0;  // 0: the item has no block after the current one
};

/// The K and V rows of an item's heads in one segment: row addresses and byte counts.
struct item_rows {
  const char* k;  // cell 0's K row of the item's first head
  const char* v;
  std::size_t k_stride, v_stride, k_bytes, v_bytes;
  item_rows(const detail::call& c, const kv_segment& seg, std::size_t h0, std::size_t H) noexcept
      : k(static_cast<const char*>(seg.k) + h0 * c.k_head_bytes),
        v(static_cast<const char*>(seg.v) + h0 * c.v_head_bytes),
        k_stride(seg.k_stride),
        v_stride(seg.v_stride),
        k_bytes(H * c.k_head_bytes),
        v_bytes(H * c.v_head_bytes) {}
  /// Cell rows in `bytes` of K, at least 1, at most a block.
  std::size_t ahead(std::size_t bytes) const noexcept {
    const std::size_t n = bytes / k_bytes;
    return n < 1 ? 1 : n > detail::k_block_cells ? detail::k_block_cells : n;
  }
  /// The prefetches of a K pass over the block at j0 reading cells js in address
  /// order, `bytes` ahead: its own rows, then this block's V rows.
  cell_ahead k_pass_ahead(std::size_t j0, const std::uint32_t* js, std::size_t n_js,
                          std::size_t bytes) const noexcept {
    return {.own = k + j0 * k_stride,
            .own_stride = k_stride,
            .own_bytes = k_bytes,
            .js = js,
            .n_js = n_js,
            .next = v + j0 * v_stride,
            .next_stride = v_stride,
            .next_bytes = v_bytes,
            .next_js = js,
            .next_cells = n_js,
            .ahead = ahead(bytes)};
  }
  /// The same for a V pass: its own rows, then the next block's first K rows.
  cell_ahead v_pass_ahead(std::size_t j0, const std::uint32_t* js, std::size_t n_js,
                          const next_block& nx, std::size_t bytes) const noexcept {
    return {.own = v + j0 * v_stride,
            .own_stride = v_stride,
            .own_bytes = v_bytes,
            .js = js,
            .n_js = n_js,
            .next = nx.k,
            .next_stride = nx.k_stride,
            .next_bytes = k_bytes,
            .next_js = nullptr,
            .next_cells = nx.cells,
            .ahead = ahead(bytes)};
  }
  /// The same for a K pass whose block's V rows are already on their way (K in
  /// groups): its own rows, then the next block's first K rows.
  cell_ahead k_pass_ahead_to_next_k(std::size_t j0, const std::uint32_t* js, std::size_t n_js,
                                    const next_block& nx, std::size_t bytes) const noexcept {
    cell_ahead a = v_pass_ahead(j0, js, n_js, nx, bytes);
    a.own = k + j0 * k_stride;
    a.own_stride = k_stride;
    a.own_bytes = k_bytes;
    return a;
  }
};

/// The K pass head by head from cache, while this block's V rows are prefetched in
/// address order, spread over its tiles.
template <class KE>
static void logits_by_head(const detail::call& c, const item_rows& rows, std::size_t j0,
                           const std::uint32_t* js, std::size_t n_js, std::size_t H, std::size_t R,
                           const head_tiles& tiles, const detail::scratch& w) noexcept {
  constexpr std::size_t Bc = detail::k_block_cells;
  const std::size_t dk = c.sh.d_k;
  prefetch_cursor vpf = spread_cells(rows.v + j0 * rows.v_stride, rows.v_stride, rows.v_bytes, js,
                                     n_js, H * head_logits_steps(R, n_js, tiles));
  const KE* krow[Bc];
  for (std::size_t h = 0; h < H; ++h) {
    for (std::size_t x = 0; x < n_js; ++x)
      krow[x] =
          reinterpret_cast<const KE*>(rows.k + (j0 + js[x]) * rows.k_stride + h * c.k_head_bytes);
    head_logits<KE>(w.q + h * R * dk, R, dk, krow, js, n_js, w.s + h * R * Bc, tiles, vpf);
  }
}

/// The K pass in address order, one query row per head; its prefetches run into this
/// block's V rows.
template <class KE>
static void logits_in_address_order(const detail::call& c, const item_rows& rows, std::size_t j0,
                                    const std::uint32_t* js, std::size_t n_js, std::size_t H,
                                    const detail::scratch& w) noexcept {
  const cell_ahead ahead = rows.k_pass_ahead(j0, js, n_js, k_cell_ahead_bytes);
  for (std::size_t x = 0; x < n_js; ++x) {
    ahead.at(x);
    const auto* k = reinterpret_cast<const KE*>(rows.k + (j0 + js[x]) * rows.k_stride);
    cell_dots_one_row<KE>(w.q, H, c.sh.d_k, k, w.s, js[x]);
  }
}

/// o[R, dv] += P[R, cells js] . V[js, dv] for one decode head in bf16 pairs
/// (product_precision::bf16): each row's probabilities rounded into one word per pair of
/// cells, then eight rows x 32 columns at a time, each pair's V rows rounded and
/// interleaved in registers. pf steps once per pair of each tile (pv_decode_steps).
template <class VE>
static void pv_decode_bf16([[maybe_unused]] std::size_t R, [[maybe_unused]] const float* p,
                           [[maybe_unused]] const std::uint32_t* js,
                           [[maybe_unused]] std::size_t n_js,
                           [[maybe_unused]] const VE* const* vrow, [[maybe_unused]] std::size_t dv,
                           [[maybe_unused]] float* o,
                           [[maybe_unused]] prefetch_cursor& pf) noexcept {
#if defined(MNEMO_ARCH_X86_64)
  if constexpr (std::is_same_v<isa, simd::avx512> && bf16_dots::reads<VE>) {
    constexpr std::size_t Bc = detail::k_block_cells;
    std::uint32_t pw[detail::k_dot_form_max_rows * Bc / 2];  // [R, Bc / 2]
    bf16_dots::pair_words(R, p, Bc, js, n_js, pw, Bc / 2);
    prefetch_cursor cur = pf;
    bf16_dots::pair_values(R, pw, Bc / 2, vrow, n_js, dv, o, dv, cur);
    pf = cur;
  }
#endif
}

/// The V pass head by head from cache, with the output rows in registers across the
/// block's cells, while the next block's first K rows (its V rows with next_v, when the
/// K pass streams its own) are prefetched in address order, spread evenly over the pass.
template <class VE>
static void values_by_head(const detail::call& c, const item_rows& rows, std::size_t j0,
                           const std::uint32_t* js, std::size_t n_js, std::size_t H, std::size_t R,
                           const next_block& nx, bool next_v, const head_tiles& tiles,
                           const detail::scratch& w) noexcept {
  constexpr std::size_t Bc = detail::k_block_cells;
  const std::size_t dv = c.sh.d_v;
  prefetch_cursor pf;
  if (nx.cells != 0) {  // bytes of any element type
    const auto [base, stride, bytes] = next_v ? std::tuple(nx.v, nx.v_stride, rows.v_bytes)
                                              : std::tuple(nx.k, nx.k_stride, rows.k_bytes);
    pf = spread_cells(base, stride, bytes, nullptr, nx.cells,
                      H * pv_decode_steps(R, n_js, dv, tiles));
  }
  const VE* vrow[Bc];
  for (std::size_t h = 0; h < H; ++h) {
    for (std::size_t x = 0; x < n_js; ++x)
      vrow[x] =
          reinterpret_cast<const VE*>(rows.v + (j0 + js[x]) * rows.v_stride + h * c.v_head_bytes);
    if (tiles.bf16)
      pv_decode_bf16<VE>(R, w.s + h * R * Bc, js, n_js, vrow, dv, w.o + h * R * dv, pf);
    else
      pv_decode<VE>(R, w.s + h * R * Bc, Bc, js, n_js, vrow, dv, w.o + h * R * dv, dv, tiles, pf);
  }
}

/// The V pass in address order, one query row per head; its prefetches run into the
/// next block's first K rows.
template <class VE>
static void values_in_address_order(const detail::call& c, const item_rows& rows, std::size_t j0,
                                    const std::uint32_t* js, std::size_t n_js, std::size_t H,
                                    const next_block& nx, const detail::scratch& w) noexcept {
  const cell_ahead ahead = rows.v_pass_ahead(j0, js, n_js, nx, k_cell_ahead_bytes);
  for (std::size_t x = 0; x < n_js; ++x) {
    ahead.at(x);
    const auto* v = reinterpret_cast<const VE*>(rows.v + (j0 + js[x]) * rows.v_stride);
    cell_values_one_row<VE>(w.s, H, c.sh.d_v, v, w.o, js[x]);
  }
}

/// Runs pass(x0, n, h) over the groups of n_js cells and, within each, the H heads,
/// asking `ahead` for the group's cells spread over its heads.
template <class Pass>
static MNEMO_INLINE void for_each_group(std::size_t n_js, std::size_t H, const cell_ahead& ahead,
                                        Pass&& pass) noexcept {
  for (std::size_t x0 = 0; x0 < n_js; x0 += k_group_cells) {
    const std::size_t n = n_js - x0 < k_group_cells ? n_js - x0 : k_group_cells;
    for (std::size_t h = 0; h < H; ++h) {
      for (std::size_t x = x0 + h * n / H; x < x0 + (h + 1) * n / H; ++x) ahead.at(x);
      pass(x0, n, h);
    }
  }
}

/// The K pass in groups, prefetching as `ahead` says: past its end into this block's V
/// rows (groups) or the next block's K rows (K in groups, V head by head).
template <class KE>
static void logits_in_groups(const detail::call& c, const item_rows& rows, std::size_t j0,
                             const std::uint32_t* js, std::size_t n_js, std::size_t H,
                             std::size_t R, const cell_ahead& ahead, const head_tiles& tiles,
                             const detail::scratch& w) noexcept {
  constexpr std::size_t Bc = detail::k_block_cells;
  const std::size_t dk = c.sh.d_k;
  const KE* krow[k_group_cells];
  prefetch_cursor none;  // the groups' prefetches are the cell_ahead's
  for_each_group(n_js, H, ahead, [&](std::size_t x0, std::size_t n, std::size_t h) {
    for (std::size_t x = 0; x < n; ++x)
      krow[x] = reinterpret_cast<const KE*>(rows.k + (j0 + js[x0 + x]) * rows.k_stride +
                                            h * c.k_head_bytes);
    head_logits<KE>(w.q + h * R * dk, R, dk, krow, js + x0, n, w.s + h * R * Bc, tiles, none);
  });
}

/// The V pass in groups, each head's output rows read and written once per group; its
/// prefetches run into the next block's first K rows.
template <class VE>
static void values_in_groups(const detail::call& c, const item_rows& rows, std::size_t j0,
                             const std::uint32_t* js, std::size_t n_js, std::size_t H,
                             std::size_t R, const next_block& nx, const head_tiles& tiles,
                             const detail::scratch& w) noexcept {
  constexpr std::size_t Bc = detail::k_block_cells;
  const std::size_t dv = c.sh.d_v;
  const cell_ahead ahead = rows.v_pass_ahead(j0, js, n_js, nx, k_group_ahead_bytes);
  const VE* vrow[k_group_cells];
  prefetch_cursor none;
  for_each_group(n_js, H, ahead, [&](std::size_t x0, std::size_t n, std::size_t h) {
    for (std::size_t x = 0; x < n; ++x)
      vrow[x] = reinterpret_cast<const VE*>(rows.v + (j0 + js[x0 + x]) * rows.v_stride +
                                            h * c.v_head_bytes);
    pv_decode<VE>(R, w.s + h * R * Bc, Bc, js + x0, n, vrow, dv, w.o + h * R * dv, dv, tiles, none);
  });
}

/// The block after the one at segment-local j0 (stream-wide cell0) of segment `seg` of
/// `view`, for the item's heads: later in the segment, else the first block of the next
/// segment holding cells of the item; at most one block of cells.
static next_block next_block_after(const detail::call& c, const detail::item& it,
                                   const kv_view& view, const kv_segment& seg, std::size_t j0,
                                   std::size_t cell0) noexcept {
  constexpr std::size_t Bc = detail::k_block_cells;
  const std::size_t h0 = it.head_begin, H = it.head_end - it.head_begin;
  const auto at = [&](const kv_segment& s, std::size_t j, std::size_t n) {
    const item_rows rows(c, s, h0, H);
    return next_block{.k = rows.k + j * rows.k_stride,
                      .v = rows.v + j * rows.v_stride,
                      .k_stride = rows.k_stride,
                      .v_stride = rows.v_stride,
                      .cells = n < Bc ? n : Bc};
  };
  std::size_t base = cell0 - j0;  // stream-wide index of the segment's cell 0
  const std::size_t seg_end = base + seg.n_cells;
  const std::size_t end = it.cell_end < seg_end ? it.cell_end : seg_end;
  if (cell0 + Bc < end) return at(seg, j0 + Bc, end - (cell0 + Bc));
  const kv_segment* const last = view.segments.data() + view.segments.size();
  for (const kv_segment* s = &seg + 1; s < last; ++s) {
    base += (s - 1)->n_cells;  // s's cell 0; seg_end on the first pass
    if (base >= it.cell_end) break;
    if (s->n_cells != 0) {
      const std::size_t left = it.cell_end - base;
      return at(*s, 0, left < s->n_cells ? left : s->n_cells);
    }
  }
  return {};
}

/// The read orders of a decode item's passes (top of this file).
enum class decode_order { heads, address, groups, k_groups };

/// The first block of an item (no block before it prefetched its rows): head by head
/// its K rows up front, all of them, else in address order those the K pass reads
/// first, and with K in groups also all of its V rows (which the V pass reads head by
/// head).
static void prefetch_first_block(const item_rows& rows, std::size_t j0, const std::uint32_t* js,
                                 std::size_t n_js, decode_order order) noexcept {
  if (order == decode_order::heads) {
    prefetch_cells(rows.k + j0 * rows.k_stride, rows.k_stride, rows.k_bytes, js, n_js);
    return;
  }
  if (order == decode_order::k_groups)
    prefetch_cells(rows.v + j0 * rows.v_stride, rows.v_stride, rows.v_bytes, js, n_js);
  const std::size_t ahead =
      rows.ahead(order == decode_order::address ? k_cell_ahead_bytes : k_group_ahead_bytes);
  const std::size_t n = ahead < n_js ? ahead : n_js;
  for (std::size_t x = 0; x < n; ++x)
    prefetch_rows(rows.k + (j0 + js[x]) * rows.k_stride, rows.k_bytes);
}

/// The order for an item of R rows per KV head (top of this file). AVX2 where widening
/// f16 is costly (Zen 1) goes head by head at every R: there (f16, 16k cells) it took
/// 30% less CPU time per call than address order at one row and groups at two, 12% less
/// than K in groups at four; the core is bound by its F16C widening and FMAs before the
/// reads. Elsewhere AVX2 keeps the orders below (on a Zen 4 core head by head read
/// 0.76-0.82 of the paired read pass at one row, address order 0.87-0.91).
template <class KE, class VE>
static decode_order decode_order_for(std::size_t R, simd::f16_widening widening) noexcept {
  if (std::is_same_v<isa, simd::avx2> && widening == simd::f16_widening::costly)
    return decode_order::heads;
  if (R == 1) return decode_order::address;
  if (!is_read_in_place<KE> || !is_read_in_place<VE> || R >= 8) return decode_order::heads;
  return R <= 3 ? decode_order::groups : decode_order::k_groups;
}

/// Whether this call's decode tiles may use bf16 dot products (attention::
/// product_precision) for K and V of types KE and VE.
template <class KE, class VE>
static bool bf16_products([[maybe_unused]] const detail::call& c) noexcept {
#if defined(MNEMO_ARCH_X86_64)
  if constexpr (std::is_same_v<isa, simd::avx512> && bf16_dots::reads<KE> && bf16_dots::reads<VE>)
    return c.bf16_products;
#endif
  return false;
}

/// Rounds the gathered query rows to bf16 in place (only where bf16_products holds).
static void round_queries_to_bf16([[maybe_unused]] float* q, [[maybe_unused]] std::size_t rows,
                                  [[maybe_unused]] std::size_t dk) noexcept {
#if defined(MNEMO_ARCH_X86_64)
  if constexpr (std::is_same_v<isa, simd::avx512>) bf16_dots::round_rows(q, rows, dk, dk);
#endif
}

template <class KE, class VE>
static void run_decode_item(const detail::call& c, const detail::item& it,
                            const detail::scratch& w) noexcept {
  constexpr std::size_t Bc = detail::k_block_cells;
  const detail::tile& t = *it.t;
  const std::size_t g = c.sh.group(), dv = c.sh.d_v, R = t.count * g;
  const std::size_t h0 = it.head_begin, H = it.head_end - it.head_begin;
  const decode_order order = decode_order_for<KE, VE>(R, c.widening);
  gather_queries(c, it, w.q);
  // bf16 products from four rows per KV head, in the order the rows choose (K in
  // groups below eight rows: read head by head, the bf16 tiles were slower at GQA 4, bound
  // by the reads); with fewer rows the pair tiles have too few rows to share a K vector.
  head_tiles tiles = head_tiles::for_widening(c.widening);
  tiles.bf16 = bf16_products<KE, VE>(c) && R >= 4 &&
               (order == decode_order::heads || order == decode_order::k_groups);
  if (tiles.bf16) round_queries_to_bf16(w.q, H * R, c.sh.d_k);
  for (std::size_t i = 0; i < H * R * dv; ++i) w.o[i] = 0.0f;
  for (std::size_t r = 0; r < H * R; ++r) {
    w.m[r] = -__builtin_inff();
    w.l[r] = 0.0f;
  }
  std::uint32_t js[Bc];
  bool prefetched = false;  // the previous block prefetched this block's first rows
  const kv_view& view = c.streams[t.stream];
  for_each_block(
      view, it.cell_begin, it.cell_end,
      [&](const kv_segment& seg, std::size_t j0, std::size_t nb, std::size_t cell0) {
        const std::size_t n_js = block_mask(c, t, seg, j0, nb, w, js);
        if (n_js == 0) {  // no K/V byte of this block is read
          store_unattended_block(c, it, cell0, nb);
          prefetched = false;
          return;
        }
        const item_rows rows(c, seg, h0, H);
        const next_block nx = next_block_after(c, it, view, seg, j0, cell0);
        if (!prefetched) prefetch_first_block(rows, j0, js, n_js, order);
        if (order == decode_order::address)
          logits_in_address_order<KE>(c, rows, j0, js, n_js, H, w);
        else if (order == decode_order::groups)
          logits_in_groups<KE>(c, rows, j0, js, n_js, H, R,
                               rows.k_pass_ahead(j0, js, n_js, k_group_ahead_bytes), tiles, w);
        else if (order == decode_order::k_groups)
          logits_in_groups<KE>(c, rows, j0, js, n_js, H, R,
                               rows.k_pass_ahead_to_next_k(j0, js, n_js, nx, k_group_ahead_bytes),
                               tiles, w);
        else
          logits_by_head<KE>(c, rows, j0, js, n_js, H, R, tiles, w);
        // Mask, soft-cap and the online softmax of every (head, row).
        for (std::size_t h = 0; h < H; ++h)
          for (std::size_t ti = 0; ti < t.count; ++ti)
            for (std::size_t hh = 0; hh < g; ++hh) {
              const std::size_t r = h * R + ti * g + hh;
              float* s = w.s + r * Bc;
              cap_and_mask(c, ti, s, nb, w);
              store_logits(c, t, ti, (h0 + h) * g + hh, cell0, s, nb);
              const float alpha = softmax_block(s, nb, w.m[r], w.l[r]);
              if (alpha != 1.0f) scale_row(w.o + r * dv, dv, alpha);
            }
        if (order == decode_order::address)
          values_in_address_order<VE>(c, rows, j0, js, n_js, H, nx, w);
        else if (order == decode_order::groups)
          values_in_groups<VE>(c, rows, j0, js, n_js, H, R, nx, tiles, w);
        else
          values_by_head<VE>(c, rows, j0, js, n_js, H, R, nx, order == decode_order::k_groups,
                             tiles, w);
        prefetched = nx.cells != 0;
      });
}
