// q4_0 tiles (model/q4_0_tiles.hpp): the interleaved layout byte for byte against its
// documented formula, which weights get tiles, and a random q4_0 Llama whose one-token
// decodes (the tile kernel where the CPU has it) match its batched prompt (the rows,
// decoded to f32) to within the order of the f32 sums. The products on tiles against a
// double reference are in matmul_test.cpp.
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "common/random_llama.hpp"
#include "common/scoped_setting.hpp"
#include "common/small_llama.hpp"
#include <gtest/gtest.h>
#include <unistd.h>

#include "mnemo/base/rng.hpp"
#include "mnemo/context.hpp"
#include "mnemo/memory/full/full_cache.hpp"
#include "mnemo/model/llama.hpp"
#include "mnemo/model/weight_tiles.hpp"

namespace {

namespace dt = mnemo::dtype;
namespace md = mnemo::model;

constexpr std::uint64_t k_seed = 0x7469'6c65ull;

/// n_out random rows of n_in bytes' worth of q4_0 blocks (any bytes are valid codes
/// and scales for a layout test).
std::vector<std::byte> random_rows(std::size_t n_in, std::size_t n_out, std::uint64_t seed) {
  mnemo::splitmix64 g{seed};
  std::vector<std::byte> rows(n_out * (n_in / 32) * sizeof(dt::block_q4_0));
  for (std::byte& b : rows) b = static_cast<std::byte>(g.next() & 0xff);
  return rows;
}

md::weight q4_0_weight(const std::vector<std::byte>& rows, std::size_t n_in, std::size_t n_out) {
  md::weight w;
  w.type = dt::element_type::q4_0;
  w.n_in = n_in;
  w.n_out = n_out;
  w.row_bytes = n_in / 32 * sizeof(dt::block_q4_0);
  w.data = rows.data();
  return w;
}

TEST(Q4_0Tiles, InterleaveMatchesTheDocumentedLayout) {
  for (std::size_t n_in : {32, 96, 1024})
    for (std::size_t n_out : {16, 17, 31, 48, 100}) {
      const std::uint64_t seed = k_seed + n_in * 1000 + n_out;
      const std::vector<std::byte> rows = random_rows(n_in, n_out, seed);
      const md::weight w = q4_0_weight(rows, n_in, n_out);
      const std::size_t n_tiles = n_out / 16, n_blocks = n_in / 32;
      ASSERT_EQ(md::tiles_bytes(w), n_tiles * 16 * w.row_bytes);
      std::vector<std::byte> tiles(md::tiles_bytes(w) + 1, std::byte{0x5a});
      md::interleave_q4_0(w, tiles.data());
      for (std::size_t t = 0; t < n_tiles; ++t)
        for (std::size_t b = 0; b < n_blocks; ++b)
          for (std::size_t r = 0; r < 16; ++r) {
            const std::byte* block = w.row(16 * t + r) + 18 * b;
            const std::byte* at = tiles.data() + (t * n_blocks + b) * 288;
            const std::string where = "seed " + std::to_string(seed) + ", n_in " +
                                      std::to_string(n_in) + ", n_out " + std::to_string(n_out) +
                                      ": tile " + std::to_string(t) + ", block " +
                                      std::to_string(b) + ", row " + std::to_string(r);
            ASSERT_EQ(std::memcmp(at + 2 * r, block, 2), 0) << where << ": scale";
            for (std::size_t i = 0; i < 16; ++i)
              ASSERT_EQ(at[32 + 64 * (i / 4) + 4 * r + i % 4], block[2 + i])
                  << where << ": first difference at code byte " << i;
          }
      ASSERT_EQ(tiles.back(), std::byte{0x5a})
          << "n_in " << n_in << ", n_out " << n_out << ": wrote past the tiles";
    }
}

/// The tiles of w, as interleave_q4_0 writes them, are at w.tiles.
void expect_tiles_of(const md::weight& w, const char* what) {
  ASSERT_NE(w.tiles, nullptr) << what;
  std::vector<std::byte> want(md::tiles_bytes(w));
  md::interleave_q4_0(w, want.data());
  EXPECT_EQ(std::memcmp(w.tiles, want.data(), want.size()), 0) << what;
}

TEST(Q4_0Tiles, OnlyQ4_0WeightsOfWholeTilesGetThem) {
  const std::vector<std::byte> rows = random_rows(64, 40, k_seed);
  md::weight_tiles store;
  md::weight few = q4_0_weight(rows, 64, 15), some = q4_0_weight(rows, 64, 40);
  md::weight other = some;
  other.type = dt::element_type::q8_0;  // the bytes do not matter: nothing is read
  store.attach(few);
  store.attach(other);
  EXPECT_EQ(few.tiles, nullptr) << "15 rows make no whole tile";
  EXPECT_EQ(other.tiles, nullptr) << "only q4_0 weights have tiles";
  EXPECT_EQ(store.bytes(), 0u);
  store.attach(some);
  if (!md::weight_tiles::used()) {
    EXPECT_EQ(some.tiles, nullptr) << "tiles where the products do not read them";
    EXPECT_EQ(store.bytes(), 0u);
    store.attach(some, /*always=*/true);
  }
  EXPECT_EQ(store.bytes(), 32 * some.row_bytes);  // 2 whole tiles of 40 rows
  expect_tiles_of(some, "some");
}

TEST(Q4_0Tiles, ReservedTilesShareOneBufferUntilItIsFull) {
  if (!md::weight_tiles::used()) GTEST_SKIP() << "reserve() holds no buffer where tiles are unused";
  const std::vector<std::byte> rows = random_rows(64, 17, k_seed + 1);
  md::weight a = q4_0_weight(rows, 32, 16), b = q4_0_weight(rows, 64, 17), c = a;
  // a: 1 tile of 16 rows of 18 bytes (288 bytes, 320 to the next 64-byte offset);
  // b: 1 tile of 36-byte rows (576); c does not fit in what is left.
  md::weight_tiles store;
  store.reserve(320 + 576);
  store.attach(a);
  store.attach(b);
  store.attach(c);
  expect_tiles_of(a, "a");
  expect_tiles_of(b, "b");
  expect_tiles_of(c, "c, in a buffer of its own");
  EXPECT_EQ(b.tiles - a.tiles, 320) << "b follows a at the next 64-byte offset";
  const auto at = [](const std::byte* p) { return reinterpret_cast<std::uintptr_t>(p); };
  EXPECT_TRUE(at(c.tiles) < at(a.tiles) || at(c.tiles) >= at(b.tiles + 576))
      << "c is outside the reservation";
  EXPECT_EQ(store.bytes(), 288u + 576u + 288u);
}

/// The logits of `tokens` decoded one token per call, or all in one call.
std::vector<float> logits_of(const md::llama_model& m, const std::vector<mnemo::token_id>& tokens,
                             bool one_per_call) {
  using cache_t = mnemo::memory::full_cache<float>;
  auto cache = cache_t::make(m.full_cache_config(64, 1));
  EXPECT_TRUE(cache.is_ok());
  auto c = mnemo::context<md::llama_model, cache_t>::make(m, std::move(cache).value(), {});
  EXPECT_TRUE(c.is_ok()) << c.error().to_string();
  std::vector<float> out;
  mnemo::batch b;
  for (std::size_t i = 0; i < tokens.size(); ++i) {
    b.add(tokens[i], static_cast<mnemo::pos_t>(i), {0}, true);
    if (!one_per_call && i + 1 < tokens.size()) continue;
    EXPECT_TRUE(c->decode(b));
    out.insert(out.end(), c->logits().begin(), c->logits().end());
    b.clear();
  }
  return out;
}

// With tiles where the CPU reads them, and without (model::set_weight_tiles_enabled).
TEST(Q4_0Tiles, OneTokenDecodesMatchTheBatchedPrompt) {
  for (int mode = 0; mode < 4; ++mode) {
    const bool tied = (mode & 1) != 0, tiles_on = mode < 2;
    const mnemo_test::scoped_setting tiles_setting(&md::weight_tiles_enabled,
                                                   &md::set_weight_tiles_enabled, tiles_on);
    mnemo_examples::random_llama_config c =
        mnemo_test::small_llama_config(dt::element_type::q4_0, k_seed);
    c.tied_output = tied;
    const std::string path = (std::filesystem::temp_directory_path() /
                              ("mnemo_q4_tiles_" + std::to_string(::getpid()) + ".gguf"))
                                 .string();
    ASSERT_TRUE(mnemo_examples::write_random_llama(c, path).is_ok());
    auto m = md::llama_model::open(path);
    std::filesystem::remove(path);
    ASSERT_TRUE(m.is_ok()) << m.error().to_string();
    // Rows in whole tiles per layer: q 64, k 32, v 32, o 64, gate 96, up 96 (rows of
    // 36 bytes), down 64 (54 bytes); the output head 288 of 300.
    const std::size_t want = 2 * ((64 + 32 + 32 + 64 + 96 + 96) * 36 + 64 * 54) + 288 * 36;
    EXPECT_EQ(m->tile_bytes(), tiles_on && md::weight_tiles::used() ? want : 0u)
        << "tied " << tied << ", tiles enabled " << tiles_on;
    const std::vector<mnemo::token_id> tokens = {3, 250, 17, 99, 5, 42, 7, 299};
    const std::vector<float> one = logits_of(*m, tokens, true), all = logits_of(*m, tokens, false);
    ASSERT_EQ(one.size(), tokens.size() * c.n_vocab);
    ASSERT_EQ(all.size(), one.size());
    // Both multiply x rounded to q8_0 by the same codes, only the f32 sums run in
    // another order (~1e-7 relative). That can flip one rounding of x to q8_0 in a
    // later layer (a code off by one, ~1e-3 of the logits), so: every token within
    // 1e-2, and at least three quarters within 1e-5 (a wrong tile is off everywhere).
    std::size_t close = 0;
    for (std::size_t t = 0; t < tokens.size(); ++t) {
      const float* a = one.data() + t * c.n_vocab;
      const float* b = all.data() + t * c.n_vocab;
      float scale = 0, diff = 0;
      std::size_t worst = 0;
      for (std::size_t v = 0; v < c.n_vocab; ++v) scale = std::max(scale, std::fabs(b[v]));
      for (std::size_t v = 0; v < c.n_vocab; ++v)
        if (std::fabs(a[v] - b[v]) > diff) diff = std::fabs(a[v] - b[v]), worst = v;
      ASSERT_LE(diff, 1e-2f * scale)
          << "seed " << k_seed << ", tied " << tied << ": token " << t << ", logit " << worst
          << ": one-token " << a[worst] << ", batched " << b[worst];
      close += diff <= 1e-5f * scale;
      EXPECT_EQ(std::max_element(a, a + c.n_vocab) - a, std::max_element(b, b + c.n_vocab) - b)
          << "tied " << tied << ", token " << t;
    }
    EXPECT_GE(4 * close, 3 * tokens.size())
        << "seed " << k_seed << ", tied " << tied << ": only " << close << " of " << tokens.size()
        << " tokens' logits agree to 1e-5";
  }
}

}  // namespace
