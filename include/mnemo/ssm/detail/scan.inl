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

/// Channels l0 .. l0 + N - 1 of a block (their sp and x*sp in sp_buf / xdt_buf) for one
/// token: N independent exp chains and accumulators interleaved, so the FP pipes have
/// work while one chain waits (measured: one channel at a time left decode at 0.33-0.44
/// of the read bandwidth, docs/ssm.md). Per element the same operations as scan_chunk.
template <std::size_t N>
static MNEMO_INLINE void step_channels(const scan_args& a, const float* B, const float* C,
                                       std::size_t c0, std::size_t l0, const float* sp_buf,
                                       const float* xdt_buf, float* y_buf) noexcept {
  const std::size_t S = a.d_state;
  float* st[N];
  const float* A[N];
  vf spv[N], xdt[N], acc[N];
#pragma GCC unroll 4
  for (std::size_t i = 0; i < N; ++i) {
    st[i] = a.state + (c0 + l0 + i) * S;
    A[i] = a.A + (c0 + l0 + i) * S;
    spv[i] = V::set1(sp_buf[l0 + i]);
    xdt[i] = V::set1(xdt_buf[l0 + i]);
    acc[i] = V::zero();
  }
  for (std::size_t s = 0; s < S; s += lanes) {
    const std::size_t r = std::min(lanes, S - s);  // zero lanes of a tail stay 0
    const vf b = load_n(B + s, r), c = load_n(C + s, r);
    vf e[N];
#pragma GCC unroll 4
    for (std::size_t i = 0; i < N; ++i) e[i] = V::exp(V::mul(spv[i], load_n(A[i] + s, r)));
#pragma GCC unroll 4
    for (std::size_t i = 0; i < N; ++i) {
      const vf v = V::fma(load_n(st[i] + s, r), e[i], V::mul(b, xdt[i]));
      store_n(st[i] + s, v, r);
      acc[i] = V::fma(v, c, acc[i]);
    }
  }
#pragma GCC unroll 4
  for (std::size_t i = 0; i < N; ++i) y_buf[l0 + i] = V::reduce_add(acc[i]);
}

/// One token (a.n_tokens == 1 is not required: tokens run one after another).
/// @pre a.validate() is ok
static void scan_step(const scan_args& a) noexcept {
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
      std::size_t l = 0;
      for (; l + 4 <= n; l += 4) step_channels<4>(a, B, C, c0, l, sp_buf, xdt_buf, y_buf);
      for (; l < n; ++l) step_channels<1>(a, B, C, c0, l, sp_buf, xdt_buf, y_buf);
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
