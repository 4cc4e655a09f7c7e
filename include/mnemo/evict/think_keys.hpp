// ThinK through the decoder (evict/think.hpp for the rule): think_keys<Base> is an
// eviction policy `Base` (last_recent by default) whose memory keeps, per (sequence,
// layer) lane, the last `window` query rows of its prefill calls and, from the first
// decode row after a prefill, the channel choice and the lane's keys pruned to it;
// model::attend_observed then attends every decode row over the pruned keys with the
// row's query gathered to the same channels (the full head's scale). The choice uses
// the window and the keys the lane held before that row, as at the end of a prefill.
// The memory's own K rows stay full width: the pruned keys are the reader's copy
// ([cells, n_head_kv, kept] in the cache's element type where that is f16 or bf16,
// exactly the cached values, else f32), extended as cells arrive and rebuilt when a
// key changes.
#pragma once

#include <cstddef>
#include <type_traits>
#include <vector>

#include "mnemo/attention/attend.hpp"
#include "mnemo/dtype/rows.hpp"
#include "mnemo/evict/last_recent.hpp"
#include "mnemo/evict/think.hpp"

namespace mnemo::evict {

/// The element type of the pruned keys of a cache of KE: KE itself where a row can be
/// cut to any channel count (f16, bf16, f32), else f32 (quantised blocks).
template <class KE>
using think_pruned_element =
    std::conditional_t<std::is_same_v<KE, dtype::f16> || std::is_same_v<KE, dtype::bf16>, KE,
                       float>;

/// ThinK's state of one (sequence, layer) lane.
class think_lane_reader {
 public:
  static result<think_lane_reader> make(const think_config& c, std::size_t window) {
    MNEMO_ASSIGN_OR_RETURN(think_pruner t, think_pruner::make(c));
    think_lane_reader r;
    r.pruner_ = std::move(t);
    r.window_ = window;
    return r;
  }
  const think_pruner& pruner() const noexcept { return pruner_; }

  /// Prefill rows of the lane's sequence, q: [n_rows, n_head, d_k] (post-RoPE): the
  /// newest `window` of them choose the channels at the next decode row.
  void observe(const float* q, const pos_t*, std::size_t n_rows, std::size_t n_head) {
    const std::size_t row = n_head * pruner_.config().d_k;
    n_head_ = n_head;
    window_q_.insert(window_q_.end(), q, q + n_rows * row);
    if (window_q_.size() > window_ * row)
      window_q_.erase(window_q_.begin(),
                      window_q_.end() - static_cast<std::ptrdiff_t>(window_ * row));
    choose_ = true;
  }
  void touched(std::size_t slot) noexcept {
    if (slot < n_pruned_) n_pruned_ = 0;
  }
  void reset() noexcept { n_pruned_ = 0; }

  /// One decode row q ([1, n_head, d_k], stream 0) over the lane's cells.
  template <simd::isa_tag Isa, dtype::kv_element KE, dtype::kv_element VE>
  status attend_row(const attention::kv_segment& cells, const attention::shape& sh,
                    const attention::params& p, const attention::query_batch& q, float* out,
                    attention::workspace& ws, const attention::options& opt) {
    const think_config& c = pruner_.config();
    if (sh.n_head_kv != c.n_head_kv || sh.d_k != c.d_k)
      return make_status(status_code::invalid_argument,
                         "think_keys: the reader was made for %zu KV heads x d_k %zu, the call "
                         "has %zu x %zu",
                         c.n_head_kv, c.d_k, sh.n_head_kv, sh.d_k);
    const std::size_t row = c.n_head_kv * c.d_k;
    key_.resize(row);
    auto key_of = [&](std::size_t i) {
      const auto* k = static_cast<const std::byte*>(cells.k) + i * cells.k_stride;
      dtype::decode_row<Isa>(reinterpret_cast<const KE*>(k), key_.data(), row);
      return key_.data();
    };
    if (choose_ || c.group != sh.group()) {
      if (c.group != sh.group()) {  // the query group is the call's
        think_config g = c;
        g.group = sh.group();
        MNEMO_ASSIGN_OR_RETURN(pruner_, think_pruner::make(g));
        if (n_head_ != sh.n_head) window_q_.clear();
      }
      keys_.clear();  // the keys held before this row
      for (std::size_t i = 0; i < cells.n_cells; ++i)
        if (cells.pos[i] >= 0 && cells.pos[i] < q.pos[0]) {
          const float* k = key_of(i);
          keys_.insert(keys_.end(), k, k + row);
        }
      pruner_.choose(window_q_.data(), window_q_.size() / (sh.n_head * c.d_k), keys_.data(),
                     keys_.size() / row);
      choose_ = false;
      n_pruned_ = 0;
    }
    using PE = think_pruned_element<KE>;
    const std::size_t kept = pruner_.kept_channels(), prow = c.n_head_kv * kept;
    if (cells.n_cells < n_pruned_) n_pruned_ = 0;
    pruned_.resize(cells.n_cells * prow * sizeof(PE));
    auto* pruned = reinterpret_cast<PE*>(pruned_.data());
    key_pruned_.resize(prow);
    for (std::size_t i = n_pruned_; i < cells.n_cells; ++i)
      if constexpr (std::is_same_v<PE, float>) {
        pruner_.prune_keys(key_of(i), 1, pruned + i * prow);
      } else {  // the kept values are cached values: encoding them back is exact
        pruner_.prune_keys(key_of(i), 1, key_pruned_.data());
        dtype::encode_row<Isa>(key_pruned_.data(), pruned + i * prow, prow);
      }
    n_pruned_ = cells.n_cells;
    q_.resize(sh.n_head * kept);
    pruner_.gather_queries(q.q, 1, q_.data());
    const attention::kv_segment seg{pruned,    cells.v,      prow * sizeof(PE), cells.v_stride,
                                    cells.pos, cells.owners, cells.n_cells};
    const attention::kv_view view{std::span(&seg, 1)};
    const attention::query_batch qg{q_.data(), 1, q.pos, q.seq, nullptr};
    return attention::attend<Isa, PE, VE>(pruner_.pruned_shape(sh), p, qg, std::span(&view, 1), out,
                                          ws, opt);
  }

 private:
  think_pruner pruner_;
  std::size_t window_ = 0, n_head_ = 0, n_pruned_ = 0;
  bool choose_ = true;             // choose at the next decode row
  std::vector<float> window_q_;    // [<= window, n_head, d_k]
  std::vector<std::byte> pruned_;  // [cells, n_head_kv, kept] of the pruned element
  std::vector<float> keys_, key_, key_pruned_, q_;  // scratch
};

/// Base's eviction with ThinK's key-channel pruning at decode (per-layer lanes). Base
/// must need no attention statistics: decode rows go through the reader.
template <class Base = last_recent>
struct think_keys : Base {
  static_assert(!Base::uses_attention,
                "mnemo::evict::think_keys: the base policy must need no attention statistics "
                "(decode rows are attended over the pruned keys, without the kernel's export); "
                "use last_recent, streaming_llm, key_norm or random_evict");
  double prune_ratio = 0.5;  // fraction of each KV head's channel pairs dropped
  std::size_t window = 32;   // prefill query rows that choose the channels

  using lane_reader = think_lane_reader;
  result<lane_reader> make_reader(std::size_t n_head_kv, std::size_t d_k,
                                  const attention::rope_config& rope) const {
    think_config c;
    c.n_head_kv = n_head_kv;
    c.d_k = d_k;
    c.layout = rope.layout == attention::rope_layout::neox ? attention::rope_layout::neox
                                                           : attention::rope_layout::normal;
    c.n_rot = rope.layout == attention::rope_layout::none ? 0 : rope.n_rot;
    c.prune_ratio = prune_ratio;
    return think_lane_reader::make(c, window);
  }
};
static_assert(eviction_policy<think_keys<>> && lane_reading<think_keys<>>);

}  // namespace mnemo::evict
