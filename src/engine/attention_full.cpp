// The attention decoders on one full cache: five K/V types, five instantiations of
// the decoder's forward pass.
#include "engine/open_parts.hpp"

#include "mnemo/memory/full/full_cache.hpp"
#include "mnemo/memory/full/full_cache_state.hpp"
#include "mnemo/model/architectures.hpp"

namespace mnemo::engine_detail {

result<backend_ptr> open_attention_full(model::attention_decoder& m, backend_args& a) {
  const engine_options& o = a.o;
  return with_kv<float, dtype::f16, dtype::bf16, dtype::block_q8_0, dtype::block_q4_0>(
      o.kv, "full", [&]<class KE>() {
        return build<memory::full_cache<KE>>(m, a, [&](const model::attention_decoder& mm) {
          return memory::full_cache<KE>::make(mm.full_cache_config(o.n_ctx, o.n_seq_max));
        });
      });
}

}  // namespace mnemo::engine_detail
