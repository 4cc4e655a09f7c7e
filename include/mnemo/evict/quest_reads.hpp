// Quest through the decoder (evict/quest.hpp for the rule): quest_reads<Base> is an
// eviction policy `Base` (last_recent by default: with a budget that holds the whole
// context nothing is evicted, Quest's setting) whose memory keeps a page index per
// (sequence, layer) lane and lets model::attend_observed read, for every decode row,
// only the `top_pages` pages the row selects. The index follows the lane's cells: new
// cells are appended from the cache (decoded, so the bound holds for the keys the
// kernel reads), and a cell whose key changes (a reused slot, a moved cell, a
// re-rotated key, a loaded state) makes it rebuild from the lane's keys.
#pragma once

#include <cstddef>
#include <vector>

#include "mnemo/dtype/rows.hpp"
#include "mnemo/evict/last_recent.hpp"
#include "mnemo/evict/quest_attend.hpp"

namespace mnemo::evict {

/// The page index of one (sequence, layer) lane, kept in step with the lane's cells.
class quest_lane_reader {
 public:
  static result<quest_lane_reader> make(const quest_config& c) {
    MNEMO_ASSIGN_OR_RETURN(quest_index ix, quest_index::make(c));
    quest_lane_reader r;
    r.ix_ = std::move(ix);
    return r;
  }
  const quest_index& index() const noexcept { return ix_; }

  void observe(const float*, const pos_t*, std::size_t, std::size_t) noexcept {}
  /// The key of `slot` changed: pages it is part of no longer bound it.
  void touched(std::size_t slot) noexcept {
    if (slot < ix_.n_cells()) stale_ = true;
  }
  void reset() noexcept { stale_ = true; }

  /// One decode row q ([1, n_head, d_k], stream 0) over the lane's cells.
  template <simd::isa_tag Isa, dtype::kv_element KE, dtype::kv_element VE>
  status attend_row(const attention::kv_segment& cells, const attention::shape& sh,
                    const attention::params& p, const attention::query_batch& q, float* out,
                    attention::workspace& ws, const attention::options& opt) {
    sync<Isa, KE>(cells);
    ix_.select(q.q, sh.group());
    return quest_attend<Isa, KE, VE>(ix_, cells, sh, p, q, out, ws, scr_, opt);
  }

 private:
  /// Appends the cells the index has not seen, after a rebuild when a key it covers
  /// changed.
  template <simd::isa_tag Isa, dtype::kv_element KE>
  void sync(const attention::kv_segment& cells) {
    if (stale_ || cells.n_cells < ix_.n_cells()) {
      ix_.clear();
      stale_ = false;
    }
    const std::size_t row = ix_.config().n_head_kv * ix_.config().d_k;
    key_.resize(row);
    for (std::size_t i = ix_.n_cells(); i < cells.n_cells; ++i) {
      const auto* k = static_cast<const std::byte*>(cells.k) + i * cells.k_stride;
      dtype::decode_row<Isa>(reinterpret_cast<const KE*>(k), key_.data(), row);
      ix_.append(key_.data());
    }
  }

  quest_index ix_;
  bool stale_ = false;
  std::vector<float> key_;  // [n_head_kv, d_k] scratch
  quest_scratch scr_;
};

/// Base's eviction with Quest's read selection at decode (per-layer lanes). Base must
/// need no attention statistics: decode rows go through the reader, not the export.
template <class Base = last_recent>
struct quest_reads : Base {
  static_assert(!Base::uses_attention,
                "mnemo::evict::quest_reads: the base policy must need no attention statistics "
                "(decode rows are read through Quest's pages, without the kernel's export); use "
                "last_recent, streaming_llm, key_norm or random_evict");
  std::size_t page_size = 16;  // cells per page
  std::size_t top_pages = 64;  // pages a decode row reads (its own page included)
  bool per_head = true;        // false: one page set for every KV head of the layer

  using lane_reader = quest_lane_reader;
  result<lane_reader> make_reader(std::size_t n_head_kv, std::size_t d_k,
                                  const attention::rope_config&) const {
    return quest_lane_reader::make({page_size, top_pages, n_head_kv, d_k, per_head});
  }
};
static_assert(eviction_policy<quest_reads<>> && lane_reading<quest_reads<>>);

}  // namespace mnemo::evict
