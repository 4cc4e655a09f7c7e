// The signal set (docs/eviction.md, "Signals"): a policy receives exactly the signals it
// declares (mass, lse, logits, query; the others stay null) with values equal to an
// fp64 brute-force computation over the cells its lane held during the call, per layer
// and per KV head, over a chunked prefill and decode; and on_remap reports every cell
// that changes slot or position, so a policy's own slot -> position map stays exact.
#include <algorithm>
#include <cmath>

#include "evict/harness.hpp"
#include <gtest/gtest.h>

#include "mnemo/evict/concepts.hpp"

namespace {

using namespace evict_test;
using mnemo::pos_t;
namespace ev = mnemo::evict;

/// What a probe saw in one on_attention call.
struct seen_call {
  ev::step_info step;
  std::vector<pos_t> pos;  // the lane's slot positions
  std::size_t rows = 0, n_head_kv = 0, group = 0, d_k = 0;
  std::vector<pos_t> row_pos;
  bool has_mass = false, has_lse = false, has_logits = false, has_query = false;
  std::vector<float> mass, lse, logits, query;
};

struct recorder {
  std::vector<seen_call> calls;
};

/// Records every signal it is handed. Declares S; asks for the last `rows` rows.
template <ev::signal_set S>
struct probe : ev::policy_defaults {
  static constexpr ev::signal_set signals = S;
  static constexpr bool uses_attention = S.per_call();
  recorder* rec = nullptr;
  std::size_t rows = 3;
  ev::stats_request request(const ev::step_info&) const noexcept {
    // Asks for everything: the cache must hand over only what S declares.
    return {rows, ev::signal::mass | ev::signal::lse | ev::signal::logits | ev::signal::query};
  }
  void on_attention(const ev::step_info& s, ev::slot_view v,
                    const ev::attention_signals& m) const noexcept {
    seen_call c;
    c.step = s;
    c.pos.assign(v.pos.begin(), v.pos.begin() + static_cast<std::ptrdiff_t>(m.stride));
    c.rows = m.rows;
    c.n_head_kv = m.n_head_kv;
    c.group = m.group;
    c.d_k = m.d_k;
    c.row_pos.assign(m.row_pos, m.row_pos + m.rows);
    const std::size_t qh = m.n_q_head();
    c.has_mass = m.mass != nullptr;
    c.has_lse = m.lse != nullptr;
    c.has_logits = m.logits != nullptr;
    c.has_query = m.query != nullptr;
    if (m.mass) c.mass.assign(m.mass, m.mass + m.n_head_kv * m.stride);
    if (m.lse) c.lse.assign(m.lse, m.lse + m.rows * qh);
    if (m.logits) c.logits.assign(m.logits, m.logits + m.rows * qh * m.stride);
    if (m.query) c.query.assign(m.query, m.query + m.rows * qh * m.d_k);
    rec->calls.push_back(std::move(c));
  }
  float score(const ev::step_info&, ev::slot_view v, std::size_t slot) const noexcept {
    return static_cast<float>((v.pos[slot] * 7919) % 101);  // scattered evictions
  }
};

/// Random Q/K/V, 4 query heads on 2 KV heads.
synthetic random_data(std::size_t n, std::uint64_t seed) {
  synthetic s;
  s.n_head = 4;
  s.n_head_kv = 2;
  s.d = 16;
  s.n_tokens = n;
  s.n_question = 1;
  mnemo::splitmix64 g{seed};
  for (auto* a : {&s.q, &s.k, &s.v}) {
    a->resize(n * (a == &s.q ? s.n_head : s.n_head_kv) * s.d);
    for (float& x : *a) x = static_cast<float>(g.normal());
  }
  return s;
}

/// Checks every recorded call against fp64 logits over the cells the lane held.
void check_calls(const synthetic& s, const recorder& rec, ev::signal_set S, bool per_head) {
  using ev::signal;
  const double scale = 1.0 / std::sqrt(static_cast<double>(s.d));
  const std::size_t g = s.n_head / s.n_head_kv;
  ASSERT_FALSE(rec.calls.empty());
  for (std::size_t ci = 0; ci < rec.calls.size(); ++ci) {
    const seen_call& c = rec.calls[ci];
    SCOPED_TRACE("call " + std::to_string(ci) + " kv_head " + std::to_string(c.step.kv_head));
    ASSERT_EQ(c.has_mass, S.has(signal::mass));
    ASSERT_EQ(c.has_lse, S.has(signal::lse));
    ASSERT_EQ(c.has_logits, S.has(signal::logits));
    ASSERT_EQ(c.has_query, S.has(signal::query));
    ASSERT_EQ(c.rows, std::min<std::size_t>(3, c.step.n_new));
    ASSERT_EQ(c.group, g);
    ASSERT_EQ(c.n_head_kv, per_head ? 1u : s.n_head_kv);
    const std::size_t h0 = per_head ? c.step.kv_head : 0, qh = c.n_head_kv * g, n = c.pos.size();
    std::vector<double> mass(c.n_head_kv * n, 0.0);
    for (std::size_t r = 0; r < c.rows; ++r) {
      const pos_t t = c.row_pos[r];
      ASSERT_EQ(t, c.step.pos_end - static_cast<pos_t>(c.rows - r));
      for (std::size_t i = 0; i < qh; ++i) {
        const std::size_t hq = h0 * g + i, hk = hq / g;  // model-wide query and KV head
        const float* q = &s.q[(static_cast<std::size_t>(t) * s.n_head + hq) * s.d];
        std::vector<double> l(n, -INFINITY);
        double mx = -INFINITY;
        for (std::size_t j = 0; j < n; ++j) {
          if (c.pos[j] < 0 || c.pos[j] > t) continue;  // empty, or causally masked
          const float* k = &s.k[(static_cast<std::size_t>(c.pos[j]) * s.n_head_kv + hk) * s.d];
          double dot = 0.0;
          for (std::size_t x = 0; x < s.d; ++x) dot += double(q[x]) * k[x];
          l[j] = dot * scale;
          mx = std::max(mx, l[j]);
        }
        double z = 0.0;
        for (double x : l) z += std::isinf(x) ? 0.0 : std::exp(x - mx);
        const double lse = mx + std::log(z);
        for (std::size_t j = 0; j < n; ++j)
          if (!std::isinf(l[j])) mass[(hk - h0) * n + j] += std::exp(l[j] - lse);
        if (S.has(signal::lse)) {
          EXPECT_NEAR(c.lse[r * qh + i], lse, 1e-4) << "row " << r;
        }
        if (S.has(signal::logits)) {
          for (std::size_t j = 0; j < n; ++j) {
            const float got = c.logits[(r * qh + i) * n + j];
            if (std::isinf(l[j])) {
              EXPECT_TRUE(std::isinf(got) && got < 0) << "row " << r << " slot " << j;
            } else {
              EXPECT_NEAR(got, l[j], 1e-4) << "row " << r << " head " << i << " slot " << j;
            }
          }
        }
        if (S.has(signal::query)) {
          for (std::size_t x = 0; x < s.d; ++x)
            EXPECT_EQ(c.query[(r * qh + i) * s.d + x], q[x]) << "row " << r << " head " << i;
        }
      }
    }
    if (S.has(signal::mass)) {
      for (std::size_t i = 0; i < mass.size(); ++i)
        EXPECT_NEAR(c.mass[i], mass[i], 1e-4) << "mass entry " << i;
    }
  }
}

template <ev::signal_set S>
void run_and_check(mnemo::memory::kv_granularity gr) {
  const synthetic s = random_data(70, 21);
  recorder rec;
  probe<S> p;
  p.rec = &rec;
  run_options o;
  o.granularity = gr;
  // Prefill 40 in chunks of 16 (holes after multi-token evictions), then 30 decode steps.
  (void)run_synthetic(s, 40, 16, 12, p, o);
  check_calls(s, rec, S, gr == mnemo::memory::kv_granularity::per_kv_head);
}

constexpr ev::signal_set k_mass = ev::signal::mass;
constexpr ev::signal_set k_lse_query = ev::signal::lse | ev::signal::query;
constexpr ev::signal_set k_logits = ev::signal::logits;
constexpr ev::signal_set k_query = ev::signal::query;
constexpr ev::signal_set k_all =
    ev::signal::mass | ev::signal::lse | ev::signal::logits | ev::signal::query;

// A policy that declares nothing keeps the null sink: the export is not compiled.
static_assert(!mnemo::memory::bounded<probe<k_query>, float>::wants_kernel_stats);
static_assert(mnemo::memory::bounded<probe<k_logits>, float>::wants_kernel_stats);

TEST(EvictSignals, ExactlyDeclaredSignalsPerLayer) {
  const auto L = mnemo::memory::kv_granularity::per_layer;
  run_and_check<k_mass>(L);
  run_and_check<k_lse_query>(L);
  run_and_check<k_logits>(L);
  run_and_check<k_query>(L);
  run_and_check<k_all>(L);
}

TEST(EvictSignals, ExactlyDeclaredSignalsPerKVHead) {
  const auto H = mnemo::memory::kv_granularity::per_kv_head;
  run_and_check<k_lse_query>(H);
  run_and_check<k_all>(H);
}

/// Keeps its own slot -> position map from on_insert and on_remap only.
struct remap_probe : ev::policy_defaults {
  static constexpr ev::signal_set signals = ev::signal::remap;
  std::vector<pos_t>* shadow = nullptr;  // [capacity]
  mutable bool consistent = true;
  void on_insert(const ev::step_info&, ev::slot_view v, std::size_t slot, const float*,
                 const float*) const noexcept {
    (*shadow)[slot] = v.pos[slot];
  }
  void on_remap(const ev::step_info&, ev::slot_view,
                std::span<const ev::slot_move> moves) const noexcept {
    for (const ev::slot_move& m : moves) {
      consistent &= (*shadow)[m.from] == m.old_pos;
      (*shadow)[m.to] = m.new_pos;
      if (m.from != m.to) (*shadow)[m.from] = -1;
    }
  }
  float score(const ev::step_info&, ev::slot_view v, std::size_t slot) const noexcept {
    return static_cast<float>((v.pos[slot] * 7919) % 101);
  }
};
static_assert(ev::eviction_policy<remap_probe>);
// Remap alone needs no kernel export and no on_attention: the null-sink path.
static_assert(!mnemo::memory::bounded<remap_probe, float>::wants_attention_stats);

TEST(EvictSignals, RemapKeepsPolicyMapExact) {
  for (auto mode :
       {mnemo::memory::position_mode::original, mnemo::memory::position_mode::compact}) {
    const synthetic s = random_data(60, 5);
    mnemo::memory::bounded_config cfg = synthetic_config(s, 10, 12);
    cfg.positions = mode;
    std::vector<pos_t> shadow(cfg.capacity(), -1);
    remap_probe p;
    p.shadow = &shadow;
    auto m = mnemo::memory::bounded<remap_probe, float>::make(cfg, p).value();
    const mnemo::attention::shape sh{s.n_head, s.n_head_kv, s.d, s.d};
    mnemo::attention::params ap;
    ap.scale = 0.25f;
    mnemo::attention::workspace ws;
    mnemo::memory::layer_views lv;
    std::size_t t = 0, moved_calls = 0;
    while (t < s.n_tokens) {
      const std::size_t n = std::min<std::size_t>(t < 36 ? 12 : 1, s.n_tokens - t);
      std::vector<pos_t> pos(n);
      std::vector<mnemo::seq_id> seq(n, 0);
      std::vector<mnemo::seq_set> sets(n, mnemo::seq_set::of(0));
      for (std::size_t j = 0; j < n; ++j) pos[j] = m.seq_pos_max(0) + 1 + static_cast<pos_t>(j);
      const mnemo::memory::ubatch_tokens ub{pos, sets};
      ASSERT_TRUE(m.prepare(std::span(&ub, 1)).is_ok());
      const auto before = m.lane_of(0, 0).pos;
      ASSERT_TRUE(m.apply(0, ub).is_ok());
      for (std::size_t j = 0; j < n; ++j)
        m.write_kv(0, 0, j, &s.k[(t + j) * s.n_head_kv * s.d], &s.v[(t + j) * s.n_head_kv * s.d]);
      m.views(0, 0, lv);
      std::vector<float> out(n * s.n_head * s.d);
      const mnemo::attention::query_batch qb{&s.q[t * s.n_head * s.d], n, pos.data(), seq.data(),
                                             nullptr};
      ASSERT_TRUE((mnemo::model::attend_observed<mnemo::simd::native, float, float>(
                       m, 0, 0, sh, ap, qb, lv, out.data(), ws, {1}))
                      .is_ok());
      m.commit();
      moved_calls += before != m.lane_of(0, 0).pos;
      if (t == 40) {
        ASSERT_TRUE(m.seq_add(0, 0, 100, 3).is_ok());  // a shift moves positions too
      }
      const auto& ln = m.lane_of(0, 0);
      for (std::size_t j = 0; j < ln.pos.size(); ++j)
        if (ln.pos[j] >= 0) {
          ASSERT_EQ(shadow[j], ln.pos[j]) << "slot " << j << " after token " << t;
        }
      ASSERT_TRUE(m.policy().consistent) << "a move's old position did not match";
      t += n;
    }
    EXPECT_GT(moved_calls, 0u);
  }
}

}  // namespace
