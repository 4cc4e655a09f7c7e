// Quest's read side (evict/quest.hpp): a decode row attends only the pages its
// quest_index selected. The kernel is the ordinary one; the selection reaches it as
// segments (one per run of consecutive selected pages), so no cell outside them is
// read. With per-head page sets each KV head's segments point at its part of each cell
// row, and the decode row becomes one row per KV head (its group's query heads) on a
// stream of its own, as for per-KV-head lanes: one kernel call either way.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "mnemo/attention/attend.hpp"
#include "mnemo/evict/quest.hpp"

namespace mnemo::evict {

/// Scratch reused across steps (no allocation once warm).
struct quest_scratch {
  std::vector<attention::kv_segment> segments;
  std::vector<std::size_t> head_begin;  // per KV head: its first segment, then the end
  std::vector<attention::kv_view> views;
  std::vector<pos_t> pos;
  std::vector<seq_id> seq;
  std::vector<std::uint32_t> stream;
};

namespace detail {
/// Appends segments over the runs of consecutive `pages` of `cells`, each cell row
/// advanced by `head_k` / `head_v` bytes (a KV head's part of the row).
inline void quest_segments(std::span<const std::uint32_t> pages, std::size_t page_size,
                           const attention::kv_segment& cells, std::size_t head_k,
                           std::size_t head_v, std::vector<attention::kv_segment>& out) {
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
  scr.segments.clear();
  if (!ix.config().per_head || sh.n_head_kv == 1) {
    detail::quest_segments(ix.selected(0), P, cells, 0, 0, scr.segments);
    const attention::kv_view view{scr.segments};
    return attention::attend<Isa, KE, VE>(sh, p, q, std::span(&view, 1), out, ws, opt);
  }
  // Row h: KV head h's g query heads, on stream h (its pages). The queries [n_head, d_k]
  // are exactly [n_head_kv rows, g, d_k], and the output likewise.
  const std::size_t H = sh.n_head_kv;
  const std::size_t hk = dtype::blocks_in_row<KE>(sh.d_k) * sizeof(KE),
                    hv = dtype::blocks_in_row<VE>(sh.d_v) * sizeof(VE);
  scr.head_begin.resize(H + 1);
  for (std::size_t h = 0; h < H; ++h) {
    scr.head_begin[h] = scr.segments.size();
    detail::quest_segments(ix.selected(h), P, cells, h * hk, h * hv, scr.segments);
  }
  scr.head_begin[H] = scr.segments.size();
  scr.views.resize(H);
  scr.pos.assign(H, q.pos[0]);
  scr.seq.assign(H, q.seq[0]);
  scr.stream.resize(H);
  for (std::size_t h = 0; h < H; ++h) {
    scr.views[h].segments =
        std::span<const attention::kv_segment>(scr.segments)
            .subspan(scr.head_begin[h], scr.head_begin[h + 1] - scr.head_begin[h]);
    scr.stream[h] = static_cast<std::uint32_t>(h);
  }
  const attention::shape one{sh.group(), 1, sh.d_k, sh.d_v};
  const attention::query_batch rows{q.q, H, scr.pos.data(), scr.seq.data(), scr.stream.data()};
  return attention::attend<Isa, KE, VE>(one, p, rows, scr.views, out, ws, opt);
}

}  // namespace mnemo::evict
