// sampling.hpp: greedy picks, parameter checks, determinism per seed, the top-k /
// top-p candidate sets, and draw frequencies against an independent softmax.
#include <cmath>
#include <set>
#include <vector>

#include <gtest/gtest.h>

#include "mnemo/sampling.hpp"

namespace {

using namespace mnemo;

TEST(Sampling, GreedyPicksFirstLargest) {
  const std::vector<float> l = {0.5f, 2.0f, -1.0f, 2.0f, NAN};
  EXPECT_EQ(sample_greedy(l), 1);
  EXPECT_EQ(sample_greedy({}), -1);
  const std::vector<float> nan_first = {NAN, -3.0f};
  EXPECT_EQ(sample_greedy(nan_first), 1);
}

TEST(Sampling, RejectsBadParams) {
  EXPECT_FALSE(sampler::make({-1.0f, 0, 1.0f, 0}).is_ok());
  EXPECT_FALSE(sampler::make({1.0f, 0, 0.0f, 0}).is_ok());
  EXPECT_FALSE(sampler::make({1.0f, 0, 1.5f, 0}).is_ok());
  EXPECT_TRUE(sampler::make({0.0f, 0, 1.0f, 0}).is_ok());
}

TEST(Sampling, ZeroTemperatureAndTopOneAreGreedy) {
  const std::vector<float> l = {0.1f, 0.3f, 3.0f, 0.2f};
  auto a = sampler::make({0.0f, 0, 1.0f, 1});
  auto b = sampler::make({1.5f, 1, 1.0f, 2});
  for (int i = 0; i < 20; ++i) {
    EXPECT_EQ(a->sample(l), 2);
    EXPECT_EQ(b->sample(l), 2);
  }
}

TEST(Sampling, SameSeedSameTokens) {
  std::vector<float> l(50);
  for (std::size_t i = 0; i < l.size(); ++i) l[i] = std::sin(static_cast<float>(i));
  auto a = sampler::make({1.0f, 0, 1.0f, 42});
  auto b = sampler::make({1.0f, 0, 1.0f, 42});
  auto c = sampler::make({1.0f, 0, 1.0f, 43});
  int differ = 0;
  for (int i = 0; i < 100; ++i) {
    const token_id x = a->sample(l);
    EXPECT_EQ(x, b->sample(l)) << "draw " << i << ", seed 42";
    differ += x != c->sample(l);
  }
  EXPECT_GT(differ, 0) << "seeds 42 and 43 drew the same 100 tokens";
}

TEST(Sampling, TopKAndTopPRestrictCandidates) {
  // Probabilities 0.5, 0.3, 0.15, 0.05 at temperature 1.
  const std::vector<float> l = {std::log(0.15f), std::log(0.5f), std::log(0.05f), std::log(0.3f)};
  auto k2 = sampler::make({1.0f, 2, 1.0f, 3});
  auto p7 = sampler::make({1.0f, 0, 0.7f, 4});  // 0.5 + 0.3 >= 0.7: {1, 3}
  std::set<token_id> seen_k, seen_p;
  for (int i = 0; i < 2000; ++i) {
    seen_k.insert(k2->sample(l));
    seen_p.insert(p7->sample(l));
  }
  EXPECT_EQ(seen_k, (std::set<token_id>{1, 3}));
  EXPECT_EQ(seen_p, (std::set<token_id>{1, 3}));
}

TEST(Sampling, FrequenciesFollowSoftmax) {
  const std::vector<float> l = {1.0f, 0.0f, 2.0f, -1.0f, 0.5f};
  const float temperature = 0.7f;
  std::vector<double> p(l.size());
  double z = 0;
  for (std::size_t i = 0; i < l.size(); ++i) z += p[i] = std::exp(l[i] / temperature);
  auto s = sampler::make({temperature, 0, 1.0f, 2026});
  const int n = 40000;
  std::vector<int> count(l.size());
  for (int i = 0; i < n; ++i) ++count[s->sample(l)];
  for (std::size_t i = 0; i < l.size(); ++i)
    EXPECT_NEAR(count[i] / static_cast<double>(n), p[i] / z, 0.01)
        << "token " << i << ", seed 2026";
}

}  // namespace
