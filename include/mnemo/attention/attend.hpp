// The fast attention kernel: GQA-aware (each K/V row is read once per KV head per
// call), masks from cell metadata, split-K over long contexts with partial states
// merged by attention_state algebra, several streams per call, optional statistics
// export. Decode and prefill are the same code: tiles of rows against blocks of
// cells, with the score product in dot form (few rows) or GEMM form (many rows).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstring>
#include <span>
#include <vector>

#include "mnemo/attention/detail/block_kernels.hpp"
#include "mnemo/attention/detail/item.hpp"
#include "mnemo/attention/detail/validate.hpp"
#include "mnemo/attention/kv_view.hpp"
#include "mnemo/attention/params.hpp"
#include "mnemo/attention/product_precision.hpp"
#include "mnemo/attention/sink.hpp"
#include "mnemo/attention/state.hpp"
#include "mnemo/base/aligned_buffer.hpp"
#include "mnemo/base/parallel.hpp"
#include "mnemo/simd/cpu.hpp"
#include "mnemo/simd/f16_widening.hpp"

namespace mnemo::attention {

struct options {
  int n_threads = 0;  // 0: default_thread_count()
};

/// Scratch memory reused across calls, so a decode step allocates nothing once warm.
class workspace {
 public:
  /// A buffer of at least n floats (contents unspecified), or a no_space status.
  result<float*> floats(std::size_t n) { return grow(floats_, n); }
  result<std::uint8_t*> bytes(std::size_t n) { return grow(bytes_, n); }

  std::vector<std::uint32_t> order;
  std::vector<detail::tile> tiles;
  std::vector<detail::item> items;
  std::vector<std::size_t> partial_offset;
  std::vector<std::size_t> first_item;  // first item of each (tile, heads) group
  // The logit store of an export (detail::logit_store).
  std::vector<std::uint32_t> export_slot, export_tokens;
  std::vector<detail::logit_store::stream_part> export_streams;

  /// The most floats of logits an export (mass_sink's mass or logits) keeps from the
  /// attention pass, for the contributing rows x n_head x cells; above it the export
  /// computes the logits again in a second pass over K.
  std::size_t max_stored_logits = std::size_t{1} << 24;

 private:
  template <class T>
  static result<T*> grow(aligned_buffer<T>& b, std::size_t n) {
    if (b.size() < n) {
      auto r = aligned_buffer<T>::make(n + n / 4);
      if (!r.is_ok()) return r.error();
      b = std::move(r).value();
    }
    return b.data();
  }
  aligned_buffer<float> floats_;
  aligned_buffer<std::uint8_t> bytes_;
};

namespace detail {

/// Per-thread scratch layout inside one float block and one byte block.
struct scratch_layout {
  std::size_t head_rows;  // rows x heads of the largest item
  std::size_t rows;       // rows of one head of the largest tile
  std::size_t tokens, dk, dv;

  // Both sizes are whole cache lines, so that no two threads' scratch share a line:
  // every block rewrites keep / keep_any / full (129 bytes for one token).
  std::size_t floats() const {
    // + up to 15 floats of rounding for each of the 8 arrays at()
    const std::size_t n =
        head_rows * (dk + dv + 2 + k_block_cells) + k_block_cells * (2 * dk + dv) + 16 * 8;
    return (n + 15) / 16 * 16;
  }
  std::size_t bytes() const { return ((tokens + 1) * k_block_cells + tokens + 63) / 64 * 64; }
  scratch at(float* f, std::uint8_t* b) const {
    auto take = [&](std::size_t n) {
      float* p = f;
      f += (n + 15) / 16 * 16;  // keep every array 64-byte aligned
      return p;
    };
    scratch s;
    s.q = take(head_rows * dk);
    s.o = take(head_rows * dv);
    s.m = take(head_rows);
    s.l = take(head_rows);
    s.s = take(head_rows * k_block_cells);
    s.kf = take(k_block_cells * dk);
    s.kt = take(dk * k_block_cells);
    s.vf = take(k_block_cells * dv);
    s.keep = b;
    s.keep_any = b + tokens * k_block_cells;
    s.full = s.keep_any + k_block_cells;
    return s;
  }
};

/// Lays out the logit store of an export in ws (logit_store) and returns its
/// floats: 0 when the sink exports no mass or logits, or when they would take more
/// than ws.max_stored_logits (the export then recomputes them).
/// `order`: the call's tokens grouped by stream.
template <stats_sink Sink>
std::size_t plan_logit_store(const shape& sh, const query_batch& q,
                             std::span<const kv_view> streams, const std::uint32_t* order,
                             const Sink& sink, workspace& ws) {
  if constexpr (!Sink::enabled) {
    return 0;
  } else {
    if (sink.mass.empty() && sink.logits.empty()) return 0;
    constexpr std::uint32_t none = logit_store::no_slot;
    ws.export_slot.assign(q.n_tokens, none);
    ws.export_tokens.clear();
    ws.export_streams.assign(streams.size(), {});
    std::size_t floats = 0, i = 0;
    for (std::size_t st = 0; st < streams.size(); ++st) {
      auto& part = ws.export_streams[st];
      part.offset = floats;
      part.n_cells = streams[st].n_cells();
      part.token_begin = ws.export_tokens.size();
      for (; i < q.n_tokens && (q.stream ? q.stream[order[i]] : 0u) == st; ++i)
        if (sink.exports(st) && sink.row_contributes(order[i])) {
          ws.export_slot[order[i]] =
              static_cast<std::uint32_t>(ws.export_tokens.size() - part.token_begin);
          ws.export_tokens.push_back(order[i]);
        }
      part.token_end = ws.export_tokens.size();
      floats += (part.token_end - part.token_begin) * sh.n_head * part.n_cells;
    }
    return floats <= ws.max_stored_logits ? floats : 0;
  }
}

/// The export from the logit store, once lse holds every row's final log-sum-exp:
/// per (stream, KV head) a task adds each contributing row's softmax weights to the
/// mass and copies its attended logits.
template <class K, stats_sink Sink>
void export_stored_logits(const shape& sh, const logit_store& ls, const float* lse,
                          const Sink& sink, std::size_t n_streams, int threads) {
  const std::size_t g = sh.group(), H = sh.n_head;
  parallel_for(n_streams * sh.n_head_kv, threads, [&](std::size_t i, int) {
    const std::size_t st = i / sh.n_head_kv, hk = i % sh.n_head_kv;
    const auto& part = ls.streams[st];
    float* mass = sink.mass.empty() ? nullptr : sink.mass[st];
    float* logits = sink.logits.empty() ? nullptr : sink.logits[st];
    const std::size_t n = part.n_cells;
    for (std::size_t x = part.token_begin; x < part.token_end; ++x) {
      const std::size_t tok = ls.tokens[x], slot = x - part.token_begin;
      for (std::size_t h = hk * g; h < (hk + 1) * g; ++h) {
        const float* lg = ls.base + part.offset + (slot * H + h) * n;
        if (mass != nullptr && lse[tok * H + h] != k_neg_inf)
          K::add_softmax_weights(lg, n, lse[tok * H + h], mass + hk * n);
        if (logits == nullptr) continue;
        float* dst = logits + (sink.logit_row[tok] * H + h) * n;
        for (std::size_t j = 0; j < n; ++j)
          if (lg[j] != k_neg_inf) dst[j] = lg[j];
      }
    }
  });
}

}  // namespace detail

/// Attends every query token to the cells of its stream.
/// q.q: [n_tokens, n_head, d_k] f32; out: [n_tokens, n_head, d_v] f32 (overwritten).
/// K/V of each stream: KE / VE rows as described by kv_segment. Rows that attend
/// nothing are zeros. Returns a status for any malformed argument (nothing written).
template <simd::isa_tag Isa, dtype::kv_element KE, dtype::kv_element VE,
          stats_sink Sink = null_sink>
status attend(const shape& sh, const params& p, const query_batch& q,
              std::span<const kv_view> streams, float* out, workspace& ws, const options& opt = {},
              Sink sink = {}) {
  static_assert(simd::is_compiled<Isa>,
                "attention::attend<Isa>: Isa is not compiled for this architecture");
  MNEMO_RETURN_IF_ERROR((detail::validate_call<KE, VE>(sh, p, q, streams, out, sink)));
  if (q.n_tokens == 0) return {};
  if (!simd::supported<Isa>())
    return make_status(status_code::unsupported, "attention: this CPU cannot run the %s kernels",
                       Isa::name.data());
  using K = detail::block_kernels<Isa>;
  const std::size_t g = sh.group(), dv = sh.d_v;
  const int threads = opt.n_threads > 0 ? opt.n_threads : default_thread_count();
  auto stream_of = [&](std::size_t t) -> std::uint32_t { return q.stream ? q.stream[t] : 0u; };

  // Tiles: runs of tokens of one (stream, sequence), at most tokens_per_tile each.
  auto& order = ws.order;
  order.resize(q.n_tokens);
  for (std::size_t t = 0; t < q.n_tokens; ++t) order[t] = static_cast<std::uint32_t>(t);
  std::stable_sort(order.begin(), order.end(), [&](std::uint32_t a, std::uint32_t b) {
    return stream_of(a) != stream_of(b) ? stream_of(a) < stream_of(b) : q.seq[a] < q.seq[b];
  });
  const std::size_t tokens_per_tile = std::max<std::size_t>(1, detail::k_tile_rows / g);
  ws.tiles.clear();
  for (std::size_t i = 0; i < q.n_tokens;) {
    std::size_t j = i + 1;
    while (j < q.n_tokens && j - i < tokens_per_tile &&
           stream_of(order[j]) == stream_of(order[i]) && q.seq[order[j]] == q.seq[order[i]])
      ++j;
    ws.tiles.push_back(
        {stream_of(order[i]), static_cast<std::uint32_t>(i), static_cast<std::uint32_t>(j - i)});
    i = j;
  }

  // Items: decode-like tiles take every KV head (each thread streams whole cell
  // rows), prefill-like tiles one KV head each. Split-K then cuts the cells into
  // chunks of at least 256 until every thread has about four items.
  const bool lane_multiple = sh.d_k % K::L == 0 && sh.d_v % K::L == 0;
  auto is_decode_like = [&](const detail::tile& t) {
    return lane_multiple && t.count * g <= detail::k_dot_form_max_rows;
  };
  std::size_t base_items = 0;
  for (const detail::tile& t : ws.tiles) base_items += is_decode_like(t) ? 1 : sh.n_head_kv;
  const std::size_t want = (4 * static_cast<std::size_t>(threads) + base_items - 1) / base_items;
  ws.items.clear();
  std::size_t max_rows = 0, max_head_rows = 0;
  for (const detail::tile& t : ws.tiles) {
    const std::size_t n = streams[t.stream].n_cells();
    const std::size_t chunks = std::max<std::size_t>(1, std::min(want, n / 256));
    const std::size_t step =
        std::max<std::size_t>(detail::k_block_cells,
                              (n + chunks - 1) / chunks + detail::k_block_cells - 1) /
        detail::k_block_cells * detail::k_block_cells;
    const std::size_t heads = is_decode_like(t) ? sh.n_head_kv : 1;
    max_rows = std::max(max_rows, t.count * g);
    max_head_rows = std::max(max_head_rows, t.count * g * heads);
    for (std::size_t h0 = 0; h0 < sh.n_head_kv; h0 += heads)
      for (std::size_t c0 = 0; c0 == 0 || c0 < n; c0 += step)
        ws.items.push_back({&t, h0, h0 + heads, c0, std::min(n, c0 + step), is_decode_like(t)});
  }
  const bool split = ws.items.size() != base_items;

  // Memory: per-thread scratch, final lse per row, and partial states when split.
  const detail::scratch_layout lay{max_head_rows, max_rows, tokens_per_tile, sh.d_k, dv};
  const std::size_t per_thread = lay.floats();
  std::size_t partial_floats = 0;
  if (split) {
    ws.partial_offset.resize(ws.items.size());
    for (std::size_t i = 0; i < ws.items.size(); ++i) {
      const detail::item& it = ws.items[i];
      ws.partial_offset[i] = partial_floats;
      partial_floats += it.t->count * g * (it.head_end - it.head_begin) * (dv + 2);
    }
  }
  const std::size_t lse_floats = q.n_tokens * sh.n_head;
  const std::size_t store_floats = detail::plan_logit_store(sh, q, streams, order.data(), sink, ws);
  MNEMO_ASSIGN_OR_RETURN(
      float* fbuf, ws.floats(per_thread * threads + partial_floats + lse_floats + store_floats));
  MNEMO_ASSIGN_OR_RETURN(std::uint8_t * bbuf, ws.bytes(lay.bytes() * threads + 64));
  float* partials = fbuf + per_thread * threads;
  float* lse = partials + partial_floats;

  const detail::call c{
      sh,
      p,
      &q,
      streams.data(),
      order.data(),
      (dtype::blocks_in_row<KE>(sh.d_k) * sizeof(KE)),
      (dtype::blocks_in_row<VE>(sh.d_v) * sizeof(VE)),
      simd::current_f16_widening(),
      std::is_same_v<Isa, simd::avx512> && current_product_precision() == product_precision::bf16 &&
          bf16_products_supported(),
      store_floats == 0 ? detail::logit_store{}
                        : detail::logit_store{lse + lse_floats, ws.export_streams.data(),
                                              ws.export_slot.data(), ws.export_tokens.data()}};
  // Writes the finished states of an item's (head, row)s to the output and lse.
  auto finish = [&](const detail::item& it, const float* o, const float* m, const float* l) {
    const detail::tile& t = *it.t;
    const std::size_t R = t.count * g;
    for (std::size_t hk = it.head_begin; hk < it.head_end; ++hk)
      for (std::size_t ti = 0; ti < t.count; ++ti) {
        const std::size_t tok = order[t.first + ti];
        for (std::size_t hh = 0; hh < g; ++hh) {
          const std::size_t r = (hk - it.head_begin) * R + ti * g + hh, h = hk * g + hh;
          finalize_partial({o + r * dv, dv}, l[r], {out + (tok * sh.n_head + h) * dv, dv});
          lse[tok * sh.n_head + h] = l[r] > 0.0f ? m[r] + std::log(l[r]) : k_neg_inf;
        }
      }
  };
  auto rows_of = [&](const detail::item& it) {
    return it.t->count * g * (it.head_end - it.head_begin);
  };

  parallel_for(ws.items.size(), threads, [&](std::size_t i, int th) {
    const detail::scratch w = lay.at(fbuf + per_thread * th, bbuf + lay.bytes() * th);
    const detail::item& it = ws.items[i];
    if (it.decode)
      K::template run_decode_item<KE, VE>(c, it, w);
    else
      K::template run_item<KE, VE>(c, it, w);
    if (!split) {
      finish(it, w.o, w.m, w.l);
      return;
    }
    const std::size_t R = rows_of(it);
    float* dst = partials + ws.partial_offset[i];
    std::memcpy(dst, w.o, R * dv * sizeof(float));
    std::memcpy(dst + R * dv, w.m, R * sizeof(float));
    std::memcpy(dst + R * (dv + 1), w.l, R * sizeof(float));
  });

  if (split) {
    // The chunks of one (tile, heads) are consecutive items, in cell order: merge
    // them in that order, so results do not depend on the thread count's timing.
    auto& first_item = ws.first_item;
    first_item.clear();
    for (std::size_t i = 0; i < ws.items.size(); ++i)
      if (i == 0 || ws.items[i].t != ws.items[i - 1].t ||
          ws.items[i].head_begin != ws.items[i - 1].head_begin)
        first_item.push_back(i);
    first_item.push_back(ws.items.size());
    parallel_for(first_item.size() - 1, threads, [&](std::size_t gi, int th) {
      const detail::scratch w = lay.at(fbuf + per_thread * th, bbuf + lay.bytes() * th);
      const detail::item& it0 = ws.items[first_item[gi]];
      const std::size_t R = rows_of(it0);
      std::memset(w.o, 0, R * dv * sizeof(float));
      for (std::size_t r = 0; r < R; ++r) {
        w.m[r] = k_neg_inf;
        w.l[r] = 0.0f;
      }
      for (std::size_t i = first_item[gi]; i < first_item[gi + 1]; ++i) {
        const float* src = partials + ws.partial_offset[i];
        for (std::size_t r = 0; r < R; ++r)
          merge_partial({w.o + r * dv, dv}, w.m[r], w.l[r], {src + r * dv, dv}, src[R * dv + r],
                        src[R * (dv + 1) + r]);
      }
      finish(it0, w.o, w.m, w.l);
    });
  }

  if constexpr (Sink::enabled) {
    if (sink.lse != nullptr) std::memcpy(sink.lse, lse, lse_floats * sizeof(float));
    if (store_floats != 0) {
      detail::export_stored_logits<K>(sh, c.store, lse, sink, streams.size(), threads);
    } else if (!sink.mass.empty() || !sink.logits.empty()) {
      // One task per (stream, KV head, chunk), so that no two tasks add to one cell,
      // and one head per task, so that any tile's rows fit the scratch.
      std::vector<detail::item> tasks;
      for (std::size_t i = 0; i < ws.items.size(); ++i) {
        const detail::item& it = ws.items[i];
        if (!sink.exports(it.t->stream)) continue;
        const bool first_tile_of_stream =
            it.t == &ws.tiles.front() || (it.t - 1)->stream != it.t->stream;
        if (!first_tile_of_stream) continue;
        for (std::size_t hk = it.head_begin; hk < it.head_end; ++hk)
          tasks.push_back({it.t, hk, hk + 1, it.cell_begin, it.cell_end, false});
      }
      parallel_for(tasks.size(), threads, [&](std::size_t i, int th) {
        const detail::scratch w = lay.at(fbuf + per_thread * th, bbuf + lay.bytes() * th);
        const detail::item& task = tasks[i];
        const std::size_t st = task.t->stream;
        const detail::tile* end = ws.tiles.data() + ws.tiles.size();
        for (const detail::tile* t = task.t; t != end && t->stream == st; ++t)
          K::template export_mass<KE>(
              c, *t, task, w, lse, sink, sink.mass.empty() ? nullptr : sink.mass[st],
              sink.logits.empty() ? nullptr : sink.logits[st], streams[st].n_cells());
      });
    }
  }
  return {};
}

/// attend() with a workspace of its own (allocates; keep a workspace for decode loops).
template <simd::isa_tag Isa, dtype::kv_element KE, dtype::kv_element VE,
          stats_sink Sink = null_sink>
status attend(const shape& sh, const params& p, const query_batch& q,
              std::span<const kv_view> streams, float* out, const options& opt = {},
              Sink sink = {}) {
  workspace ws;
  return attend<Isa, KE, VE, Sink>(sh, p, q, streams, out, ws, opt, sink);
}

/// The attend() instantiations the mnemo::kernels library compiles once per ISA
/// (src/kernels/attention.cpp for the native one, other_isas.cpp for the rest): each K/V
/// element type stored alike for K and V, with and without statistics.
/// X(Isa, prefix, KE, VE, Sink) is applied to each.
// clang-format off
#define MNEMO_ATTEND_KERNEL_INSTANCES(X, Isa, prefix)                   \
  X(Isa, prefix, float, float, null_sink)                               \
  X(Isa, prefix, float, float, mass_sink)                               \
  X(Isa, prefix, dtype::f16, dtype::f16, null_sink)                     \
  X(Isa, prefix, dtype::f16, dtype::f16, mass_sink)                     \
  X(Isa, prefix, dtype::bf16, dtype::bf16, null_sink)                   \
  X(Isa, prefix, dtype::bf16, dtype::bf16, mass_sink)                   \
  X(Isa, prefix, dtype::block_q8_0, dtype::block_q8_0, null_sink)       \
  X(Isa, prefix, dtype::block_q8_0, dtype::block_q8_0, mass_sink)       \
  X(Isa, prefix, dtype::block_q4_0, dtype::block_q4_0, null_sink)       \
  X(Isa, prefix, dtype::block_q4_0, dtype::block_q4_0, mass_sink)
// clang-format on
// One attend instance, for an explicit instantiation (prefix empty) or its declaration
// (prefix extern).
#define MNEMO_ATTEND_DECLARE_(Isa, prefix, KE, VE, Sink)                                         \
  prefix template status attend<Isa, KE, VE, Sink>(const shape&, const params&,                  \
                                                   const query_batch&, std::span<const kv_view>, \
                                                   float*, workspace&, const options&, Sink);
#define MNEMO_ATTEND_INSTANTIATE(Isa) MNEMO_ATTEND_KERNEL_INSTANCES(MNEMO_ATTEND_DECLARE_, Isa, )
#define MNEMO_ATTEND_EXTERN_(Isa) MNEMO_ATTEND_KERNEL_INSTANCES(MNEMO_ATTEND_DECLARE_, Isa, extern)

#if defined(MNEMO_EXTERN_KERNELS)
// Compiled once in mnemo::kernels, not in every translation unit (docs/compile-time.md).
MNEMO_ATTEND_EXTERN_(simd::native)
#endif
#if defined(MNEMO_EXTERN_OTHER_ISA_KERNELS)
// The other compiled ISAs' too (src/kernels/other_isas.cpp).
MNEMO_FOREACH_OTHER_ISA(MNEMO_ATTEND_EXTERN_)
#endif
#undef MNEMO_ATTEND_EXTERN_

}  // namespace mnemo::attention
