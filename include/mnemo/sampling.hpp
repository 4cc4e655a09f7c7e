// Picking the next token from a row of logits: greedy, or a draw after temperature,
// top-k and top-p (nucleus, Holtzman et al. 2020) filtering, from a seeded
// splitmix64, so a seed reproduces the same tokens on every platform.
//
//   MNEMO_ASSIGN_OR_RETURN(auto s, sampler::make({.temperature = 0.8f, .top_k = 40,
//                                                  .top_p = 0.95f, .seed = 42}));
//   token_id next = s.sample(ctx.logits_ith(-1));
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <span>
#include <utility>
#include <vector>

#include "mnemo/base/result.hpp"
#include "mnemo/base/rng.hpp"
#include "mnemo/batch/batch.hpp"

namespace mnemo {

/// The index of the largest logit (the first on ties); -1 for an empty row. NaNs
/// never win.
inline token_id sample_greedy(std::span<const float> logits) noexcept {
  token_id best = -1;
  float top = 0.0f;
  for (std::size_t i = 0; i < logits.size(); ++i)
    if (!std::isnan(logits[i]) && (best < 0 || logits[i] > top)) {
      best = static_cast<token_id>(i);
      top = logits[i];
    }
  return best;
}

struct sampler_params {
  float temperature = 1.0f;  // 0: greedy
  std::uint32_t top_k = 0;   // keep the k largest logits; 0 = all
  float top_p = 1.0f;        // keep the smallest most-likely set of mass >= top_p; 1 = all
  std::uint64_t seed = 0;
};

class sampler {
 public:
  static result<sampler> make(const sampler_params& p) {
    if (!(p.temperature >= 0.0f) || !(p.top_p > 0.0f && p.top_p <= 1.0f))
      return make_status(status_code::invalid_argument,
                         "sampler: temperature must be >= 0 and top_p in (0, 1] (got %g, %g)",
                         static_cast<double>(p.temperature), static_cast<double>(p.top_p));
    return sampler(p);
  }

  const sampler_params& params() const noexcept { return p_; }
  void reseed(std::uint64_t seed) noexcept { rng_.s = seed; }

  /// A token drawn from softmax(logits / temperature) restricted to the top-k and
  /// top-p set (ties broken by the smaller id); -1 for an empty row. Reuses its
  /// buffer: no allocation once warm.
  token_id sample(std::span<const float> logits) {
    if (logits.empty()) return -1;
    if (p_.temperature == 0.0f || p_.top_k == 1) return sample_greedy(logits);
    cand_.clear();
    for (std::size_t i = 0; i < logits.size(); ++i)
      if (!std::isnan(logits[i])) cand_.push_back({logits[i], static_cast<token_id>(i)});
    if (cand_.empty()) return -1;
    auto by_logit = [](const std::pair<float, token_id>& a, const std::pair<float, token_id>& b) {
      return a.first != b.first ? a.first > b.first : a.second < b.second;
    };
    std::size_t n = cand_.size();
    if (p_.top_k > 0 && p_.top_k < n) {
      std::partial_sort(cand_.begin(), cand_.begin() + p_.top_k, cand_.end(), by_logit);
      n = p_.top_k;
    } else if (p_.top_p < 1.0f) {
      std::sort(cand_.begin(), cand_.end(), by_logit);
    }
    // Softmax over the kept candidates, in double so the cut below is stable.
    float top = cand_[0].first;
    for (std::size_t i = 1; i < n; ++i) top = std::max(top, cand_[i].first);
    double sum = 0.0;
    for (std::size_t i = 0; i < n; ++i) {
      cand_[i].first = static_cast<float>(std::exp((cand_[i].first - top) / p_.temperature));
      sum += cand_[i].first;
    }
    if (p_.top_p < 1.0f) {  // candidates are sorted here
      double mass = 0.0;
      std::size_t keep = 0;
      while (keep < n && mass < p_.top_p * sum) mass += cand_[keep++].first;
      n = std::max<std::size_t>(keep, 1);
      sum = mass > 0.0 ? mass : cand_[0].first;
    }
    const double u = static_cast<double>(rng_.uniform()) * sum;
    double acc = 0.0;
    for (std::size_t i = 0; i < n; ++i) {
      acc += cand_[i].first;
      if (u < acc) return cand_[i].second;
    }
    return cand_[n - 1].second;
  }

 private:
  explicit sampler(const sampler_params& p) : p_(p) { rng_.s = p.seed; }

  sampler_params p_;
  splitmix64 rng_;
  std::vector<std::pair<float, token_id>> cand_;
};

}  // namespace mnemo
