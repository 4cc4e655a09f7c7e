// The decode path of attention::detail::block_kernels<Isa>: a few query rows per KV
// head, every KV head in one item. DRAM is read in address order only, by software
// prefetch: visiting the heads of a group of cells one head at a time (a 2 KiB stride
// at 8 x 128 f16) let the hardware prefetchers stream only 16 of the 38 GB/s a plain
// sequential read gets on this machine (measured). Per 64-cell block there are two
// passes, and each keeps DRAM busy with the other's data: the K pass prefetches this
// block's V rows, the V pass prefetches the next block's K rows, each spread evenly
// over the pass's steps (the first block of an item prefetches its own K up front).
// Both passes can then go head by head, with K and V from cache: Q.K in tiles of four
// query rows x four cells of one head (8 loads per 16 FMAs; the earlier per-cell tile
// of four heads x four rows needed 20 and read cell rows straight from DRAM), P.V with
// the outputs in registers across the block's cells. Against the per-cell K pass:
// +8-10% of the read bandwidth measured in the same moments at 16k and 32k cells
// (docs/performance.md, "Decode: Q.K head by head from cache"). Quantised K keeps the
// per-cell pass: each cell row is decoded once for all heads (cell_logits).
// Included after tile_math.inl and block_steps.inl; @pre d_k % L == 0, d_v % L == 0.

/// s[hh * s_head + rr * s_row] = q[hh, rr] . k_hh for HH heads of one cell row
/// (heads `k_head` elements apart) and RR rows per head. q is packed
/// [d_k / L][HH][RR][L], so every query vector is at a constant offset from one
/// pointer: with 16 separate row pointers GCC ran out of registers (measured).
template <class RE, std::size_t HH, std::size_t RR>
static MNEMO_INLINE void cell_tile(const float* qp, std::size_t dk, const RE* k, std::size_t k_head,
                                   float* s, std::size_t s_head, std::size_t s_row) noexcept {
  vf acc[HH][RR];
#pragma GCC unroll 4
  for (std::size_t h = 0; h < HH; ++h)
#pragma GCC unroll 4
    for (std::size_t r = 0; r < RR; ++r) acc[h][r] = V::zero();
  for (std::size_t i = 0; i < dk; i += L, qp += HH * RR * L) {
#pragma GCC unroll 4
    for (std::size_t h = 0; h < HH; ++h) {
      const vf kv = load_row(k + h * k_head, i);
#pragma GCC unroll 4
      for (std::size_t r = 0; r < RR; ++r)
        acc[h][r] = V::fma(V::load(qp + (h * RR + r) * L), kv, acc[h][r]);
    }
  }
  float tmp[4];
#pragma GCC unroll 4
  for (std::size_t r = 0; r < RR; ++r) {
    if constexpr (HH == 4) {
      reduce_add4<vf>(acc[0][r], acc[1][r], acc[2][r], acc[3][r], tmp);
    } else {
#pragma GCC unroll 4
      for (std::size_t h = 0; h < HH; ++h) tmp[h] = V::reduce_add(acc[h][r]);
    }
#pragma GCC unroll 4
    for (std::size_t h = 0; h < HH; ++h) s[h * s_head + r * s_row] = tmp[h];
  }
}

template <class RE, std::size_t HH>
static MNEMO_INLINE void cell_tile_r(std::size_t RR, const float* qp, std::size_t dk, const RE* k,
                                     std::size_t k_head, float* s, std::size_t s_head,
                                     std::size_t s_row) noexcept {
  switch (RR) {
    case 1: cell_tile<RE, HH, 1>(qp, dk, k, k_head, s, s_head, s_row); break;
    case 2: cell_tile<RE, HH, 2>(qp, dk, k, k_head, s, s_head, s_row); break;
    case 3: cell_tile<RE, HH, 3>(qp, dk, k, k_head, s, s_head, s_row); break;
    default: cell_tile<RE, HH, 4>(qp, dk, k, k_head, s, s_head, s_row); break;
  }
}

/// Calls fn(h0, HH, r0, RR, packed offset) for the (<= 4 heads) x (<= 4 rows) tiles
/// of H heads x R rows, in the order pack_queries lays them out.
template <class Fn>
static MNEMO_INLINE void for_each_query_tile(std::size_t H, std::size_t R, std::size_t dk,
                                             Fn&& fn) {
  std::size_t off = 0;
  for (std::size_t h0 = 0; h0 < H; h0 += 4) {
    const std::size_t HH = H - h0 < 4 ? H - h0 : 4;
    for (std::size_t r0 = 0; r0 < R; r0 += 4) {
      const std::size_t RR = R - r0 < 4 ? R - r0 : 4;
      fn(h0, HH, r0, RR, off);
      off += HH * RR * dk;
    }
  }
}

/// qp = q [H, R, d_k] packed tile by tile as [d_k / L][HH][RR][L] for cell_tile.
static void pack_queries(const float* q, std::size_t H, std::size_t R, std::size_t dk,
                         float* qp) noexcept {
  for_each_query_tile(
      H, R, dk,
      [&](std::size_t h0, std::size_t HH, std::size_t r0, std::size_t RR, std::size_t off) {
        float* t = qp + off;
        for (std::size_t i = 0; i < dk; i += L)
          for (std::size_t h = 0; h < HH; ++h)
            for (std::size_t r = 0; r < RR; ++r, t += L)
              for (std::size_t x = 0; x < L; ++x) t[x] = q[((h0 + h) * R + r0 + r) * dk + i + x];
      });
}

/// w.s[(h * R + r) * Bc + j] = q[h, r] . k_h for the H heads of one cell row k and
/// the R rows of each head (qp: pack_queries of [H, R, d_k]).
template <class RE>
static void cell_logits(const float* qp, std::size_t H, std::size_t R, std::size_t dk, const RE* k,
                        std::size_t k_head, float* s, std::size_t j) noexcept {
  constexpr std::size_t Bc = detail::k_block_cells;
  for_each_query_tile(
      H, R, dk,
      [&](std::size_t h0, std::size_t HH, std::size_t r0, std::size_t RR, std::size_t off) {
        const RE* kt = k + h0 * k_head;
        float* st = s + (h0 * R + r0) * Bc + j;
        switch (HH) {
          case 1: cell_tile_r<RE, 1>(RR, qp + off, dk, kt, k_head, st, R * Bc, Bc); break;
          case 2: cell_tile_r<RE, 2>(RR, qp + off, dk, kt, k_head, st, R * Bc, Bc); break;
          case 3: cell_tile_r<RE, 3>(RR, qp + off, dk, kt, k_head, st, R * Bc, Bc); break;
          default: cell_tile_r<RE, 4>(RR, qp + off, dk, kt, k_head, st, R * Bc, Bc); break;
        }
      });
}

/// s[r * Bc + j] = q[r] . k_j for the R rows of one KV head and its kept cells js
/// (krow[x]: cell js[x]'s row of that head), in tiles of four rows x four cells: each
/// K vector is loaded once for four rows and each query vector once for four cells,
/// 8 loads per 16 FMAs. K comes from cache here (the previous block's V pass
/// prefetched it), so heads can be visited one at a time. pf steps once per tile.
template <class RE>
MNEMO_NOINLINE static void head_logits(const float* q, std::size_t R, std::size_t dk,
                                       const RE* const* krow, const std::uint32_t* js,
                                       std::size_t n_js, float* s, prefetch_cursor& pf) noexcept {
  constexpr std::size_t Bc = detail::k_block_cells;
  prefetch_cursor cur = pf;  // a local copy stays in registers (pf may alias s)
  float tmp[16];
  for (std::size_t x0 = 0; x0 < n_js; x0 += 4) {
    const std::size_t C = n_js - x0 < 4 ? n_js - x0 : 4;
    for (std::size_t r0 = 0; r0 < R; r0 += 4) {
      const std::size_t G = R - r0 < 4 ? R - r0 : 4;
      cur.step();
      if (js[x0 + C - 1] - js[x0] == C - 1) {  // consecutive cells: store the sums in place
        dot_tile_any<RE>(G, C, q + r0 * dk, dk, krow + x0, dk, s + r0 * Bc + js[x0], Bc);
        continue;
      }
      dot_tile_any<RE>(G, C, q + r0 * dk, dk, krow + x0, dk, tmp);
      for (std::size_t r = 0; r < G; ++r)
        for (std::size_t x = 0; x < C; ++x) s[(r0 + r) * Bc + js[x0 + x]] = tmp[r * 4 + x];
    }
  }
  pf = cur;
}

/// o[h, r] += p[h, r, j] * v_h for the H heads of one cell row v and the R rows of
/// each head (o: [H, R, d_v]); each V vector is loaded once for the R rows.
template <class RE>
static void cell_values(const float* s, std::size_t H, std::size_t R, std::size_t dv, const RE* v,
                        std::size_t v_head, float* o, std::size_t j) noexcept {
  constexpr std::size_t Bc = detail::k_block_cells;
  for (std::size_t h = 0; h < H; ++h) {
    const RE* vh = v + h * v_head;
    for (std::size_t r0 = 0; r0 < R; r0 += 4) {
      const std::size_t RR = R - r0 < 4 ? R - r0 : 4;
      vf p[4];
      for (std::size_t r = 0; r < RR; ++r) p[r] = V::set1(s[(h * R + r0 + r) * Bc + j]);
      float* oh = o + (h * R + r0) * dv;
      for (std::size_t i = 0; i < dv; i += L) {
        const vf x = load_row(vh, i);
        for (std::size_t r = 0; r < RR; ++r)
          V::store(oh + r * dv + i, V::fma(p[r], x, V::load(oh + r * dv + i)));
      }
    }
  }
}

/// Asks for bytes [p, p + n) to be brought into the machine's simd::prefetch_target.
static MNEMO_INLINE void prefetch_rows(const void* p, std::size_t n) noexcept {
  const char* b = static_cast<const char*>(p);
  const simd::prefetch_target t = simd::current_prefetch_target();
  for (std::size_t i = 0; i < n; i += 64) simd::prefetch(b + i, t);
}

/// A cell row of the item's heads: in place for f32/f16/bf16, else decoded into buf.
template <class E>
static auto cell_row(const void* base, std::size_t stride, std::size_t cell, std::size_t offset,
                     std::size_t n, float* buf) noexcept {
  if constexpr (is_read_in_place<E>) {
    (void)n;
    (void)buf;
    return head_row<E>(base, stride, cell, offset);
  } else {
    rows::decode(head_row<E>(base, stride, cell, offset), buf, n);
    return static_cast<const float*>(buf);
  }
}

template <class KE, class VE>
static void run_decode_item(const detail::call& c, const detail::item& it,
                            const detail::scratch& w) noexcept {
  constexpr std::size_t Bc = detail::k_block_cells;
  const detail::tile& t = *it.t;
  const std::size_t g = c.sh.group(), dk = c.sh.d_k, dv = c.sh.d_v, R = t.count * g;
  const std::size_t h0 = it.head_begin, H = it.head_end - it.head_begin;
  gather_queries(c, it, w.q);
  if constexpr (!is_read_in_place<KE>) pack_queries(w.q, H, R, dk, w.qp);  // for cell_logits
  for (std::size_t i = 0; i < H * R * dv; ++i) w.o[i] = 0.0f;
  for (std::size_t r = 0; r < H * R; ++r) {
    w.m[r] = -__builtin_inff();
    w.l[r] = 0.0f;
  }
  std::uint32_t js[Bc];
  bool k_ahead = false;  // the previous V pass prefetched this block's K rows
  for_each_block(
      c.streams[t.stream], it.cell_begin, it.cell_end,
      [&](const kv_segment& seg, std::size_t j0, std::size_t nb, std::size_t cell0) {
        const std::size_t n_js = block_mask(c, t, seg, j0, nb, w, js);
        if (n_js == 0) {  // no K/V byte of this block is read
          k_ahead = false;
          return;
        }
        if (!k_ahead && is_read_in_place<KE>)  // first block: its K in address order first
          prefetch_rows(head_row<KE>(seg.k, seg.k_stride, j0 + js[0], 0),
                        (js[n_js - 1] - js[0]) * seg.k_stride + (h0 + H) * c.k_head_bytes);
        // This item's cells of this segment end here (segment-local index).
        const std::size_t local_end =
            it.cell_end - (cell0 - j0) < seg.n_cells ? it.cell_end - (cell0 - j0) : seg.n_cells;
        if constexpr (is_read_in_place<KE>) {
          // K rows are in cache (the previous block's V pass prefetched them), so the K
          // pass goes head by head; meanwhile this block's V rows are prefetched in
          // address order, spread over its tiles.
          prefetch_cursor vpf;
          if constexpr (is_read_in_place<VE>) {
            vpf.p =
                static_cast<const char*>(seg.v) + (j0 + js[0]) * seg.v_stride + h0 * c.v_head_bytes;
            vpf.end = static_cast<const char*>(seg.v) + (j0 + js[n_js - 1]) * seg.v_stride +
                      (h0 + H) * c.v_head_bytes;
            const std::size_t lines = static_cast<std::size_t>(vpf.end - vpf.p + 63) / 64;
            const std::size_t steps = H * ((n_js + 3) / 4) * ((R + 3) / 4);
            vpf.per_step = (lines + steps - 1) / steps;
          }
          const KE* krow[Bc];
          for (std::size_t h = 0; h < H; ++h) {
            for (std::size_t x = 0; x < n_js; ++x)
              krow[x] = head_row<KE>(seg.k, seg.k_stride, j0 + js[x], (h0 + h) * c.k_head_bytes);
            head_logits<KE>(w.q + h * R * dk, R, dk, krow, js, n_js, w.s + h * R * Bc, vpf);
          }
        } else {  // quantised K: each cell row decoded once for all heads
          for (std::size_t x = 0; x < n_js; ++x) {
            const float* k =
                cell_row<KE>(seg.k, seg.k_stride, j0 + js[x], h0 * c.k_head_bytes, H * dk, w.kf);
            if constexpr (is_read_in_place<VE>)  // V of this cell, in address order
              prefetch_rows(head_row<VE>(seg.v, seg.v_stride, j0 + js[x], h0 * c.v_head_bytes),
                            H * c.v_head_bytes);
            cell_logits(w.qp, H, R, dk, k, dk, w.s, js[x]);
          }
        }
        // Mask, soft-cap and the online softmax of every (head, row).
        for (std::size_t h = 0; h < H; ++h)
          for (std::size_t ti = 0; ti < t.count; ++ti)
            for (std::size_t hh = 0; hh < g; ++hh) {
              const std::size_t r = h * R + ti * g + hh;
              float* s = w.s + r * Bc;
              cap_and_mask(c, ti, s, nb, w);
              const float alpha = softmax_block(s, nb, w.m[r], w.l[r]);
              if (alpha != 1.0f) scale_row(w.o + r * dv, dv, alpha);
            }
        if constexpr (is_read_in_place<VE>) {
          // V rows are in cache by now, so any order streams: one head at a time with the
          // output rows in registers across all the block's cells. Meanwhile the next
          // block's K rows are prefetched in address order, spread evenly over this
          // pass, so that DRAM is kept busy here too (the K pass has the V stream).
          prefetch_cursor pf;
          const std::size_t next_begin = j0 + Bc;  // 2 blocks ahead measured slower
          const std::size_t next_end = next_begin + Bc < local_end ? next_begin + Bc : local_end;
          if (next_begin < next_end) {  // K bytes of any element type
            pf.p = static_cast<const char*>(seg.k) + next_begin * seg.k_stride;
            pf.end = static_cast<const char*>(seg.k) + (next_end - 1) * seg.k_stride +
                     (h0 + H) * c.k_head_bytes;
            const std::size_t lines = static_cast<std::size_t>(pf.end - pf.p + 63) / 64;
            const std::size_t steps = H * pv_steps(R, n_js, dv);
            pf.per_step = (lines + steps - 1) / steps;
          }
          k_ahead = next_begin < next_end;
          const VE* vrow[Bc];
          for (std::size_t h = 0; h < H; ++h) {
            for (std::size_t x = 0; x < n_js; ++x)
              vrow[x] = head_row<VE>(seg.v, seg.v_stride, j0 + js[x], (h0 + h) * c.v_head_bytes);
            pv_any<VE>(R, w.s + h * R * Bc, Bc, js, n_js, vrow, dv, w.o + h * R * dv, dv, pf);
          }
        } else {
          for (std::size_t x = 0; x < n_js; ++x) {
            const auto v =
                cell_row<VE>(seg.v, seg.v_stride, j0 + js[x], h0 * c.v_head_bytes, H * dv, w.vf);
            cell_values(w.s, H, R, dv, v, dv, w.o, js[x]);
          }
        }
      });
}
