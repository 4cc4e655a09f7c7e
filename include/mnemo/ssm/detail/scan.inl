// Body of ssm::detail::kernels<isa>: the Mamba-1 selective scan (args: ssm/types.hpp).
// Included only by ssm/detail/kernels.hpp; `isa`, `V`, `vf`, `lanes` are the
// enclosing specialisation's.
//
// Two loop orders over the same per-element arithmetic, so that the state they leave
// is bit-identical for one ISA (only the order of y's sum over s differs):
//  - scan_step (decode, one token): across d_state. A channel's state row, A row, B
//    and C are contiguous, so no transposition; y needs one horizontal sum per channel.
//  - scan_chunk (prefill): across channels. A block of `lanes` channels and up to
//    k_state_tile states is transposed into a [s][lane] tile once, stays in L1 while
//    every token passes, and y comes out as a vector of channels with no horizontal
//    sum. B[t][s] and C[t][s] are broadcasts.
#if !defined(MNEMO_SSM_KERNEL_BODY_)
#error "mnemo/ssm/detail/*.inl are kernel bodies: include mnemo/ssm/ssm.hpp"
#endif

static constexpr std::size_t k_state_tile = 16;

/// y = (y_sum + x * D) * silu(z) for one block of channels of token t.
static MNEMO_INLINE vf scan_output(const scan_args& a, std::size_t t, std::size_t c0,
                                   std::size_t n, vf ysum, vf x) noexcept {
  if (a.D != nullptr) ysum = V::fma(x, load_n(a.D + c0, n), ysum);
  if (a.z != nullptr) ysum = V::mul(ysum, silu(load_n(a.z + t * a.ld_z + c0, n)));
  return ysum;
}

/// One token (a.n_tokens == 1 is not required: tokens run one after another).
/// @pre a.validate() is ok
static void scan_step(const scan_args& a) noexcept {
  const std::size_t S = a.d_state, S_full = S - S % lanes;
  alignas(64) float sp_buf[lanes], xdt_buf[lanes], y_buf[lanes] = {};
  for (std::size_t t = 0; t < a.n_tokens; ++t) {
    const float* B = a.B + t * a.ld_bc;
    const float* C = a.C + t * a.ld_bc;
    for (std::size_t c0 = 0; c0 < a.d_inner; c0 += lanes) {
      const std::size_t n = std::min(lanes, a.d_inner - c0);
      const vf sp = softplus(load_n(a.dt + t * a.ld_dt + c0, n));
      const vf x = load_n(a.x + t * a.ld_x + c0, n);
      V::store(sp_buf, sp);
      V::store(xdt_buf, V::mul(x, sp));
      for (std::size_t l = 0; l < n; ++l) {
        const std::size_t c = c0 + l;
        float* st = a.state + c * S;
        const float* A = a.A + c * S;
        const vf spv = V::set1(sp_buf[l]), xdt = V::set1(xdt_buf[l]);
        vf acc = V::zero();
        std::size_t s = 0;
        for (; s < S_full; s += lanes) {
          const vf dA = V::exp(V::mul(spv, V::load(A + s)));
          const vf v = V::fma(V::load(st + s), dA, V::mul(V::load(B + s), xdt));
          V::store(st + s, v);
          acc = V::fma(v, V::load(C + s), acc);
        }
        if (s < S) {  // zero lanes: exp(0) = 1 times state 0 plus B 0: stays 0
          const std::size_t r = S - s;
          const vf dA = V::exp(V::mul(spv, load_n(A + s, r)));
          const vf v = V::fma(load_n(st + s, r), dA,
                              V::mul(load_n(B + s, r), xdt));
          store_n(st + s, v, r);
          acc = V::fma(v, load_n(C + s, r), acc);
        }
        y_buf[l] = V::reduce_add(acc);
      }
      store_n(a.y + t * a.ld_y + c0, scan_output(a, t, c0, n, V::load(y_buf), x), n);
    }
  }
}

/// Many tokens of one sequence. @pre a.validate() is ok
static void scan_chunk(const scan_args& a) noexcept {
  const std::size_t S = a.d_state;
  alignas(64) float st[k_state_tile][lanes], At[k_state_tile][lanes];
  for (std::size_t c0 = 0; c0 < a.d_inner; c0 += lanes) {
    const std::size_t n = std::min(lanes, a.d_inner - c0);
    for (std::size_t s0 = 0; s0 < S; s0 += k_state_tile) {
      const std::size_t ns = std::min(k_state_tile, S - s0);
      const bool first = s0 == 0, last = s0 + ns == S;
      // [lanes][ns] -> [ns][lanes]; padding lanes hold 0 (dt 0, x 0: they stay 0).
      for (std::size_t s = 0; s < ns; ++s)
        for (std::size_t l = 0; l < lanes; ++l) {
          st[s][l] = l < n ? a.state[(c0 + l) * S + s0 + s] : 0.0f;
          At[s][l] = l < n ? a.A[(c0 + l) * S + s0 + s] : 0.0f;
        }
      for (std::size_t t = 0; t < a.n_tokens; ++t) {
        const float* B = a.B + t * a.ld_bc + s0;
        const float* C = a.C + t * a.ld_bc + s0;
        float* y = a.y + t * a.ld_y + c0;
        const vf sp = softplus(load_n(a.dt + t * a.ld_dt + c0, n));
        const vf x = load_n(a.x + t * a.ld_x + c0, n);
        const vf xdt = V::mul(x, sp);
        vf acc = first ? V::zero() : load_n(y, n);
        std::size_t s = 0;
        // Four independent exp chains in one block: one chain is ~50 cycles of
        // latency, and with one per iteration the FP scheduler fills with waiting
        // ops before enough iterations overlap (measured 8 -> see docs/ssm.md).
        for (; s + 4 <= ns; s += 4) {
          vf e[4];
#pragma GCC unroll 4
          for (std::size_t i = 0; i < 4; ++i) e[i] = V::exp(V::mul(sp, V::load(At[s + i])));
#pragma GCC unroll 4
          for (std::size_t i = 0; i < 4; ++i) {
            const vf v = V::fma(V::load(st[s + i]), e[i], V::mul(V::set1(B[s + i]), xdt));
            V::store(st[s + i], v);
            acc = V::fma(v, V::set1(C[s + i]), acc);
          }
        }
        for (; s < ns; ++s) {
          const vf dA = V::exp(V::mul(sp, V::load(At[s])));
          const vf v = V::fma(V::load(st[s]), dA, V::mul(V::set1(B[s]), xdt));
          V::store(st[s], v);
          acc = V::fma(v, V::set1(C[s]), acc);
        }
        store_n(y, last ? scan_output(a, t, c0, n, acc, x) : acc, n);
      }
      for (std::size_t s = 0; s < ns; ++s)
        for (std::size_t l = 0; l < n; ++l) a.state[(c0 + l) * S + s0 + s] = st[s][l];
    }
  }
}
