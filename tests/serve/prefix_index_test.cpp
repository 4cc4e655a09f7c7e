// serve::prefix_index against a brute-force longest common prefix: random holders and
// prompts over a 4-token alphabet (so prefixes are often shared), several block sizes,
// appends and erases; plus ties to the most recent holder and least-recent selection.
#include <cstdint>
#include <map>
#include <vector>

#include <gtest/gtest.h>

#include "mnemo/base/rng.hpp"
#include "mnemo/serve/prefix_index.hpp"

namespace {

using namespace mnemo;
using mnemo::serve::prefix_index;

std::size_t common(const std::vector<token_id>& a, const std::vector<token_id>& b) {
  std::size_t n = 0;
  while (n < a.size() && n < b.size() && a[n] == b[n]) ++n;
  return n;
}

std::vector<token_id> draw(splitmix64& g, std::size_t n) {
  std::vector<token_id> t(n);
  for (auto& x : t) x = static_cast<token_id>(g.range(0, 1));
  return t;
}

TEST(PrefixIndex, FindsTheLongestCommonPrefixLikeBruteForce) {
  for (std::uint32_t block : {1u, 3u, 8u}) {
    for (std::uint64_t seed = 1; seed <= 40; ++seed) {
      splitmix64 g{seed};
      prefix_index idx(block);
      std::map<seq_id, std::vector<token_id>> truth;
      for (int op = 0; op < 30; ++op) {
        const seq_id h = static_cast<seq_id>(g.range(0, 5));
        const int kind = static_cast<int>(g.range(0, 2));
        if (kind == 0) {
          truth[h] = draw(g, static_cast<std::size_t>(g.range(0, 40)));
          idx.assign(h, truth[h], static_cast<std::uint64_t>(op));
        } else if (kind == 1 && truth.contains(h)) {
          const std::vector<token_id> more = draw(g, static_cast<std::size_t>(g.range(0, 9)));
          truth[h].insert(truth[h].end(), more.begin(), more.end());
          idx.append(h, more);
        } else {
          truth.erase(h);
          idx.erase(h);
        }
        const std::vector<token_id> prompt = draw(g, static_cast<std::size_t>(g.range(0, 40)));
        const std::size_t cap = static_cast<std::size_t>(g.range(0, 40));
        std::size_t want = 0;
        for (const auto& [holder, toks] : truth)
          want = std::max(want, std::min(cap, common(toks, prompt)));
        const prefix_index::match m = idx.longest(prompt, cap);
        ASSERT_EQ(m.length, want) << "block " << block << " seed " << seed << " op " << op;
        if (m.length > 0) {
          ASSERT_TRUE(truth.contains(m.holder));
          ASSERT_GE(common(truth[m.holder], prompt), m.length);
        }
      }
    }
  }
}

TEST(PrefixIndex, TiesGoToTheMostRecentAndLeastRecentIsFound) {
  prefix_index idx(2);
  const std::vector<token_id> t = {1, 2, 3, 4};
  idx.assign(5, t, 10);
  idx.assign(6, t, 20);
  EXPECT_EQ(idx.longest(t, 4).holder, 6);
  idx.touch(5, 30);
  EXPECT_EQ(idx.longest(t, 4).holder, 5);
  EXPECT_EQ(idx.least_recent([](seq_id) { return true; }), 6);
  EXPECT_EQ(idx.least_recent([](seq_id h) { return h != 6; }), 5);
  EXPECT_EQ(idx.longest(t, 4, [](seq_id h) { return h == 6; }).holder, 6);
  EXPECT_EQ(idx.longest(t, 3).length, 3u);
  idx.erase(5);
  idx.erase(6);
  EXPECT_EQ(idx.longest(t, 4).length, 0u);
  EXPECT_EQ(idx.least_recent([](seq_id) { return true; }), -1);
}

}  // namespace
