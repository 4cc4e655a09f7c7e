// behavioural tests, group J (T87, T88) and the [num] parts of T10, T13 and T91 at the
// memory level: keys are stored rotated by RoPE at their positions; after position
// edits and update() every cached key must equal its raw key rotated at the new
// position, for f32, f16 and q8_0 K caches and several RoPE configurations.
#include <cmath>

#include "memory/harness.hpp"
#include <gtest/gtest.h>

namespace mnemo::memtest {
namespace {

/// |got - want| <= abs + rel * (largest |want| of the head): f16 and q8_0 errors
/// scale with the head row's magnitude (a rotation mixes pairs), not per element.
template <class KE>
struct k_tolerance;
template <>
struct k_tolerance<float> {
  static constexpr float abs = 1e-5f, rel = 0.0f;
};
template <>
struct k_tolerance<dtype::f16> {
  static constexpr float abs = 0.0f, rel = 2e-3f;
};
template <>
struct k_tolerance<dtype::block_q8_0> {
  static constexpr float abs = 0.0f, rel = 3e-2f;  // two quantisations and a rotation
};

struct rope_case {
  const char* name;
  attention::rope_layout layout;
  std::size_t n_rot;
  float freq_base, freq_scale;
};
constexpr rope_case k_ropes[] = {
    {"normal, full head", attention::rope_layout::normal, 64, 10000.0f, 1.0f},
    {"neox, half head, base 1e6, scale 0.5", attention::rope_layout::neox, 32, 1e6f, 0.5f},
    {"normal, 16 dims, base 500000", attention::rope_layout::normal, 16, 500000.0f, 1.0f},
};

cache_options options_for(const rope_case& r) {
  cache_options o;
  o.shape = {2, 2, 64, 32};
  o.rope.layout = r.layout;
  o.rope.n_rot = r.n_rot;
  o.rope.freq_base = r.freq_base;
  o.rope.freq_scale = r.freq_scale;
  return o;
}

/// Every cached key of s matches the raw key of old_pos(cell, new pos) rotated at
/// its new position.
template <class C, class OldPos>
void expect_keys_at_new_positions(const C& c, seq_id s, OldPos old_pos) {
  using tol = k_tolerance<typename C::k_element>;
  const auto& sh = c.config().shape;
  for (std::size_t i : cells_of(c, s)) {
    const pos_t p = c.cells().pos(i);
    for (std::size_t l = 0; l < sh.n_layer; ++l) {
      const auto want = rotated_k(c.config(), l, s, old_pos(i, p), p);
      const auto got = cached_k(c, l, i);
      for (std::size_t h = 0; h < sh.n_head_kv; ++h) {
        float mag = 0;
        for (std::size_t e = 0; e < sh.d_k; ++e)
          mag = std::max(mag, std::fabs(want[h * sh.d_k + e]));
        for (std::size_t e = h * sh.d_k; e < (h + 1) * sh.d_k; ++e)
          ASSERT_LE(std::fabs(got[e] - want[e]), tol::abs + tol::rel * mag)
              << "cell " << i << " layer " << l << " head " << h << " element " << e - h * sh.d_k
              << ": new pos " << p << ", old pos " << old_pos(i, p) << ", got " << got[e]
              << ", want " << want[e];
      }
    }
  }
}

template <class KE>
class FullCacheKShift : public traced_test {};
using k_types = ::testing::Types<float, dtype::f16, dtype::block_q8_0>;
TYPED_TEST_SUITE(FullCacheKShift, k_types, element_name);

// T87 (f16 K) and T88 (q8_0 K): dec(0, 0..15), seq_rm(0, 4, 8), seq_add(0, 8, -1, -4);
// the reference decoded t0..t3, t8..t15 at positions 0..11.
TYPED_TEST(FullCacheKShift, T87T88ContextShift) {
  for (const auto& r : k_ropes) {
    SCOPED_TRACE(r.name);
    auto c = make_cache<TypeParam, dtype::f16>(32, 1, options_for(r));
    decode_options o;
    o.rope_keys = true;
    ASSERT_EQ(dec(c, 0, 0, 15, o), k_ok);
    expect_keys_at_new_positions(c, 0, [](std::size_t, pos_t p) { return p; });  // the write
    const auto v_before = raw_bytes(c, 1);
    const auto k_before = raw_bytes(c, 0);
    ASSERT_TRUE(c.seq_rm(0, 4, 8).is_ok());
    ASSERT_TRUE(c.seq_add(0, 8, -1, -4).is_ok());
    ASSERT_TRUE(c.update().is_ok());
    ASSERT_EQ(positions(c, 0), range(0, 11));
    expect_keys_at_new_positions(c, 0, [](std::size_t, pos_t p) { return p < 4 ? p : p + 4; });
    EXPECT_TRUE(raw_bytes(c, 1) == v_before) << "a K-shift must not touch V";
    // Unshifted cells keep their bytes exactly.
    const std::size_t row = c.storage().k_row_bytes();
    EXPECT_TRUE(std::equal(k_before.begin(), k_before.begin() + 4 * row, raw_bytes(c, 0).begin()));
    // The next token continues at 12 with the other keys.
    ASSERT_EQ(dec(c, 0, 12, 12, o), k_ok);
    expect_keys_at_new_positions(c, 0, [](std::size_t, pos_t p) {
      return p < 4 ? p : p == 12 ? 12 : p + 4;
    });
  }
}

// T13 [num]: after seq_div(0, 0, 8, 2) and the K-shift, the key of old pos 5 equals
// RoPE(raw key, 2) (D-1: llama.cpp rotates the other way).
TYPED_TEST(FullCacheKShift, T13DivideRotatesKeysToNewPositions) {
  for (const auto& r : k_ropes) {
    SCOPED_TRACE(r.name);
    auto c = make_cache<TypeParam, dtype::f16>(16, 1, options_for(r));
    decode_options o;
    o.rope_keys = true;
    ASSERT_EQ(dec(c, 0, 0, 7, o), k_ok);
    ASSERT_TRUE(c.seq_div(0, 0, 8, 2).is_ok());
    ASSERT_TRUE(c.update().is_ok());
    // Cell i held pos i (so old pos 5 is cell 5, now at pos 2).
    ASSERT_EQ(c.cells().pos(5), 2);
    expect_keys_at_new_positions(c, 0, [](std::size_t i, pos_t) { return static_cast<pos_t>(i); });
  }
}

// T10 [num] and repeated shifts: two seq_add before one update() rotate by the sum;
// two updates in a row rotate by each step. Either way keys land at the final position.
TYPED_TEST(FullCacheKShift, T10RepeatedShiftsCompose) {
  const auto& r = k_ropes[0];
  auto c = make_cache<TypeParam, dtype::f16>(16, 1, options_for(r));
  decode_options o;
  o.rope_keys = true;
  ASSERT_EQ(dec(c, 0, 0, 9, o), k_ok);
  ASSERT_TRUE(c.seq_rm(0, 2, 5).is_ok());
  ASSERT_TRUE(c.seq_add(0, 5, -1, -1).is_ok());
  ASSERT_TRUE(c.seq_add(0, 4, -1, -2).is_ok());  // 5..9 -> 4..8 -> 2..6
  ASSERT_EQ(dec(c, 0, 7, 7, o), k_ok);           // update() runs inside the decode
  ASSERT_TRUE(c.seq_add(0, 2, -1, 5).is_ok());   // 2..6 -> 7..11, the new 7 -> 12
  ASSERT_TRUE(c.seq_add(0, 7, 7, 100).is_ok());  // empty range [7, 7): nothing
  ASSERT_TRUE(c.update().is_ok());
  // Old positions: 0, 1 stay; 7..11 came from 5..9; pos 12 came from the token at 7.
  ASSERT_EQ(positions(c, 0), (std::vector<pos_t>{0, 1, 7, 8, 9, 10, 11, 12}));
  expect_keys_at_new_positions(c, 0, [](std::size_t, pos_t p) {
    return p < 2 ? p : p == 12 ? 7 : p - 2;
  });
}

// T91 [num]: the copy-on-write copies rotate; seq 1's shared originals do not.
TYPED_TEST(FullCacheKShift, T91SharedKeysStayPut) {
  const auto& r = k_ropes[1];
  auto c = make_cache<TypeParam, dtype::f16>(16, 2, options_for(r));
  decode_options o;
  o.rope_keys = true;
  ASSERT_EQ(dec(c, 0, 0, 9, o), k_ok);
  ASSERT_TRUE(c.seq_cp(0, 1, -1, -1).is_ok());
  const auto k_before = raw_bytes(c, 0);
  ASSERT_TRUE(c.seq_add(0, 5, -1, 10).is_ok());
  ASSERT_TRUE(c.update().is_ok());
  const std::size_t row = c.storage().k_row_bytes();
  for (std::size_t l = 0; l < 2; ++l)
    EXPECT_EQ(std::memcmp(c.storage().k(l, 0), k_before.data() + l * c.size() * row, 10 * row), 0)
        << "layer " << l << ": seq 1's keys must not move";
  expect_keys_at_new_positions(c, 0, [](std::size_t, pos_t p) { return p < 5 ? p : p - 10; });
}

}  // namespace
}  // namespace mnemo::memtest
