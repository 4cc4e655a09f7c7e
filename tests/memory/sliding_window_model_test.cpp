// Randomized differential test of the sliding-window memory: the same random
// operations run on a window cache and on a full cache big enough never to forget
// (the brute-force model: a window only masks), for every window kind. After every
// micro-batch the two memories attend the same random queries with the window mask
// (attention::reference_attend) and must give the same output; after every step each
// sequence's cells from its horizon up must equal the full cache's (positions and K/V
// rows), and the window of its next query must be held. Injected failures (rollback
// after some micro-batches) must leave the window cache byte for byte as it was; a
// refused operation must change nothing. Seeds are printed with every failure.
#include <cmath>
#include <cstdio>
#include <set>

#include <gtest/gtest.h>

#include "mnemo/attention/attention.hpp"
#include "mnemo/memory/seq_ops.hpp"
#include "mnemo/memory/window/sliding_window.hpp"
#include "mnemo/memory/window/sliding_window_state.hpp"
//
#include "memory/harness.hpp"

namespace {

using namespace mnemo;
using namespace mnemo::memtest;
using attention::window_kind;

struct rng {
  std::uint64_t s;
  std::uint64_t next() { return s = mix64(s); }
  int range(int lo, int hi) { return lo + static_cast<int>(next() % std::uint64_t(hi - lo + 1)); }
  bool chance(int pct) { return range(0, 99) < pct; }
};

struct pair_under_test {
  memory::sliding_window<float> w;
  memory::full_cache<float> f;
  attention::params ap;
  seq_id n_seq;
};

/// Decodes `batch` (split in micro-batches of n_ub) in both, attending after each
/// micro-batch; fail_after >= 0: rollback after that micro-batch. "" or a difference.
std::string decode_both(pair_under_test& t, const std::vector<token>& batch, std::size_t n_ub,
                        int fail_after, rng& r, bool& window_ok) {
  auto& w = t.w;
  auto& f = t.f;
  std::vector<std::vector<pos_t>> pos;
  std::vector<std::vector<seq_set>> sets;
  for (std::size_t i = 0; i < batch.size(); ++i) {
    if (i % n_ub == 0) pos.emplace_back(), sets.emplace_back();
    pos.back().push_back(batch[i].pos);
    sets.back().push_back(batch[i].seqs);
  }
  std::vector<memory::ubatch_tokens> ubs;
  for (std::size_t u = 0; u < pos.size(); ++u) ubs.push_back({pos[u], sets[u]});
  if (!w.update().is_ok() || !f.update().is_ok()) return "update failed";
  // Rows written to free cells are unreachable after a rollback: live rows only.
  const snapshot before = snap(w, live_rows);
  const status ws = w.prepare(ubs);
  window_ok = ws.is_ok();
  if (!ws.is_ok()) {
    if (ws.code() != status_code::no_space) return "prepare: " + ws.to_string();
    const std::string d = first_difference(before, snap(w, live_rows));
    return d.empty() ? "" : "a refused prepare changed the cache: " + d;
  }
  if (const status fs = f.prepare(ubs); !fs.is_ok()) return "full prepare: " + fs.to_string();
  const auto& sh = w.config().shape;
  const attention::shape ash{2 * sh.n_head_kv, sh.n_head_kv, sh.d_k, sh.d_v};
  for (std::size_t u = 0; u < ubs.size(); ++u) {
    if (!w.apply(u, ubs[u]).is_ok() || !f.apply(u, ubs[u]).is_ok()) return "apply failed";
    for (std::size_t j = 0; j < ubs[u].size(); ++j)
      for (std::size_t l = 0; l < sh.n_layer; ++l) {
        const auto k = rotated_k(w.config(), l, first_seq(sets[u][j]), pos[u][j], pos[u][j]);
        const auto v = raw_v(sh, l, first_seq(sets[u][j]), pos[u][j]);
        w.write_kv(l, u, j, k.data(), v.data());
        f.write_kv(l, u, j, k.data(), v.data());
      }
    std::vector<float> q(ubs[u].size() * ash.n_head * ash.d_k);
    for (auto& x : q) x = static_cast<float>(r.range(-1000, 1000)) / 1000.0f;
    std::vector<seq_id> qs;
    for (const auto& s : sets[u]) qs.push_back(first_seq(s));
    attention::query_batch qb{q.data(), ubs[u].size(), pos[u].data(), qs.data(), nullptr};
    for (std::size_t l = 0; l < sh.n_layer; ++l) {
      memory::layer_views vw, vf;
      w.views(l, u, vw);
      f.views(l, u, vf);
      std::vector<float> ow(ubs[u].size() * ash.n_head * ash.d_v), of(ow.size());
      if (!attention::reference_attend<float, float>(ash, t.ap, qb, vw.streams, ow.data())
               .is_ok() ||
          !attention::reference_attend<float, float>(ash, t.ap, qb, vf.streams, of.data()).is_ok())
        return "attend failed";
      if (vw.segments[0].n_cells > w.size()) return "the window view exceeds the cache";
      for (std::size_t i = 0; i < ow.size(); ++i)
        if (std::fabs(ow[i] - of[i]) > 1e-5f) {
          char b[320];
          std::snprintf(b, sizeof b,
                        "attention differs: micro-batch %zu layer %zu element %zu (token %zu): "
                        "window %g, full %g",
                        u, l, i, i / (ash.n_head * ash.d_v), double(ow[i]), double(of[i]));
          return b;
        }
    }
    if (static_cast<int>(u) == fail_after) {
      w.rollback();
      f.rollback();
      const std::string d = first_difference(before, snap(w, live_rows));
      return d.empty() ? "" : "rollback did not restore the window cache: " + d;
    }
  }
  w.commit();
  f.commit();
  return "";
}

/// Sequence s's cells from its horizon up are the full cache's, rows included, and
/// every cell its next query keeps in the full cache is in the window cache.
std::string compare(const pair_under_test& t) {
  for (seq_id s = 0; s < t.n_seq; ++s) {
    const pos_t h = t.w.horizon(s);
    auto rows = [&](const auto& c) {
      std::multiset<std::pair<pos_t, std::vector<float>>> m;
      for (std::size_t i : cells_of(c, s))
        if (c.cells().pos(i) >= h) m.insert({c.cells().pos(i), cached_k(c, 0, i)});
      return m;
    };
    if (rows(t.w) != rows(t.f))
      return "sequence " + std::to_string(s) + ": cells from horizon " + std::to_string(h) +
             " differ";
    if (t.w.seq_pos_max(s) != t.f.seq_pos_max(s))
      return "sequence " + std::to_string(s) + ": pos_max " + std::to_string(t.w.seq_pos_max(s)) +
             ", full cache " + std::to_string(t.f.seq_pos_max(s)) + " (horizon " +
             std::to_string(h) + ")";
    const pos_t q = t.f.seq_pos_max(s) + 1;
    if (q > 0 && !t.w.can_resume(s, q)) return "sequence cannot continue at its next position";
    if (h > 0 && h > memory::lowest_kept(t.w.window(), t.w.n_swa(), q) && t.f.seq_pos_max(s) >= 0)
      return "horizon " + std::to_string(h) + " of sequence " + std::to_string(s) +
             " beyond the window of its next query " + std::to_string(q);
  }
  return check_invariants(t.w);
}

void run_seed(window_kind kind, std::uint64_t seed) {
  rng r{seed};
  const pos_t n_swa = r.range(2, 6);
  const seq_id n_seq = r.range(1, 3);
  memory::sliding_window_config wc;
  wc.shape = {static_cast<std::size_t>(r.range(1, 2)), 1, 32, 32};
  wc.rope = default_rope();
  wc.window = kind;
  wc.n_swa = n_swa;
  wc.n_seq_max = n_seq;
  wc.n_ctx = 4096;
  wc.size = static_cast<std::size_t>(n_swa * n_seq + r.range(2, 6));
  memory::full_cache_config fc;
  fc.shape = wc.shape;
  fc.rope = wc.rope;
  fc.n_seq_max = n_seq;
  fc.size = 4096;
  pair_under_test t{memory::sliding_window<float>::make(wc).value(),
                    memory::full_cache<float>::make(fc).value(),
                    {},
                    n_seq};
  t.ap.scale = 0.2f;
  t.ap.window = kind;
  t.ap.n_swa = n_swa;
  t.ap.causal = kind != window_kind::symmetric || r.chance(50);
  long accepted = 0;
  for (int step = 0; step < 150; ++step) {
    std::string what, err;
    const int w = r.range(0, 99);
    if (w < 60) {  // a decode continuing random sequences, sometimes coupled
      std::vector<token> batch;
      std::vector<pos_t> next(static_cast<std::size_t>(n_seq));
      for (seq_id s = 0; s < n_seq; ++s) next[std::size_t(s)] = t.f.seq_pos_max(s) + 1;
      const int n = r.range(1, 8);
      for (int i = 0; i < n; ++i) {
        seq_set set = seq_set::of(static_cast<seq_id>(r.range(0, n_seq - 1)));
        if (n_seq > 1 && r.chance(10)) set.insert(static_cast<seq_id>(r.range(0, n_seq - 1)));
        pos_t p = 0;
        for (seq_id s = 0; s < n_seq; ++s)
          if (set.contains(s)) p = std::max(p, next[std::size_t(s)]);
        for (seq_id s = 0; s < n_seq; ++s)
          if (set.contains(s)) next[std::size_t(s)] = p + 1;
        batch.push_back({p, set});
      }
      const std::size_t n_ub = static_cast<std::size_t>(r.range(1, n));
      const int fail = r.chance(15) ? r.range(0, (n - 1) / int(n_ub)) : -1;
      bool ok = false;
      what = "decode of " + std::to_string(n) + " tokens, micro-batches of " +
             std::to_string(n_ub) + (fail >= 0 ? ", failing" : "");
      err = decode_both(t, batch, n_ub, fail, r, ok);
      accepted += ok && fail < 0;
    } else {
      const seq_id s = static_cast<seq_id>(r.range(0, n_seq - 1));
      const pos_t top = std::max<pos_t>(0, t.f.seq_pos_max(s));
      const pos_t p0 = r.range(0, top + 1), p1 = r.chance(50) ? -1 : r.range(p0, top + 2);
      memory::seq_op o =
          w < 75   ? memory::seq_op::rm(s, p0, p1)
          : w < 85 ? memory::seq_op::cp(s, static_cast<seq_id>(r.range(0, n_seq - 1)), 0, p1)
          : w < 95 ? memory::seq_op::add(s, p0, p1, r.range(-4, 4))
                   : memory::seq_op::div(s, p0, p1, 2);
      what = "sequence operation " + std::to_string(int(o.k)) + " on " + std::to_string(s) + " [" +
             std::to_string(o.p0) + ", " + std::to_string(o.p1) + ")";
      const snapshot before = snap(t.w);
      const status ws = memory::run_seq_op(t.w, o);
      if (ws.is_ok()) {
        if (const status fs = memory::run_seq_op(t.f, o); !fs.is_ok())
          err = "the full cache refused: " + fs.to_string();
      } else if (const std::string d = first_difference(before, snap(t.w)); !d.empty()) {
        err = "a refused operation changed the cache: " + d;
      } else if (ws.code() == status_code::unsupported &&
                 ws.to_string().find("sequence ") == std::string::npos) {
        err = "a refusal that names no sequence: " + ws.to_string();
      }
    }
    if (err.empty()) err = compare(t);
    ASSERT_EQ(err, "") << "seed " << seed << ", " << attention::to_string(kind) << " n_swa "
                       << n_swa << ", " << n_seq << " sequences, " << t.w.size() << " cells; step "
                       << step << ": " << what;
  }
  EXPECT_GT(accepted, 10) << "seed " << seed << ": too few decodes went through";
}

class SlidingWindowModel : public ::testing::TestWithParam<window_kind> {};

TEST_P(SlidingWindowModel, MatchesFullCacheWithWindowMask) {
  for (std::uint64_t seed = 1; seed <= 60; ++seed) {
    run_seed(GetParam(), seed * 7919 + static_cast<std::uint64_t>(GetParam()));
    if (HasFatalFailure()) return;
  }
}

INSTANTIATE_TEST_SUITE_P(Kinds, SlidingWindowModel,
                         ::testing::Values(window_kind::standard, window_kind::chunked,
                                           window_kind::symmetric),
                         [](const auto& i) { return std::string(attention::to_string(i.param)); });

}  // namespace
