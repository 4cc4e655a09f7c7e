// Quest and ThinK through the decoder's attention call (model::attend_observed on a
// bounded memory whose policy declares a lane reader) against the same rules run
// beside a memory (quest_attend over a stream and its quest_index; think_pruner's
// pruned keys and gathered queries): the decode rows' outputs agree to float
// tolerance, with the whole context held and with evictions, rollbacks and
// re-rotated keys that make the reader rebuild.
#include <algorithm>
#include <cmath>
#include <cstdio>

#include "evict/rule_model.hpp"
#include <gtest/gtest.h>

#include "mnemo/evict/quest_reads.hpp"
#include "mnemo/evict/think_keys.hpp"

namespace {

using namespace mnemo;
using namespace evict_test;

constexpr std::size_t k_prefill = 48, k_chunk = 12, k_tokens = 80;

/// The first element where a and b differ by more than tol, or -1.
std::ptrdiff_t first_difference(const std::vector<float>& a, const std::vector<float>& b,
                                float tol) {
  for (std::size_t i = 0; i < a.size(); ++i)
    if (!(std::abs(a[i] - b[i]) <= tol)) return static_cast<std::ptrdiff_t>(i);
  return a.size() == b.size() ? -1 : static_cast<std::ptrdiff_t>(a.size());
}

/// Drives a one-layer bounded memory of E through attend_observed: a chunked prefill
/// of k_prefill rows, then one decode row per call. `beside(t, lv)` returns decode row
/// t's output computed beside the memory over layer 0's views (the lane's cells).
template <class E = float, class Policy, class Beside>
void compare_decode(const synthetic& s, Policy policy, std::size_t budget, const char* name,
                    std::uint64_t seed, Beside beside, const synthetic* rollback_data = nullptr) {
  auto m = memory::bounded<Policy, E>::make(synthetic_config(s, budget, k_chunk), policy).value();
  const attention::shape sh{s.n_head, s.n_head_kv, s.d, s.d};
  attention::params ap;
  ap.scale = 1.0f / std::sqrt(static_cast<float>(s.d));
  attention::workspace ws;
  memory::layer_views lv;
  const std::size_t row = s.n_head * s.d;
  for (std::size_t t = 0; t < s.n_tokens;) {
    const std::size_t n = t < k_prefill ? std::min(k_chunk, k_prefill - t) : 1;
    std::vector<pos_t> pos;
    std::vector<seq_id> seq;
    std::vector<float> out(n * row), want;
    auto call = [&](const synthetic& d) {
      ASSERT_NO_FATAL_FAILURE(feed_rows(m, d, t, n, pos, seq, lv));
      if (n == 1) want = beside(t, lv);  // the cells as attention sees them (it evicts after)
      const attention::query_batch qb{&d.q[t * row], n, pos.data(), seq.data(), nullptr};
      ASSERT_TRUE(
          (model::attend_observed<simd::native, E, E>(m, 0, 0, sh, ap, qb, lv, out.data(), ws, {1}))
              .is_ok());
    };
    if (rollback_data != nullptr && n == 1 && t % 5 == 0) {  // a call that is rolled back
      ASSERT_NO_FATAL_FAILURE(call(*rollback_data));
      m.rollback();
    }
    ASSERT_NO_FATAL_FAILURE(call(s));
    if (n == 1) {
      const std::ptrdiff_t i = first_difference(out, want, 1e-6f);
      ASSERT_LT(i, 0) << name << " seed " << seed << " row " << t << ": element " << i << " is "
                      << out[static_cast<std::size_t>(i)] << " through the decoder, "
                      << want[static_cast<std::size_t>(i)] << " beside it";
    }
    m.commit();
    t += n;
  }
}

/// Quest beside the memory: an index built from the lane's cells (its layer-0 view),
/// the row's selection, quest_attend over the same cells.
std::vector<float> quest_beside(const synthetic& s, const evict::quest_config& qc, std::size_t t,
                                const attention::kv_segment& cells) {
  auto ix = evict::quest_index::make(qc).value();
  for (std::size_t i = 0; i < cells.n_cells; ++i)
    ix.append(reinterpret_cast<const float*>(static_cast<const std::byte*>(cells.k) +
                                             i * cells.k_stride));
  const std::size_t row = s.n_head * s.d;
  ix.select(&s.q[t * row], s.n_head / s.n_head_kv);
  const attention::shape sh{s.n_head, s.n_head_kv, s.d, s.d};
  attention::params ap;
  ap.scale = 1.0f / std::sqrt(static_cast<float>(s.d));
  attention::workspace ws;
  evict::quest_scratch scr;
  std::vector<float> out(row);
  const pos_t pos = static_cast<pos_t>(t);
  const seq_id seq = 0;
  const attention::query_batch qb{&s.q[t * row], 1, &pos, &seq, nullptr};
  EXPECT_TRUE((evict::quest_attend<simd::native, float, float>(ix, cells, sh, ap, qb, out.data(),
                                                               ws, scr, {1}))
                  .is_ok());
  return out;
}

TEST(EvictReadHook, QuestThroughTheDecoderEqualsQuestBeside) {
  for (std::uint64_t seed : {1u, 2u, 3u})
    for (bool per_head : {true, false}) {
      const synthetic s = data(k_tokens, seed);
      evict::quest_reads<> p;
      p.page_size = 4;
      p.top_pages = 3;
      p.per_head = per_head;
      const evict::quest_config qc{4, 3, s.n_head_kv, s.d, per_head, true};
      compare_decode(s, p, 2 * k_tokens, per_head ? "quest per head" : "quest per layer", seed,
                     [&](std::size_t t, const memory::layer_views& lv) {
                       return quest_beside(s, qc, t, lv.streams[0].segments[0]);
                     });
    }
}

// Evictions reuse slots and rollbacks restore older rows: the reader's index must
// rebuild, so each row is compared with an index built afresh from the lane's cells.
TEST(EvictReadHook, QuestReaderFollowsEvictionsAndRollbacks) {
  for (std::uint64_t seed : {4u, 5u}) {
    const synthetic s = data(k_tokens, seed), other = data(k_tokens, seed + 100);
    evict::quest_reads<> p;
    p.page_size = 4;
    p.top_pages = 2;
    const evict::quest_config qc{4, 2, s.n_head_kv, s.d, true, true};
    compare_decode(
        s, p, 20, "quest with eviction", seed,
        [&](std::size_t t, const memory::layer_views& lv) {
          return quest_beside(s, qc, t, lv.streams[0].segments[0]);
        },
        &other);
  }
}

/// ThinK beside the memory, as at the end of a prefill: the channels chosen from the
/// last `window` prefill rows and the prefill's keys, then every held key pruned and
/// the row's query gathered.
std::vector<float> think_beside(const synthetic& s, double ratio, std::size_t window,
                                std::size_t t) {
  const std::size_t d = s.d, Hk = s.n_head_kv, row = s.n_head * d;
  const evict::think_config tc{Hk, s.n_head / Hk, d, attention::rope_layout::normal, 0, ratio};
  auto th = evict::think_pruner::make(tc).value();
  th.choose(&s.q[(k_prefill - window) * row], window, s.k.data(), k_prefill);
  const std::size_t kc = th.kept_channels();
  std::vector<float> kp((t + 1) * Hk * kc), qg(s.n_head * kc), out(row);
  th.prune_keys(s.k.data(), t + 1, kp.data());
  th.gather_queries(&s.q[t * row], 1, qg.data());
  std::vector<pos_t> pos(t + 1);
  for (std::size_t j = 0; j <= t; ++j) pos[j] = static_cast<pos_t>(j);
  const attention::kv_segment seg{kp.data(),  s.v.data(), Hk * kc * 4, Hk * d * 4,
                                  pos.data(), nullptr,    t + 1};
  const attention::kv_view view{std::span(&seg, 1)};
  attention::params ap;
  ap.scale = 1.0f / std::sqrt(static_cast<float>(d));
  attention::workspace ws;
  const seq_id seq = 0;
  const attention::query_batch qb{qg.data(), 1, &pos[t], &seq, nullptr};
  EXPECT_TRUE(
      (attention::attend<simd::native, float, float>(th.pruned_shape({s.n_head, Hk, d, d}), ap, qb,
                                                     std::span(&view, 1), out.data(), ws, {1}))
          .is_ok());
  return out;
}

TEST(EvictReadHook, ThinkThroughTheDecoderEqualsThinkBeside) {
  for (std::uint64_t seed : {1u, 2u, 3u})
    for (double ratio : {0.25, 0.5, 0.75}) {
      const synthetic s = data(k_tokens, seed);
      evict::think_keys<> p;
      p.prune_ratio = ratio;
      p.window = 6;
      compare_decode(
          s, p, 2 * k_tokens, "think", seed,
          [&](std::size_t t, const memory::layer_views&) { return think_beside(s, ratio, 6, t); });
      // An f16 cache: the reader keeps its pruned keys in f16 (the cached values), the
      // reference prunes the f16-rounded keys in f32.
      synthetic s16 = s;
      for (std::vector<float>* x : {&s16.k, &s16.v})
        for (float& f : *x) f = dtype::f16::from_float(f).to_float();
      compare_decode<dtype::f16>(s, p, 2 * k_tokens, "think f16", seed,
                                 [&](std::size_t t, const memory::layer_views&) {
                                   return think_beside(s16, ratio, 6, t);
                                 });
    }
}

// A decode row that shares its micro-batch with another sequence's prefill chunk is
// still read through its lane's reader; the chunk's rows get the kernel over their own
// lane. Sequence 0 prefills alone, then decodes while sequence 1 prefills in chunks
// beside it (then both decode): every row of both equals the rule beside the memory
// (Quest over the lane's cells for decode rows, the plain kernel for chunk rows).
TEST(EvictReadHook, DecodeRowsBesideAnotherSequencesPrefillStillReadTheirPages) {
  for (std::uint64_t seed : {1u, 2u}) {
    const synthetic s0 = data(k_tokens, seed), s1 = data(k_tokens, seed + 50);
    const synthetic* src[2] = {&s0, &s1};
    evict::quest_reads<> policy;
    policy.page_size = 4;
    policy.top_pages = 3;
    const evict::quest_config qc{4, 3, s0.n_head_kv, s0.d, true, true};
    memory::bounded_config cfg = synthetic_config(s0, 2 * k_tokens, k_chunk);
    cfg.n_seq_max = 2;
    auto m = memory::bounded<evict::quest_reads<>, float>::make(cfg, policy).value();
    const attention::shape sh{s0.n_head, s0.n_head_kv, s0.d, s0.d};
    attention::params ap;
    ap.scale = 1.0f / std::sqrt(static_cast<float>(s0.d));
    attention::workspace ws, ws_ref;
    memory::layer_views lv;
    const std::size_t q_row = s0.n_head * s0.d, kv_row = s0.n_head_kv * s0.d;
    std::size_t next[2] = {0, 0};  // each sequence's next position
    std::size_t mixed = 0;         // micro-batches with a decode row and a chunk
    while (next[0] < k_tokens || next[1] < k_tokens) {
      // Sequence 1 starts once sequence 0 decodes; each prefills in chunks of k_chunk.
      std::vector<std::pair<seq_id, std::size_t>> toks;  // (sequence, position)
      const bool second_started = next[0] >= k_prefill;
      for (seq_id sq : {0, 1}) {
        if (sq == 1 && !second_started) continue;
        std::size_t& t = next[static_cast<std::size_t>(sq)];
        const std::size_t n = t < k_prefill  ? std::min(k_chunk, k_prefill - t)
                              : t < k_tokens ? 1
                                             : 0;
        for (std::size_t j = 0; j < n; ++j) toks.push_back({sq, t + j});
        t += n;
      }
      const std::size_t n = toks.size();
      std::vector<pos_t> pos(n);
      std::vector<seq_id> seq(n);
      std::vector<seq_set> sets(n);
      std::vector<float> q(n * q_row);
      std::size_t per_seq[2] = {0, 0};
      for (std::size_t j = 0; j < n; ++j) {
        pos[j] = static_cast<pos_t>(toks[j].second);
        seq[j] = toks[j].first;
        sets[j] = seq_set::of(toks[j].first);
        ++per_seq[static_cast<std::size_t>(toks[j].first)];
        std::copy_n(&src[toks[j].first]->q[toks[j].second * q_row], q_row, &q[j * q_row]);
      }
      mixed += (per_seq[0] == 1 && per_seq[1] > 1) || (per_seq[1] == 1 && per_seq[0] > 1);
      const memory::ubatch_tokens ub{pos, sets};
      ASSERT_TRUE(m.prepare(std::span(&ub, 1)).is_ok());
      ASSERT_TRUE(m.apply(0, ub).is_ok());
      for (std::size_t j = 0; j < n; ++j) {
        const synthetic& d = *src[toks[j].first];
        m.write_kv(0, 0, j, &d.k[toks[j].second * kv_row], &d.v[toks[j].second * kv_row]);
      }
      m.views(0, 0, lv);
      // Beside the memory, before the call (the memory evicts after it).
      std::vector<float> want(n * q_row), kernel(n * q_row);
      const attention::query_batch qb{q.data(), n, pos.data(), seq.data(), lv.token_stream.data()};
      ASSERT_TRUE((attention::attend<simd::native, float, float>(sh, ap, qb, lv.streams,
                                                                 kernel.data(), ws_ref, {1}))
                      .is_ok());
      for (std::size_t j = 0; j < n; ++j) {
        const auto sq = static_cast<std::size_t>(toks[j].first);
        const std::vector<float> row =
            per_seq[sq] == 1 ? quest_beside(*src[sq], qc, toks[j].second,
                                            lv.streams[lv.token_stream[j]].segments[0])
                             : std::vector<float>(&kernel[j * q_row], &kernel[(j + 1) * q_row]);
        std::copy(row.begin(), row.end(), &want[j * q_row]);
      }
      std::vector<float> out(n * q_row);
      ASSERT_TRUE((model::attend_observed<simd::native, float, float>(m, 0, 0, sh, ap, qb, lv,
                                                                      out.data(), ws, {1}))
                      .is_ok());
      m.commit();
      const std::ptrdiff_t i = first_difference(out, want, 1e-6f);
      ASSERT_LT(i, 0) << "seed " << seed << ", micro-batch of " << n << " rows ending at positions "
                      << next[0] << " / " << next[1] << ": element " << i << " is "
                      << out[static_cast<std::size_t>(i)] << " through the decoder, "
                      << want[static_cast<std::size_t>(i)] << " beside it";
    }
    EXPECT_EQ(mixed, 4u) << "sequence 1's four chunks each share a micro-batch with a decode row";
  }
}

TEST(EvictReadHook, ReadersNeedPerLayerLanes) {
  memory::bounded_config cfg;
  cfg.shape = {1, 2, 16, 16};
  cfg.budget = 8;
  cfg.rope.layout = attention::rope_layout::none;
  cfg.granularity = memory::kv_granularity::per_kv_head;
  const auto q = memory::bounded<evict::quest_reads<>, float>::make(cfg);
  ASSERT_FALSE(q.is_ok());
  EXPECT_NE(q.error().message().find("per_layer"), std::string::npos) << q.error().message();
  EXPECT_FALSE((memory::bounded<evict::think_keys<>, float>::make(cfg).is_ok()));
  cfg.granularity = memory::kv_granularity::per_layer;
  evict::quest_reads<> bad;
  bad.top_pages = 0;
  EXPECT_FALSE((memory::bounded<evict::quest_reads<>, float>::make(cfg, bad).is_ok()));
}

}  // namespace
