// The attention decoders on split streams (one per sequence, n_ctx / n_seq_max cells
// each): five K/V types, five instantiations of the decoder's forward pass.
#include "engine/open_parts.hpp"

#include "mnemo/memory/stream/split_stream.hpp"
#include "mnemo/memory/stream/split_stream_state.hpp"
#include "mnemo/model/architectures.hpp"

namespace mnemo::engine_detail {

result<backend_ptr> open_attention_split(model::attention_decoder& m, backend_args& a) {
  const engine_options& o = a.o;
  return with_kv<float, dtype::f16, dtype::bf16, dtype::block_q8_0, dtype::block_q4_0>(
      o.kv, "split", [&]<class KE>() {
        return build<memory::split_stream<KE>>(m, a, [&](const model::attention_decoder& mm) {
          return memory::split_stream<KE>::make(mm.split_stream_config(per_seq(o), o.n_seq_max));
        });
      });
}

}  // namespace mnemo::engine_detail
