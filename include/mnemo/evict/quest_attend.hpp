// Quest's read side (evict/quest.hpp): a decode row attends only the pages its
// quest_index selected. The kernel is the ordinary one; the selection reaches it as
// segments (one per run of consecutive selected pages), so no cell outside them is
// read. With per-head page sets each KV head is one kernel call over segments that
// point at its part of each cell row (the group's query heads gathered, as for
// per-KV-head lanes); with one set per layer it is a single call.
#pragma once

#include <cstring>
#include <vector>

#include "mnemo/attention/attend.hpp"
#include "mnemo/evict/quest.hpp"

namespace mnemo::evict {

/// Scratch reused across steps (no allocation once warm).
struct quest_scratch {
  std::vector<attention::kv_segment> segments;
  std::vector<float> q, out;
};

namespace detail {
/// Segments over the runs of consecutive `pages` of `cells`, each cell row advanced
/// by `head_k` / `head_v` bytes (a KV head's part of the row).
inline void quest_segments(std::span<const std::uint32_t> pages, std::size_t page_size,
                           const attention::kv_segment& cells, std::size_t head_k,
                           std::size_t head_v, std::vector<attention::kv_segment>& out) {
  out.clear();
  for (std::size_t i = 0; i < pages.size();) {
    std::size_t j = i + 1;
    while (j < pages.size() && pages[j] == pages[j - 1] + 1) ++j;
    const std::size_t c0 = pages[i] * page_size;
    const std::size_t c1 = std::min(cells.n_cells, pages[j - 1] * page_size + page_size);
    attention::kv_segment s = cells;
    s.k = static_cast<const std::byte*>(cells.k) + c0 * cells.k_stride + head_k;
    s.v = static_cast<const std::byte*>(cells.v) + c0 * cells.v_stride + head_v;
    s.pos = cells.pos + c0;
    if (cells.owners != nullptr) s.owners = cells.owners + c0;
    s.n_cells = c1 - c0;
    out.push_back(s);
    i = j;
  }
}
}  // namespace detail

/// K/V bytes one decode step reads through quest_attend after ix.select(): the
/// selected cells' K and V rows of each KV head plus every page's min/max (whole
/// blocks of quest_index::page_block pages, as select() reads them).
template <dtype::kv_element KE, dtype::kv_element VE>
std::size_t quest_bytes_read(const quest_index& ix, const attention::shape& sh) noexcept {
  const std::size_t hk = dtype::blocks_in_row<KE>(sh.d_k) * sizeof(KE),
                    hv = dtype::blocks_in_row<VE>(sh.d_v) * sizeof(VE);
  const std::size_t heads_per_set = ix.config().per_head ? 1 : sh.n_head_kv;
  std::size_t bytes = ix.metadata_bytes();
  for (std::size_t s = 0; s < ix.n_sets(); ++s)
    bytes += ix.selected_cells(s) * heads_per_set * (hk + hv);
  return bytes;
}

/// One decode row (q.n_tokens == 1) attends the pages ix.select() chose. `cells` is
/// the stream's dense run of cells that ix indexes (cell i of the index is cell i of
/// the segment, all KV heads per row). q: [1, n_head, d_k]; out: [1, n_head, d_v].
template <simd::isa_tag Isa, dtype::kv_element KE, dtype::kv_element VE>
status quest_attend(const quest_index& ix, const attention::kv_segment& cells,
                    const attention::shape& sh, const attention::params& p,
                    const attention::query_batch& q, float* out, attention::workspace& ws,
                    quest_scratch& scr, const attention::options& opt = {}) {
  if (q.n_tokens != 1 || q.stream != nullptr)
    return make_status(status_code::invalid_argument,
                       "quest_attend: one decode row of stream 0 (got %zu rows)", q.n_tokens);
  if (cells.n_cells != ix.n_cells() || sh.n_head_kv != ix.config().n_head_kv ||
      sh.d_k != ix.config().d_k)
    return make_status(status_code::invalid_argument,
                       "quest_attend: the index covers %zu cells of %zu KV heads x d_k %zu; the "
                       "call has %zu cells of %zu x %zu",
                       ix.n_cells(), ix.config().n_head_kv, ix.config().d_k, cells.n_cells,
                       sh.n_head_kv, sh.d_k);
  const std::size_t P = ix.config().page_size;
  if (!ix.config().per_head || sh.n_head_kv == 1) {
    detail::quest_segments(ix.selected(0), P, cells, 0, 0, scr.segments);
    const attention::kv_view view{scr.segments};
    return attention::attend<Isa, KE, VE>(sh, p, q, std::span(&view, 1), out, ws, opt);
  }
  const std::size_t g = sh.group();
  const std::size_t hk = dtype::blocks_in_row<KE>(sh.d_k) * sizeof(KE),
                    hv = dtype::blocks_in_row<VE>(sh.d_v) * sizeof(VE);
  const attention::shape one{g, 1, sh.d_k, sh.d_v};
  scr.q.resize(g * sh.d_k);
  scr.out.resize(g * sh.d_v);
  attention::query_batch qh = q;
  qh.q = scr.q.data();
  for (std::size_t h = 0; h < sh.n_head_kv; ++h) {
    detail::quest_segments(ix.selected(h), P, cells, h * hk, h * hv, scr.segments);
    const attention::kv_view view{scr.segments};
    std::memcpy(scr.q.data(), q.q + h * g * sh.d_k, g * sh.d_k * sizeof(float));
    MNEMO_RETURN_IF_ERROR(
        (attention::attend<Isa, KE, VE>(one, p, qh, std::span(&view, 1), scr.out.data(), ws, opt)));
    std::memcpy(out + h * g * sh.d_v, scr.out.data(), g * sh.d_v * sizeof(float));
  }
  return {};
}

}  // namespace mnemo::evict
