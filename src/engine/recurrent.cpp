// The recurrent architectures: mamba on recurrent state (one instantiation), jamba's
// attention layers on a full cache or split streams beside its Mamba layers' recurrent
// state (f32 and f16 K/V, four instantiations).
#include "engine/open_parts.hpp"

#include "mnemo/memory/full/full_cache.hpp"
#include "mnemo/memory/full/full_cache_state.hpp"
#include "mnemo/memory/layered/layered.hpp"
#include "mnemo/memory/layered/layered_state.hpp"
#include "mnemo/memory/recurrent/recurrent.hpp"
#include "mnemo/memory/recurrent/recurrent_state.hpp"
#include "mnemo/memory/stream/split_stream.hpp"
#include "mnemo/memory/stream/split_stream_state.hpp"
#include "mnemo/model/jamba.hpp"
#include "mnemo/model/mamba.hpp"

namespace mnemo::engine_detail {

result<backend_ptr> open_mamba(model::mamba_model& m, backend_args& a, memory_kind k) {
  if (k != memory_kind::recurrent) return unknown_kind(a.arch, k, "auto, recurrent");
  return build<memory::recurrent>(m, a, [&](const model::mamba_model& mm) {
    return memory::recurrent::make(mm.recurrent_config(a.o.n_seq_max));
  });
}

result<backend_ptr> open_jamba(model::jamba_model& m, backend_args& a, memory_kind k) {
  const engine_options& o = a.o;
  if (k != memory_kind::hybrid && k != memory_kind::hybrid_split)
    return unknown_kind(a.arch, k, "auto, hybrid, hybrid-split");
  return with_kv<float, dtype::f16>(o.kv, "jamba", [&]<class KE>() -> result<backend_ptr> {
    using model_t = model::jamba_model;
    auto hybrid = [&]<class KV>(auto make_kv) {
      using mem_t = memory::layered<KV, memory::recurrent>;
      return build<mem_t>(m, a, [&, make_kv](const model_t& mm) -> result<mem_t> {
        MNEMO_ASSIGN_OR_RETURN(KV kv, make_kv(mm));
        MNEMO_ASSIGN_OR_RETURN(auto rec, memory::recurrent::make(mm.recurrent_config(o.n_seq_max)));
        return mem_t::make(mm.layer_parts(0, 1), std::move(kv), std::move(rec));
      });
    };
    if (k == memory_kind::hybrid_split)
      return hybrid.template operator()<memory::split_stream<KE>>([&](const model_t& mm) {
        return memory::split_stream<KE>::make(mm.split_stream_config(per_seq(o), o.n_seq_max));
      });
    return hybrid.template operator()<memory::full_cache<KE>>([&](const model_t& mm) {
      return memory::full_cache<KE>::make(mm.full_cache_config(o.n_ctx, o.n_seq_max));
    });
  });
}

}  // namespace mnemo::engine_detail
