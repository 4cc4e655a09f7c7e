// Masks from cell metadata: the inequalities of docs/attention.md case by case
// (tests T24-T27), through attention::keeps().
#include <set>

#include <gtest/gtest.h>

#include "mnemo/attention/params.hpp"

namespace {

using namespace mnemo;
using attention::window_kind;

std::set<pos_t> kept_positions(const attention::params& p, pos_t query, pos_t n_cells) {
  std::set<pos_t> kept;
  for (pos_t k = 0; k < n_cells; ++k)
    if (attention::keeps(p, query, 0, k, nullptr)) kept.insert(k);
  return kept;
}

TEST(Mask, T24StandardWindow) {
  attention::params p;
  p.window = window_kind::standard;
  p.n_swa = 3;
  EXPECT_EQ(kept_positions(p, 10, 11), (std::set<pos_t>{8, 9, 10}));
}

TEST(Mask, T25ChunkedWindow) {
  attention::params p;
  p.window = window_kind::chunked;
  p.n_swa = 4;
  EXPECT_EQ(kept_positions(p, 10, 11), (std::set<pos_t>{8, 9, 10}));
  EXPECT_EQ(kept_positions(p, 7, 11), (std::set<pos_t>{4, 5, 6, 7}));
  EXPECT_EQ(kept_positions(p, 8, 11), (std::set<pos_t>{8}));
}

TEST(Mask, T26SymmetricWindowNonCausal) {
  attention::params p;
  p.causal = false;
  p.window = window_kind::symmetric;
  p.n_swa = 4;
  EXPECT_EQ(kept_positions(p, 5, 11), (std::set<pos_t>{3, 4, 5, 6, 7}));
}

TEST(Mask, T27NonCausalSeesTheWholeSequenceButNoOtherSequence) {
  attention::params p;
  p.causal = false;
  EXPECT_EQ(kept_positions(p, 2, 5), (std::set<pos_t>{0, 1, 2, 3, 4}));
  const seq_set other = seq_set::of(1);
  EXPECT_FALSE(attention::keeps(p, 2, 0, 1, &other));
  EXPECT_TRUE(attention::keeps(p, 2, 1, 1, &other));
}

TEST(Mask, EmptyCellsAndFutureCellsAreMasked) {
  attention::params p;
  EXPECT_FALSE(attention::keeps(p, 5, 0, -1, nullptr));
  EXPECT_FALSE(attention::keeps(p, 5, 0, 6, nullptr));
  EXPECT_TRUE(attention::keeps(p, 5, 0, 5, nullptr));
}

TEST(Mask, WindowOfOneKeepsOnlyTheQueryPosition) {
  attention::params p;
  p.window = window_kind::standard;
  p.n_swa = 1;
  EXPECT_EQ(kept_positions(p, 6, 10), (std::set<pos_t>{6}));
}

}  // namespace
