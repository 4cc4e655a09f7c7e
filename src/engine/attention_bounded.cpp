// The attention decoders without windowed layers on a bounded cache: f16 K/V under each
// eviction policy, five instantiations of the decoder's forward pass.
#include "engine/open_parts.hpp"

#include "mnemo/evict/evict.hpp"
#include "mnemo/evict/quest_reads.hpp"
#include "mnemo/memory/bounded/bounded.hpp"
#include "mnemo/memory/bounded/bounded_state.hpp"
#include "mnemo/model/architectures.hpp"

namespace mnemo::engine_detail {

result<backend_ptr> open_attention_bounded(model::attention_decoder& m, backend_args& a) {
  const engine_options& o = a.o;
  return with_kv<dtype::f16>(o.kv, "bounded", [&]<class KE>() -> result<backend_ptr> {
    auto with_policy = [&]<class Policy>(Policy policy, std::size_t budget) {
      return build<memory::bounded<Policy, KE>>(m, a, [&](const model::attention_decoder& mm) {
        memory::bounded_config c;
        c.shape = mm.kv_shape();
        c.budget = budget;
        c.max_ubatch = o.n_ubatch;
        c.n_seq_max = o.n_seq_max;
        c.rope = mm.hparams().rope();
        return memory::bounded<Policy, KE>::make(c, policy);
      });
    };
    const std::size_t b = o.evict_budget;
    switch (o.policy) {
      case evict_policy::h2o: return with_policy(evict::h2o{}, b);
      case evict_policy::tova: return with_policy(evict::tova{}, b);
      case evict_policy::snapkv: return with_policy(evict::snapkv{}, b);
      case evict_policy::streaming_llm: return with_policy(evict::streaming_llm{}, b);
      case evict_policy::quest: {
        // Every token of a sequence held (its share of n_ctx, as split streams), each
        // decode row reading the pages that hold at least evict_budget cells.
        evict::quest_reads<> q;
        q.page_size = 16;
        q.top_pages = (b + q.page_size - 1) / q.page_size;
        return with_policy(q, per_seq(o));
      }
      case evict_policy::none: break;
    }
    return make_status(status_code::invalid_argument,
                       "%.*s: memory 'bounded' needs an eviction policy (h2o, tova, snapkv, "
                       "streaming_llm, quest)",
                       static_cast<int>(a.arch.size()), a.arch.data());
  });
}

}  // namespace mnemo::engine_detail
