// The steps of one attention work item (see item.hpp) for
// attention::detail::block_kernels<Isa>: masks, logits, softmax, values, export.
// Included once per ISA inside its target region after tile_math.inl; needs `isa`,
// `V = simd::ops<isa>` and `rows = dtype::row_kernels<isa>` in scope.

template <class E>
static constexpr bool is_read_in_place =
    std::is_same_v<E, float> || std::is_same_v<E, dtype::f16> || std::is_same_v<E, dtype::bf16>;

/// w.q[hk - hk0] holds the tile's rows for KV head hk: row ti * g + hh is token
/// order[first + ti], query head hk * g + hh, times the logit scale.   [H, R, d_k]
static void gather_queries(const detail::call& c, const detail::item& it, float* dst) noexcept {
  const std::size_t g = c.sh.group(), dk = c.sh.d_k;
  const detail::tile& t = *it.t;
  for (std::size_t hk = it.head_begin; hk < it.head_end; ++hk)
    for (std::size_t ti = 0; ti < t.count; ++ti) {
      const std::size_t tok = c.order[t.first + ti];
      const float* src = c.q->q + (tok * c.sh.n_head + hk * g) * dk;
      float* d = dst + ((hk - it.head_begin) * t.count + ti) * g * dk;
      for (std::size_t i = 0; i < g * dk; ++i) d[i] = src[i] * c.p.scale;
    }
}

/// Fills w.keep [tokens, Bc] for cells [j0, j0 + nb) of `seg` and w.full [tokens]
/// (token keeps every cell of the block); returns how many cells some token keeps,
/// listed in js. A tile holds one sequence, so ownership is tested once per cell,
/// and a token whose causal/window interval covers the block's lowest and highest
/// positions keeps the block whole without a test per pair.
static std::size_t block_mask(const detail::call& c, const detail::tile& t, const kv_segment& seg,
                              std::size_t j0, std::size_t nb, const detail::scratch& w,
                              std::uint32_t* js) noexcept {
  constexpr std::size_t Bc = detail::k_block_cells;
  const seq_id sq = c.q->seq[c.order[t.first]];
  std::uint8_t ok[Bc];
  pos_t lo = 0, hi = -1;
  std::size_t n_ok = 0;
  for (std::size_t j = 0; j < nb; ++j) {
    const pos_t p = seg.pos[j0 + j];
    ok[j] = p >= 0 && (seg.owners == nullptr || seg.owners[j0 + j].contains(sq));
    if (!ok[j]) continue;
    lo = n_ok == 0 || p < lo ? p : lo;
    hi = n_ok == 0 || p > hi ? p : hi;
    ++n_ok;
  }
  if (n_ok == 0) return 0;
  std::uint8_t any[Bc] = {};
  for (std::size_t ti = 0; ti < t.count; ++ti) {
    const pos_t pq = c.q->pos[c.order[t.first + ti]];
    std::uint8_t* kr = w.keep + ti * Bc;
    const bool whole = keeps_position(c.p, lo, pq) && keeps_position(c.p, hi, pq);
    w.full[ti] = whole && n_ok == nb;
    for (std::size_t j = 0; j < nb; ++j) {
      kr[j] = whole ? ok[j] : ok[j] && keeps_position(c.p, seg.pos[j0 + j], pq);
      any[j] |= kr[j];
    }
  }
  std::size_t n = 0;
  for (std::size_t j = 0; j < nb; ++j) {
    w.keep_any[j] = any[j];
    if (any[j]) js[n++] = static_cast<std::uint32_t>(j);
  }
  return n;
}

/// Soft-caps (when on) the logits of a token's rows and masks the cells it does not
/// keep with -inf. The scale is folded into the gathered queries.
static void cap_and_mask(const detail::call& c, std::size_t ti, float* s, std::size_t nb,
                         const detail::scratch& w) noexcept {
  if (c.p.softcap > 0.0f) soft_cap(s, nb, c.p.softcap);
  if (w.full[ti]) return;
  const std::uint8_t* kr = w.keep + ti * detail::k_block_cells;
  for (std::size_t j = 0; j < nb; ++j)
    if (!kr[j]) s[j] = -__builtin_inff();
}

/// Keeps the block's logits s[0, nb) of tile row ti, query head h, in the call's logit
/// store, when an export wants that row.
static void store_logits(const detail::call& c, const detail::tile& t, std::size_t ti,
                         std::size_t h, std::size_t cell0, const float* s,
                         std::size_t nb) noexcept {
  const detail::logit_store& ls = c.store;
  if (ls.base == nullptr) return;
  const std::uint32_t slot = ls.slot[c.order[t.first + ti]];
  if (slot == detail::logit_store::no_slot) return;
  const detail::logit_store::stream_part& part = ls.streams[t.stream];
  std::memcpy(ls.base + part.offset + (slot * c.sh.n_head + h) * part.n_cells + cell0, s,
              nb * sizeof(float));
}

/// store_logits for a block that no row of the item attends: -inf for all of them.
static void store_unattended_block(const detail::call& c, const detail::item& it, std::size_t cell0,
                                   std::size_t nb) noexcept {
  if (c.store.base == nullptr) return;
  float none[detail::k_block_cells];
  for (std::size_t j = 0; j < nb; ++j) none[j] = -__builtin_inff();
  const std::size_t g = c.sh.group();
  for (std::size_t ti = 0; ti < it.t->count; ++ti)
    for (std::size_t h = it.head_begin * g; h < it.head_end * g; ++h)
      store_logits(c, *it.t, ti, h, cell0, none, nb);
}

/// mass[j] += e^(lg[j] - lse) for j in [0, n): a row's softmax weights from its stored
/// logits and final log-sum-exp (-inf logits add nothing).
static void add_softmax_weights(const float* lg, std::size_t n, float lse, float* mass) noexcept {
  const vf l = V::set1(lse);
  std::size_t j = 0;
  for (; j + L <= n; j += L)
    V::store(mass + j, V::add(V::load(mass + j), V::exp(V::sub(V::load(lg + j), l))));
  for (; j < n; ++j) mass[j] += std::exp(lg[j] - lse);
}

template <class E>
static const E* head_row(const void* base, std::size_t stride, std::size_t cell,
                         std::size_t head_offset) noexcept {
  return reinterpret_cast<const E*>(static_cast<const std::byte*>(base) + cell * stride +
                                    head_offset);
}

/// Decode form: logits of the few rows of each token against the cells it keeps,
/// four cells and up to four heads at a time, K read in place (f32/f16/bf16) or from
/// the decoded block (quantised types, d_k not a multiple of L).
template <class RE>
static void logits_dot_form(const detail::call& c, const detail::tile& t, const float* q,
                            const RE* const* krow, const detail::scratch& w,
                            const std::uint32_t* js, std::size_t n_js) noexcept {
  constexpr std::size_t Bc = detail::k_block_cells;
  const std::size_t g = c.sh.group(), dk = c.sh.d_k;
  std::uint32_t mine[Bc];
  const RE* ptr[4];
  float tmp[16];
  for (std::size_t ti = 0; ti < t.count; ++ti) {
    std::size_t n = 0;
    for (std::size_t x = 0; x < n_js; ++x)
      if (w.keep[ti * Bc + js[x]]) mine[n++] = js[x];
    for (std::size_t c0 = 0; c0 < n; c0 += 4) {
      const std::size_t C = n - c0 < 4 ? n - c0 : 4;
      for (std::size_t x = 0; x < C; ++x) ptr[x] = krow[mine[c0 + x]];
      for (std::size_t h0 = 0; h0 < g; h0 += 4) {
        const std::size_t G = g - h0 < 4 ? g - h0 : 4;
        dot_tile_any<RE>(G, C, q + (ti * g + h0) * dk, dk, ptr, dk, tmp);
        for (std::size_t h = 0; h < G; ++h)
          for (std::size_t x = 0; x < C; ++x)
            w.s[(ti * g + h0 + h) * Bc + mine[c0 + x]] = tmp[h * 4 + x];
      }
    }
  }
}

/// w.s[r, j] = masked, scaled, soft-capped logits of head hk's rows (q: [R, d_k])
/// against cells [j0, j0 + nb) of `seg`; -inf where masked.
template <class KE>
static void block_logits(const detail::call& c, const detail::tile& t, std::size_t hk,
                         const float* q, const kv_segment& seg, std::size_t j0, std::size_t nb,
                         const detail::scratch& w, const std::uint32_t* js,
                         std::size_t n_js) noexcept {
  constexpr std::size_t Bc = detail::k_block_cells;
  const std::size_t g = c.sh.group(), dk = c.sh.d_k, R = t.count * g;
  const std::size_t k_off = hk * c.k_head_bytes;
  // Entries a token does not keep are left unwritten here and masked below.
  if (R <= detail::k_dot_form_max_rows) {
    bool read_in_place = false;
    if constexpr (is_read_in_place<KE>) {
      if (dk % L == 0) {
        const KE* krow[Bc];
        for (std::size_t x = 0; x < n_js; ++x)
          krow[js[x]] = head_row<KE>(seg.k, seg.k_stride, j0 + js[x], k_off);
        logits_dot_form<KE>(c, t, q, krow, w, js, n_js);
        read_in_place = true;
      }
    }
    if (!read_in_place) {
      const float* krow[Bc];
      for (std::size_t x = 0; x < n_js; ++x) {
        float* dst = w.kf + js[x] * dk;
        rows::decode(head_row<KE>(seg.k, seg.k_stride, j0 + js[x], k_off), dst, dk);
        krow[js[x]] = dst;
      }
      if (dk % L == 0) {
        logits_dot_form<float>(c, t, q, krow, w, js, n_js);
      } else {  // an odd head size: one row at a time through the GEMM tail path
        for (std::size_t x = 0; x < n_js; ++x) {
          // gemm_strip accumulates into C: start every logit at 0.
          for (std::size_t r = 0; r < R; ++r) w.s[r * Bc + js[x]] = 0.0f;
          gemm_strip(R, 1, dk, q, dk, krow[js[x]], 1, w.s + js[x], Bc);
        }
      }
    }
  } else {
    // Prefill: decode the kept cells, transpose to [d_k, nbp] and run the GEMM.
    const std::size_t nbp = (nb + L - 1) / L * L;
    for (std::size_t j = 0; j < nbp; ++j) {
      float* kf = w.kf + j * dk;
      if (j < nb && w.keep_any[j]) {
        rows::decode(head_row<KE>(seg.k, seg.k_stride, j0 + j, k_off), kf, dk);
      } else {
        for (std::size_t i = 0; i < dk; ++i) kf[i] = 0.0f;
      }
    }
    transpose_matrix(w.kf, nbp, dk, dk, w.kt, nbp);
    for (std::size_t r = 0; r < R; ++r)
      for (std::size_t j = 0; j < nbp; ++j) w.s[r * Bc + j] = 0.0f;
    gemm_acc(R, nbp, dk, q, dk, w.kt, nbp, w.s, Bc);
  }
  for (std::size_t ti = 0; ti < t.count; ++ti)
    for (std::size_t hh = 0; hh < g; ++hh) cap_and_mask(c, ti, w.s + (ti * g + hh) * Bc, nb, w);
}

/// o[R, d_v] += P[R, kept cells] . V[kept cells, d_v] for head hk.
template <class VE>
static void block_values(const detail::call& c, std::size_t R, std::size_t hk,
                         const kv_segment& seg, std::size_t j0, std::size_t nb,
                         const detail::scratch& w, const std::uint32_t* js, std::size_t n_js,
                         float* o) noexcept {
  constexpr std::size_t Bc = detail::k_block_cells;
  const std::size_t dv = c.sh.d_v, v_off = hk * c.v_head_bytes;
  if (dv % L == 0) {
    if constexpr (is_read_in_place<VE>) {
      const VE* vrow[Bc];
      for (std::size_t x = 0; x < n_js; ++x)
        vrow[x] = head_row<VE>(seg.v, seg.v_stride, j0 + js[x], v_off);
      prefetch_cursor none;
      pv_any<VE>(R, w.s, Bc, js, n_js, vrow, dv, o, dv, none);
      return;
    }
    const float* vrow[Bc];
    for (std::size_t x = 0; x < n_js; ++x) {
      float* dst = w.vf + x * dv;
      rows::decode(head_row<VE>(seg.v, seg.v_stride, j0 + js[x], v_off), dst, dv);
      vrow[x] = dst;
    }
    prefetch_cursor none;
    pv_any<float>(R, w.s, Bc, js, n_js, vrow, dv, o, dv, none);
    return;
  }
  // An odd value size: decode the block densely (zeros where no row attends).
  for (std::size_t j = 0; j < nb; ++j)
    for (std::size_t i = 0; i < dv; ++i) w.vf[j * dv + i] = 0.0f;
  for (std::size_t x = 0; x < n_js; ++x)
    rows::decode(head_row<VE>(seg.v, seg.v_stride, j0 + js[x], v_off), w.vf + js[x] * dv, dv);
  gemm_acc(R, dv, nb, w.s, Bc, w.vf, dv, o, dv);
}

/// Calls fn(seg, j0, nb, cell0) for every block of cells [begin, end) of a view;
/// blocks never cross a segment; cell0 is the stream-wide index of the first cell.
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
/// each (head, row) of the item over its cells.
template <class KE, class VE>
static void run_item(const detail::call& c, const detail::item& it,
                     const detail::scratch& w) noexcept {
  constexpr std::size_t Bc = detail::k_block_cells;
  const detail::tile& t = *it.t;
  const std::size_t g = c.sh.group(), dk = c.sh.d_k, dv = c.sh.d_v, R = t.count * g;
  const std::size_t H = it.head_end - it.head_begin;
  gather_queries(c, it, w.q);
  for (std::size_t i = 0; i < H * R * dv; ++i) w.o[i] = 0.0f;
  for (std::size_t r = 0; r < H * R; ++r) {
    w.m[r] = -__builtin_inff();
    w.l[r] = 0.0f;
  }
  std::uint32_t js[Bc];
  for_each_block(c.streams[t.stream], it.cell_begin, it.cell_end,
                 [&](const kv_segment& seg, std::size_t j0, std::size_t nb, std::size_t cell0) {
                   const std::size_t n_js = block_mask(c, t, seg, j0, nb, w, js);
                   if (n_js == 0) {  // no K/V byte of this block is read
                     store_unattended_block(c, it, cell0, nb);
                     return;
                   }
                   for (std::size_t h = 0; h < H; ++h) {
                     const std::size_t hk = it.head_begin + h;
                     float* o = w.o + h * R * dv;
                     block_logits<KE>(c, t, hk, w.q + h * R * dk, seg, j0, nb, w, js, n_js);
                     for (std::size_t r = 0; r < R; ++r) {
                       store_logits(c, t, r / g, hk * g + r % g, cell0, w.s + r * Bc, nb);
                       const float alpha =
                           softmax_block(w.s + r * Bc, nb, w.m[h * R + r], w.l[h * R + r]);
                       if (alpha != 1.0f) scale_row(o + r * dv, dv, alpha);
                     }
                     block_values<VE>(c, R, hk, seg, j0, nb, w, js, n_js, o);
                   }
                 });
}

/// Adds, for the item's heads and cells, sum over tile t's rows (that the sink
/// wants) of e^(logit - lse_row) to mass[hk * n_cells + cell] (when mass is set), and
/// stores those rows' logits in logits[(row * n_head + h) * n_cells + cell] (when
/// logits is set; row = sink.logit_row[token]).
/// lse: [n_tokens, n_head] final log-sum-exp of every row.
template <class KE, class Sink>
static void export_mass(const detail::call& c, const detail::tile& t, const detail::item& it,
                        const detail::scratch& w, const float* lse, const Sink& sink, float* mass,
                        float* logits, std::size_t n_cells) noexcept {
  constexpr std::size_t Bc = detail::k_block_cells;
  const std::size_t g = c.sh.group(), dk = c.sh.d_k, R = t.count * g, H = c.sh.n_head;
  detail::item mine = it;
  mine.t = &t;
  gather_queries(c, mine, w.q);
  std::uint32_t js[Bc];
  for_each_block(
      c.streams[t.stream], it.cell_begin, it.cell_end,
      [&](const kv_segment& seg, std::size_t j0, std::size_t nb, std::size_t cell0) {
        const std::size_t n_js = block_mask(c, t, seg, j0, nb, w, js);
        if (n_js == 0) return;
        for (std::size_t hk = it.head_begin; hk < it.head_end; ++hk) {
          block_logits<KE>(c, t, hk, w.q + (hk - it.head_begin) * R * dk, seg, j0, nb, w, js, n_js);
          for (std::size_t ti = 0; ti < t.count; ++ti) {
            const std::size_t tok = c.order[t.first + ti];
            if (!sink.row_contributes(tok)) continue;
            for (std::size_t hh = 0; hh < g; ++hh) {
              const float* s = w.s + (ti * g + hh) * Bc;
              if (logits != nullptr) {
                float* lg = logits + (sink.logit_row[tok] * H + hk * g + hh) * n_cells + cell0;
                for (std::size_t x = 0; x < n_js; ++x) lg[js[x]] = s[js[x]];
              }
              if (mass == nullptr) continue;
              const float row_lse = lse[tok * H + hk * g + hh];
              if (row_lse == -__builtin_inff()) continue;
              float* m = mass + hk * n_cells + cell0;
              for (std::size_t x = 0; x < n_js; ++x)
                if (s[js[x]] != -__builtin_inff()) m[js[x]] += std::exp(s[js[x]] - row_lse);
            }
          }
        }
      });
}
