// The rescoring hook: a policy whose score of a cell depends on the whole lane (the
// mean key of KeyDiff, the query statistics of Expected Attention) declares
// rescore(step, slot_view, lane_keys, signals), which the cache calls with the
// lane's cached keys decoded to f32 on demand: after on_attention in a call that
// delivered signals (`signals` points at them), else right before it evicts from
// the lane (`signals` null). Nothing else calls it, so a policy without signals pays
// once per eviction (once per `evict_chunk` decode steps with the chunked trigger),
// and it needs no state beyond its per-slot floats: rollback, sequence operations
// and state files stay policy-agnostic.
#pragma once

#include <cstddef>

#include "mnemo/evict/concepts.hpp"
#include "mnemo/simd/simd.hpp"

namespace mnemo::evict {

/// The keys a lane holds: row(slot, out) writes slot's key row as attention reads
/// it (post-RoPE), [n_head_kv, d_k] f32 (all KV heads per layer, the lane's head
/// alone per KV head: n_head_kv = 1 then). Only live slots hold keys.
struct lane_keys {
  std::size_t n_head_kv = 0, d_k = 0;
  const void* ctx = nullptr;
  void (*decode)(const void* ctx, std::size_t slot, float* out) noexcept = nullptr;
  void row(std::size_t slot, float* out) const noexcept { decode(ctx, slot, out); }
};

/// A policy that rescores its lane from the cached keys (and the call's signals).
template <class P>
concept lane_rescorer = requires(const P& p, const step_info& s, slot_view v, const lane_keys& k,
                                 const attention_signals* sg) {
  { p.rescore(s, v, k, sg) }
  noexcept;
};

/// a . b over n floats, vectorised (a rescore's inner loop: a plain float sum is not
/// vectorised without fast-math, which made KeyDiff's pass ~15% of attention).
template <class Isa = simd::native>
float dot_f32(const float* a, const float* b, std::size_t n) noexcept {
  using O = simd::ops<Isa>;
  constexpr std::size_t W = O::lanes;
  typename O::vf acc = O::zero();
  std::size_t i = 0;
  for (; i + W <= n; i += W) acc = O::fma(O::load(a + i), O::load(b + i), acc);
  float s = O::reduce_add(acc);
  for (; i < n; ++i) s += a[i] * b[i];
  return s;
}

/// out[r] = k . rows[r * stride ..] over n floats for r < n_rows: four rows at a time,
/// one accumulator each, so four FMA chains overlap (one dot waits on its single
/// accumulator, which kept Expected Attention's rescore at a fraction of the FMA rate).
/// Each row is summed in dot_f32's order.
template <class Isa = simd::native>
void dot_rows_f32(const float* k, const float* rows, std::size_t n_rows, std::size_t stride,
                  std::size_t n, float* out) noexcept {
  using O = simd::ops<Isa>;
  constexpr std::size_t W = O::lanes;
  std::size_t r = 0;
  for (; r + 4 <= n_rows; r += 4) {
    const float *a0 = rows + r * stride, *a1 = a0 + stride, *a2 = a1 + stride, *a3 = a2 + stride;
    typename O::vf c0 = O::zero(), c1 = O::zero(), c2 = O::zero(), c3 = O::zero();
    std::size_t i = 0;
    for (; i + W <= n; i += W) {
      const typename O::vf kv = O::load(k + i);
      c0 = O::fma(kv, O::load(a0 + i), c0);
      c1 = O::fma(kv, O::load(a1 + i), c1);
      c2 = O::fma(kv, O::load(a2 + i), c2);
      c3 = O::fma(kv, O::load(a3 + i), c3);
    }
    float s0 = O::reduce_add(c0), s1 = O::reduce_add(c1), s2 = O::reduce_add(c2),
          s3 = O::reduce_add(c3);
    for (; i < n; ++i) {
      s0 += k[i] * a0[i];
      s1 += k[i] * a1[i];
      s2 += k[i] * a2[i];
      s3 += k[i] * a3[i];
    }
    out[r] = s0;
    out[r + 1] = s1;
    out[r + 2] = s2;
    out[r + 3] = s3;
  }
  for (; r < n_rows; ++r) out[r] = dot_f32<Isa>(k, rows + r * stride, n);
}

}  // namespace mnemo::evict
