// The attention decoders with window and global layers on the interleaved composites:
// iswa (a full cache and a sliding window) and iswa-split (split streams and split
// windows), f32 and f16 K/V, four instantiations of the decoder's forward pass.
#include "engine/open_parts.hpp"

#include "mnemo/memory/full/full_cache_state.hpp"
#include "mnemo/memory/layered/layered.hpp"
#include "mnemo/memory/layered/layered_state.hpp"
#include "mnemo/memory/stream/split_stream_state.hpp"
#include "mnemo/memory/window/sliding_window.hpp"
#include "mnemo/memory/window/sliding_window_state.hpp"
#include "mnemo/memory/window/split_window.hpp"
#include "mnemo/memory/window/split_window_state.hpp"
#include "mnemo/model/architectures.hpp"

namespace mnemo::engine_detail {

result<backend_ptr> open_attention_iswa(model::attention_decoder& m, backend_args& a,
                                        memory_kind k) {
  const engine_options& o = a.o;
  using model_t = model::attention_decoder;
  return with_kv<float, dtype::f16>(o.kv, "iswa", [&]<class KE>() -> result<backend_ptr> {
    if (k == memory_kind::iswa)
      return build<model_t::iswa_memory<KE>>(m, a, [&](const model_t& mm) {
        return mm.make_iswa<KE>(o.n_ctx, o.n_seq_max, o.n_ubatch);
      });
    return build<model_t::iswa_split_memory<KE>>(m, a, [&](const model_t& mm) {
      return mm.make_iswa_split<KE>(per_seq(o), o.n_seq_max, o.n_ubatch);
    });
  });
}

}  // namespace mnemo::engine_detail
