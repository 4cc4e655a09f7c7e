// One specialisation of quant_dot<Isa>, stamped out for every compiled ISA by
// mnemo/simd/foreach_target.hpp (included from mnemo/model/detail/quant_dot.hpp).
template <>
struct quant_dot<MNEMO_TARGET_ISA> {
  using isa = MNEMO_TARGET_ISA;

  /// AVX2 and AVX-512 unpack and multiply codes 32 at a time (quant_dot_x86.inl); NEON
  /// unpacks with the scalar loops and sums 16 products at a time (sum_products_).
  static constexpr bool x86_ = std::is_same_v<isa, simd::avx2> || std::is_same_v<isa, simd::avx512>;

  /// k_tile_rows (x86): the k-quants' many-token kernel over 4 rows at a time.
  static constexpr bool k_tiles = x86_;
  /// k_tile8_rows (AVX-512): the same over 8 rows, one per 64-bit lane of 512 bits.
  static constexpr bool k_tiles8 = std::is_same_v<isa, simd::avx512>;

#if defined(MNEMO_ARCH_X86_64)
#include "mnemo/model/detail/quant_dot_x86.inl"
#endif

  /// sum_i q_i a_i over one group of n codes (n a multiple of 16). NEON: 16 at a time,
  /// with sdot where the target has it, else widening multiplies (|q a| <= 128 * 127
  /// fits 16 bits) summed pairwise into 32-bit lanes; exact either way.
  static MNEMO_INLINE std::int32_t sum_products_(const std::int8_t* q, const std::int8_t* a,
                                                 std::size_t n) noexcept {
#if defined(MNEMO_ARCH_AARCH64)
    if constexpr (std::is_same_v<isa, simd::neon>) {
      int32x4_t acc = vdupq_n_s32(0);
      for (std::size_t i = 0; i < n; i += 16) {
        const int8x16_t qv = vld1q_s8(q + i), av = vld1q_s8(a + i);
#if defined(__ARM_FEATURE_DOTPROD)
        acc = vdotq_s32(acc, qv, av);
#else
        acc = vpadalq_s16(acc, vmull_s8(vget_low_s8(qv), vget_low_s8(av)));
        acc = vpadalq_s16(acc, vmull_high_s8(qv, av));
#endif
      }
      return vaddvq_s32(acc);
    }
#endif
    std::int32_t s = 0;
    for (std::size_t i = 0; i < n; ++i) s += q[i] * a[i];
    return s;
  }

  /// An f16 scale as f32: F16C on x86 (bit-identical with the software conversion).
  template <class H>
  static MNEMO_INLINE float half_(H h) noexcept {
#if defined(MNEMO_ARCH_X86_64)
    if constexpr (x86_) return _cvtsh_ss(h.bits);
#endif
    return h.to_float();
  }

  /// x [n] rounded to E's activation blocks (quantize_activations), the same bytes on
  /// every ISA; x86 rounds q8_K eight values at a time (q8_K_rows_).
  template <class E>
  static void quantize_x(const float* x, activation_block_t<E>* out, std::size_t n) noexcept {
#if defined(MNEMO_ARCH_X86_64)
    if constexpr (x86_ && is_k_quant<E>) {
      q8_K_rows_(x, out, n);
      return;
    }
#endif
    quantize_activations<E>(x, out, n);
  }

  /// x . one row of nb blocks of E, x given as nb activation blocks.
  template <class E>
  static float dot(const E* w, const activation_block_t<E>* a, std::size_t nb) noexcept {
    float acc = 0.0f;
    if constexpr (is_k_quant<E>) {
      const auto combine = [&](const E& blk, const activation_block_t<E>& ab, std::int32_t isum,
                               std::int32_t msum) {
        float dmin = 0.0f;
        if constexpr (has_min<E>) dmin = half_(blk.dmin);
        combine_k<E>(half_(blk.d), dmin, ab.d, isum, msum, acc);
      };
      std::size_t b = 0;
#if defined(MNEMO_ARCH_X86_64)
      if constexpr (x86_) {
        // four super-blocks' sums reduced in one tree, then combined in row order
        for (; b + 4 <= nb; b += 4) {
          __m256i v[8];
          for (std::size_t k = 0; k < 4; ++k) k_block_sums_(w[b + k], a[b + k], v[k], v[4 + k]);
          std::int32_t sums[8] = {};
          if constexpr (has_min<E>)
            hsum8_epi32_(v, sums);
          else
            hsum4_epi32_(v, sums);
          for (std::size_t k = 0; k < 4; ++k) combine(w[b + k], a[b + k], sums[k], sums[4 + k]);
        }
        for (; b < nb; ++b) {
          std::int32_t isum, msum;
          k_isum_msum_(w[b], a[b], isum, msum);
          combine(w[b], a[b], isum, msum);
        }
      }
#endif
      for (; b < nb; ++b) {
        k_group_scales s;
        group_scales(w[b], s);
        std::int32_t isum = 0, msum = 0;
        alignas(64) std::int8_t q[256];
        unpack_codes(w[b], q);
        for (std::size_t g = 0; g < 16; ++g) {
          isum += s.scale[g] * sum_products_(q + 16 * g, a[b].qs + 16 * g, 16);
          if constexpr (has_min<E>) msum += s.min[g] * a[b].bsums[g];
        }
        combine(w[b], a[b], isum, msum);
      }
    } else {
      std::size_t b = 0;
#if defined(MNEMO_ARCH_X86_64)
      if constexpr (x86_) {
        std::int32_t sums[4];
        for (; b + 4 <= nb; b += 4) {
          legacy_sums4_(w + b, a + b, sums);
          for (std::size_t k = 0; k < 4; ++k) combine_legacy_(w[b + k], a[b + k], sums[k], acc);
        }
      }
#endif
      for (; b < nb; ++b) {
        alignas(32) std::int8_t q[32];
        unpack_codes(w[b], q);
        combine_legacy_(w[b], a[b], sum_products_(q, a[b].qs, 32), acc);
      }
    }
    return acc;
  }

  template <class E, class A>
  static MNEMO_INLINE void combine_legacy_(const E& w, const A& a, std::int32_t sum,
                                           float& acc) noexcept {
    if constexpr (has_min<E>)
      combine_legacy<E>(half_(w.d), half_(a.d), half_(w.m), half_(a.s), sum, acc);
    else
      combine_legacy<E>(half_(w.d), half_(a.d), 0.0f, 0.0f, sum, acc);
  }
};
