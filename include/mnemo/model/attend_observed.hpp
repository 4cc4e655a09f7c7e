// The statistics adapter between a model's attention call and a memory that
// observes attention (the bounded strategy), beside the decoder that is its only user
// (it includes attention and memory, so it sits above both): the model calls
// attend_observed()
// instead of attention::attend() when the memory models attention_observer, a
// compile-time property, so every other strategy keeps the plain null-sink call.
// The mass export is instantiated only when the memory's policy can use it
// (wants_attention_stats), and taken at run time only when the policy asks for it
// in this layer and call (one branch per layer call, outside every loop). A memory
// with per-KV-head lanes is attended in one call over every head's own cells
// (detail::attend_lanes). A memory whose policy reads through lane readers (Quest,
// ThinK) attends decode rows through them (attend_reads), and the kernel the rest.
#pragma once

#include <algorithm>
#include <concepts>
#include <cstdint>
#include <cstring>
#include <span>
#include <vector>

#include "mnemo/attention/attend.hpp"
#include "mnemo/memory/concepts.hpp"

namespace mnemo::model {

/// A memory that wants to see each layer's attention: after_attention(layer, u,
/// had_stats) is called once per layer and micro-batch after attend; when
/// wants_attention_stats is true, stats_sink(layer, u, sink) may ask for mass.
template <class M>
concept attention_observer = requires(M& m, std::size_t i, attention::mass_sink& sink) {
  { M::wants_attention_stats } -> std::convertible_to<bool>;
  { m.stats_sink(i, i, sink) } -> std::same_as<bool>;
  { m.after_attention(i, i, true) } -> std::same_as<status>;
};

/// Whether an observer's statistics need the kernel's export (mass, lse, logits);
/// an observer that wants only the queries runs the null-sink kernel.
template <class M>
consteval bool kernel_exports() {
  if constexpr (requires {
                  { M::wants_kernel_stats } -> std::convertible_to<bool>;
                })
    return M::wants_kernel_stats;
  else
    return M::wants_attention_stats;
}

/// An observer whose lanes may split a layer's KV heads (bounded with per_kv_head):
/// views() then holds lanes_per_layer() head-major groups of streams.
template <class M>
concept lane_split_observer = attention_observer<M> && requires(const M& m) {
  { m.lanes_per_layer() } -> std::convertible_to<std::size_t>;
};

/// An observer whose policy reads decode rows through per-lane readers (Quest's page
/// selection, ThinK's pruned keys; bounded with evict::lane_reading).
template <class M>
concept read_hooked_observer = attention_observer<M> && requires {
  requires M::reads_hooked;
};

namespace detail {

/// Per-KV-head lanes in one attend() call: each (token t, lane h) becomes a row of
/// its own with the lane's gq query heads, stream h * n_str + (t's stream) and t's
/// position and sequence. The queries [n_tokens, n_head, d_k] are then exactly
/// [n_tokens * lanes, gq, d_k] and the output likewise, so nothing is gathered or
/// scattered, and the kernel runs once per layer over every lane's kept cells (each
/// head reads only its own). `all` is the memory's sink over every lane's streams
/// (head-major): mass and logits per stream, lse per (token, query head), which is
/// the same memory as per (row, lane query head). Used when `stats` is true (the
/// export kernel is instantiated only when MayExport).
template <simd::isa_tag Isa, dtype::kv_element KE, dtype::kv_element VE, bool MayExport>
status attend_lanes(std::size_t lanes, const attention::shape& sh, const attention::params& p,
                    const attention::query_batch& q, const memory::layer_views& lv, float* out,
                    attention::workspace& ws, const attention::options& opt, bool stats,
                    const attention::mass_sink& all) {
  if (sh.n_head_kv % lanes != 0 || lv.streams.size() % lanes != 0)
    return make_status(status_code::invalid_argument,
                       "attend_observed: %zu lanes do not split %zu KV heads / %zu streams", lanes,
                       sh.n_head_kv, lv.streams.size());
  const std::size_t n = q.n_tokens, gq = sh.n_head / lanes, n_str = lv.streams.size() / lanes;
  const attention::shape sl{gq, sh.n_head_kv / lanes, sh.d_k, sh.d_v};
  thread_local std::vector<pos_t> pos;
  thread_local std::vector<seq_id> seq;
  thread_local std::vector<std::uint32_t> stream, logit_row;
  thread_local std::vector<std::uint8_t> rows;
  pos.resize(n * lanes);
  seq.resize(n * lanes);
  stream.resize(n * lanes);
  for (std::size_t t = 0; t < n; ++t)
    for (std::size_t h = 0; h < lanes; ++h) {
      const std::size_t r = t * lanes + h;
      pos[r] = q.pos[t];
      seq[r] = q.seq[t];
      stream[r] = static_cast<std::uint32_t>(h * n_str + (q.stream ? q.stream[t] : 0u));
    }
  const attention::query_batch ql{q.q, n * lanes, pos.data(), seq.data(), stream.data()};
  if constexpr (MayExport) {
    if (stats) {
      attention::mass_sink sk = all;
      if (all.rows != nullptr) {
        rows.resize(n * lanes);
        for (std::size_t r = 0; r < n * lanes; ++r) rows[r] = all.rows[r / lanes];
        sk.rows = rows.data();
      }
      if (all.logit_row != nullptr) {
        logit_row.resize(n * lanes);
        for (std::size_t r = 0; r < n * lanes; ++r) logit_row[r] = all.logit_row[r / lanes];
        sk.logit_row = logit_row.data();
      }
      return attention::attend<Isa, KE, VE, attention::mass_sink>(sl, p, ql, lv.streams, out, ws,
                                                                  opt, sk);
    }
  }
  return attention::attend<Isa, KE, VE>(sl, p, ql, lv.streams, out, ws, opt);
}

/// The rows a lane reader did not attend (read[row] == 0: another sequence's prefill
/// chunk beside decode rows) in one kernel call, gathered and written back in place.
template <simd::isa_tag Isa, dtype::kv_element KE, dtype::kv_element VE>
status attend_unread(const attention::shape& sh, const attention::params& p,
                     const attention::query_batch& q, const memory::layer_views& lv,
                     std::span<const std::uint8_t> read, float* out, attention::workspace& ws,
                     const attention::options& opt) {
  const std::size_t q_row = sh.n_head * sh.d_k, o_row = sh.n_head * sh.d_v;
  thread_local std::vector<float> rq, ro;
  thread_local std::vector<pos_t> pos;
  thread_local std::vector<seq_id> seq;
  thread_local std::vector<std::uint32_t> stream;
  rq.clear();
  pos.clear();
  seq.clear();
  stream.clear();
  for (std::size_t j = 0; j < q.n_tokens; ++j) {
    if (read[j]) continue;
    rq.insert(rq.end(), q.q + j * q_row, q.q + (j + 1) * q_row);
    pos.push_back(q.pos[j]);
    seq.push_back(q.seq[j]);
    stream.push_back(q.stream != nullptr ? q.stream[j] : 0u);
  }
  ro.resize(pos.size() * o_row);
  const attention::query_batch rest{rq.data(), pos.size(), pos.data(), seq.data(), stream.data()};
  MNEMO_RETURN_IF_ERROR(
      (attention::attend<Isa, KE, VE>(sh, p, rest, lv.streams, ro.data(), ws, opt)));
  for (std::size_t j = 0, r = 0; j < q.n_tokens; ++j)
    if (!read[j]) std::memcpy(out + j * o_row, &ro[r++ * o_row], o_row * sizeof(float));
  return {};
}

}  // namespace detail

/// attend() of one layer through an observing memory, then its after_attention hook.
template <simd::isa_tag Isa, dtype::kv_element KE, dtype::kv_element VE, attention_observer M>
status attend_observed(M& mem, std::size_t layer, std::size_t u, const attention::shape& sh,
                       const attention::params& p, const attention::query_batch& q,
                       const memory::layer_views& lv, float* out, attention::workspace& ws,
                       const attention::options& opt) {
  constexpr bool exports = kernel_exports<M>();
  if constexpr (read_hooked_observer<M>) {  // decode rows read what the policy selects
    thread_local std::vector<std::uint8_t> read;
    MNEMO_RETURN_IF_ERROR(
        (mem.template attend_reads<Isa>(layer, u, sh, p, q, lv, out, ws, opt, read)));
    const auto n_read = static_cast<std::size_t>(std::count(read.begin(), read.end(), 1));
    if (n_read > 0) {
      if (n_read < q.n_tokens)
        MNEMO_RETURN_IF_ERROR(
            (detail::attend_unread<Isa, KE, VE>(sh, p, q, lv, read, out, ws, opt)));
      return mem.after_attention(layer, u, false);
    }
  }
  if constexpr (M::wants_attention_stats) {
    if constexpr (requires { mem.observe_call(layer, u, sh, q); })
      mem.observe_call(layer, u, sh, q);
  }
  if constexpr (lane_split_observer<M>) {  // one run-time branch per layer call
    if (const std::size_t lanes = mem.lanes_per_layer(); lanes > 1) {
      attention::mass_sink all;
      bool stats = false;
      if constexpr (M::wants_attention_stats) stats = mem.stats_sink(layer, u, all);
      MNEMO_RETURN_IF_ERROR((detail::attend_lanes<Isa, KE, VE, exports>(lanes, sh, p, q, lv, out,
                                                                        ws, opt, stats, all)));
      return mem.after_attention(layer, u, stats);
    }
  }
  if constexpr (M::wants_attention_stats) {
    attention::mass_sink sink;
    if (mem.stats_sink(layer, u, sink)) {
      if constexpr (exports)
        MNEMO_RETURN_IF_ERROR((attention::attend<Isa, KE, VE, attention::mass_sink>(
            sh, p, q, lv.streams, out, ws, opt, sink)));
      else
        MNEMO_RETURN_IF_ERROR((attention::attend<Isa, KE, VE>(sh, p, q, lv.streams, out, ws, opt)));
      return mem.after_attention(layer, u, true);
    }
  }
  MNEMO_RETURN_IF_ERROR((attention::attend<Isa, KE, VE>(sh, p, q, lv.streams, out, ws, opt)));
  return mem.after_attention(layer, u, false);
}

}  // namespace mnemo::model
