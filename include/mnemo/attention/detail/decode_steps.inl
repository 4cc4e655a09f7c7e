// The decode path of attention::detail::block_kernels<Isa>: a few query rows per KV
// head, every KV head in one item, cells visited in address order. Each group of
// four cells is finished for all heads before the next, so a thread streams whole
// cell rows ([n_head_kv, d] K, then V) like a sequential read: visiting one head's
// slice of every cell instead (a 2 KiB stride at 8 x 128 f16) halved the bandwidth.
// Included after tile_math.inl and block_steps.inl; @pre d_k % L == 0, d_v % L == 0.

/// Cells handled together: four K rows per dot tile (reduce_add4), and the unit of
/// decoding for quantised rows.
static constexpr std::size_t k_decode_group = 4;

/// Pointers to the K (or V) rows of cells js[0, n) for head hk, read in place, or
/// decoded into `buf` ([n, heads, d] f32) for quantised types.
template <class E>
static auto group_rows(const void* base, std::size_t stride, std::size_t j0,
                       const std::uint32_t* js, std::size_t n, std::size_t head_bytes,
                       std::size_t h0, std::size_t heads, std::size_t d, float* buf,
                       std::size_t hk) noexcept {
  using RE = std::conditional_t<is_read_in_place<E>, E, float>;
  struct rows4 {
    const RE* p[k_decode_group];
  } r{};
  for (std::size_t x = 0; x < n; ++x) {
    if constexpr (is_read_in_place<E>) {
      r.p[x] = head_row<E>(base, stride, j0 + js[x], hk * head_bytes);
    } else {
      r.p[x] = buf + (x * heads + (hk - h0)) * d;
    }
  }
  return r;
}

/// Decodes the item's heads of cells js[0, n) into buf [n, heads, d] (quantised only).
template <class E>
static void decode_group(const void* base, std::size_t stride, std::size_t j0,
                         const std::uint32_t* js, std::size_t n, std::size_t head_bytes,
                         std::size_t h0, std::size_t heads, std::size_t d, float* buf) noexcept {
  if constexpr (!is_read_in_place<E>) {
    for (std::size_t x = 0; x < n; ++x)
      rows::decode(head_row<E>(base, stride, j0 + js[x], h0 * head_bytes), buf + x * heads * d,
                   heads * d);
  }
}

/// Software prefetch distance in cells (of the item's heads).
static constexpr std::size_t k_prefetch_cells = 16;

/// Prefetches bytes [lo, lo + n) of the k_decode_group cell rows from `cell` on.
static MNEMO_INLINE void prefetch_rows(const void* base, std::size_t stride, std::size_t cell,
                                       std::size_t n_cells, std::size_t lo, std::size_t n) noexcept {
  for (std::size_t x = 0; x < k_decode_group && cell + x < n_cells; ++x) {
    const char* row = static_cast<const char*>(base) + (cell + x) * stride + lo;
    for (std::size_t b = 0; b < n; b += 64) __builtin_prefetch(row + b, 0, 3);
  }
}

template <class KE, class VE>
static void run_decode_item(const detail::call& c, const detail::item& it,
                            const detail::scratch& w) noexcept {
  constexpr std::size_t Bc = detail::k_block_cells, NG = k_decode_group;
  const detail::tile& t = *it.t;
  const std::size_t g = c.sh.group(), dk = c.sh.d_k, dv = c.sh.d_v, R = t.count * g;
  const std::size_t h0 = it.head_begin, H = it.head_end - it.head_begin;
  gather_queries(c, it, w.q);
  for (std::size_t i = 0; i < H * R * dv; ++i) w.o[i] = 0.0f;
  for (std::size_t r = 0; r < H * R; ++r) {
    w.m[r] = -__builtin_inff();
    w.l[r] = 0.0f;
  }
  std::uint32_t js[Bc];
  float tmp[16];
  for_each_block(c.streams[t.stream], it.cell_begin, it.cell_end,
                 [&](const kv_segment& seg, std::size_t j0, std::size_t nb, std::size_t) {
    const std::size_t n_js = block_mask(c, t, seg, j0, nb, w, js);
    if (n_js == 0) return;  // no K/V byte of this block is read
    // Logits of every row for the cells some token keeps, four cells at a time.
    for (std::size_t x0 = 0; x0 < n_js; x0 += NG) {
      const std::size_t C = n_js - x0 < NG ? n_js - x0 : NG;
      prefetch_rows(seg.k, seg.k_stride, j0 + js[x0] + k_prefetch_cells, seg.n_cells,
                    h0 * c.k_head_bytes, H * c.k_head_bytes);
      decode_group<KE>(seg.k, seg.k_stride, j0, js + x0, C, c.k_head_bytes, h0, H, dk, w.kf);
      for (std::size_t h = 0; h < H; ++h) {
        const auto k = group_rows<KE>(seg.k, seg.k_stride, j0, js + x0, C, c.k_head_bytes, h0, H,
                                      dk, w.kf, h0 + h);
        for (std::size_t r0 = 0; r0 < R; r0 += 4) {
          const std::size_t G = R - r0 < 4 ? R - r0 : 4;
          dot_tile_any(G, C, w.q + (h * R + r0) * dk, dk, k.p, dk, tmp);
          for (std::size_t i = 0; i < G; ++i)
            for (std::size_t x = 0; x < C; ++x) w.s[(h * R + r0 + i) * Bc + js[x0 + x]] = tmp[i * 4 + x];
        }
      }
    }
    // Mask, scale, soft-cap and the online softmax of every (head, row).
    for (std::size_t h = 0; h < H; ++h)
      for (std::size_t ti = 0; ti < t.count; ++ti) {
        for (std::size_t hh = 0; hh < g; ++hh) {
          const std::size_t r = h * R + ti * g + hh;
          float* s = w.s + r * Bc;
          cap_and_mask(c, ti, s, nb, w);
          const float alpha = softmax_block(s, nb, w.m[r], w.l[r]);
          if (alpha != 1.0f) scale_row(w.o + r * dv, dv, alpha);
        }
      }
    // Values, in the same cell order.
    for (std::size_t x0 = 0; x0 < n_js; x0 += NG) {
      const std::size_t C = n_js - x0 < NG ? n_js - x0 : NG;
      prefetch_rows(seg.v, seg.v_stride, j0 + js[x0] + k_prefetch_cells, seg.n_cells,
                    h0 * c.v_head_bytes, H * c.v_head_bytes);
      decode_group<VE>(seg.v, seg.v_stride, j0, js + x0, C, c.v_head_bytes, h0, H, dv, w.vf);
      for (std::size_t h = 0; h < H; ++h) {
        const auto v = group_rows<VE>(seg.v, seg.v_stride, j0, js + x0, C, c.v_head_bytes, h0, H,
                                      dv, w.vf, h0 + h);
        pv_any(R, w.s + h * R * Bc, Bc, js + x0, C, v.p, dv, w.o + h * R * dv, dv);
      }
    }
  });
}
