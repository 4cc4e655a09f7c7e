// quant_dot's integer sums with 256-bit integer ops, for the AVX2 and AVX-512 stamps
// (included inside quant_dot<Isa>), and AVX-512's 8-row tile with 512-bit ones. Every helper is a
// template, so that the scalar stamp, which also sees this text, never compiles an intrinsic.
//
// A vector holds 32 codes: two groups of 16, one per 128-bit half, which is where
// vpmaddubsw + vpmaddwd leave their sums (pairs, then pairs of pairs). vpmaddubsw
// takes one unsigned operand: non-negative codes go in as they are, signed ones as
// |q| against sign(a, q). No sum saturates: |q a| <= 32 * 127, a pair is < 2^15.

/// 8 x 32 codes of one k-quant super-block (the 256 codes of unpack_codes, in order).
template <class E>
static MNEMO_INLINE void k_codes_(const E& b, __m256i (&q)[8]) noexcept {
  const __m256i m2 = _mm256_set1_epi8(3), m4 = _mm256_set1_epi8(15);
  if constexpr (std::is_same_v<E, dtype::block_q2_K> || std::is_same_v<E, dtype::block_q3_K>) {
    // e = 128 h + 32 j + w: bits 2 j of qs[32 h + w]
    for (std::size_t h = 0; h < 2; ++h) {
      const __m256i bits = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b.qs + 32 * h));
      for (int j = 0; j < 4; ++j) {
        __m256i v = _mm256_and_si256(_mm256_srl_epi16(bits, _mm_cvtsi32_si128(2 * j)), m2);
        if constexpr (std::is_same_v<E, dtype::block_q3_K>) {
          // minus 4 where bit 4 h + j of hmask[w] is clear
          const __m256i hm = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b.hmask));
          const __m256i bit = _mm256_set1_epi8(static_cast<char>(1 << (4 * h + j)));
          const __m256i clear =
              _mm256_cmpeq_epi8(_mm256_and_si256(hm, bit), _mm256_setzero_si256());
          v = _mm256_sub_epi8(v, _mm256_and_si256(clear, _mm256_set1_epi8(4)));
        }
        q[4 * h + j] = v;
      }
    }
  } else if constexpr (std::is_same_v<E, dtype::block_q4_K> ||
                       std::is_same_v<E, dtype::block_q5_K>) {
    // sub-blocks 2 c and 2 c + 1: low and high nibbles of qs[32 c ..]
    for (std::size_t c = 0; c < 4; ++c) {
      const __m256i bytes = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b.qs + 32 * c));
      q[2 * c] = _mm256_and_si256(bytes, m4);
      q[2 * c + 1] = _mm256_and_si256(_mm256_srli_epi16(bytes, 4), m4);
    }
    if constexpr (std::is_same_v<E, dtype::block_q5_K>) {  // + 16 where bit sb of qh[i]
      const __m256i qh = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b.qh));
      const __m256i sixteen = _mm256_set1_epi8(16);
      for (int sb = 0; sb < 8; ++sb) {
        const __m256i bit = _mm256_set1_epi8(static_cast<char>(1 << sb));
        const __m256i set = _mm256_cmpeq_epi8(_mm256_and_si256(qh, bit), bit);
        q[sb] = _mm256_or_si256(q[sb], _mm256_and_si256(set, sixteen));
      }
    }
  } else {  // q6_K: e = 128 h + 32 k + l
    const __m256i m32 = _mm256_set1_epi8(32);
    for (std::size_t h = 0; h < 2; ++h) {
      const __m256i l0 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b.ql + 64 * h));
      const __m256i l1 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b.ql + 64 * h + 32));
      const __m256i hi = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b.qh + 32 * h));
      const __m256i low[4] = {_mm256_and_si256(l0, m4), _mm256_and_si256(l1, m4),
                              _mm256_and_si256(_mm256_srli_epi16(l0, 4), m4),
                              _mm256_and_si256(_mm256_srli_epi16(l1, 4), m4)};
      for (int k = 0; k < 4; ++k) {
        const __m256i h2 = _mm256_and_si256(_mm256_srl_epi16(hi, _mm_cvtsi32_si128(2 * k)), m2);
        q[4 * h + k] = _mm256_sub_epi8(_mm256_or_si256(low[k], _mm256_slli_epi16(h2, 4)), m32);
      }
    }
  }
}

/// 16 x 16-bit sums of pairs of q a (q's sign convention as E's).
template <class E>
static MNEMO_INLINE __m256i pair_products_(__m256i q, __m256i a) noexcept {
  if constexpr (signed_codes<E>)
    return _mm256_maddubs_epi16(_mm256_sign_epi8(q, q), _mm256_sign_epi8(a, q));
  else
    return _mm256_maddubs_epi16(q, a);
}

template <class T>
static MNEMO_INLINE std::int32_t hsum_epi32_(T v) noexcept {
  __m128i s = _mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
  s = _mm_add_epi32(s, _mm_shuffle_epi32(s, _MM_SHUFFLE(1, 0, 3, 2)));
  s = _mm_add_epi32(s, _mm_shuffle_epi32(s, _MM_SHUFFLE(2, 3, 0, 1)));
  return _mm_cvtsi128_si32(s);
}

/// The 8 (scale, min) pairs of a q4_K / q5_K super-block (sub-blocks of 32) as 16-bit
/// lanes (k4_scale_words widened), without a trip through memory.
template <class E>
static MNEMO_INLINE void k4_scales_(const E& b, __m128i& scales, __m128i& mins) noexcept {
  std::uint32_t sc[2], mn[2];
  k4_scale_words(b, sc, mn);
  scales = _mm_cvtepu8_epi16(_mm_set_epi32(0, 0, static_cast<int>(sc[1]), static_cast<int>(sc[0])));
  mins = _mm_cvtepu8_epi16(_mm_set_epi32(0, 0, static_cast<int>(mn[1]), static_cast<int>(mn[0])));
}

/// One super-block's sums as 8 lanes each, not yet reduced: the lanes of `isum` add up to
/// sum_g scale_g sum_{i in g} q_i a_i, those of `msum` to sum_g min_g bsums_g (zero
/// without mins), so that dot reduces four super-blocks' sums in one tree.
template <class E>
static MNEMO_INLINE void k_block_sums_(const E& b, const dtype::block_q8_K& a, __m256i& isum,
                                       __m256i& msum) noexcept {
  __m256i q[8];
  k_codes_(b, q);
  const auto* av = reinterpret_cast<const __m256i*>(a.qs);
  const __m256i bsums = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(a.bsums));
  __m256i acc = _mm256_setzero_si256();
  if constexpr (k_groups_of_32_<E>) {
    // vector v is sub-block v: its scale spread over 16 lanes by one in-lane shuffle
    __m128i scales, mins;
    k4_scales_(b, scales, mins);
    const __m256i sc2 = _mm256_broadcastsi128_si256(scales);
    for (int v = 0; v < 8; ++v) {
      const __m256i pick = _mm256_set1_epi16(static_cast<short>(0x0100 * (2 * v + 1) + 2 * v));
      acc = _mm256_add_epi32(acc,
                             _mm256_madd_epi16(pair_products_<E>(q[v], _mm256_loadu_si256(av + v)),
                                               _mm256_shuffle_epi8(sc2, pick)));
    }
    // bsums are per 16 codes: each sub-block's min twice
    msum = _mm256_madd_epi16(
        bsums, _mm256_set_m128i(_mm_unpackhi_epi16(mins, mins), _mm_unpacklo_epi16(mins, mins)));
  } else {
    k_group_scales s;
    group_scales(b, s);
    for (std::size_t v = 0; v < 8; ++v) {
      const __m256i sc =
          _mm256_set_m128i(_mm_set1_epi16(s.scale[2 * v + 1]), _mm_set1_epi16(s.scale[2 * v]));
      acc = _mm256_add_epi32(
          acc, _mm256_madd_epi16(pair_products_<E>(q[v], _mm256_loadu_si256(av + v)), sc));
    }
    msum = has_min<E> ? _mm256_madd_epi16(
                            bsums, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(s.min)))
                      : _mm256_setzero_si256();
  }
  isum = acc;
}

/// isum and msum of one super-block (k_block_sums_, reduced).
template <class E>
static MNEMO_INLINE void k_isum_msum_(const E& b, const dtype::block_q8_K& a, std::int32_t& isum,
                                      std::int32_t& msum) noexcept {
  __m256i i, m;
  k_block_sums_(b, a, i, m);
  isum = hsum_epi32_(i);
  msum = hsum_epi32_(m);
}

/// The 32 codes of a legacy block: low nibbles, then high nibbles, plus the fifth bit
/// (bit e of qh) for q5_0 / q5_1, minus 16 for q5_0.
template <class E>
static MNEMO_INLINE __m256i legacy_codes_(const E& b) noexcept {
  const __m128i raw = _mm_loadu_si128(reinterpret_cast<const __m128i*>(b.qs));
  const __m128i m4 = _mm_set1_epi8(15);
  __m256i q = _mm256_set_m128i(_mm_and_si128(_mm_srli_epi16(raw, 4), m4), _mm_and_si128(raw, m4));
  if constexpr (!std::is_same_v<E, dtype::block_q4_1>) {
    // byte e takes byte e / 8 of qh, then keeps bit e % 8
    const __m256i spread = _mm256_shuffle_epi8(
        _mm256_set1_epi32(static_cast<int>(dtype::detail::q5_high_bits(b.qh))),
        _mm256_set_epi64x(0x0303030303030303, 0x0202020202020202, 0x0101010101010101, 0));
    const __m256i bit = _mm256_set1_epi64x(static_cast<long long>(0x8040201008040201ull));
    const __m256i set = _mm256_cmpeq_epi8(_mm256_and_si256(spread, bit), bit);
    q = _mm256_or_si256(q, _mm256_and_si256(set, _mm256_set1_epi8(16)));
    if constexpr (std::is_same_v<E, dtype::block_q5_0>)
      q = _mm256_sub_epi8(q, _mm256_set1_epi8(16));
  }
  return q;
}

/// sum_i q_i a_i over each of 4 legacy blocks, reduced together (3 horizontal adds for
/// the four where separate reductions take 4 shuffles and adds each).
template <class E, class A>
static MNEMO_INLINE void legacy_sums4_(const E* b, const A* a, std::int32_t* out) noexcept {
  __m256i p[4];
  for (std::size_t k = 0; k < 4; ++k) {
    const __m256i av = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(a[k].qs));
    p[k] = _mm256_madd_epi16(pair_products_<E>(legacy_codes_(b[k]), av), _mm256_set1_epi16(1));
  }
  // [b0 b0 b1 b1 | b0 b0 b1 b1] and the same for b2, b3; then [b0 b1 b2 b3 | ...]
  const __m256i h = _mm256_hadd_epi32(_mm256_hadd_epi32(p[0], p[1]), _mm256_hadd_epi32(p[2], p[3]));
  const __m128i s = _mm_add_epi32(_mm256_castsi256_si128(h), _mm256_extracti128_si256(h, 1));
  _mm_storeu_si128(reinterpret_cast<__m128i*>(out), s);
}

/// One super-block of 4 rows unpacked once for all the tokens of a group (k_tile_rows),
/// rows interleaved by 8 codes: q[v][c] holds codes 32 v + 8 c .. 32 v + 8 c + 7 of rows
/// 0..3 in its four 64-bit lanes, so one vpmaddubsw against a token's 8 codes broadcast
/// to the four lanes serves 4 rows. The 16-bit pair sums of the 4 (or 2) chunks of one
/// scale group add up before one vpmaddwd by that group's scales (sc[g]: row r's scale
/// in 16-bit lanes 4 r .. 4 r + 3), where the row-by-row layout took one vpmaddwd per
/// vpmaddubsw: both run on one 128-bit pipe of Zen 1, 2 uops per 256-bit op. Codes are
/// made non-negative (q3_K, q6_K: plus 4 or 32, taken back out through x's group sums,
/// so the integer sums are the ones of k_block_sums_); per row gs holds the 16-bit factors of
/// x's 16 group sums: the mins (msum) or -offset * scale (added to isum).
///
/// No 16-bit sum overflows: a lane adds 8 products of codes below 32 (q4_K, q5_K: groups
/// of 32, 8 * 31 * 128 < 2^15) or 4 of codes below 64 (groups of 16: 4 * 63 * 128).
template <class E>
struct k_tile_ {
  __m256i q[8][4];
  __m256i sc[16];
  __m256i gs[4];
  float d[4], dmin[4];
};

template <class E>
static constexpr int k_code_offset_ = std::is_same_v<E, dtype::block_q3_K>   ? 4
                                      : std::is_same_v<E, dtype::block_q6_K> ? 32
                                                                             : 0;

/// Scale groups of 32 codes (q4_K, q5_K: one per vector) or of 16 (the others).
template <class E>
static constexpr bool k_groups_of_32_ =
    std::is_same_v<E, dtype::block_q4_K> || std::is_same_v<E, dtype::block_q5_K>;

/// One row's part of a tile's super-block, the same for the 4- and 8-row tiles: its codes
/// made non-negative, its group scales, the 16-bit factors of x's group sums (the mins,
/// or -offset x scale) and its f32 scales.
template <class E>
static MNEMO_INLINE void k_tile_row_(const E& blk, __m256i (&q)[8], k_group_scales& s, __m256i& gs,
                                     float& d, float& dmin) noexcept {
  constexpr int off = k_code_offset_<E>;
  k_codes_(blk, q);
  if constexpr (off != 0)
    for (std::size_t v = 0; v < 8; ++v)
      q[v] = _mm256_add_epi8(q[v], _mm256_set1_epi8(static_cast<char>(off)));
  group_scales(blk, s);
  if constexpr (has_min<E>) {
    gs = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(s.min));
    dmin = half_(blk.dmin);
  } else {
    gs = _mm256_mullo_epi16(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(s.scale)),
                            _mm256_set1_epi16(static_cast<short>(-off)));
    dmin = 0.0f;
  }
  d = half_(blk.d);
}

template <class E>
static MNEMO_INLINE void k_tile_unpack_(const E* const* rows, std::size_t b,
                                        k_tile_<E>& t) noexcept {
  __m256i q[4][8];
  std::uint64_t spread[4][16];  // row r's scale of group g in four 16-bit lanes
  for (std::size_t r = 0; r < 4; ++r) {
    k_group_scales s;
    k_tile_row_(rows[r][b], q[r], s, t.gs[r], t.d[r], t.dmin[r]);
    for (std::size_t g = 0; g < 16; ++g)
      spread[r][g] = static_cast<std::uint16_t>(s.scale[g]) * 0x0001000100010001ull;
  }
  // A 4 x 4 transpose of 64-bit lanes per vector: [r c] -> [c r].
  for (std::size_t v = 0; v < 8; ++v) {
    const __m256i lo01 = _mm256_unpacklo_epi64(q[0][v], q[1][v]);  // r0c0 r1c0 | r0c2 r1c2
    const __m256i hi01 = _mm256_unpackhi_epi64(q[0][v], q[1][v]);  // r0c1 r1c1 | r0c3 r1c3
    const __m256i lo23 = _mm256_unpacklo_epi64(q[2][v], q[3][v]);
    const __m256i hi23 = _mm256_unpackhi_epi64(q[2][v], q[3][v]);
    t.q[v][0] = _mm256_permute2x128_si256(lo01, lo23, 0x20);
    t.q[v][1] = _mm256_permute2x128_si256(hi01, hi23, 0x20);
    t.q[v][2] = _mm256_permute2x128_si256(lo01, lo23, 0x31);
    t.q[v][3] = _mm256_permute2x128_si256(hi01, hi23, 0x31);
  }
  for (std::size_t g = 0; g < 16; ++g)
    t.sc[g] = _mm256_set_epi64x(
        static_cast<long long>(spread[3][g]), static_cast<long long>(spread[2][g]),
        static_cast<long long>(spread[1][g]), static_cast<long long>(spread[0][g]));
}

/// The 8 lane sums of v[0..7] (3 rounds of pairwise adds for all eight).
template <class Vec>
static MNEMO_INLINE void hsum8_epi32_(const Vec* v, std::int32_t* out) noexcept {
  const __m256i a = _mm256_hadd_epi32(_mm256_hadd_epi32(v[0], v[1]), _mm256_hadd_epi32(v[2], v[3]));
  const __m256i b = _mm256_hadd_epi32(_mm256_hadd_epi32(v[4], v[5]), _mm256_hadd_epi32(v[6], v[7]));
  const __m256i s = _mm256_add_epi32(_mm256_permute2x128_si256(a, b, 0x20),
                                     _mm256_permute2x128_si256(a, b, 0x31));
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(out), s);
}

/// The 4 lane sums of v[0..3].
template <class Vec>
static MNEMO_INLINE void hsum4_epi32_(const Vec* v, std::int32_t* out) noexcept {
  const __m256i a = _mm256_hadd_epi32(_mm256_hadd_epi32(v[0], v[1]), _mm256_hadd_epi32(v[2], v[3]));
  _mm_storeu_si128(reinterpret_cast<__m128i*>(out),
                   _mm_add_epi32(_mm256_castsi256_si128(a), _mm256_extracti128_si256(a, 1)));
}

/// 8 codes of x at p in each 64-bit lane.
template <class Code>
static MNEMO_INLINE __m256i broadcast8_(const Code* p) noexcept {
  long long v;
  std::memcpy(&v, p, 8);
  return _mm256_set1_epi64x(v);
}

/// isum and msum of the tile's 4 rows against NT tokens' blocks, [4 x NT] row-major.
/// Per token one accumulator of 8 lanes, rows [0 0 1 1 | 2 2 3 3]; the token's codes are
/// broadcast once per 8 and meet all 4 rows in one vpmaddubsw.
template <class E, std::size_t NT>
static MNEMO_INLINE void k_tile_sums_(const k_tile_<E>& w, const dtype::block_q8_K* const* a,
                                      std::int32_t* isum, std::int32_t* msum) noexcept {
  __m256i acc[NT];
  for (auto& v : acc) v = _mm256_setzero_si256();
  for (std::size_t v = 0; v < 8; ++v)
    for (std::size_t t = 0; t < NT; ++t) {
      const std::int8_t* x = a[t]->qs + 32 * v;
      const __m256i p0 = _mm256_maddubs_epi16(w.q[v][0], broadcast8_(x));
      const __m256i p1 = _mm256_maddubs_epi16(w.q[v][1], broadcast8_(x + 8));
      const __m256i p2 = _mm256_maddubs_epi16(w.q[v][2], broadcast8_(x + 16));
      const __m256i p3 = _mm256_maddubs_epi16(w.q[v][3], broadcast8_(x + 24));
      if constexpr (k_groups_of_32_<E>) {
        const __m256i s = _mm256_add_epi16(_mm256_add_epi16(p0, p1), _mm256_add_epi16(p2, p3));
        acc[t] = _mm256_add_epi32(acc[t], _mm256_madd_epi16(s, w.sc[2 * v]));
      } else {
        acc[t] = _mm256_add_epi32(
            acc[t], _mm256_add_epi32(_mm256_madd_epi16(_mm256_add_epi16(p0, p1), w.sc[2 * v]),
                                     _mm256_madd_epi16(_mm256_add_epi16(p2, p3), w.sc[2 * v + 1])));
      }
    }
  // rows' pairs of lanes added: per token [r0 r1 | r2 r3] (with NT == 2, the two tokens
  // side by side: [t0r0 t0r1 t1r0 t1r1 | t0r2 t0r3 t1r2 t1r3])
  alignas(32) std::int32_t lanes[8];
  if constexpr (NT == 2) {
    _mm256_store_si256(reinterpret_cast<__m256i*>(lanes), _mm256_hadd_epi32(acc[0], acc[1]));
    for (std::size_t t = 0; t < 2; ++t)
      for (std::size_t r = 0; r < 4; ++r) isum[r * 2 + t] = lanes[4 * (r / 2) + 2 * t + r % 2];
  } else {
    _mm256_store_si256(reinterpret_cast<__m256i*>(lanes), _mm256_hadd_epi32(acc[0], acc[0]));
    for (std::size_t r = 0; r < 4; ++r) isum[r] = lanes[4 * (r / 2) + r % 2];
  }
  __m256i gsum[4 * NT];
  for (std::size_t t = 0; t < NT; ++t) {
    const __m256i bs = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(a[t]->bsums));
    for (std::size_t r = 0; r < 4; ++r) gsum[r * NT + t] = _mm256_madd_epi16(bs, w.gs[r]);
  }
  alignas(32) std::int32_t g[4 * NT];
  if constexpr (NT == 2)
    hsum8_epi32_(gsum, g);
  else
    hsum4_epi32_(gsum, g);
  for (std::size_t i = 0; i < 4 * NT; ++i) {
    if constexpr (has_min<E>)
      msum[i] = g[i];
    else
      isum[i] += g[i];
  }
}

/// y[t][0..3] = rows[0..3] . x_t for the tokens [t0, t1) of rounded x (qx, x_bytes
/// apart): each super-block of the 4 rows is unpacked once for all of them, where dot()
/// unpacks it once per token. The same integer sums and the same f32 steps (combine_k,
/// block by block in row order) as dot(), so the same floats. @pre nb blocks per row
template <class E>
static void k_tile_rows(const E* const* rows, std::size_t nb, const unsigned char* qx,
                        std::size_t x_bytes, std::size_t t0, std::size_t t1, float* y,
                        std::size_t y_stride) noexcept {
  using A = dtype::block_q8_K;
  for (std::size_t t = t0; t < t1; ++t)
    for (std::size_t r = 0; r < 4; ++r) y[t * y_stride + r] = 0.0f;
  k_tile_<E> w;
  for (std::size_t b = 0; b < nb; ++b) {
    k_tile_unpack_(rows, b, w);
    std::size_t t = t0;
    const auto step = [&]<std::size_t NT>(std::integral_constant<std::size_t, NT>) {
      const A* a[NT];
      for (std::size_t k = 0; k < NT; ++k)
        a[k] = reinterpret_cast<const A*>(qx + (t + k) * x_bytes) + b;
      alignas(32) std::int32_t isum[4 * NT], msum[4 * NT] = {};
      k_tile_sums_<E, NT>(w, a, isum, msum);
      for (std::size_t r = 0; r < 4; ++r)
        for (std::size_t k = 0; k < NT; ++k)
          combine_k<E>(w.d[r], w.dmin[r], a[k]->d, isum[r * NT + k], msum[r * NT + k],
                       y[(t + k) * y_stride + r]);
    };
    for (; t + 2 <= t1; t += 2) step(std::integral_constant<std::size_t, 2>{});
    if (t < t1) step(std::integral_constant<std::size_t, 1>{});
  }
}

/// AVX-512's tile of 8 rows (k_tile8_rows): k_tile_ with each 64-bit lane of a 512-bit
/// vector holding one row, so one vpmaddubsw against a token's 8 codes broadcast to the
/// eight lanes serves 8 rows and the per-token work per row halves. q[v][c]: codes
/// 32 v + 8 c .. 32 v + 8 c + 7 of row r in lane r; sc[g]: row r's scale of group g in
/// 16-bit lanes 4 r .. 4 r + 3. The integer sums are k_tile_'s, so the floats are dot's.
template <class E>
struct k_tile8_ {
  __m512i q[8][4];
  __m512i sc[16];
  __m256i gs[8];
  __m256 d, dmin;
};

template <class E>
static MNEMO_INLINE void k_tile8_unpack_(const E* const* rows, std::size_t b,
                                         k_tile8_<E>& t) noexcept {
  __m256i q[8][8];
  alignas(64) std::int16_t scales[8][16];
  alignas(32) float d[8], dmin[8];
  for (std::size_t r = 0; r < 8; ++r) {
    k_group_scales s;
    k_tile_row_(rows[r][b], q[r], s, t.gs[r], d[r], dmin[r]);
    std::memcpy(scales[r], s.scale, sizeof s.scale);
  }
  t.d = _mm256_load_ps(d);
  t.dmin = _mm256_load_ps(dmin);
  // Per vector an 8 x 4 transpose of 64-bit lanes, [r c] -> [c r], in two rounds of
  // two-source permutes: pairs of rows side by side, then chunks of 4 rows.
  const __m512i c01 = _mm512_setr_epi64(0, 4, 8, 12, 1, 5, 9, 13);
  const __m512i c23 = _mm512_setr_epi64(2, 6, 10, 14, 3, 7, 11, 15);
  const __m512i lo = _mm512_setr_epi64(0, 1, 2, 3, 8, 9, 10, 11);
  const __m512i hi = _mm512_setr_epi64(4, 5, 6, 7, 12, 13, 14, 15);
  for (std::size_t v = 0; v < 8; ++v) {
    __m512i z[4];  // rows 2 k (lanes 0..3) and 2 k + 1 (lanes 4..7), chunks 0..3
    for (std::size_t k = 0; k < 4; ++k)
      z[k] = _mm512_inserti64x4(_mm512_castsi256_si512(q[2 * k][v]), q[2 * k + 1][v], 1);
    const __m512i a01 = _mm512_permutex2var_epi64(z[0], c01, z[1]);  // rows 0..3, chunks 0, 1
    const __m512i a23 = _mm512_permutex2var_epi64(z[0], c23, z[1]);
    const __m512i b01 = _mm512_permutex2var_epi64(z[2], c01, z[3]);  // rows 4..7
    const __m512i b23 = _mm512_permutex2var_epi64(z[2], c23, z[3]);
    t.q[v][0] = _mm512_permutex2var_epi64(a01, lo, b01);
    t.q[v][1] = _mm512_permutex2var_epi64(a01, hi, b01);
    t.q[v][2] = _mm512_permutex2var_epi64(a23, lo, b23);
    t.q[v][3] = _mm512_permutex2var_epi64(a23, hi, b23);
  }
  // Scales: 16-bit lane w of sc[g] takes row (w / 4) % 4's scale g from a pair of row
  // pairs (rows 0..3 for lanes 0..15, rows 4..7 for lanes 16..31).
  const __m512i r01 = _mm512_load_si512(scales[0]), r23 = _mm512_load_si512(scales[2]);
  const __m512i r45 = _mm512_load_si512(scales[4]), r67 = _mm512_load_si512(scales[6]);
  const __m512i row_base =
      _mm512_setr_epi64(0, 0x0010001000100010ll, 0x0020002000200020ll, 0x0030003000300030ll, 0,
                        0x0010001000100010ll, 0x0020002000200020ll, 0x0030003000300030ll);
  for (std::size_t g = 0; g < 16; ++g) {
    const __m512i idx = _mm512_add_epi16(row_base, _mm512_set1_epi16(static_cast<short>(g)));
    t.sc[g] = _mm512_mask_blend_epi64(0xf0, _mm512_permutex2var_epi16(r01, idx, r23),
                                      _mm512_permutex2var_epi16(r45, idx, r67));
  }
}

/// 8 codes of x at p in each 64-bit lane of a 512-bit vector.
template <class Code>
static MNEMO_INLINE __m512i broadcast8x8_(const Code* p) noexcept {
  long long v;
  std::memcpy(&v, p, 8);
  return _mm512_set1_epi64(v);
}

/// isum and msum of the 8-row tile against NT tokens: per token the 8 rows' sums in
/// one vector (lane r: row r).
template <class E, std::size_t NT>
static MNEMO_INLINE void k_tile8_sums_(const k_tile8_<E>& w, const dtype::block_q8_K* const* a,
                                       __m256i* isum, __m256i* msum) noexcept {
  __m512i acc[NT];
  for (auto& v : acc) v = _mm512_setzero_si512();
  for (std::size_t v = 0; v < 8; ++v)
    for (std::size_t t = 0; t < NT; ++t) {
      const std::int8_t* x = a[t]->qs + 32 * v;
      const __m512i p0 = _mm512_maddubs_epi16(w.q[v][0], broadcast8x8_(x));
      const __m512i p1 = _mm512_maddubs_epi16(w.q[v][1], broadcast8x8_(x + 8));
      const __m512i p2 = _mm512_maddubs_epi16(w.q[v][2], broadcast8x8_(x + 16));
      const __m512i p3 = _mm512_maddubs_epi16(w.q[v][3], broadcast8x8_(x + 24));
      if constexpr (k_groups_of_32_<E>) {
        const __m512i s = _mm512_add_epi16(_mm512_add_epi16(p0, p1), _mm512_add_epi16(p2, p3));
        acc[t] = _mm512_add_epi32(acc[t], _mm512_madd_epi16(s, w.sc[2 * v]));
      } else {
        acc[t] = _mm512_add_epi32(
            acc[t], _mm512_add_epi32(_mm512_madd_epi16(_mm512_add_epi16(p0, p1), w.sc[2 * v]),
                                     _mm512_madd_epi16(_mm512_add_epi16(p2, p3), w.sc[2 * v + 1])));
      }
    }
  for (std::size_t t = 0; t < NT; ++t) {
    // row r's two 32-bit lanes added into the low one, then the low halves narrowed
    isum[t] = _mm512_cvtepi64_epi32(_mm512_add_epi32(acc[t], _mm512_srli_epi64(acc[t], 32)));
    const __m256i bs = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(a[t]->bsums));
    __m256i gsum[8];
    for (std::size_t r = 0; r < 8; ++r) gsum[r] = _mm256_madd_epi16(bs, w.gs[r]);
    alignas(32) std::int32_t g[8];
    hsum8_epi32_(gsum, g);
    const __m256i gv = _mm256_load_si256(reinterpret_cast<const __m256i*>(g));
    if constexpr (has_min<E>) {
      msum[t] = gv;
    } else {
      isum[t] = _mm256_add_epi32(isum[t], gv);
      msum[t] = _mm256_setzero_si256();
    }
  }
}

/// combine_k for 8 rows of one token at once: the same products, each rounded on its
/// own (kept out of a fused multiply-add as round_product keeps it), added in the same
/// order, so the same floats.
template <class E>
static MNEMO_INLINE void k_combine8_(const k_tile8_<E>& w, float da, __m256i isum, __m256i msum,
                                     float* y) noexcept {
  const __m256 vda = _mm256_set1_ps(da);
  __m256 p = _mm256_mul_ps(_mm256_mul_ps(w.d, vda), _mm256_cvtepi32_ps(isum));
  __asm__("" : "+x"(p));
  __m256 acc = _mm256_add_ps(_mm256_loadu_ps(y), p);
  if constexpr (has_min<E>) {
    __m256 m = _mm256_mul_ps(_mm256_mul_ps(w.dmin, vda), _mm256_cvtepi32_ps(msum));
    __asm__("" : "+x"(m));
    acc = _mm256_sub_ps(acc, m);
  }
  _mm256_storeu_ps(y, acc);
}

/// k_tile_rows for 8 rows (AVX-512). @pre nb blocks per row
template <class E>
static void k_tile8_rows(const E* const* rows, std::size_t nb, const unsigned char* qx,
                         std::size_t x_bytes, std::size_t t0, std::size_t t1, float* y,
                         std::size_t y_stride) noexcept {
  using A = dtype::block_q8_K;
  for (std::size_t t = t0; t < t1; ++t) _mm256_storeu_ps(y + t * y_stride, _mm256_setzero_ps());
  k_tile8_<E> w;
  for (std::size_t b = 0; b < nb; ++b) {
    k_tile8_unpack_(rows, b, w);
    std::size_t t = t0;
    const auto step = [&]<std::size_t NT>(std::integral_constant<std::size_t, NT>) {
      const A* a[NT];
      for (std::size_t k = 0; k < NT; ++k)
        a[k] = reinterpret_cast<const A*>(qx + (t + k) * x_bytes) + b;
      __m256i isum[NT], msum[NT];
      k_tile8_sums_<E, NT>(w, a, isum, msum);
      for (std::size_t k = 0; k < NT; ++k)
        k_combine8_(w, a[k]->d, isum[k], msum[k], y + (t + k) * y_stride);
    };
    for (; t + 4 <= t1; t += 4) step(std::integral_constant<std::size_t, 4>{});
    for (; t + 2 <= t1; t += 2) step(std::integral_constant<std::size_t, 2>{});
    if (t < t1) step(std::integral_constant<std::size_t, 1>{});
  }
}

/// dtype::quantize_row_q8_K eight values at a time, byte for byte: the first value of
/// largest magnitude (maxps keeps the running max where |x| is NaN, as the scalar `>`
/// skips it), codes rounded half to even and clamped by maxps / minps, which map NaN to
/// -127 as fmax / fmin do. Each 16-value group's sum comes from the int32 codes. The
/// template parameter only keeps the scalar stamp from compiling it.
template <class Block>
static void q8_K_rows_(const float* x, Block* out, std::size_t n) noexcept {
  const __m256 abs_mask = _mm256_castsi256_ps(_mm256_set1_epi32(0x7fffffff));
  for (std::size_t b = 0; b < n / dtype::k_super_block; ++b, x += dtype::k_super_block) {
    Block& y = out[b];
    __m256 m = _mm256_setzero_ps();
    for (std::size_t k = 0; k < dtype::k_super_block; k += 8)
      m = _mm256_max_ps(_mm256_and_ps(_mm256_loadu_ps(x + k), abs_mask), m);
    __m128 h = _mm_max_ps(_mm256_castps256_ps128(m), _mm256_extractf128_ps(m, 1));
    h = _mm_max_ps(h, _mm_movehl_ps(h, h));
    h = _mm_max_ss(h, _mm_shuffle_ps(h, h, 1));
    const float amax = _mm_cvtss_f32(h);
    if (amax == 0.0f) {
      y = Block{};
      continue;
    }
    std::size_t first = 0;
    for (std::size_t k = 0; k < dtype::k_super_block; k += 8) {
      const __m256 a = _mm256_and_ps(_mm256_loadu_ps(x + k), abs_mask);
      const int hit = _mm256_movemask_ps(_mm256_cmp_ps(a, _mm256_set1_ps(amax), _CMP_EQ_OQ));
      if (hit != 0) {
        first = k + static_cast<std::size_t>(__builtin_ctz(static_cast<unsigned>(hit)));
        break;
      }
    }
    const float iscale = -127.0f / x[first];
    const __m256 vs = _mm256_set1_ps(iscale);
    const auto codes8 = [&](std::size_t i) {
      const __m256 r = _mm256_round_ps(_mm256_mul_ps(vs, _mm256_loadu_ps(x + i)),
                                       _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
      return _mm256_cvttps_epi32(
          _mm256_min_ps(_mm256_max_ps(r, _mm256_set1_ps(-127.0f)), _mm256_set1_ps(127.0f)));
    };
    for (std::size_t half = 0; half < 2; ++half) {
      __m256i sums[8];
      for (std::size_t g = 0; g < 8; ++g) {
        const std::size_t i = 128 * half + 16 * g;
        const __m256i c0 = codes8(i), c1 = codes8(i + 8);
        sums[g] = _mm256_add_epi32(c0, c1);
        // packs work per 128-bit lane: [c0 0..3, c1 0..3 | c0 4..7, c1 4..7] -> in order
        const __m256i w = _mm256_permute4x64_epi64(_mm256_packs_epi32(c0, c1), 0xd8);
        _mm_storeu_si128(
            reinterpret_cast<__m128i*>(y.qs + i),
            _mm_packs_epi16(_mm256_castsi256_si128(w), _mm256_extracti128_si256(w, 1)));
      }
      alignas(32) std::int32_t s[8];
      hsum8_epi32_(sums, s);
      for (std::size_t g = 0; g < 8; ++g) y.bsums[8 * half + g] = static_cast<std::int16_t>(s[g]);
    }
    y.d = 1.0f / iscale;
  }
}
