// attention_state algebra: merge is associative and commutative up to rounding,
// empty states are identities, and the merged result equals one-pass softmax.
#include <cmath>
#include <random>

#include <gtest/gtest.h>

#include "mnemo/attention/state.hpp"

namespace {

using mnemo::attention::attention_state;

attention_state from_rows(const std::vector<float>& logits,
                          const std::vector<std::vector<float>>& v) {
  attention_state s(v.empty() ? 0 : v[0].size());
  for (std::size_t i = 0; i < logits.size(); ++i) s.add(logits[i], v[i]);
  return s;
}

TEST(AttentionState, EmptyIsIdentity) {
  attention_state a(3), e(3);
  a.add(0.5f, std::vector<float>{1, 2, 3});
  attention_state b = a;
  b.merge(e);
  EXPECT_EQ(b.output(), a.output());
  attention_state c = e;
  c.merge(a);
  EXPECT_EQ(c.output(), a.output());
  attention_state d = e;
  d.merge(e);
  EXPECT_TRUE(d.empty());
  EXPECT_EQ(d.output(), std::vector<float>(3, 0.0f));
  EXPECT_TRUE(std::isinf(d.lse()));
}

TEST(AttentionState, MergeMatchesOnePassSoftmaxInAnySplit) {
  const std::uint32_t seed = 42;
  std::mt19937 rng(seed);
  std::normal_distribution<float> n(0.0f, 4.0f);
  const std::size_t cells = 37, d = 5;
  std::vector<float> logits(cells);
  std::vector<std::vector<float>> v(cells, std::vector<float>(d));
  for (auto& x : logits) x = n(rng);
  for (auto& row : v)
    for (auto& x : row) x = n(rng);
  // One-pass reference in double.
  double m = -INFINITY, l = 0;
  for (float x : logits) m = std::max<double>(m, x);
  std::vector<double> o(d, 0.0);
  for (std::size_t i = 0; i < cells; ++i) {
    const double w = std::exp(logits[i] - m);
    l += w;
    for (std::size_t k = 0; k < d; ++k) o[k] += w * v[i][k];
  }
  for (std::size_t split = 1; split < cells; split += 5) {
    std::vector<float> la(logits.begin(), logits.begin() + split),
        lb(logits.begin() + split, logits.end());
    std::vector<std::vector<float>> va(v.begin(), v.begin() + split),
        vb(v.begin() + split, v.end());
    attention_state ab = from_rows(la, va);
    ab.merge(from_rows(lb, vb));
    attention_state ba = from_rows(lb, vb);
    ba.merge(from_rows(la, va));
    const auto oab = ab.output(), oba = ba.output();
    for (std::size_t k = 0; k < d; ++k) {
      ASSERT_NEAR(oab[k], o[k] / l, 1e-5)
          << "seed " << seed << " split " << split << " element " << k;
      ASSERT_NEAR(oba[k], o[k] / l, 1e-5)
          << "seed " << seed << " split " << split << " element " << k;
    }
    ASSERT_NEAR(ab.lse(), m + std::log(l), 1e-4) << "split " << split;
  }
}

}  // namespace
