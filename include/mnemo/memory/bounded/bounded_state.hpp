// State save/load of bounded<Policy> in the format of state_format.hpp (strategy
// bounded, n_stream = n_seq_max). The policy's per-slot state travels with each
// cell, so a loaded cache evicts exactly as the saved one would have.
//
//   u32 layout = state_floats | granularity << 16 | 1 << 24 (budgets recorded)
//                [| 1 << 25 (lane state recorded)]
//   budgets: u32 rule  u32 kind  u32 n_lanes  u32 budget x n_lanes   (bounded_budgets.hpp)
//   [u32 lane_floats]
//   u32 n_seq_written
//   per sequence: i32 seq  i32 pos_max
//     per lane (layer-major; per KV head: n_head_kv lanes per layer):
//       u32 count, (i32 pos, [u32 slot,] f32 state x state_floats) x count,
//       K rows [count], V rows [count]   (all KV heads per layer, the lane's head per head)
//       [f32 lane state x lane_floats]
//       [pooled: u32 n_pages, u32 pool page x n_pages (the lane's slots page by page)]
//     [pooled, per layer after its lanes: u32 n_free, u32 pool page x n_free]
// A policy with state of the whole lane (evict::lane_floats_of: Expected Attention's
// query statistics) sets bit 25 and saves it with each lane; a file without it loads
// with that state zero, and another size is refused.
// AdaKV's pool (budget kind 3, with alpha) adds each cell's slot in its KV head's
// run, each head's page map and the pool's free list, so a loaded pool holds every
// cell in the same row and takes the same pages next: it continues exactly as the
// saved one would have (the views' page runs, so the kernel's sums, are the same).
// Slots and pages are checked (inside the head's slots and the pool, none held
// twice, every page either mapped once or free) before anything changes.
// Granularity 0 (per layer) is the layout written before per-KV-head lanes existed,
// so older files load unchanged; a file of the other granularity is refused. A file
// without bit 24 predates recorded budgets and loads into any budget layout; one
// with it loads only into a memory with the same rule and the same budget of every
// lane (else a status naming both layouts).
// A whole state (seq -1) holds every sequence with a cell or a position; a
// per-sequence state holds one and loads into any sequence. Everything is checked
// (counts against the capacity, sequence ids, positions) before anything changes.
#pragma once

#include <algorithm>
#include <cstring>
#include <vector>

#include "mnemo/memory/bounded/bounded.hpp"
#include "mnemo/memory/bounded/bounded_budgets.hpp"
#include "mnemo/memory/state_format.hpp"

namespace mnemo::memory {

namespace detail {

template <class P, class KE, class VE>
state_header bounded_header(const bounded<P, KE, VE>& c, std::int32_t seq) {
  return kv_state_header<KE, VE>(strategy_id::bounded, seq, c.config(),
                                 static_cast<std::uint32_t>(c.config().n_seq_max));
}

/// Bytes of one cell's metadata: position, the pool slot (pooled), the policy's state.
template <class P, class KE, class VE>
constexpr std::size_t bounded_meta_bytes() {
  return 4 + (bounded<P, KE, VE>::pooled ? 4 : 0) + 4 * bounded<P, KE, VE>::state_floats;
}

/// The budget layout of memory c (bounded_budgets.hpp), AdaKV's pool included.
template <class P, class KE, class VE>
budget_layout bounded_budget_layout(const bounded<P, KE, VE>& c) {
  budget_layout b = budget_layout_of(c.config());
  if constexpr (bounded<P, KE, VE>::pooled) {
    b.source = budget_layout::kind::pooled;
    b.alpha = static_cast<float>(c.policy().alpha);
  }
  return b;
}

template <class P, class KE, class VE>
void bounded_write_seq(const bounded<P, KE, VE>& c, seq_id s, byte_writer& w) {
  constexpr std::size_t SF = bounded<P, KE, VE>::state_floats;
  w.put(static_cast<std::int32_t>(s));
  w.put(static_cast<std::int32_t>(c.seq_pos_max(s)));
  for (std::size_t l = 0; l < c.config().shape.n_layer; ++l)
    for (std::size_t h = 0; h < c.lanes_per_layer(); ++h) {
      const auto& ln = c.lane_of(s, l, h);
      w.put(static_cast<std::uint32_t>(ln.live));
      for (std::size_t j = 0; j < ln.top; ++j)
        if (ln.pos[j] >= 0) {
          w.put(ln.pos[j]);
          if constexpr (bounded<P, KE, VE>::pooled) w.put(static_cast<std::uint32_t>(j));
          for (std::size_t i = 0; i < SF; ++i) w.put(ln.state[j * SF + i]);
        }
      for (std::size_t j = 0; j < ln.top; ++j)
        if (ln.pos[j] >= 0) w.put_bytes(c.k_part(l, s, j, h), c.k_part_bytes());
      for (std::size_t j = 0; j < ln.top; ++j)
        if (ln.pos[j] >= 0) w.put_bytes(c.v_part(l, s, j, h), c.v_part_bytes());
      for (float x : ln.stats) w.put(x);
      if constexpr (bounded<P, KE, VE>::pooled) {
        w.put(static_cast<std::uint32_t>(ln.pages.size()));
        for (std::uint32_t pg : ln.pages) w.put(pg);
      }
      if (bounded<P, KE, VE>::pooled && h + 1 == c.lanes_per_layer()) {
        const auto& fl = c.free_pages(s, l);
        w.put(static_cast<std::uint32_t>(fl.size()));
        for (std::uint32_t pg : fl) w.put(pg);
      }
    }
}

/// One parsed sequence record: where its pieces lie in the payload.
struct bounded_record {
  seq_id seq;
  pos_t pos_max;
  struct layer {
    std::uint32_t count;
    const std::uint8_t *meta, *k, *v;
    const std::uint8_t* stats = nullptr;  // [lane_floats] f32, or null: zero
    std::size_t top = 0;                  // pooled: 1 + the highest slot
    const std::uint8_t* pages = nullptr;  // pooled: [top / page, rounded up] u32
  };
  struct pool {
    std::uint32_t n_free = 0;
    const std::uint8_t* free = nullptr;  // [n_free] u32, the next page taken last
  };
  std::vector<layer> layers;  // [n_layer, lanes_per_layer]
  std::vector<pool> pools;    // pooled: [n_layer]
};

/// Marks `n` u32 pages at `p` held; false when one is outside `held` or held already.
inline bool take_pages(std::vector<std::uint8_t>& held, const std::uint8_t* p, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) {
    std::uint32_t pg = 0;
    std::memcpy(&pg, p + 4 * i, 4);
    if (pg >= held.size() || held[pg]) return false;
    held[pg] = 1;
  }
  return true;
}

template <class P, class KE, class VE>
status bounded_parse(const bounded<P, KE, VE>& c, byte_reader& r, bounded_record& out,
                     std::size_t lane_floats) {
  constexpr std::size_t MB = bounded_meta_bytes<P, KE, VE>();
  constexpr bool pooled = bounded<P, KE, VE>::pooled;
  std::int32_t s = 0, pm = 0;
  if (!r.get(s) || !r.get(pm))
    return make_status(status_code::corrupt_data, "state_read: truncated sequence record");
  out.seq = s;
  out.pos_max = pm;
  out.layers.clear();
  out.pools.clear();
  std::vector<std::uint8_t> used;  // pooled: the head's slots taken so far
  std::vector<std::uint8_t> held;  // pooled: the layer's pool pages mapped or free
  for (std::size_t i = 0; i < c.config().shape.n_layer * c.lanes_per_layer(); ++i) {
    const std::size_t l = i / c.lanes_per_layer();
    if (i % c.lanes_per_layer() == 0) held.assign(pooled ? c.pool_pages(l) : 0, 0);
    std::uint32_t n = 0;
    const std::size_t h = i % c.lanes_per_layer(), cap = c.lane_slots(l, h);
    if (!r.get(n) || n > cap)
      return make_status(status_code::corrupt_data,
                         "state_read: layer %zu holds %u cells, the capacity is %zu (or truncated)",
                         l, n, cap);
    bounded_record::layer L{n, r.get_bytes(n * MB), nullptr, nullptr};
    L.k = r.get_bytes(n * c.k_part_bytes());
    L.v = r.get_bytes(n * c.v_part_bytes());
    if (lane_floats > 0) L.stats = r.get_bytes(4 * lane_floats);
    if (!r.ok())
      return make_status(status_code::corrupt_data, "state_read: truncated layer %zu", l);
    for (std::uint32_t t = 0; t < n; ++t) {
      pos_t p;
      std::memcpy(&p, L.meta + t * MB, 4);
      if (p < 0 || (pm >= 0 && p > pm && c.config().positions == position_mode::original))
        return make_status(status_code::corrupt_data,
                           "state_read: cell position %d outside [0, %d] in layer %zu", p, pm, l);
      if constexpr (pooled) {
        if (t == 0) used.assign(cap, 0);
        std::uint32_t slot = 0;
        std::memcpy(&slot, L.meta + t * MB + 4, 4);
        if (slot >= cap || used[slot])
          return make_status(status_code::corrupt_data,
                             "state_read: pool slot %u of layer %zu, KV head %zu is outside its "
                             "%zu slots or held twice",
                             slot, l, h, cap);
        used[slot] = 1;
        L.top = std::max<std::size_t>(L.top, std::size_t{slot} + 1);
      }
    }
    if constexpr (pooled) {  // the head's slots [0, top) map whole pages of the pool
      const std::size_t need = (L.top + c.page_cells(l) - 1) / c.page_cells(l);
      std::uint32_t np = 0;
      if (!r.get(np) || np != need)
        return make_status(status_code::corrupt_data,
                           "state_read: layer %zu, KV head %zu maps %u pages, its slots need %zu "
                           "(or truncated)",
                           l, h, np, need);
      L.pages = r.get_bytes(4 * std::size_t{np});
      if (!r.ok() || !take_pages(held, L.pages, np))
        return make_status(status_code::corrupt_data,
                           "state_read: a pool page of layer %zu, KV head %zu is outside the "
                           "pool of %zu pages or held twice (or truncated)",
                           l, h, held.size());
      if (h + 1 == c.lanes_per_layer()) {
        bounded_record::pool pl;
        if (!r.get(pl.n_free) || pl.n_free > held.size())
          return make_status(status_code::corrupt_data,
                             "state_read: layer %zu's free list of %u pages (or truncated)", l,
                             pl.n_free);
        pl.free = r.get_bytes(4 * std::size_t{pl.n_free});
        if (!r.ok() || !take_pages(held, pl.free, pl.n_free) ||
            std::count(held.begin(), held.end(), 0) != 0)
          return make_status(status_code::corrupt_data,
                             "state_read: layer %zu's pool pages are not each mapped or free "
                             "once (or truncated)",
                             l);
        out.pools.push_back(pl);
      }
    }
    out.layers.push_back(L);
  }
  return {};
}

template <class P, class KE, class VE>
void bounded_load(bounded<P, KE, VE>& c, const bounded_record& rec, seq_id dest) {
  constexpr std::size_t SF = bounded<P, KE, VE>::state_floats;
  constexpr std::size_t MB = bounded_meta_bytes<P, KE, VE>();
  constexpr bool pooled = bounded<P, KE, VE>::pooled;
  const std::size_t LH = c.lanes_per_layer(), kb = c.k_part_bytes(), vb = c.v_part_bytes();
  for (std::size_t li = 0; li < rec.layers.size(); ++li) {
    const auto& L = rec.layers[li];
    const std::size_t l = li / LH, h = li % LH;
    auto& ln = c.mutable_lane(dest, l, h);
    std::fill(ln.pos.begin(), ln.pos.end(), -1);
    if constexpr (pooled) {  // the saved page map, before the rows are written
      ln.pages.resize((L.top + c.page_cells(l) - 1) / c.page_cells(l));
      if (!ln.pages.empty()) std::memcpy(ln.pages.data(), L.pages, 4 * ln.pages.size());
      if (h + 1 == LH) {
        auto& fl = c.mutable_free_pages(dest, l);
        fl.resize(rec.pools[l].n_free);
        if (!fl.empty()) std::memcpy(fl.data(), rec.pools[l].free, 4 * fl.size());
      }
    }
    for (std::uint32_t i = 0; i < L.count; ++i) {
      const std::uint8_t* m = L.meta + i * MB;
      std::uint32_t slot = i;  // per lane: the cells from slot 0, in the saved order
      if constexpr (pooled) std::memcpy(&slot, m + 4, 4);
      std::memcpy(&ln.pos[slot], m, 4);
      if constexpr (SF > 0) std::memcpy(&ln.state[slot * SF], m + MB - 4 * SF, 4 * SF);
      std::memcpy(c.k_part(l, dest, slot, h), L.k + i * kb, kb);
      std::memcpy(c.v_part(l, dest, slot, h), L.v + i * vb, vb);
    }
    if (L.stats != nullptr)
      std::memcpy(ln.stats.data(), L.stats, 4 * ln.stats.size());
    else
      std::fill(ln.stats.begin(), ln.stats.end(), 0.0f);
    bounded<P, KE, VE>::recount(ln);
  }
  c.set_pos_max(dest, rec.pos_max);
}

/// Bit 25 of the layout word: the policy's lane state follows each lane.
inline constexpr std::uint32_t lane_state_recorded = 1u << 25;

/// The payload's first word: the policy's state floats and the granularity.
template <class P, class KE, class VE>
std::uint32_t bounded_layout_word(const bounded<P, KE, VE>& c) {
  return static_cast<std::uint32_t>(bounded<P, KE, VE>::state_floats) |
         static_cast<std::uint32_t>(c.config().granularity) << 16 | budgets_recorded |
         (c.lane_floats() > 0 ? lane_state_recorded : 0u);
}

}  // namespace detail

/// Writes sequence s (or every sequence when s == -1) into `out`.
template <class P, class KE, class VE>
status state_write(bounded<P, KE, VE>& c, seq_id s, std::vector<std::uint8_t>& out) {
  MNEMO_RETURN_IF_ERROR(check_state_write(s, c.config().n_seq_max, c.in_batch()));
  std::vector<seq_id> seqs;
  for (seq_id q = 0; q < c.config().n_seq_max; ++q)
    if (q == s || (s < 0 && (c.seq_pos_max(q) >= 0 || c.lane_of(q, 0).live > 0))) seqs.push_back(q);
  state_builder b(out, detail::bounded_header(c, s), 0);
  b.payload().put(detail::bounded_layout_word(c));
  detail::bounded_budget_layout(c).write(b.payload());
  if (c.lane_floats() > 0) b.payload().put(static_cast<std::uint32_t>(c.lane_floats()));
  b.payload().put(static_cast<std::uint32_t>(seqs.size()));
  for (seq_id q : seqs) detail::bounded_write_seq(c, q, b.payload());
  b.seal();
  return {};
}

/// Loads a state written by state_write: a whole state into the whole memory
/// (dest == -1), a per-sequence state into sequence dest.
template <class P, class KE, class VE>
status state_read(bounded<P, KE, VE>& c, std::span<const std::uint8_t> data, seq_id dest = -1) {
  MNEMO_ASSIGN_OR_RETURN(auto opened, open_state_into(data, detail::bounded_header(c, -1), dest,
                                                      c.config().n_seq_max, c.in_batch()));
  const std::int32_t src = opened.src;
  byte_reader r(opened.payload);
  std::uint32_t sf = 0, n = 0;
  if (!r.get(sf)) return make_status(status_code::corrupt_data, "state_read: truncated payload");
  const std::uint32_t gran = (sf >> 16) & 0xffu;
  if (gran != static_cast<std::uint32_t>(c.config().granularity))
    return make_status(
        status_code::invalid_argument,
        "state_read: written with %s lanes, this memory keeps %s lanes",
        gran == 0 ? "per-layer" : "per-KV-head",
        c.config().granularity == kv_granularity::per_layer ? "per-layer" : "per-KV-head");
  if ((sf & 0xffffu) != bounded<P, KE, VE>::state_floats)
    return make_status(status_code::invalid_argument,
                       "state_read: written by a policy with %u state floats per cell, this one "
                       "has %zu",
                       sf & 0xffffu, bounded<P, KE, VE>::state_floats);
  if (bounded<P, KE, VE>::pooled && !(sf & detail::budgets_recorded))
    return make_status(status_code::invalid_argument,
                       "state_read: written without a budget layout, this memory keeps %s",
                       detail::bounded_budget_layout(c).describe().c_str());
  if (sf & detail::budgets_recorded) {
    detail::budget_layout file;
    MNEMO_RETURN_IF_ERROR(file.read(r));
    const detail::budget_layout mine = detail::bounded_budget_layout(c);
    if (!(file == mine))
      return make_status(status_code::invalid_argument,
                         "state_read: written with %s, this memory keeps %s",
                         file.describe().c_str(), mine.describe().c_str());
  }
  std::uint32_t lane_floats = 0;
  if ((sf & detail::lane_state_recorded) && !r.get(lane_floats))
    return make_status(status_code::corrupt_data, "state_read: truncated payload");
  if ((sf & detail::lane_state_recorded) && lane_floats != c.lane_floats())
    return make_status(status_code::invalid_argument,
                       "state_read: written with %u floats of lane state per lane (the policy's "
                       "statistics), this memory keeps %zu",
                       lane_floats, c.lane_floats());
  if (!r.get(n)) return make_status(status_code::corrupt_data, "state_read: truncated payload");
  if ((src >= 0 && n != 1) || n > static_cast<std::uint32_t>(c.config().n_seq_max))
    return make_status(status_code::corrupt_data, "state_read: %u sequence records", n);
  std::vector<detail::bounded_record> recs(n);
  for (auto& rec : recs) {
    MNEMO_RETURN_IF_ERROR(detail::bounded_parse(c, r, rec, lane_floats));
    if (src < 0 && (rec.seq < 0 || rec.seq >= c.config().n_seq_max))
      return make_status(status_code::corrupt_data, "state_read: sequence id %d out of range",
                         rec.seq);
  }
  if (r.remaining() != 0)
    return make_status(status_code::corrupt_data, "state_read: %zu trailing bytes", r.remaining());
  if (dest >= 0) {
    detail::bounded_load(c, recs[0], dest);
    return {};
  }
  c.clear(false);
  for (const auto& rec : recs) detail::bounded_load(c, rec, rec.seq);
  return {};
}

}  // namespace mnemo::memory
