// The hand-wired needle model (docs/eviction.md, "Quality harness"): one attention
// layer with explicit weights where the right answer is known, so a quality metric
// can tell policies apart (random-weight models cannot: their attention carries no
// information).
//
// Vocabulary: fillers 0..15, payloads 16..23, the question 24; d = 16 per head,
// 2 query heads on 2 KV heads, one-hot embeddings (so each weight matrix is a table
// of columns, one per token).
//  - Head 0, needle retrieval: a payload's key is e0, every other key a fixed random
//    unit vector orthogonal to e0; every query is `background` * e0 (the needle draws
//    some attention from every row, logit `background` against 0) and the question's
//    is `question` * e0; a payload's value is its one-hot, every other value 0.
//  - Head 1, recency: every query and key is the same unit vector rotated by RoPE at
//    the token's position (theta 10000, 8 pairs), so the logit is
//    recency/8 * sum_i cos(w_i (t - p)), largest for the newest tokens (RoPE's decay
//    with distance); a filler's value is its one-hot.
//  - Output: logit[16 + p] = alpha * o0[p] (the retrieved payload), logit[(i + 1) %
//    16] += beta * o1[i] (the filler after the recent ones).
// The prompt is a cycle of fillers with one payload (the needle) at `needle` and the
// question last. With the full cache the question row predicts the needle's payload;
// without the needle it predicts a filler. Decode continues greedily (full cache) and
// every policy is teacher-forced on that continuation.
#pragma once

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <vector>

#include "evict/harness.hpp"

#include "mnemo/evict/last_recent.hpp"

namespace evict_test {

struct needle_spec {
  std::size_t n_prompt = 512;  // including the question (the last prompt token)
  std::size_t n_decode = 16;   // rows measured: the question and 15 generated tokens
  double depth = 0.3;          // needle position / n_prompt
  float background = 3.0f;     // head-0 logit of the needle for every non-question row
  float question = 12.0f;      // head-0 logit of the needle for the question
  float recency = 10.0f;       // head-1 logit of a token on itself
  float alpha = 10.0f, beta = 4.0f;
  std::uint64_t seed = 1;
};

class needle_model {
 public:
  static constexpr std::size_t d = 16, n_fill = 16, n_payload = 8, n_vocab = 25;
  static constexpr token_id question_token = 24;

  explicit needle_model(const needle_spec& sp) : sp_(sp) {
    mnemo::splitmix64 g{sp.seed * 7 + 1};
    const float sq = std::sqrt(static_cast<float>(d));  // undoes the 1/sqrt(d) scale
    for (std::size_t t = 0; t < n_vocab; ++t) {
      const bool payload = t >= n_fill && t < n_fill + n_payload;
      // Head 0.
      float* k = &wk_[0][t * d];
      if (payload) {
        k[0] = 1.0f;
      } else {
        float n = 0.0f;
        for (std::size_t i = 1; i < d; ++i) {
          k[i] = static_cast<float>(g.normal());
          n += k[i] * k[i];
        }
        for (std::size_t i = 1; i < d; ++i) k[i] /= std::sqrt(n);
      }
      wq_[0][t * d] = (t == question_token ? sp.question : sp.background) * sq;
      if (payload) wv_[0][t * d + (t - n_fill)] = 1.0f;
      // Head 1: (1/sqrt(8), 0) in every pair, before rotation.
      for (std::size_t i = 0; i < d; i += 2) {
        wk_[1][t * d + i] = 1.0f / std::sqrt(8.0f);
        wq_[1][t * d + i] = sp.recency * sq / std::sqrt(8.0f);
      }
      if (t < n_fill) wv_[1][t * d + t] = 1.0f;
    }
  }

  const needle_spec& spec() const noexcept { return sp_; }
  pos_t needle_pos() const noexcept {
    return static_cast<pos_t>(sp_.depth * static_cast<double>(sp_.n_prompt - 1));
  }
  token_id payload() const noexcept { return static_cast<token_id>(n_fill + sp_.seed % n_payload); }

  /// The prompt: fillers in a cycle, the needle at needle_pos(), the question last.
  std::vector<token_id> prompt() const {
    std::vector<token_id> p(sp_.n_prompt);
    for (std::size_t t = 0; t < p.size(); ++t)
      p[t] = static_cast<token_id>((sp_.seed * 5 + t) % n_fill);
    p[static_cast<std::size_t>(needle_pos())] = payload();
    p.back() = question_token;
    return p;
  }

  /// q, k, v of token `tok` at position `pos`: [2, d] each (head 1 rotated).
  void qkv(token_id tok, pos_t pos, float* q, float* k, float* v) const noexcept {
    const auto t = static_cast<std::size_t>(tok);
    for (std::size_t h = 0; h < 2; ++h)
      for (std::size_t i = 0; i < d; ++i) {
        q[h * d + i] = wq_[h][t * d + i];
        k[h * d + i] = wk_[h][t * d + i];
        v[h * d + i] = wv_[h][t * d + i];
      }
    for (std::size_t i = 0; i < d / 2; ++i) {  // RoPE on head 1, pair (2i, 2i + 1)
      const double w = std::pow(10000.0, -static_cast<double>(i) / (d / 2)) * pos;
      const auto c = static_cast<float>(std::cos(w)), s = static_cast<float>(std::sin(w));
      for (float* x : {q + d, k + d}) {
        const float a = x[2 * i], b = x[2 * i + 1];
        x[2 * i] = a * c - b * s;
        x[2 * i + 1] = a * s + b * c;
      }
    }
  }

  /// Next-token logits from the attention output o: [2, d].
  std::array<double, n_vocab> logits(const float* o) const noexcept {
    std::array<double, n_vocab> l{};
    for (std::size_t p = 0; p < n_payload; ++p) l[n_fill + p] = sp_.alpha * o[p];
    for (std::size_t i = 0; i < n_fill; ++i) l[(i + 1) % n_fill] += sp_.beta * o[d + i];
    return l;
  }

  /// Q/K/V rows of a token sequence for run_synthetic (needle and decode rows set).
  synthetic rows(const std::vector<token_id>& toks) const {
    synthetic s;
    s.n_head = 2;
    s.n_head_kv = 2;
    s.d = d;
    s.n_tokens = toks.size();
    s.needle = needle_pos();
    s.n_question = sp_.n_decode;
    s.q.resize(toks.size() * 2 * d);
    s.k.resize(toks.size() * 2 * d);
    s.v.resize(toks.size() * 2 * d);
    for (std::size_t t = 0; t < toks.size(); ++t)
      qkv(toks[t], static_cast<pos_t>(t), &s.q[t * 2 * d], &s.k[t * 2 * d], &s.v[t * 2 * d]);
    return s;
  }

  /// The prompt and the full cache's greedy continuation (fp64 attention).
  std::vector<token_id> full_sequence() const {
    std::vector<token_id> toks = prompt();
    std::vector<float> q(2 * d), o(2 * d);
    while (toks.size() < sp_.n_prompt + sp_.n_decode - 1) {
      const synthetic s = rows(toks);
      const std::size_t t = toks.size() - 1;
      for (std::size_t h = 0; h < 2; ++h) {
        std::vector<double> l(t + 1);
        double mx = -1e300, z = 0.0;
        for (std::size_t j = 0; j <= t; ++j) {
          double dot = 0.0;
          for (std::size_t i = 0; i < d; ++i)
            dot += double(s.q[(t * 2 + h) * d + i]) * s.k[(j * 2 + h) * d + i];
          mx = std::max(mx, l[j] = dot * 0.25);
        }
        for (double& x : l) z += (x = std::exp(x - mx));
        for (std::size_t i = 0; i < d; ++i) {
          double acc = 0.0;
          for (std::size_t j = 0; j <= t; ++j) acc += l[j] / z * s.v[(j * 2 + h) * d + i];
          o[h * d + i] = static_cast<float>(acc);
        }
      }
      const auto lg = logits(o.data());
      toks.push_back(static_cast<token_id>(std::max_element(lg.begin(), lg.end()) - lg.begin()));
    }
    return toks;
  }

 private:
  needle_spec sp_;
  std::array<std::array<float, n_vocab * d>, 2> wq_{}, wk_{}, wv_{};
};

/// Quality metrics of one bounded run against the full cache over the decode rows.
struct quality {
  bool needle_kept = false;          // the needle was in the cache when the question came
  bool answer_right = false;         // the question row's top-1 is the needle's payload
  double top1_agreement = 0.0;       // fraction of decode rows with the full cache's top-1
  std::size_t first_divergence = 0;  // first decode row whose top-1 differs (n: none)
  double kl = 0.0;                   // mean KL(full || bounded) of the next-token distribution
};

/// The metrics of one table row summed over its seeds; print() writes the row's
/// averages after its leading cells ("| name | budget ").
struct quality_sum {
  int kept = 0, right = 0;
  double agree = 0, div = 0, kl = 0;
  void add(const quality& q) {
    kept += q.needle_kept;
    right += q.answer_right;
    agree += q.top1_agreement;
    div += static_cast<double>(q.first_divergence);
    kl += q.kl;
  }
  void print(std::size_t n_seeds) const {
    const double ns = static_cast<double>(n_seeds);
    std::printf("| %d/%zu | %d/%zu | %.2f | %.1f | %.4f |\n", kept, n_seeds, right, n_seeds,
                agree / ns, div / ns, kl / ns);
  }
};

/// The needle spec of the tables' seed `seed`: the needle at 0.1, 0.25 or 0.4 of the
/// prompt, outside every recent window.
inline needle_spec table_spec(std::size_t n_prompt, std::uint64_t seed) {
  needle_spec sp;
  sp.n_prompt = n_prompt;
  sp.seed = seed;
  sp.depth = 0.1 + 0.15 * static_cast<double>(seed % 3);
  return sp;
}

template <std::size_t V>
double kl_divergence(const std::array<double, V>& a, const std::array<double, V>& b) {
  const double ma = *std::max_element(a.begin(), a.end()),
               mb = *std::max_element(b.begin(), b.end());
  double za = 0.0, zb = 0.0, kl = 0.0;
  for (std::size_t i = 0; i < V; ++i) za += std::exp(a[i] - ma), zb += std::exp(b[i] - mb);
  for (std::size_t i = 0; i < V; ++i) {
    const double la = a[i] - ma - std::log(za), lb = b[i] - mb - std::log(zb);
    kl += std::exp(la) * (la - lb);
  }
  return kl;
}

/// Future attention mass of each position from the decode rows under the full cache,
/// [n_head_kv + 1, n_tokens]: per KV head, then the sum (the oracle's data).
inline std::vector<float> future_mass(const synthetic& s, std::size_t first_row) {
  const std::size_t n = s.n_tokens, g = s.n_head / s.n_head_kv;
  std::vector<float> m((s.n_head_kv + 1) * n, 0.0f);
  const double scale = 1.0 / std::sqrt(static_cast<double>(s.d));
  for (std::size_t t = first_row; t < n; ++t)
    for (std::size_t h = 0; h < s.n_head; ++h) {
      const std::size_t hk = h / g;
      std::vector<double> l(t + 1);
      double mx = -1e300, z = 0.0;
      for (std::size_t j = 0; j <= t; ++j) {
        double dot = 0.0;
        for (std::size_t i = 0; i < s.d; ++i)
          dot += double(s.q[(t * s.n_head + h) * s.d + i]) * s.k[(j * s.n_head_kv + hk) * s.d + i];
        mx = std::max(mx, l[j] = dot * scale);
      }
      for (double& x : l) z += (x = std::exp(x - mx));
      for (std::size_t j = 0; j <= t; ++j) {
        m[hk * n + j] += static_cast<float>(l[j] / z);
        m[s.n_head_kv * n + j] += static_cast<float>(l[j] / z);
      }
    }
  return m;
}

/// The metrics of decode-row outputs `out` ([n_decode, heads, d], as run_result::out)
/// against the full cache's; `needle_kept` as the run saw it at the question.
inline quality needle_quality(const needle_model& nm, const run_result& full,
                              const std::vector<float>& out, bool needle_kept, std::size_t row) {
  quality q;
  q.needle_kept = needle_kept;
  const std::size_t n = full.out.size() / row;
  q.first_divergence = n;
  std::size_t agree = 0;
  for (std::size_t i = 0; i < n; ++i) {
    const auto a = nm.logits(&full.out[i * row]), b = nm.logits(&out[i * row]);
    const auto ta = std::max_element(a.begin(), a.end()) - a.begin();
    const auto tb = std::max_element(b.begin(), b.end()) - b.begin();
    if (i == 0) q.answer_right = tb == nm.payload();
    agree += ta == tb;
    if (ta != tb && q.first_divergence == n) q.first_divergence = i;
    q.kl += kl_divergence(a, b);
  }
  q.top1_agreement = static_cast<double>(agree) / static_cast<double>(n);
  q.kl /= static_cast<double>(n);
  return q;
}

/// Runs `policy` at `budget` on the needle model's sequence (prefill in chunks of
/// 32, decode one by one) and measures it against the full cache.
template <class Policy>
quality measure_needle(const needle_model& nm, const synthetic& s, const run_result& full,
                       std::size_t budget, Policy policy, run_options o = {}) {
  const std::size_t n_prefill = nm.spec().n_prompt - 1, row = s.n_head * s.d;
  const run_result r = run_synthetic(s, n_prefill, 32, budget, policy, o);
  return needle_quality(nm, full, r.out, r.needle_kept_at_question, row);
}

/// One seed's needle model, its rows and the full cache's run over them (budget >=
/// context), which a table compares every policy and budget against.
struct needle_run {
  needle_model nm;
  synthetic s;
  run_result full;
};

/// The table's seeds 1..n_seeds at n_prompt, the full cache run once each.
inline std::vector<needle_run> needle_runs(std::size_t n_prompt, std::size_t n_seeds) {
  std::vector<needle_run> runs;
  for (std::uint64_t seed = 1; seed <= n_seeds; ++seed) {
    const needle_model nm(table_spec(n_prompt, seed));
    const synthetic s = nm.rows(nm.full_sequence());
    runs.push_back(
        {nm, s, run_synthetic(s, n_prompt - 1, 32, s.n_tokens, mnemo::evict::last_recent{})});
  }
  return runs;
}

}  // namespace evict_test
