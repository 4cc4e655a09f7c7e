// Argument checks shared by the reference and the fast kernels (tier 3: a status).
#pragma once

#include <span>

#include "mnemo/attention/kv_view.hpp"
#include "mnemo/attention/params.hpp"
#include "mnemo/attention/sink.hpp"
#include "mnemo/dtype/dtype.hpp"

namespace mnemo::attention::detail {

template <class KE, class VE, class Sink>
status validate_call(const shape& sh, const params& p, const query_batch& q,
                     std::span<const kv_view> streams, const float* out, const Sink& sink) {
  MNEMO_RETURN_IF_ERROR((sh.template validate<KE, VE>()));
  MNEMO_RETURN_IF_ERROR(p.validate());
  if (q.n_tokens == 0) return {};
  if (q.q == nullptr || q.pos == nullptr || q.seq == nullptr || out == nullptr)
    return make_status(status_code::invalid_argument,
                       "attention: queries, positions, sequence ids and output are required");
  if (streams.empty())
    return make_status(status_code::invalid_argument, "attention: no KV stream given");
  const std::size_t k_row = (dtype::blocks_in_row<KE>(sh.d_k) * sizeof(KE)) * sh.n_head_kv;
  const std::size_t v_row = (dtype::blocks_in_row<VE>(sh.d_v) * sizeof(VE)) * sh.n_head_kv;
  for (std::size_t s = 0; s < streams.size(); ++s) {
    for (const kv_segment& seg : streams[s].segments) {
      if (seg.n_cells == 0) continue;
      if (seg.k == nullptr || seg.v == nullptr || seg.pos == nullptr)
        return make_status(status_code::invalid_argument,
                           "attention: stream %zu has a segment without K, V or positions", s);
      if (seg.k_stride < k_row || seg.v_stride < v_row)
        return make_status(status_code::invalid_argument,
                           "attention: stream %zu: cell strides (%zu, %zu) are smaller than a K/V "
                           "row (%zu, %zu bytes)",
                           s, seg.k_stride, seg.v_stride, k_row, v_row);
    }
  }
  for (std::size_t t = 0; t < q.n_tokens; ++t) {
    if (q.seq[t] < 0 || q.seq[t] >= k_max_seq)
      return make_status(status_code::out_of_range,
                         "attention: token %zu has sequence id %d outside [0, %d)", t, q.seq[t],
                         k_max_seq);
    if (q.stream != nullptr && q.stream[t] >= streams.size())
      return make_status(status_code::out_of_range, "attention: token %zu names stream %u of %zu",
                         t, q.stream[t], streams.size());
  }
  if constexpr (Sink::enabled) {
    if (!sink.mass.empty() && sink.mass.size() != streams.size())
      return make_status(status_code::invalid_argument,
                         "attention: mass sink has %zu stream buffers for %zu streams",
                         sink.mass.size(), streams.size());
    if (!sink.logits.empty() && (sink.logits.size() != streams.size() || sink.logit_row == nullptr))
      return make_status(status_code::invalid_argument,
                         "attention: logits sink has %zu stream buffers for %zu streams (and "
                         "needs logit_row)",
                         sink.logits.size(), streams.size());
  }
  return {};
}

}  // namespace mnemo::attention::detail
