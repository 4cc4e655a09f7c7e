// State save/load of bounded<Policy> in the format of state_format.hpp (strategy
// bounded, n_stream = n_seq_max). The policy's per-slot state travels with each
// cell, so a loaded cache evicts exactly as the saved one would have.
//
//   u32 layout = state_floats | granularity << 16 | 1 << 24 (budgets recorded)
//   budgets: u32 rule  u32 kind  u32 n_lanes  u32 budget x n_lanes   (bounded_budgets.hpp)
//   u32 n_seq_written
//   per sequence: i32 seq  i32 pos_max
//     per lane (layer-major; per KV head: n_head_kv lanes per layer):
//       u32 count, (i32 pos, f32 state x state_floats) x count,
//       K rows [count], V rows [count]   (all KV heads per layer, the lane's head per head)
// Granularity 0 (per layer) is the layout written before per-KV-head lanes existed,
// so older files load unchanged; a file of the other granularity is refused. A file
// without bit 24 predates recorded budgets and loads into any budget layout; one
// with it loads only into a memory with the same rule and the same budget of every
// lane (else a status naming both layouts).
// A whole state (seq -1) holds every sequence with a cell or a position; a
// per-sequence state holds one and loads into any sequence. Everything is checked
// (counts against the capacity, sequence ids, positions) before anything changes.
#pragma once

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
          for (std::size_t i = 0; i < SF; ++i) w.put(ln.state[j * SF + i]);
        }
      for (std::size_t j = 0; j < ln.top; ++j)
        if (ln.pos[j] >= 0) w.put_bytes(c.k_part(l, s, j, h), c.k_part_bytes());
      for (std::size_t j = 0; j < ln.top; ++j)
        if (ln.pos[j] >= 0) w.put_bytes(c.v_part(l, s, j, h), c.v_part_bytes());
    }
}

/// One parsed sequence record: where its pieces lie in the payload.
struct bounded_record {
  seq_id seq;
  pos_t pos_max;
  struct layer {
    std::uint32_t count;
    const std::uint8_t *meta, *k, *v;
  };
  std::vector<layer> layers;  // [n_layer, lanes_per_layer]
};

template <class P, class KE, class VE>
status bounded_parse(const bounded<P, KE, VE>& c, byte_reader& r, bounded_record& out) {
  constexpr std::size_t SF = bounded<P, KE, VE>::state_floats;
  std::int32_t s = 0, pm = 0;
  if (!r.get(s) || !r.get(pm))
    return make_status(status_code::corrupt_data, "state_read: truncated sequence record");
  out.seq = s;
  out.pos_max = pm;
  out.layers.clear();
  for (std::size_t i = 0; i < c.config().shape.n_layer * c.lanes_per_layer(); ++i) {
    const std::size_t l = i / c.lanes_per_layer();
    std::uint32_t n = 0;
    const std::size_t cap = c.lane_slots(l, i % c.lanes_per_layer());
    if (!r.get(n) || n > cap)
      return make_status(status_code::corrupt_data,
                         "state_read: layer %zu holds %u cells, the capacity is %zu (or truncated)",
                         l, n, cap);
    bounded_record::layer L{n, r.get_bytes(n * (4 + 4 * SF)), nullptr, nullptr};
    L.k = r.get_bytes(n * c.k_part_bytes());
    L.v = r.get_bytes(n * c.v_part_bytes());
    if (!r.ok())
      return make_status(status_code::corrupt_data, "state_read: truncated layer %zu", l);
    for (std::uint32_t t = 0; t < n; ++t) {
      pos_t p;
      std::memcpy(&p, L.meta + t * (4 + 4 * SF), 4);
      if (p < 0 || (pm >= 0 && p > pm && c.config().positions == position_mode::original))
        return make_status(status_code::corrupt_data,
                           "state_read: cell position %d outside [0, %d] in layer %zu", p, pm, l);
    }
    out.layers.push_back(L);
  }
  return {};
}

template <class P, class KE, class VE>
void bounded_load(bounded<P, KE, VE>& c, const bounded_record& rec, seq_id dest) {
  constexpr std::size_t SF = bounded<P, KE, VE>::state_floats;
  const std::size_t LH = c.lanes_per_layer(), kb = c.k_part_bytes(), vb = c.v_part_bytes();
  for (std::size_t li = 0; li < rec.layers.size(); ++li) {
    const auto& L = rec.layers[li];
    const std::size_t l = li / LH, h = li % LH;
    auto& ln = c.mutable_lane(dest, l, h);
    std::fill(ln.pos.begin(), ln.pos.end(), -1);
    for (std::uint32_t i = 0; i < L.count; ++i) {
      const std::uint8_t* m = L.meta + i * (4 + 4 * SF);
      std::memcpy(&ln.pos[i], m, 4);
      if constexpr (SF > 0) std::memcpy(&ln.state[i * SF], m + 4, 4 * SF);
      std::memcpy(c.k_part(l, dest, i, h), L.k + i * kb, kb);
      std::memcpy(c.v_part(l, dest, i, h), L.v + i * vb, vb);
    }
    bounded<P, KE, VE>::recount(ln);
  }
  c.set_pos_max(dest, rec.pos_max);
}

/// The payload's first word: the policy's state floats and the granularity.
template <class P, class KE, class VE>
std::uint32_t bounded_layout_word(const bounded<P, KE, VE>& c) {
  return static_cast<std::uint32_t>(bounded<P, KE, VE>::state_floats) |
         static_cast<std::uint32_t>(c.config().granularity) << 16 | budgets_recorded;
}

}  // namespace detail

/// Writes sequence s (or every sequence when s == -1) into `out`.
template <class P, class KE, class VE>
status state_write(bounded<P, KE, VE>& c, seq_id s, std::vector<std::uint8_t>& out) {
  if constexpr (bounded<P, KE, VE>::pooled)
    return make_status(status_code::unsupported,
                       "state_write: a pooled (AdaKV) bounded cache has no state file format yet");
  MNEMO_RETURN_IF_ERROR(check_state_write(s, c.config().n_seq_max, c.in_batch()));
  std::vector<seq_id> seqs;
  for (seq_id q = 0; q < c.config().n_seq_max; ++q)
    if (q == s || (s < 0 && (c.seq_pos_max(q) >= 0 || c.lane_of(q, 0).live > 0))) seqs.push_back(q);
  state_builder b(out, detail::bounded_header(c, s), 0);
  b.payload().put(detail::bounded_layout_word(c));
  detail::budget_layout_of(c.config()).write(b.payload());
  b.payload().put(static_cast<std::uint32_t>(seqs.size()));
  for (seq_id q : seqs) detail::bounded_write_seq(c, q, b.payload());
  b.seal();
  return {};
}

/// Loads a state written by state_write: a whole state into the whole memory
/// (dest == -1), a per-sequence state into sequence dest.
template <class P, class KE, class VE>
status state_read(bounded<P, KE, VE>& c, std::span<const std::uint8_t> data, seq_id dest = -1) {
  if constexpr (bounded<P, KE, VE>::pooled)
    return make_status(status_code::unsupported,
                       "state_read: a pooled (AdaKV) bounded cache has no state file format yet");
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
  if (sf & detail::budgets_recorded) {
    detail::budget_layout file;
    MNEMO_RETURN_IF_ERROR(file.read(r));
    const detail::budget_layout mine = detail::budget_layout_of(c.config());
    if (!(file == mine))
      return make_status(status_code::invalid_argument,
                         "state_read: written with %s, this memory keeps %s",
                         file.describe().c_str(), mine.describe().c_str());
  }
  if (!r.get(n)) return make_status(status_code::corrupt_data, "state_read: truncated payload");
  if ((src >= 0 && n != 1) || n > static_cast<std::uint32_t>(c.config().n_seq_max))
    return make_status(status_code::corrupt_data, "state_read: %u sequence records", n);
  std::vector<detail::bounded_record> recs(n);
  for (auto& rec : recs) {
    MNEMO_RETURN_IF_ERROR(detail::bounded_parse(c, r, rec));
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
