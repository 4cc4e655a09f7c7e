// State save/load of the recurrent memory (docs/memory.md, with the rules of
// state_format.hpp): round trips whole and per sequence (T66, T67), an empty
// per-sequence state clears dest (T68), and every damaged or mismatched state is
// refused with the memory unchanged (T72, T73: all checks before any change).
#include "memory/recurrent_harness.hpp"

#include "mnemo/memory/recurrent/recurrent_state.hpp"

namespace mnemo_test {
namespace {

TEST(RecurrentState, T66WholeRoundTrip) {
  recurrent m = make_memory(3);
  ASSERT_TRUE(decode(m, 0, 0, 4).is_ok());
  ASSERT_TRUE(decode(m, 2, 0, 6, 1).is_ok());
  auto blob = memory::state_write(m);
  ASSERT_TRUE(blob.is_ok());
  recurrent n = make_memory(3);
  ASSERT_TRUE(decode(n, 1, 0, 2).is_ok());  // replaced by the load
  ASSERT_TRUE(memory::state_read(n, *blob).is_ok());
  for (seq_id s = 0; s < 3; ++s) {
    EXPECT_EQ(n.seq_pos_max(s), m.seq_pos_max(s)) << s;
    if (m.seq_pos_max(s) >= 0) {
      EXPECT_EQ(state_of(n, s), state_of(m, s)) << s;
    }
  }
  auto again = memory::state_write(n);
  ASSERT_TRUE(again.is_ok());
  EXPECT_EQ(*again, *blob);
}

TEST(RecurrentState, T67CrossSequenceRestore) {
  recurrent m = make_memory(2);
  ASSERT_TRUE(decode(m, 0, 0, 4).is_ok());
  auto blob = memory::state_write(m, 0);
  ASSERT_TRUE(blob.is_ok());
  m.clear(true);
  ASSERT_TRUE(memory::state_read(m, *blob, 1).is_ok());
  EXPECT_EQ(m.seq_pos_max(1), 4);
  EXPECT_EQ(m.seq_pos_max(0), -1);
  ASSERT_TRUE(decode(m, 1, 5, 5).is_ok());  // [num] the continuation equals the baseline
  EXPECT_EQ(state_of(m, 1), reference_state(5));
}

TEST(RecurrentState, T68EmptyStateClearsDest) {
  recurrent m = make_memory(4);
  auto empty = memory::state_write(m, 3);
  ASSERT_TRUE(empty.is_ok());
  ASSERT_TRUE(decode(m, 2, 0, 4).is_ok());
  ASSERT_TRUE(memory::state_read(m, *empty, 2).is_ok());
  EXPECT_EQ(m.seq_pos_max(2), -1);
}

TEST(RecurrentState, DamagedOrMismatchedStatesChangeNothing) {
  recurrent m = make_memory(2);
  ASSERT_TRUE(decode(m, 0, 0, 4).is_ok());
  auto whole = memory::state_write(m);
  auto one = memory::state_write(m, 0);
  ASSERT_TRUE(whole.is_ok() && one.is_ok());
  ASSERT_TRUE(decode(m, 1, 0, 2, 1).is_ok());
  const auto s0 = state_of(m, 0), s1 = state_of(m, 1);
  const auto unchanged = [&] {
    EXPECT_EQ(m.seq_pos_max(0), 4);
    EXPECT_EQ(m.seq_pos_max(1), 2);
    EXPECT_EQ(state_of(m, 0), s0);
    EXPECT_EQ(state_of(m, 1), s1);
  };
  // Every single flipped byte (header, ids, positions, data) is refused (T72 e-g).
  for (std::size_t i = 0; i < whole->size(); ++i) {
    auto bad = *whole;
    bad[i] ^= 0x10;
    EXPECT_FALSE(memory::state_read(m, bad).is_ok()) << "byte " << i;
  }
  unchanged();
  auto cut = *one;
  cut.pop_back();  // truncated by one byte (T72 e)
  EXPECT_EQ(memory::state_read(m, cut, 1).code(), status_code::corrupt_data);
  EXPECT_FALSE(memory::state_read(m, *whole, 1).is_ok());  // whole into a sequence
  EXPECT_FALSE(memory::state_read(m, *one).is_ok());       // a sequence into the whole
  unchanged();
  // Another shape (T72 d): more layers.
  auto cfg = small_config(2);
  cfg.n_layer = 3;
  auto other = recurrent::make(cfg);
  ASSERT_TRUE(other.is_ok());
  EXPECT_FALSE(memory::state_read(*other, *whole).is_ok());
  EXPECT_EQ(other->seq_pos_max(0), -1);
  // Fewer slots than the state's sequence ids (T73); a state of seq 0 alone fits.
  auto both = memory::state_write(m);
  ASSERT_TRUE(both.is_ok());
  recurrent small = make_memory(1);
  ASSERT_TRUE(decode(small, 0, 0, 0).is_ok());
  EXPECT_FALSE(memory::state_read(small, *both).is_ok());
  EXPECT_EQ(small.seq_pos_max(0), 0);
}

}  // namespace
}  // namespace mnemo_test
