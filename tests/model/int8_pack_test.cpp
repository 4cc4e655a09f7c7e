// The 8-bit one-token product's packed x (model::detail::int8_decode<avx512>::pack)
// against the layout its header documents, built here from dtype's q8_0 encoder of the
// same ISA: codes at the byte positions of the weight codes they multiply, each 32-bit
// lane's dx (0 for lanes of no block) and bias (-8 or -128 times the sum of the lane's
// codes), bit for bit; and the tile kernel's packed x (codes in order). Inputs cover
// every partial group and scale chunk, all-zero blocks, exact ties of the rounding,
// subnormal and huge scales.
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <type_traits>
#include <vector>

#include <gtest/gtest.h>

#include "mnemo/dtype/dtype.hpp"
#include "mnemo/model/matmul.hpp"
#include "mnemo/simd/cpu.hpp"
#include "mnemo/simd/simd.hpp"

namespace {

namespace dt = mnemo::dtype;
namespace md = mnemo::model::detail;
namespace simd = mnemo::simd;

#if defined(MNEMO_ARCH_X86_64)

constexpr std::uint64_t k_seed = 0x696e7438ull;

/// The documented layout for weights of type E: per group of G blocks (3 for q4_0, 2 for
/// q8_0), block j's codes at the bytes of its weight codes in the group's load (q4_0:
/// 18 j + 2 .. 18 j + 17, first 16 in lo and last 16 in hi; q8_0: 32 j .. 32 j + 31).
template <class E>
std::vector<md::int8_x_group> reference_pack(const std::vector<float>& x) {
  constexpr bool q4 = std::is_same_v<E, dt::block_q4_0>;
  constexpr std::size_t G = q4 ? 3 : 2;
  const std::size_t n_blocks = x.size() / 32;
  std::vector<dt::block_q8_0> q(n_blocks);
  dt::encode_row<simd::avx512>(x.data(), q.data(), x.size());
  std::vector<md::int8_x_group> out((n_blocks + G - 1) / G);
  for (std::size_t g = 0; g < out.size(); ++g) {
    md::int8_x_group& o = out[g];
    std::memset(&o, 0, sizeof o);
    int block_at[64];  // which block's code each byte holds, -1 for none
    for (int& b : block_at) b = -1;
    for (std::size_t j = 0; j < G && g * G + j < n_blocks; ++j) {
      const dt::block_q8_0& b = q[g * G + j];
      const std::size_t at = q4 ? 18 * j + 2 : 32 * j;
      for (std::size_t i = 0; i < (q4 ? 16 : 32); ++i) {
        o.lo[at + i] = b.qs[i];
        if (q4) o.hi[at + i] = b.qs[16 + i];
        block_at[at + i] = static_cast<int>(g * G + j);
      }
    }
    for (std::size_t l = 0; l < 16; ++l) {
      int block = -1, sum = 0;
      for (std::size_t i = 4 * l; i < 4 * l + 4; ++i) {
        if (block_at[i] >= 0) block = block_at[i];
        sum += o.lo[i] + o.hi[i];
      }
      o.dx[l] = block >= 0 ? q[static_cast<std::size_t>(block)].d.to_float() : 0.0f;
      o.bias[l] = (q4 ? -8 : -128) * sum;
    }
  }
  return out;
}

/// n_blocks blocks of x: random values of random magnitudes, with special blocks.
std::vector<float> test_x(std::size_t n_blocks, std::mt19937_64& rng) {
  std::normal_distribution<float> nd(0.0f, 1.0f);
  std::uniform_real_distribution<float> ue(-30.0f, 30.0f);
  std::vector<float> x(n_blocks * 32);
  for (std::size_t b = 0; b < n_blocks; ++b) {
    float* v = x.data() + b * 32;
    switch (b % 7) {
      case 3:  // all zeros: d = 0, id = 0
        for (std::size_t i = 0; i < 32; ++i) v[i] = 0.0f;
        break;
      case 5:  // d = 1 and codes exactly between two integers (half away from zero)
        for (std::size_t i = 0; i < 32; ++i)
          v[i] = static_cast<float>(static_cast<int>(i % 9) - 4) + (i % 2 ? 0.5f : -0.5f);
        v[0] = 127.0f;
        break;
      case 6:  // a subnormal d (its inverse overflows), then a huge one
        for (std::size_t i = 0; i < 32; ++i) v[i] = nd(rng) * (b % 2 ? 1e-40f : 1e30f);
        break;
      default: {
        const float scale = std::pow(10.0f, ue(rng) / 10.0f);
        for (std::size_t i = 0; i < 32; ++i) v[i] = nd(rng) * scale;
      }
    }
  }
  return x;
}

template <class E>
void check_pack(const char* name) {
  using K = md::int8_decode<simd::avx512>;
  // Groups of 3 (q4_0) or 2 (q8_0) blocks, scales 16 groups at a time: every partial
  // group and chunk boundary.
  for (std::size_t n_blocks : {1, 2, 3, 4, 5, 31, 32, 33, 47, 48, 49, 50, 97}) {
    const std::uint64_t seed = k_seed + n_blocks;
    std::mt19937_64 rng(seed);
    const std::vector<float> x = test_x(n_blocks, rng);
    const std::vector<md::int8_x_group> want = reference_pack<E>(x);
    std::vector<md::int8_x_group> got(want.size() + 1);
    std::memset(static_cast<void*>(got.data()), 0x5a, got.size() * sizeof(md::int8_x_group));
    K::pack<E>(x.data(), x.size(), got.data());
    for (std::size_t g = 0; g < want.size(); ++g) {
      const auto* a = reinterpret_cast<const unsigned char*>(&got[g]);
      const auto* b = reinterpret_cast<const unsigned char*>(&want[g]);
      for (std::size_t i = 0; i < sizeof(md::int8_x_group); ++i)
        ASSERT_EQ(a[i], b[i]) << name << ", seed " << seed << ", " << n_blocks << " blocks: group "
                              << g << " differs first at byte " << i
                              << " (lo 0-63, hi 64-127, dx 128-191, bias 192-255)";
    }
    const auto* past = reinterpret_cast<const unsigned char*>(&got[want.size()]);
    for (std::size_t i = 0; i < sizeof(md::int8_x_group); ++i)
      ASSERT_EQ(past[i], 0x5a) << name << ", " << n_blocks << " blocks: wrote past the last group";
  }
}

TEST(Int8Pack, MatchesTheEncoderLayout) {
  if (!simd::is_compiled<simd::avx512> || !simd::detail::cpu().avx512_int8)
    GTEST_SKIP() << "no AVX-512 VNNI + VBMI here";
  check_pack<dt::block_q4_0>("q4_0");
  if (::testing::Test::HasFatalFailure()) return;
  check_pack<dt::block_q8_0>("q8_0");
}

// The tile kernel's packed x (int8_tile_decode<avx512>::pack): per block the encoder's
// codes in order, its scale, and -8 times the sum of the codes, bit for bit.
TEST(Int8Pack, TileBlocksMatchTheEncoder) {
  if (!simd::is_compiled<simd::avx512> || !simd::detail::cpu().avx512_int8)
    GTEST_SKIP() << "no AVX-512 VNNI + VBMI here";
  for (std::size_t n_blocks : {1, 2, 31, 32, 47, 48, 49, 97}) {
    const std::uint64_t seed = k_seed + 1000 + n_blocks;
    std::mt19937_64 rng(seed);
    const std::vector<float> x = test_x(n_blocks, rng);
    std::vector<dt::block_q8_0> q(n_blocks);
    dt::encode_row<simd::avx512>(x.data(), q.data(), x.size());
    std::vector<md::int8_x_block> got(n_blocks + 1);
    std::memset(static_cast<void*>(got.data()), 0x5a, got.size() * sizeof(md::int8_x_block));
    md::int8_tile_decode<simd::avx512>::pack(x.data(), x.size(), got.data());
    for (std::size_t b = 0; b < n_blocks; ++b) {
      const std::string where = "seed " + std::to_string(seed) + ", " + std::to_string(n_blocks) +
                                " blocks, block " + std::to_string(b);
      std::int32_t sum = 0;
      for (std::size_t i = 0; i < 32; ++i) {
        ASSERT_EQ(got[b].codes[i], q[b].qs[i]) << where << ": first difference at code " << i;
        sum += q[b].qs[i];
      }
      const float dx = q[b].d.to_float();
      ASSERT_EQ(std::memcmp(&got[b].dx, &dx, sizeof dx), 0)
          << where << ": dx " << got[b].dx << " vs " << dx;
      ASSERT_EQ(got[b].bias, -8 * sum) << where;
    }
    const auto* past = reinterpret_cast<const unsigned char*>(&got[n_blocks]);
    for (std::size_t i = 0; i < sizeof(md::int8_x_block); ++i)
      ASSERT_EQ(past[i], 0x5a) << n_blocks << " blocks: wrote past the last block";
  }
}

#else

TEST(Int8Pack, MatchesTheEncoderLayout) { GTEST_SKIP() << "the 8-bit kernel is x86-64 only"; }
TEST(Int8Pack, TileBlocksMatchTheEncoder) { GTEST_SKIP() << "the 8-bit kernel is x86-64 only"; }

#endif

}  // namespace
