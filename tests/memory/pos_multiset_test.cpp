// memory::pos_multiset against a brute-force std::map<position, count>: random
// inserts, erases (present and absent), range erases, range copies, monotone range
// transforms (+delta, /d) and clears, with every observable compared after each step
// (size, distinct, min, max, every entry, counts at probed positions) and the block
// count bounded by the distinct positions. Small block sizes make splits, merges,
// whole-block erasures and compaction happen every few steps.
#include <climits>
#include <cstdint>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "common/splitmix64.hpp"
#include <gtest/gtest.h>

#include "mnemo/memory/pos_multiset.hpp"

namespace {

using mnemo::pos_t;
using mnemo::memory::pos_count;
using mnemo::memory::pos_multiset;
using ref_t = std::map<pos_t, int>;

using rng = mnemo_test::splitmix64;

std::size_t total(const ref_t& r) {
  std::size_t n = 0;
  for (const auto& [p, c] : r) n += static_cast<std::size_t>(c);
  return n;
}

/// "" when m and r hold the same multiset, else the first difference.
std::string compare(const pos_multiset& m, const ref_t& r, std::size_t block) {
  std::ostringstream o;
  if (!m.well_formed()) return "the blocks are not well formed";
  const pos_t lo = r.empty() ? -1 : r.begin()->first, hi = r.empty() ? -1 : r.rbegin()->first;
  if (m.size() != total(r)) o << "size " << m.size() << ", reference " << total(r);
  if (m.distinct() != r.size()) o << "distinct " << m.distinct() << ", reference " << r.size();
  if (m.empty() != r.empty()) o << "empty " << m.empty() << ", reference " << r.empty();
  if (m.min() != lo || m.max() != hi)
    o << "min/max " << m.min() << "/" << m.max() << ", reference " << lo << "/" << hi;
  if (!o.str().empty()) return o.str();
  const std::vector<pos_count> got = m.entries();
  auto it = r.begin();
  for (std::size_t k = 0; k < got.size(); ++k, ++it) {
    if (it == r.end()) return "extra entry " + std::to_string(k);
    if (got[k].pos != it->first || got[k].count != it->second) {
      o << "entry " << k << ": (" << got[k].pos << ", " << got[k].count << "), reference ("
        << it->first << ", " << it->second << ")";
      return o.str();
    }
  }
  for (const auto& [p, c] : r)
    if (m.count(p) != static_cast<std::size_t>(c)) {
      o << "count(" << p << ") " << m.count(p) << ", reference " << c;
      return o.str();
    }
  // Memory stays O(distinct): thinned-out blocks are compacted.
  if (m.blocks() > 3 + 8 * m.distinct() / block)
    o << m.blocks() << " blocks for " << m.distinct() << " distinct positions";
  return o.str();
}

/// A position: mostly from a small window (repeats), sometimes just past the
/// maximum (the decode pattern) or anywhere up to INT32_MAX - 1 (sparse).
pos_t draw_pos(rng& g, const ref_t& r, pos_t window) {
  const auto k = g.range(0, 9);
  if (k < 6) return static_cast<pos_t>(g.range(0, window - 1));
  if (k < 9)
    return r.empty() ? 0
                     : static_cast<pos_t>(std::min<std::int64_t>(r.rbegin()->first + g.range(0, 2),
                                                                 INT32_MAX - 1));
  return static_cast<pos_t>(g.range(0, INT32_MAX - 1));
}

void ref_erase_range(ref_t& r, pos_t p0, pos_t p1) {
  if (p0 < p1) r.erase(r.lower_bound(p0), r.lower_bound(p1));
}

void run_seed(std::uint64_t seed, std::size_t block, int steps) {
  rng g{seed * 0x100000001b3ull + block};
  const pos_t window = static_cast<pos_t>(g.range(4, 3000));
  pos_multiset m[2] = {pos_multiset(block), pos_multiset(block)};
  ref_t r[2];
  for (int step = 0; step < steps; ++step) {
    const int a = static_cast<int>(g.range(0, 1)), b = static_cast<int>(g.range(0, 1));
    std::ostringstream op;
    const auto kind = g.range(0, 99);
    if (kind < 40) {
      const pos_t p = draw_pos(g, r[a], window);
      const auto n = static_cast<std::int32_t>(g.range(1, 3));
      op << "insert(" << p << ", " << n << ")";
      m[a].insert(p, n);
      r[a][p] += n;
    } else if (kind < 70) {
      // Mostly a present position (so that erasures keep up with inserts).
      pos_t p = draw_pos(g, r[a], window);
      if (!r[a].empty() && g.range(0, 3) != 0) {
        auto it = r[a].lower_bound(p);
        if (it == r[a].end()) it = r[a].begin();
        p = it->first;
      }
      op << "erase(" << p << ")";
      const auto it = r[a].find(p);
      const bool want = it != r[a].end();
      if (want && --it->second == 0) r[a].erase(it);
      const bool got = m[a].erase(p);
      ASSERT_EQ(got, want) << "seed " << seed << ", block " << block << ", step " << step << ": "
                           << op.str();
    } else if (kind < 80) {
      const pos_t p0 = draw_pos(g, r[a], window);
      const pos_t p1 =
          g.range(0, 4) == 0
              ? INT32_MAX
              : static_cast<pos_t>(std::min<std::int64_t>(p0 + g.range(-5, window / 2), INT32_MAX));
      op << "erase_range(" << p0 << ", " << p1 << ")";
      std::size_t want = 0;
      for (auto it = r[a].lower_bound(p0); p0 < p1 && it != r[a].lower_bound(p1); ++it)
        want += static_cast<std::size_t>(it->second);
      ref_erase_range(r[a], p0, p1);
      ASSERT_EQ(m[a].erase_range(p0, p1), want)
          << "seed " << seed << ", block " << block << ", step " << step << ": " << op.str();
    } else if (kind < 87) {
      const pos_t p0 = static_cast<pos_t>(g.range(0, window));
      const pos_t p1 = static_cast<pos_t>(p0 + g.range(0, window));
      op << "m" << a << ".insert_range(m" << b << ", " << p0 << ", " << p1 << ")";
      ref_t add;
      for (auto it = r[b].lower_bound(p0); it != r[b].end() && it->first < p1; ++it)
        add.insert(*it);
      for (const auto& [p, c] : add) r[a][p] += c;
      m[a].insert_range(m[b], p0, p1);
    } else if (kind < 97) {
      const pos_t p0 = static_cast<pos_t>(g.range(0, window));
      const pos_t p1 = g.range(0, 2) == 0 ? INT32_MAX : static_cast<pos_t>(p0 + g.range(0, window));
      ref_t moved;
      for (auto it = r[a].lower_bound(p0); it != r[a].end() && it->first < p1; ++it)
        moved.insert(*it);
      ref_erase_range(r[a], p0, p1);
      if (g.range(0, 1) == 0) {
        // + delta; the positions stay below 2^30 here, so the sum cannot overflow.
        const pos_t delta = static_cast<pos_t>(g.range(-window, window));
        op << "transform_range(" << p0 << ", " << p1 << ", +" << delta << ")";
        bool small = true;
        for (const auto& [p, c] : moved) small = small && p < (1 << 30);
        if (!small) {  // put them back: a sparse position would overflow
          for (const auto& [p, c] : moved) r[a][p] += c;
          continue;
        }
        for (const auto& [p, c] : moved)
          if (p + delta >= 0) r[a][p + delta] += c;
        m[a].transform_range(p0, p1, [delta](pos_t p) { return p + delta; });
      } else {
        const int d = static_cast<int>(g.range(1, 5));
        op << "transform_range(" << p0 << ", " << p1 << ", /" << d << ")";
        for (const auto& [p, c] : moved) r[a][p / d] += c;
        m[a].transform_range(p0, p1, [d](pos_t p) { return p / d; });
      }
    } else {
      op << "clear()";
      m[a].clear();
      r[a].clear();
    }
    for (int k = 0; k < 2; ++k) {
      const std::string e = compare(m[k], r[k], block);
      ASSERT_TRUE(e.empty()) << "seed " << seed << ", block " << block << ", step " << step << " ("
                             << op.str() << " on m" << a << "): m" << k << ": " << e;
    }
  }
}

TEST(PosMultiset, EmptyHasNoMinOrMax) {
  pos_multiset m;
  EXPECT_TRUE(m.empty());
  EXPECT_EQ(m.min(), -1);
  EXPECT_EQ(m.max(), -1);
  EXPECT_EQ(m.size(), 0u);
  EXPECT_FALSE(m.erase(3));
  EXPECT_EQ(m.erase_range(0, INT32_MAX), 0u);
  EXPECT_EQ(m.count(0), 0u);
}

TEST(PosMultiset, SparsePositionsCostOneEntryEach) {
  pos_multiset m;
  m.insert(0);
  m.insert(INT32_MAX - 1, 2);
  m.insert(1 << 20);
  EXPECT_EQ(m.min(), 0);
  EXPECT_EQ(m.max(), INT32_MAX - 1);
  EXPECT_EQ(m.size(), 4u);
  EXPECT_EQ(m.distinct(), 3u);
  EXPECT_EQ(m.blocks(), 1u);
  EXPECT_TRUE(m.erase(0));
  EXPECT_EQ(m.min(), 1 << 20);
  EXPECT_EQ(m.erase_range(1 << 20, INT32_MAX), 3u);
  EXPECT_TRUE(m.empty());
}

TEST(PosMultiset, TransformCombinesEqualImagesAndDropsNegatives) {
  pos_multiset m(2);
  for (pos_t p = 0; p < 10; ++p) m.insert(p);
  m.transform_range(4, 10, [](pos_t p) { return p / 4; });  // 4..7 -> 1, 8..9 -> 2
  EXPECT_EQ(m.count(1), 5u);
  EXPECT_EQ(m.count(2), 3u);
  EXPECT_EQ(m.max(), 3);
  m.transform_range(0, 3, [](pos_t p) { return p - 2; });  // 0, 1 (x5) dropped; 2 (x3) -> 0
  EXPECT_EQ(m.count(0), 3u);
  EXPECT_EQ(m.min(), 0);
  EXPECT_EQ(m.size(), 4u);
}

TEST(PosMultiset, ThinnedOutBlocksAreCompacted) {
  pos_multiset m(64);
  for (pos_t p = 0; p < 4096; ++p) m.insert(p);  // 64 full blocks
  EXPECT_EQ(m.blocks(), 64u);
  for (pos_t p = 0; p < 4096; ++p) {
    if (p % 32 == 0) continue;
    ASSERT_TRUE(m.erase(p)) << "position " << p;
  }
  // 128 positions left, 2 per block without compaction (64 blocks); with it the
  // average block holds >= 64 / 8 entries.
  EXPECT_EQ(m.distinct(), 128u);
  EXPECT_LE(m.blocks(), 2u + 8u * 128u / 64u);
  EXPECT_TRUE(m.well_formed());
  EXPECT_EQ(m.min(), 0);
  EXPECT_EQ(m.max(), 4064);
}

class PosMultisetRandom : public ::testing::TestWithParam<std::size_t> {};

TEST_P(PosMultisetRandom, MatchesStdMap) {
  const std::size_t block = GetParam();
  for (std::uint64_t seed = 1; seed <= 24; ++seed) {
    run_seed(seed, block, 4000);
    if (HasFatalFailure()) return;
  }
}

INSTANTIATE_TEST_SUITE_P(BlockSizes, PosMultisetRandom, ::testing::Values(2, 3, 8, 64, 512));

}  // namespace
