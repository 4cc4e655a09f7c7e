// quant_dot's integer sums with 256-bit integer ops, for the AVX2 and AVX-512 stamps
// (included inside quant_dot<Isa>). Every helper is a template, so that the scalar
// stamp, which also sees this text, never compiles an intrinsic.
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

/// isum = sum_g scale_g sum_{i in g} q_i a_i for one super-block.
template <class E>
static MNEMO_INLINE std::int32_t k_isum_(const E& b, const std::int8_t* a,
                                         const k_group_scales& s) noexcept {
  __m256i q[8];
  k_codes_(b, q);
  __m256i acc = _mm256_setzero_si256();
  for (std::size_t v = 0; v < 8; ++v) {
    const __m256i av = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(a + 32 * v));
    const __m256i sc =
        _mm256_set_m128i(_mm_set1_epi16(s.scale[2 * v + 1]), _mm_set1_epi16(s.scale[2 * v]));
    acc = _mm256_add_epi32(acc, _mm256_madd_epi16(pair_products_<E>(q[v], av), sc));
  }
  return hsum_epi32_(acc);
}

/// msum = sum_g min_g bsums_g.
template <class T>
static MNEMO_INLINE std::int32_t k_msum_(const std::int16_t* bsums, const T& s) noexcept {
  const __m256i b = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(bsums));
  const __m256i m = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(s.min));
  return hsum_epi32_(_mm256_madd_epi16(b, m));
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
