// The reference attention: scalar, double accumulation, two-pass softmax, straight
// from the definitions. Every fast kernel is tested against it; it is not fast.
#pragma once

#include <cmath>
#include <span>
#include <vector>

#include "mnemo/attention/detail/validate.hpp"
#include "mnemo/attention/kv_view.hpp"
#include "mnemo/attention/params.hpp"
#include "mnemo/attention/sink.hpp"
#include "mnemo/attention/state.hpp"
#include "mnemo/dtype/dtype.hpp"

namespace mnemo::attention {

/// out[t, h, :] = sum_j softmax_j(logit(t, h, j)) v_j over the cells of token t's
/// stream that keeps() allows; zeros for a row that attends nothing.
/// q: [n_tokens, n_head, d_k]; out: [n_tokens, n_head, d_v].
template <dtype::kv_element KE, dtype::kv_element VE, stats_sink Sink = null_sink>
status reference_attend(const shape& sh, const params& p, const query_batch& q,
                        std::span<const kv_view> streams, float* out, Sink sink = {}) {
  MNEMO_RETURN_IF_ERROR((detail::validate_call<KE, VE>(sh, p, q, streams, out, sink)));
  const std::size_t g = sh.group();
  const std::size_t k_head_bytes = (dtype::blocks_in_row<KE>(sh.d_k) * sizeof(KE));
  const std::size_t v_head_bytes = (dtype::blocks_in_row<VE>(sh.d_v) * sizeof(VE));
  std::vector<float> k(sh.d_k), v(sh.d_v);

  for (std::size_t t = 0; t < q.n_tokens; ++t) {
    const std::size_t st = q.stream != nullptr ? q.stream[t] : 0;
    const kv_view& view = streams[st];
    for (std::size_t h = 0; h < sh.n_head; ++h) {
      const std::size_t hk = h / g;
      const float* qr = q.q + (t * sh.n_head + h) * sh.d_k;
      // Pass 1: logits of the kept cells.
      std::vector<double> logits;
      std::vector<std::size_t> cells;  // stream-wide cell index of each kept logit
      std::vector<const std::byte*> v_rows;
      std::size_t base = 0;
      for (const kv_segment& seg : view.segments) {
        for (std::size_t j = 0; j < seg.n_cells; ++j) {
          const seq_set* own = seg.owners != nullptr ? &seg.owners[j] : nullptr;
          if (!keeps(p, q.pos[t], q.seq[t], seg.pos[j], own)) continue;
          const auto* kr =
              static_cast<const std::byte*>(seg.k) + j * seg.k_stride + hk * k_head_bytes;
          dtype::decode_row<simd::scalar>(reinterpret_cast<const KE*>(kr), k.data(), sh.d_k);
          double s = 0;
          for (std::size_t i = 0; i < sh.d_k; ++i) s += static_cast<double>(qr[i]) * k[i];
          s *= p.scale;
          if (p.softcap > 0) s = p.softcap * std::tanh(s / p.softcap);
          logits.push_back(s);
          cells.push_back(base + j);
          v_rows.push_back(static_cast<const std::byte*>(seg.v) + j * seg.v_stride +
                           hk * v_head_bytes);
        }
        base += seg.n_cells;
      }
      // Pass 2: softmax and the weighted sum of values.
      double m = -INFINITY;
      for (double s : logits) m = std::max(m, s);
      double l = 0;
      for (double s : logits) l += std::exp(s - m);
      std::vector<double> o(sh.d_v, 0.0);
      for (std::size_t c = 0; c < logits.size(); ++c) {
        const double w = std::exp(logits[c] - m) / l;
        dtype::decode_row<simd::scalar>(reinterpret_cast<const VE*>(v_rows[c]), v.data(), sh.d_v);
        for (std::size_t i = 0; i < sh.d_v; ++i) o[i] += w * v[i];
        if constexpr (Sink::enabled) {
          if (!sink.mass.empty() && sink.mass[st] != nullptr && sink.row_contributes(t))
            sink.mass[st][hk * view.n_cells() + cells[c]] += static_cast<float>(w);
          if (!sink.logits.empty() && sink.logits[st] != nullptr && sink.row_contributes(t))
            sink.logits[st][(sink.logit_row[t] * sh.n_head + h) * view.n_cells() + cells[c]] =
                static_cast<float>(logits[c]);
        }
      }
      float* orow = out + (t * sh.n_head + h) * sh.d_v;
      for (std::size_t i = 0; i < sh.d_v; ++i) orow[i] = static_cast<float>(o[i]);
      if constexpr (Sink::enabled) {
        if (sink.lse != nullptr)
          sink.lse[t * sh.n_head + h] =
              logits.empty() ? k_neg_inf : static_cast<float>(m + std::log(l));
      }
    }
  }
  return {};
}

}  // namespace mnemo::attention
