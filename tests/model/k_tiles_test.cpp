// k-quant tiles (model/q2_K_tiles.hpp .. q6_K_tiles.hpp), typed over q2_K .. q6_K: the
// interleaved layout byte for byte against its documented formula, the store giving the
// weights their tiles, and the one-token product on the tiles (the AVX-512 VNNI kernel)
// against the scalar product on the rows, bit for bit: the same integer sums and the
// same f32 steps, whatever the thread split.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <type_traits>
#include <vector>

#include <gtest/gtest.h>

#include "mnemo/dtype/weight_blocks.hpp"
#include "mnemo/model/matmul.hpp"
#include "mnemo/model/weight_tiles.hpp"
#include "mnemo/simd/cpu.hpp"
#include "mnemo/simd/simd.hpp"

namespace {

namespace dt = mnemo::dtype;
namespace md = mnemo::model;
namespace simd = mnemo::simd;

constexpr std::uint64_t k_seed = 0x6b74696c6573ull;

/// One field of a super-block in the tile layout: `bytes` bytes at `block_at` of a row's
/// block go to `tile_at`; two per row side by side (an f16: bytes 2 r, 2 r + 1), or in
/// 32-bit lanes of 64-byte vectors (byte i of the field: vector i / 4, lane r, byte i % 4).
struct field {
  const char* name;
  std::size_t tile_at, block_at, bytes;
  bool lanes;
};

/// The documented layouts (q2_K_tiles.hpp .. q6_K_tiles.hpp), written out again.
template <class E>
std::vector<field> layout() {
  if constexpr (std::is_same_v<E, dt::block_q2_K>)
    return {{"d", 0, 80, 2, false},
            {"dmin", 32, 82, 2, false},
            {"scales", 64, 0, 16, true},
            {"qs", 320, 16, 64, true}};
  else if constexpr (std::is_same_v<E, dt::block_q3_K>)
    return {{"d", 0, 108, 2, false},
            {"scales", 32, 96, 12, true},
            {"hmask", 224, 0, 32, true},
            {"qs", 736, 32, 64, true}};
  else if constexpr (std::is_same_v<E, dt::block_q4_K>)
    return {{"d", 0, 0, 2, false},
            {"dmin", 32, 2, 2, false},
            {"scales", 64, 4, 12, true},
            {"qs", 256, 16, 128, true}};
  else if constexpr (std::is_same_v<E, dt::block_q5_K>)
    return {{"d", 0, 0, 2, false},
            {"dmin", 32, 2, 2, false},
            {"scales", 64, 4, 12, true},
            {"qh", 256, 16, 32, true},
            {"qs", 768, 48, 128, true}};
  else
    return {{"d", 0, 208, 2, false},
            {"scales", 32, 192, 16, true},
            {"ql", 288, 0, 128, true},
            {"qh", 2336, 128, 64, true}};
}

/// n_out random rows of n_in values of E: random code and scale bytes (every code and
/// scale pattern, q3_K's hmask bits included), finite f16 d (and dmin) of the size a
/// quantiser gives.
template <class E>
struct random_rows {
  std::vector<E> blocks;
  md::weight w;

  random_rows(std::size_t n_in, std::size_t n_out, std::uint64_t seed) {
    std::mt19937_64 rng(seed);
    std::uniform_real_distribution<float> u(-0.02f, 0.02f);
    blocks.resize(n_out * (n_in / 256));
    for (E& b : blocks) {
      auto* bytes = reinterpret_cast<unsigned char*>(&b);
      for (std::size_t i = 0; i < sizeof b; ++i) bytes[i] = static_cast<unsigned char>(rng());
      b.d = dt::f16::from_float(u(rng));
      if constexpr (requires { b.dmin; }) b.dmin = dt::f16::from_float(u(rng));
    }
    w.type = dt::element_type_of<E>;
    w.n_in = n_in;
    w.n_out = n_out;
    w.row_bytes = n_in / 256 * sizeof(E);
    w.data = reinterpret_cast<const std::byte*>(blocks.data());
  }
};

template <class E>
class KTiles : public ::testing::Test {};
using tiled_types = ::testing::Types<dt::block_q2_K, dt::block_q3_K, dt::block_q4_K, dt::block_q5_K,
                                     dt::block_q6_K>;
struct type_names {
  template <class E>
  static std::string GetName(int) {
    return std::string(dt::element_traits<E>::name);
  }
};
TYPED_TEST_SUITE(KTiles, tiled_types, type_names);

TYPED_TEST(KTiles, InterleaveMatchesTheDocumentedLayout) {
  using E = TypeParam;
  std::size_t covered = 0;
  for (const field& f : layout<E>()) covered += 16 * f.bytes;
  ASSERT_EQ(covered, 16 * sizeof(E)) << "the layout moves every byte once";
  for (std::size_t n_in : {256, 768})
    for (std::size_t n_out : {16, 17, 40}) {
      const std::uint64_t seed = k_seed + n_in * 1000 + n_out;
      const random_rows<E> rw(n_in, n_out, seed);
      const md::weight& w = rw.w;
      const std::size_t n_tiles = n_out / 16, nb = n_in / 256;
      ASSERT_EQ(md::tiles_bytes(w), n_tiles * 16 * w.row_bytes);
      std::vector<std::byte> tiles(md::tiles_bytes(w) + 1, std::byte{0x5a});
      ASSERT_TRUE(md::has_tile_layout(w.type));
      if constexpr (std::is_same_v<E, dt::block_q2_K>)
        md::interleave_q2_K(w, tiles.data());
      else if constexpr (std::is_same_v<E, dt::block_q3_K>)
        md::interleave_q3_K(w, tiles.data());
      else if constexpr (std::is_same_v<E, dt::block_q4_K>)
        md::interleave_q4_K(w, tiles.data());
      else if constexpr (std::is_same_v<E, dt::block_q5_K>)
        md::interleave_q5_K(w, tiles.data());
      else
        md::interleave_q6_K(w, tiles.data());
      for (std::size_t t = 0; t < n_tiles; ++t)
        for (std::size_t b = 0; b < nb; ++b)
          for (std::size_t r = 0; r < 16; ++r) {
            const std::byte* blk = w.row(16 * t + r) + sizeof(E) * b;
            const std::byte* at = tiles.data() + (t * nb + b) * 16 * sizeof(E);
            for (const field& f : layout<E>())
              for (std::size_t i = 0; i < f.bytes; ++i) {
                const std::size_t to = f.lanes ? f.tile_at + 64 * (i / 4) + 4 * r + i % 4
                                               : f.tile_at + f.bytes * r + i;
                ASSERT_EQ(at[to], blk[f.block_at + i])
                    << "seed " << seed << ", n_in " << n_in << ", n_out " << n_out << ": tile " << t
                    << ", super-block " << b << ", row " << r << ": first difference at " << f.name
                    << " byte " << i;
              }
          }
      ASSERT_EQ(tiles.back(), std::byte{0x5a})
          << "n_in " << n_in << ", n_out " << n_out << ": wrote past the tiles";
    }
}

TYPED_TEST(KTiles, TheStoreGivesTheWeightsTheirTiles) {
  random_rows<TypeParam> rw(512, 40, k_seed + 1);
  md::weight_tiles store;
  store.attach(rw.w, /*always=*/true);
  ASSERT_NE(rw.w.tiles, nullptr);
  EXPECT_EQ(store.bytes(), 32 * rw.w.row_bytes);  // 2 whole tiles of 40 rows
  EXPECT_EQ(md::tiles_bytes(rw.w), 32 * rw.w.row_bytes);
}

#if defined(MNEMO_ARCH_X86_64)
/// One token on the tiles (with the rows past the last whole tile) against the scalar
/// product on the rows, bit for bit, over row counts around the tile, and thread splits
/// (the 1009-row product is large enough for one range per thread).
TYPED_TEST(KTiles, OneTokenOnTilesIsTheRowsProductBitForBit) {
  if (!simd::detail::cpu().avx512_int8) GTEST_SKIP() << "the CPU lacks AVX-512 VNNI and VBMI";
  const std::size_t shapes[][2] = {{256, 16}, {256, 45}, {768, 100}, {1280, 17}, {2048, 1009}};
  for (const auto& [n_in, n_out] : shapes) {
    const std::uint64_t seed = k_seed + 7 * n_in + n_out;
    random_rows<TypeParam> rw(n_in, n_out, seed);
    std::mt19937_64 rng(seed + 1);
    std::normal_distribution<float> nd(0.0f, 1.0f);
    std::vector<float> x(n_in);
    for (float& v : x) v = nd(rng);
    md::matmul_workspace ws;
    std::vector<float> ref(n_out, -1.0f);
    md::mul_mat<simd::scalar>(rw.w, x.data(), n_in, 1, ref.data(), n_out, 1, ws);
    md::weight_tiles store;
    store.attach(rw.w, /*always=*/true);
    ASSERT_NE(rw.w.tiles, nullptr);
    for (int threads : {1, 2, 3}) {
      std::vector<float> y(n_out, -1.0f);
      md::mul_mat<simd::avx512>(rw.w, x.data(), n_in, 1, y.data(), n_out, threads, ws);
      for (std::size_t o = 0; o < n_out; ++o)
        ASSERT_EQ(std::memcmp(&y[o], &ref[o], 4), 0)
            << "seed " << seed << ", n_in " << n_in << ", n_out " << n_out << ", " << threads
            << " threads: first difference at output " << o << ": " << y[o] << " vs scalar "
            << ref[o];
    }
  }
}
#endif

}  // namespace
