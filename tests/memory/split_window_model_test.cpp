// Randomized differential test of the per-stream sliding window (split_window.hpp):
// the same random operations run on a split window and on a full cache big enough
// never to forget (the brute-force model: a window only masks), for every window kind.
// After every micro-batch both attend the same random queries with the window mask
// (attention::reference_attend; the split window hands one view per sequence) and
// must agree; after every step each sequence's stream from its horizon up must equal
// the full cache's cells of that sequence, and the window of its next query must be
// held. Injected failures (rollback after some micro-batches) must leave every stream
// byte for byte as it was; refused operations (coupled tokens, lost context, no
// space) must change nothing. Seeds are printed with every failure.
#include <cmath>
#include <cstdio>
#include <set>

#include <gtest/gtest.h>

#include "mnemo/attention/attention.hpp"
#include "mnemo/memory/seq_ops.hpp"
#include "mnemo/memory/window/split_window.hpp"
//
#include "memory/harness.hpp"

namespace {

using namespace mnemo;
using namespace mnemo::memtest;
using attention::window_kind;
using sw = memory::split_window<float>;
using full = memory::full_cache<float>;

struct rng {
  std::uint64_t s;
  std::uint64_t next() { return s = mix64(s); }
  int range(int lo, int hi) { return lo + static_cast<int>(next() % std::uint64_t(hi - lo + 1)); }
  bool chance(int pct) { return range(0, 99) < pct; }
};

struct pair_under_test {
  sw w;
  full f;
  attention::params ap;
  seq_id n_seq;
};

std::vector<snapshot> snaps(const sw& w) {
  std::vector<snapshot> v;
  for (seq_id s = 0; s < static_cast<seq_id>(w.n_streams()); ++s)
    v.push_back(snap(w.stream(s), live_rows));
  return v;
}
std::string diff(const std::vector<snapshot>& a, const std::vector<snapshot>& b) {
  for (std::size_t s = 0; s < a.size(); ++s)
    if (std::string d = first_difference(a[s], b[s]); !d.empty())
      return "stream " + std::to_string(s) + ": " + d;
  return "";
}

/// Attends random queries of micro-batch u through both memories' views of every
/// layer; "" or the first difference.
template <class W, class F>
std::string attend_both(const W& w, const F& f, const attention::params& ap,
                        const memory::kv_shape& sh, std::size_t u, const std::vector<pos_t>& pos,
                        const std::vector<seq_set>& sets, rng& r, std::size_t window_cells) {
  const attention::shape ash{2 * sh.n_head_kv, sh.n_head_kv, sh.d_k, sh.d_v};
  std::vector<float> q(pos.size() * ash.n_head * ash.d_k);
  for (auto& x : q) x = static_cast<float>(r.range(-1000, 1000)) / 1000.0f;
  std::vector<seq_id> qs;
  for (const auto& s : sets) qs.push_back(first_seq(s));
  for (std::size_t l = 0; l < sh.n_layer; ++l) {
    memory::layer_views vw, vf;
    w.views(l, u, vw);
    f.views(l, u, vf);
    attention::query_batch qw{q.data(), pos.size(), pos.data(), qs.data(),
                              vw.token_stream.empty() ? nullptr : vw.token_stream.data()};
    attention::query_batch qf{q.data(), pos.size(), pos.data(), qs.data(),
                              vf.token_stream.empty() ? nullptr : vf.token_stream.data()};
    std::vector<float> ow(pos.size() * ash.n_head * ash.d_v), of(ow.size());
    if (!attention::reference_attend<float, float>(ash, ap, qw, vw.streams, ow.data()).is_ok() ||
        !attention::reference_attend<float, float>(ash, ap, qf, vf.streams, of.data()).is_ok())
      return "attend failed";
    if (window_cells != 0)
      for (const auto& v : vw.streams)
        if (v.n_cells() > window_cells) return "a view exceeds its stream's window cache";
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
  return "";
}

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
  const auto before = snaps(w);
  const status ws = w.prepare(ubs);
  window_ok = ws.is_ok();
  if (!ws.is_ok()) {
    bool coupled = false;
    for (const auto& t2 : batch) coupled = coupled || t2.seqs.count() > 1;
    if (coupled != (ws.code() == status_code::unsupported &&
                    ws.message().find("belongs to") != std::string::npos))
      return "prepare: " + ws.to_string();
    if (!coupled && ws.code() != status_code::no_space) return "prepare: " + ws.to_string();
    const std::string d = diff(before, snaps(w));
    return d.empty() ? "" : "a refused prepare changed the memory: " + d;
  }
  if (const status fs = f.prepare(ubs); !fs.is_ok()) return "full prepare: " + fs.to_string();
  const auto& sh = w.config().stream.shape;
  for (std::size_t u = 0; u < ubs.size(); ++u) {
    if (!w.apply(u, ubs[u]).is_ok() || !f.apply(u, ubs[u]).is_ok()) return "apply failed";
    for (std::size_t j = 0; j < ubs[u].size(); ++j)
      for (std::size_t l = 0; l < sh.n_layer; ++l) {
        const auto k = rotated_k(w.config().stream, l, first_seq(sets[u][j]), pos[u][j], pos[u][j]);
        const auto v = raw_v(sh, l, first_seq(sets[u][j]), pos[u][j]);
        w.write_kv(l, u, j, k.data(), v.data());
        f.write_kv(l, u, j, k.data(), v.data());
      }
    if (std::string e = attend_both(w, f, t.ap, sh, u, pos[u], sets[u], r, w.size_per_stream());
        !e.empty())
      return e;
    if (static_cast<int>(u) == fail_after) {
      w.rollback();
      f.rollback();
      const std::string d = diff(before, snaps(w));
      return d.empty() ? "" : "rollback did not restore the split window: " + d;
    }
  }
  w.commit();
  f.commit();
  return "";
}

std::string compare(const pair_under_test& t) {
  for (seq_id s = 0; s < t.n_seq; ++s) {
    const auto& st = t.w.stream(s);
    const pos_t h = t.w.horizon(s);
    std::multiset<std::pair<pos_t, std::vector<float>>> a, b;
    for (std::size_t i : cells_of(st, 0))
      if (st.cells().pos(i) >= h) a.insert({st.cells().pos(i), cached_k(st, 0, i)});
    for (std::size_t i : cells_of(t.f, s))
      if (t.f.cells().pos(i) >= h) b.insert({t.f.cells().pos(i), cached_k(t.f, 0, i)});
    if (a != b)
      return "sequence " + std::to_string(s) + ": cells from horizon " + std::to_string(h) +
             " differ";
    if (t.w.seq_pos_max(s) != t.f.seq_pos_max(s))
      return "sequence " + std::to_string(s) + ": pos_max " + std::to_string(t.w.seq_pos_max(s)) +
             ", full cache " + std::to_string(t.f.seq_pos_max(s));
    const pos_t q = t.f.seq_pos_max(s) + 1;
    if (q > 0 && !t.w.can_resume(s, q)) return "sequence cannot continue at its next position";
    if (std::string e = check_invariants(st); !e.empty()) return e;
  }
  return "";
}

void run_seed(window_kind kind, std::uint64_t seed) {
  rng r{seed};
  const pos_t n_swa = r.range(2, 6);
  const seq_id n_seq = r.range(1, 4);
  memory::split_window_config wc;
  wc.n_seq_max = n_seq;
  wc.stream.shape = {static_cast<std::size_t>(r.range(1, 2)), 1, 32, 32};
  wc.stream.rope = default_rope();
  wc.stream.window = kind;
  wc.stream.n_swa = n_swa;
  wc.stream.n_ctx = 4096;
  wc.stream.size = static_cast<std::size_t>(n_swa + r.range(2, 6));
  memory::full_cache_config fc;
  fc.shape = wc.stream.shape;
  fc.rope = wc.stream.rope;
  fc.n_seq_max = n_seq;
  fc.size = 4096;
  pair_under_test t{sw::make(wc).value(), full::make(fc).value(), {}, n_seq};
  t.ap.scale = 0.2f;
  t.ap.window = kind;
  t.ap.n_swa = n_swa;
  t.ap.causal = kind != window_kind::symmetric || r.chance(50);
  long accepted = 0;
  for (int step = 0; step < 150; ++step) {
    std::string what, err;
    const int w = r.range(0, 99);
    if (w < 60) {
      std::vector<token> batch;
      std::vector<pos_t> next(static_cast<std::size_t>(n_seq));
      for (seq_id s = 0; s < n_seq; ++s) next[std::size_t(s)] = t.f.seq_pos_max(s) + 1;
      const int n = r.range(1, 8);
      for (int i = 0; i < n; ++i) {
        seq_set set = seq_set::of(static_cast<seq_id>(r.range(0, n_seq - 1)));
        if (n_seq > 1 && r.chance(3)) set.insert(static_cast<seq_id>(r.range(0, n_seq - 1)));
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
      const seq_id other = static_cast<seq_id>(r.range(0, n_seq - 1));
      memory::seq_op o = w < 72   ? memory::seq_op::rm(s, p0, p1)
                         : w < 80 ? memory::seq_op::cp(s, other, 0, p1)
                         : w < 85 ? memory::seq_op::cp(s, other, p0, p1)
                         : w < 88 ? memory::seq_op::keep(s)
                         : w < 96 ? memory::seq_op::add(s, p0, p1, r.range(-4, 4))
                                  : memory::seq_op::div(s, p0, p1, 2);
      what = "sequence operation " + std::to_string(int(o.k)) + " on " + std::to_string(s) + " [" +
             std::to_string(o.p0) + ", " + std::to_string(o.p1) + ")";
      const auto before = snaps(t.w);
      const status chk = memory::check_seq_op(t.w, o);
      const status ws = memory::run_seq_op(t.w, o);
      if (chk.is_ok() != ws.is_ok()) {
        err = "check and operation disagree: " + chk.to_string() + " / " + ws.to_string();
      } else if (ws.is_ok()) {
        if (const status fs = memory::run_seq_op(t.f, o); !fs.is_ok())
          err = "the full cache refused: " + fs.to_string();
      } else if (const std::string d = diff(before, snaps(t.w)); !d.empty()) {
        err = "a refused operation changed the memory: " + d;
      } else if (ws.code() == status_code::unsupported &&
                 ws.message().find("sequence " + std::to_string(s)) == std::string::npos &&
                 ws.message().find("sequence " + std::to_string(other)) == std::string::npos) {
        err = "a refusal that names no sequence of the operation: " + ws.to_string();
      }
    }
    if (err.empty()) err = compare(t);
    ASSERT_EQ(err, "") << "seed " << seed << ", " << attention::to_string(kind) << " n_swa "
                       << n_swa << ", " << n_seq << " sequences, " << t.w.size_per_stream()
                       << " cells per stream; step " << step << ": " << what;
  }
  EXPECT_GT(accepted, 10) << "seed " << seed << ": too few decodes went through";
}

class SplitWindowModel : public ::testing::TestWithParam<window_kind> {};

TEST_P(SplitWindowModel, MatchesFullCacheWithWindowMask) {
  for (std::uint64_t seed = 1; seed <= 60; ++seed) {
    run_seed(GetParam(), seed * 7919 + static_cast<std::uint64_t>(GetParam()));
    if (HasFatalFailure()) return;
  }
}

INSTANTIATE_TEST_SUITE_P(Kinds, SplitWindowModel,
                         ::testing::Values(window_kind::standard, window_kind::chunked,
                                           window_kind::symmetric),
                         [](const auto& i) { return std::string(attention::to_string(i.param)); });

}  // namespace
