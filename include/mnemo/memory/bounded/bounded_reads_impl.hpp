// bounded's read hook (the class is in bounded.hpp): with a policy that declares a
// lane reader (Quest's pages, ThinK's pruned keys), model::attend_observed hands each
// micro-batch to attend_reads first. Every decode row (a sequence with one token in the
// micro-batch) is attended by its lane's reader over the lane's dense prefix; the
// readers see the prefill chunks' query rows, which the caller attends with the kernel.
#pragma once

#include <cstdint>
#include <vector>

#include "mnemo/memory/bounded/bounded.hpp"

namespace mnemo::memory {

template <class P, dtype::kv_element KE, dtype::kv_element VE>
template <simd::isa_tag Isa>
status bounded<P, KE, VE>::attend_reads(std::size_t layer, std::size_t u,
                                        const attention::shape& sh, const attention::params& p,
                                        const attention::query_batch& q, const layer_views& lv,
                                        float* out, attention::workspace& ws,
                                        const attention::options& opt,
                                        std::vector<std::uint8_t>& read) {
  read.assign(q.n_tokens, 0);
  if constexpr (reads_hooked) {
    if (u >= plan_.size() || plan_[u].token_seq.size() != q.n_tokens)
      return make_status(status_code::invalid_argument,
                         "bounded: micro-batch %zu is not applied (or has another size)", u);
    const planned& pl = plan_[u];
    for (std::size_t j = 0; j < q.n_tokens; ++j) {
      const std::uint32_t k = pl.token_seq[j];
      if (pl.seqs[k].n_new == 1 && (k >= lv.streams.size() || lv.streams[k].segments.size() != 1))
        return make_status(status_code::invalid_argument,
                           "bounded: the views of micro-batch %zu are not this memory's", u);
    }
    const std::size_t q_row = sh.n_head * sh.d_k, o_row = sh.n_head * sh.d_v;
    for (std::size_t j = 0; j < q.n_tokens; ++j) {
      const std::uint32_t k = pl.token_seq[j];
      lane_reader& reader = readers_[lane_index(pl.seqs[k].seq, layer, 0)];
      if (pl.seqs[k].n_new > 1) {
        reader.observe(q.q + j * q_row, q.pos + j, 1, sh.n_head);
        continue;
      }
      const attention::query_batch one{q.q + j * q_row, 1, q.pos + j, q.seq + j, nullptr};
      MNEMO_RETURN_IF_ERROR((reader.template attend_row<Isa, KE, VE>(
          lv.streams[k].segments[0], sh, p, one, out + j * o_row, ws, opt)));
      read[j] = 1;
    }
  } else {
    (void)layer, (void)u, (void)sh, (void)p, (void)q, (void)lv, (void)out, (void)ws, (void)opt;
  }
  return {};
}

}  // namespace mnemo::memory
