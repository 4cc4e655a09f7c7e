// KeyDiff, Q-Hitter and Expected Attention against an independent fp64 model of their rules
// (evict/rule_model.hpp): the kept positions must be equal after every call of a
// chunked prefill and decode, per layer with 2 KV heads.
#include <algorithm>
#include <cmath>
#include <complex>
#include <numbers>

#include "evict/rule_model.hpp"
#include <gtest/gtest.h>

#include "mnemo/evict/expected_attention.hpp"
#include "mnemo/evict/key_diff.hpp"
#include "mnemo/evict/q_hitter.hpp"

namespace {

using namespace evict_test;
namespace ev = mnemo::evict;

const float* key_of(const synthetic& s, pos_t p, std::size_t h) {
  return &s.k[(static_cast<std::size_t>(p) * s.n_head_kv + h) * s.d];
}

TEST(EvictScoreRules, KeyDiffMeanKeyCosine) {
  const synthetic s = data(110, 11);
  for (std::size_t chunk : {1u, 8u}) {
    ev::key_diff p;
    p.evict_chunk = chunk;
    ref_rule r;
    r.chunk = chunk;
    r.rows = [](std::size_t) { return 0; };
    r.insert = [](cell& c, const synthetic&) { c.st = {0.0}; };
    r.observe = [](std::vector<cell>&, const call_view&) {};
    // score = -sum over KV heads of cos(k_j, mean of the unit keys the lane holds).
    r.rescore = [](std::vector<cell>& cs, const synthetic& sy) {
      const std::size_t d = sy.d;
      for (cell& c : cs) c.st[0] = 0.0;
      for (std::size_t h = 0; h < sy.n_head_kv; ++h) {
        std::vector<double> a(d, 0.0);
        for (const cell& c : cs) {
          const float* k = key_of(sy, c.pos, h);
          double n = 0.0;
          for (std::size_t i = 0; i < d; ++i) n += double(k[i]) * k[i];
          for (std::size_t i = 0; i < d; ++i) a[i] += k[i] / std::sqrt(n);
        }
        double an = 0.0;
        for (double x : a) an += x * x;
        for (cell& c : cs) {
          const float* k = key_of(sy, c.pos, h);
          double dot = 0.0, n = 0.0;
          for (std::size_t i = 0; i < d; ++i) {
            dot += k[i] * a[i];
            n += double(k[i]) * k[i];
          }
          c.st[0] -= dot / std::sqrt(n * an);
        }
      }
    };
    r.score = [](const cell& c, pos_t) { return c.st[0]; };
    // Not budget 1: two unit keys have equal cosines with their mean (an exact tie
    // that rounding breaks either way).
    for (std::size_t b : {3u, 9u, 30u}) {
      SCOPED_TRACE(testing::Message() << "evict_chunk " << chunk);
      compare(s, r, p, b, 40, 10, "key_diff");
    }
  }
}

double quant_error(const float* x, std::size_t n, unsigned bits) {
  double amax = 0.0;
  for (std::size_t i = 0; i < n; ++i) amax = std::max(amax, std::fabs(double(x[i])));
  if (amax == 0.0) return 0.0;
  const double qmax = double((1u << (bits - 1)) - 1u), err_scale = amax / qmax;
  double e = 0.0;
  for (std::size_t i = 0; i < n; ++i) {
    const double r = x[i] - std::nearbyint(x[i] * qmax / amax) * err_scale;
    e += r * r;
  }
  return std::sqrt(e);
}

TEST(EvictScoreRules, QHitterMassAndQuantisationError) {
  const synthetic s = data(100, 12);
  for (unsigned bits : {2u, 4u}) {
    ev::q_hitter p;
    p.recent = 3;
    p.bits = bits;
    p.n_head_kv = s.n_head_kv;
    p.d_k = p.d_v = s.d;
    ref_rule r;
    r.recent = 3;
    r.rows = [](std::size_t n) { return n; };
    // st = {S, e}; the score min-max normalises both over the cells held now.
    r.insert = [&](cell& c, const synthetic& sy) {
      double e = 0.0;
      for (std::size_t h = 0; h < sy.n_head_kv; ++h) {
        const std::size_t off = (static_cast<std::size_t>(c.pos) * sy.n_head_kv + h) * sy.d;
        e += quant_error(&sy.k[off], sy.d, bits) + quant_error(&sy.v[off], sy.d, bits);
      }
      c.st = {0.0, e, 0.0};
    };
    r.observe = [](std::vector<cell>& cs, const call_view& cv) {
      for (std::size_t c = 0; c < cs.size(); ++c) cs[c].st[0] += mass_of(cv, c);
      double slo = INFINITY, shi = -INFINITY, elo = INFINITY, ehi = -INFINITY;
      for (const cell& c : cs) {
        slo = std::min(slo, c.st[0]);
        shi = std::max(shi, c.st[0]);
        elo = std::min(elo, c.st[1]);
        ehi = std::max(ehi, c.st[1]);
      }
      for (cell& c : cs) {
        const double ms = shi > slo ? (c.st[0] - slo) / (shi - slo) : 0.0;
        const double me = ehi > elo ? (c.st[1] - elo) / (ehi - elo) : 0.0;
        c.st[2] = 0.5 * ms - 0.25 * me + 0.5;
      }
    };
    r.score = [](const cell& c, pos_t) { return c.st[2]; };
    for (std::size_t b : {4u, 20u}) {
      SCOPED_TRACE(testing::Message() << "bits " << bits);
      compare(s, r, p, b, 40, 8, "q_hitter");
    }
  }
}

/// Pair c of x (normal layout: channels 2c, 2c + 1) rotated by the angle a(c).
template <class Angle>
std::vector<double> rotated(std::vector<double> x, Angle a) {
  for (std::size_t c = 0; c < x.size() / 2; ++c) {
    const double t = a(c), x0 = x[2 * c], x1 = x[2 * c + 1];
    x[2 * c] = std::cos(t) * x0 - std::sin(t) * x1;
    x[2 * c + 1] = std::sin(t) * x0 + std::cos(t) * x1;
  }
  return x;
}

/// Expected Attention against the fp64 model, without RoPE or with RoPE (normal
/// layout, base 10000) on the given queries and keys. A negative epsilon drives scores
/// below 0, which count as 0 (not as a cell still unscored, which stays protected).
void expected_attention_rule(bool with_rope, float epsilon) {
  const synthetic s = data(100, 13);
  const std::size_t d = s.d, H = s.n_head, Hk = s.n_head_kv, g = H / Hk, window = 6, every = 8;
  const std::size_t n_future = 7;
  ev::expected_attention p;
  p.window = window;
  p.n_future = n_future;
  p.n_sink = 0;
  p.recent = 3;
  p.epsilon = epsilon;
  p.n_head_kv = Hk;
  p.d_v = d;
  p.group = g;
  p.rescore_every = every;
  p.rope.layout =
      with_rope ? mnemo::attention::rope_layout::normal : mnemo::attention::rope_layout::none;
  p.rope.n_rot = d;
  p.rope.freq_base = 10000.0f;
  auto freq = [&](std::size_t c) {
    return with_rope ? std::pow(10000.0, -2.0 * double(c) / double(d)) : 0.0;
  };
  for (std::size_t b : {5u, 24u}) {
    std::vector<pos_t> ring;     // the window's rows
    std::vector<double> lse(H);  // per query head, at the last full rescore
    std::size_t since = 0;
    bool scored = false;
    std::vector<pos_t> unscored;  // decoded since the last scoring
    ref_rule r;
    r.recent = 3;
    r.rows = [&](std::size_t) { return window; };
    r.insert = [&](cell& c, const synthetic& sy) {
      double vn = 0.0;
      for (std::size_t h = 0; h < Hk; ++h) {
        double q = 0.0;
        for (std::size_t i = 0; i < d; ++i) {
          const double x = sy.v[(static_cast<std::size_t>(c.pos) * Hk + h) * d + i];
          q += x * x;
        }
        vn += std::sqrt(q);
      }
      c.st = {0.0, vn / double(Hk)};
    };
    // Per query head: mean mu and covariance Sigma of the window's pre-RoPE queries;
    // Rbar the mean of the rotations by T + 1 .. T + n_future; z = k.(Rbar mu) / sqrt(d)
    // + k^T Rbar Sigma Rbar^T k / (2d); exp(z - L) averaged over heads, L the
    // log-sum-exp of z over the cells at the last full rescore; (that + epsilon) x ||v||.
    r.observe = [&](std::vector<cell>& cs, const call_view& cv) {
      for (pos_t row : cv.row_pos) ring.push_back(row);
      if (ring.size() > window)
        ring.erase(ring.begin(), ring.end() - static_cast<std::ptrdiff_t>(window));
      ++since;
      const bool prefill = cv.row_pos.size() > 1;  // a chunk gives min(window, n) > 1 rows
      const bool all = prefill || !scored || since >= every;
      // Between full rescores the decoded tokens are scored together once there are
      // `recent` (3) of them, against the window and Rbar of that call.
      if (!prefill) unscored.push_back(cv.pos_end - 1);
      if (!all && unscored.size() < 3) return;
      const std::size_t w = ring.size();
      const double T = double(cv.pos_end) - 1.0;
      // Rbar^T k = mean over tau of R(-(T + tau)) k.
      auto rbar_t = [&](const std::vector<double>& k) {
        std::vector<double> acc(d, 0.0);
        for (std::size_t tau = 1; tau <= n_future; ++tau) {
          const auto x = rotated(k, [&](std::size_t c) { return -(T + double(tau)) * freq(c); });
          for (std::size_t e = 0; e < d; ++e) acc[e] += x[e] / double(n_future);
        }
        return acc;
      };
      std::vector<std::vector<double>> z(H, std::vector<double>(cs.size(), 0.0));
      auto now = [&](const cell& c) {
        return all || std::find(unscored.begin(), unscored.end(), c.pos) != unscored.end();
      };
      for (std::size_t qh = 0; qh < H; ++qh) {
        std::vector<std::vector<double>> q;  // the window's pre-RoPE rows
        for (pos_t row : ring) {
          std::vector<double> x(d);
          for (std::size_t e = 0; e < d; ++e)
            x[e] = s.q[(static_cast<std::size_t>(row) * H + qh) * d + e];
          q.push_back(rotated(x, [&](std::size_t c) { return -double(row) * freq(c); }));
        }
        std::vector<double> mu(d, 0.0);
        for (const auto& x : q)
          for (std::size_t e = 0; e < d; ++e) mu[e] += x[e] / double(w);
        std::vector<std::vector<double>> cov(d, std::vector<double>(d, 0.0));
        for (const auto& x : q)
          for (std::size_t a = 0; a < d; ++a)
            for (std::size_t b2 = 0; b2 < d; ++b2)
              cov[a][b2] += (x[a] - mu[a]) * (x[b2] - mu[b2]) / double(w);
        for (std::size_t c = 0; c < cs.size(); ++c) {
          if (!now(cs[c])) continue;
          const float* kf = key_of(s, cs[c].pos, qh / g);
          const std::vector<double> k = rbar_t(std::vector<double>(kf, kf + d));
          double m = 0.0, quad = 0.0;
          for (std::size_t a = 0; a < d; ++a) {
            m += k[a] * mu[a];
            for (std::size_t b2 = 0; b2 < d; ++b2) quad += k[a] * cov[a][b2] * k[b2];
          }
          z[qh][c] = m / std::sqrt(double(d)) + quad / (2.0 * double(d));
        }
        if (all) {
          double mx = -INFINITY, tot = 0.0;
          for (double x : z[qh]) mx = std::max(mx, x);
          for (double x : z[qh]) tot += std::exp(x - mx);
          lse[qh] = mx + std::log(tot);
        }
      }
      for (std::size_t c = 0; c < cs.size(); ++c) {
        if (!now(cs[c])) continue;
        double a = 0.0;
        for (std::size_t qh = 0; qh < H; ++qh) a += std::exp(z[qh][c] - lse[qh]) / double(H);
        cs[c].st[0] = std::max(0.0, (a + double(epsilon)) * cs[c].st[1]);
      }
      if (all) {
        scored = true;
        since = 0;
      }
      unscored.clear();
    };
    r.score = [](const cell& c, pos_t) { return c.st[0]; };
    compare(s, r, p, b, 60, 12, with_rope ? "expected_attention (rope)" : "expected_attention");
  }
}

// The window is the last `window` query rows of every call (prefill and decode); a
// prefill chunk, the first scoring and every rescore_every-th decode step rescore
// every cell and keep each head's log-sum-exp L; in between, the decoded tokens are
// scored against L, `recent` of them at a time.
TEST(EvictScoreRules, ExpectedAttentionQueryStatistics) {
  for (bool with_rope : {false, true}) expected_attention_rule(with_rope, 0.01f);
  expected_attention_rule(false, -0.5f);
}

TEST(EvictScoreRules, ExpectedAttentionMeanRotationIsTheAverageOfRotations) {
  // The closed form against the direct sum of e^{i (T + tau) w}, tau = 1..n.
  for (double w : {1.0, 0.3, 1e-3, 1e-9, 2.0 * std::numbers::pi})
    for (double T : {0.0, 17.0, 4000.0})
      for (std::size_t n : {1u, 7u, 512u}) {
        std::complex<double> want = 0.0;
        for (std::size_t t = 1; t <= n; ++t) want += std::polar(1.0, (T + double(t)) * w);
        want /= double(n);
        const auto got = ev::expected_attention::mean_rotation(w, T, n);
        EXPECT_NEAR(got.real(), want.real(), 1e-9) << "w " << w << " T " << T << " n " << n;
        EXPECT_NEAR(got.imag(), want.imag(), 1e-9) << "w " << w << " T " << T << " n " << n;
      }
}

}  // namespace
