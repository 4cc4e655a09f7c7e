// KeyDiff and Q-Hitter against an independent fp64 model of their rules
// (evict/rule_model.hpp): the kept positions must be equal after every call of a
// chunked prefill and decode, per layer with 2 KV heads.
#include <algorithm>
#include <cmath>

#include "evict/rule_model.hpp"
#include <gtest/gtest.h>

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

}  // namespace
