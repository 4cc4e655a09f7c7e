// Robustness of state_read against damaged files: a state (whole and per sequence,
// of f16 and q8_0 caches) truncated at every offset, with every single bit flipped
// (sampled for a large state), or with hostile metadata under a valid checksum, is
// refused with a status and leaves the cache exactly as it was. Runs under ASan in
// the sanitizer preset, so the loops are sized to stay well under 20 s there.
#include <random>

#include "memory/harness.hpp"
#include <gtest/gtest.h>

namespace mnemo::memtest {
namespace {

using u8vec = std::vector<std::uint8_t>;

bool is_refusal(status_code c) {
  return c == status_code::corrupt_data || c == status_code::invalid_argument ||
         c == status_code::unsupported;
}

cache_options small_shape() {
  cache_options o;
  o.shape = {2, 1, 32, 32};
  return o;
}

/// The states under test: seq 0 = 0..3 (cells 0, 1 shared with seq 1), seq 1 = 0..1, 4.
template <class E>
memory::full_cache<E> source_cache(const cache_options& o) {
  auto c = make_cache<E>(8, 2, o);
  EXPECT_EQ(dec(c, 0, 0, 3), k_ok);
  EXPECT_TRUE(c.seq_cp(0, 1, 0, 2).is_ok());
  EXPECT_EQ(decode(c, {at(1, 2)}), k_ok);
  return c;
}

/// A different, non-empty target with a pending shift: any change would show.
template <class E>
memory::full_cache<E> target_cache(const cache_options& o) {
  auto c = make_cache<E>(8, 2, o);
  EXPECT_EQ(dec(c, 1, 0, 2), k_ok);
  EXPECT_EQ(dec(c, 0, 0, 1), k_ok);
  EXPECT_TRUE(c.seq_add(1, 1, -1, 3).is_ok());
  return c;
}

/// Reads `blob` into c (dest); "" when it was refused and c is unchanged.
template <class C>
std::string refused_unchanged(C& c, const snapshot& before, const u8vec& blob, seq_id dest) {
  const status st = memory::state_read(c, blob, dest);
  if (st.is_ok()) return "accepted";
  if (!is_refusal(st.code())) return "refused with an unexpected status: " + st.to_string();
  if (st.message().empty()) return "refused without a message";
  return first_difference(before, snap(c));
}

template <class E>
class StateCorruption : public traced_test {};
using state_types = ::testing::Types<dtype::f16, dtype::block_q8_0>;
TYPED_TEST_SUITE(StateCorruption, state_types, element_name);

TYPED_TEST(StateCorruption, TruncatedAtEveryOffsetIsRefused) {
  auto src = source_cache<TypeParam>(small_shape());
  auto c = target_cache<TypeParam>(small_shape());
  const auto before = snap(c);
  for (const seq_id s : {-1, 0, 1}) {
    const u8vec blob = state_of(src, s);
    const seq_id dest = s < 0 ? -1 : 1;
    for (std::size_t n = 0; n < blob.size(); ++n) {
      const std::string why =
          refused_unchanged(c, before, u8vec(blob.begin(), blob.begin() + n), dest);
      ASSERT_EQ(why, "") << "state of seq " << s << " (" << blob.size() << " bytes) cut to " << n;
    }
    u8vec longer = blob;
    longer.push_back(0);
    EXPECT_EQ(refused_unchanged(c, before, longer, dest), "") << "seq " << s << " plus one byte";
  }
  // The whole files are accepted, so the loop above could fail.
  for (const seq_id s : {0, 1}) EXPECT_TRUE(memory::state_read(c, state_of(src, s), s).is_ok());
  EXPECT_TRUE(memory::state_read(c, state_of(src)).is_ok());
  EXPECT_EQ(cell_metas(c), cell_metas(src));
}

TYPED_TEST(StateCorruption, EveryBitFlipIsRefused) {
  auto src = source_cache<TypeParam>(small_shape());
  auto c = target_cache<TypeParam>(small_shape());
  const auto before = snap(c);
  std::size_t bits = 0;
  for (const seq_id s : {-1, 0, 1}) {
    const u8vec blob = state_of(src, s);
    ASSERT_LT(blob.size(), 4096u) << "keep this test small enough to flip every bit";
    const seq_id dest = s < 0 ? -1 : 1;
    u8vec bad = blob;
    for (std::size_t i = 0; i < blob.size(); ++i) {
      for (int b = 0; b < 8; ++b, ++bits) {
        bad[i] ^= static_cast<std::uint8_t>(1u << b);
        const std::string why = refused_unchanged(c, before, bad, dest);
        bad[i] = blob[i];
        ASSERT_EQ(why, "") << "state of seq " << s << ", byte " << i << " bit " << b
                           << (i < k_header_bytes ? " (header)" : " (payload)");
      }
    }
    EXPECT_TRUE(bad == blob);
  }
  EXPECT_GT(bits, 3 * 8 * k_header_bytes);
}

// A larger state (~70 KB): 1000 bits sampled with a printed seed.
TEST(StateCorruptionLarge, SampledBitFlipsAreRefused) {
  const std::uint64_t seed = 0x5eedb17f11b5ull;
  SCOPED_TRACE(seed_trace(seed));
  cache_options o;
  o.shape = {4, 4, 64, 64};
  auto src = make_cache<dtype::block_q8_0>(40, 2, o);
  decode_options d;
  d.seed = seed;
  ASSERT_EQ(dec(src, 0, 0, 29, d), k_ok);
  ASSERT_TRUE(src.seq_cp(0, 1, 0, 10).is_ok());
  auto c = make_cache<dtype::block_q8_0>(40, 2, o);
  ASSERT_EQ(dec(c, 1, 0, 5, d), k_ok);
  const auto before = snap(c);
  const u8vec blob = state_of(src);
  ASSERT_GT(blob.size(), 60000u);
  std::mt19937_64 rng(seed);
  u8vec bad = blob;
  for (int k = 0; k < 1000; ++k) {
    // Half the samples in the header and cell metadata, where parsing happens.
    const std::size_t span = k % 2 ? blob.size() : k_header_bytes + 4 + 40 * 12;
    const std::size_t i = rng() % span;
    const int b = static_cast<int>(rng() % 8);
    bad[i] ^= static_cast<std::uint8_t>(1u << b);
    const std::string why = refused_unchanged(c, before, bad, -1);
    bad[i] = blob[i];
    ASSERT_EQ(why, "") << "sample " << k << ": byte " << i << " bit " << b;
  }
  EXPECT_TRUE(memory::state_read(c, blob).is_ok());
  EXPECT_EQ(cell_metas(c), cell_metas(src));
}

// A hostile file has a valid checksum: every metadata byte set to a few extreme
// values and resealed. The reader must refuse it with the cache unchanged, or accept
// it and leave a consistent cache (positions and owner lists are data, too).
TYPED_TEST(StateCorruption, HostileMetadataUnderValidChecksum) {
  auto src = source_cache<TypeParam>(small_shape());
  for (const seq_id s : {-1, 0, 1}) {
    const u8vec blob = state_of(src, s);
    const seq_id dest = s < 0 ? -1 : 1;
    const std::size_t n_cells = read_at<std::uint32_t>(blob, k_header_bytes);
    const std::size_t rows = blob.size() - k_header_bytes - 4;  // upper bound of metadata
    const std::size_t meta_end = k_header_bytes + 4 + std::min<std::size_t>(rows, n_cells * 8 + 32);
    for (std::size_t i = k_header_bytes; i < meta_end; ++i) {
      for (const std::uint8_t v : {std::uint8_t{0x00}, std::uint8_t{0x01}, std::uint8_t{0x7f},
                                   std::uint8_t{0x80}, std::uint8_t{0xff}}) {
        if (blob[i] == v) continue;
        u8vec bad = blob;
        bad[i] = v;
        reseal(bad);
        auto c = target_cache<TypeParam>(small_shape());
        const auto before = snap(c);
        const status st = memory::state_read(c, bad, dest);
        if (st.is_ok()) {
          ASSERT_EQ(check_invariants(c), "") << "seq " << s << ": byte " << i << " = " << int{v};
        } else {
          ASSERT_TRUE(is_refusal(st.code()) || st.code() == status_code::no_space)
              << "seq " << s << ": byte " << i << " = " << int{v} << ": " << st.to_string();
          ASSERT_EQ(first_difference(before, snap(c)), "") << "seq " << s << ": byte " << i;
        }
      }
    }
  }
}

}  // namespace
}  // namespace mnemo::memtest
