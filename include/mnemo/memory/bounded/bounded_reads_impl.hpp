// bounded's read hook (the class is in bounded.hpp): with a policy that declares a
// lane reader (Quest's pages, ThinK's pruned keys), model::attend_observed hands a
// micro-batch of decode rows to the readers, one row per sequence over its lane's
// dense prefix; a micro-batch with a prefill chunk goes to the kernel unchanged and
// the readers see the chunks' query rows.
#pragma once

#include "mnemo/memory/bounded/bounded.hpp"

namespace mnemo::memory {

template <class P, dtype::kv_element KE, dtype::kv_element VE>
template <simd::isa_tag Isa>
status bounded<P, KE, VE>::attend_reads(std::size_t layer, std::size_t u,
                                        const attention::shape& sh, const attention::params& p,
                                        const attention::query_batch& q, const layer_views& lv,
                                        float* out, attention::workspace& ws,
                                        const attention::options& opt, bool& handled) {
  handled = false;
  if constexpr (reads_hooked) {
    if (u >= plan_.size() || plan_[u].token_seq.size() != q.n_tokens)
      return make_status(status_code::invalid_argument,
                         "bounded: micro-batch %zu is not applied (or has another size)", u);
    const planned& pl = plan_[u];
    const std::size_t q_row = sh.n_head * sh.d_k;
    bool decode = true;
    for (const seq_step& ss : pl.seqs) decode = decode && ss.n_new == 1;
    if (!decode) {
      for (std::size_t j = 0; j < q.n_tokens; ++j) {
        const seq_step& ss = pl.seqs[pl.token_seq[j]];
        if (ss.n_new > 1)
          readers_[lane_index(ss.seq, layer, 0)].observe(q.q + j * q_row, q.pos + j, 1, sh.n_head);
      }
      return {};
    }
    for (std::size_t j = 0; j < q.n_tokens; ++j) {
      const std::uint32_t k = pl.token_seq[j];
      if (k >= lv.streams.size() || lv.streams[k].segments.size() != 1)
        return make_status(status_code::invalid_argument,
                           "bounded: the views of micro-batch %zu are not this memory's", u);
      const attention::query_batch one{q.q + j * q_row, 1, q.pos + j, q.seq + j, nullptr};
      MNEMO_RETURN_IF_ERROR(
          (readers_[lane_index(pl.seqs[k].seq, layer, 0)].template attend_row<Isa, KE, VE>(
              lv.streams[k].segments[0], sh, p, one, out + j * sh.n_head * sh.d_v, ws, opt)));
    }
    handled = true;
  } else {
    (void)layer, (void)u, (void)sh, (void)p, (void)q, (void)lv, (void)out, (void)ws, (void)opt;
  }
  return {};
}

}  // namespace mnemo::memory
