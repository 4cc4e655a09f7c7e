// model::mul_mat and get_row, typed over (ISA, storage type), against a double-precision
// product of the DECODED weights (decoding is exact and tested bit-identical to
// ggml's definitions in tests/dtype), with x rounded to q8_0 first for q8_0 and q4_0
// weights (as ggml and mul_mat do). Covers the kernels (few tokens: streaming rows;
// from k_gemm_min_tokens: token lanes where the ISA has them, then packed panels), odd
// output counts, input widths that cross the panel k-blocking, row strides wider than
// the rows, and 1, 2 or 3 threads, which must give bit-identical results (row and panel
// counts that do not split evenly); q4_0 also with its tiles of 16 rows
// (q4_0_tiles.hpp), which the one-token 8-bit kernel reads.
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <type_traits>
#include <vector>

#include <gtest/gtest.h>

#include "mnemo/dtype/dtype.hpp"
#include "mnemo/model/matmul.hpp"
#include "mnemo/model/weight_tiles.hpp"
#include "mnemo/simd/cpu.hpp"
#include "mnemo/simd/simd.hpp"

namespace {

namespace dt = mnemo::dtype;
namespace simd = mnemo::simd;
using mnemo::model::weight;

template <class Isa, class E>
struct combo {
  using isa = Isa;
  using elem = E;
};

struct combo_names {
  template <class C>
  static std::string GetName(int) {
    std::string s = std::string(C::isa::name) + "-" +
                    std::string(dt::element_traits<typename C::elem>::name),
                out;
    for (char c : s)
      if (c != '_') out += c;
    return out;
  }
};

constexpr std::uint64_t k_seed = 0x6d61746d756cull;
constexpr float k_sentinel = -12345.0f;

/// A random [n_out, n_in] weight of type E, rows stored back to back (GGUF layout), and
/// its decoded f32 values; `with_tiles`: with its q4_0 tiles attached, as models do.
template <class E>
struct test_weight {
  std::vector<std::uint16_t> storage;  // 2-byte aligned, as in a GGUF mapping
  std::vector<float> decoded;          // [n_out, n_in]
  weight w;
  mnemo::model::weight_tiles tiles;

  test_weight(std::size_t n_in, std::size_t n_out, std::uint64_t seed, bool with_tiles = false) {
    std::mt19937_64 rng(seed);
    std::normal_distribution<float> nd(0.0f, 1.0f);
    const std::size_t rb = dt::row_bytes_of<E>(n_in);
    storage.assign((rb * n_out + 1) / 2 + 4, 0);
    auto* bytes = reinterpret_cast<unsigned char*>(storage.data());
    std::vector<float> row(n_in);
    decoded.resize(n_in * n_out);
    for (std::size_t r = 0; r < n_out; ++r) {
      for (float& v : row) v = nd(rng);
      auto* dst = reinterpret_cast<E*>(bytes + r * rb);
      dt::encode_row<simd::scalar>(row.data(), dst, n_in);
      dt::decode_row<simd::scalar>(dst, decoded.data() + r * n_in, n_in);
    }
    w.type = dt::element_type_of<E>;
    w.n_in = n_in;
    w.n_out = n_out;
    w.row_bytes = rb;
    w.data = reinterpret_cast<const std::byte*>(bytes);
    w.name = "test";
    if (with_tiles) tiles.attach(w, /*always=*/true);  // whatever the native ISA
  }
};

template <class C>
class ModelMatmul : public ::testing::Test {};
TYPED_TEST_SUITE_P(ModelMatmul);

template <class Isa>
bool runnable() {
  if constexpr (!simd::is_compiled<Isa>)
    return false;
  else
    return simd::supported<Isa>();
}

/// x as mul_mat multiplies it by weights of type E: rounded to q8_0 block by block
/// (ggml's quantize_row_q8_0, the scalar encoder) for q8_0 and q4_0, else unchanged.
template <class E>
std::vector<float> as_multiplied(std::vector<float> x, std::size_t x_stride, std::size_t n_in) {
  if constexpr (dt::element_traits<E>::block_size > 1) {
    for (std::size_t t = 0; t < x.size() / x_stride; ++t)
      for (std::size_t b = 0; b < n_in; b += 32) {
        dt::block_q8_0 q;
        dt::encode_row<simd::scalar>(x.data() + t * x_stride + b, &q, 32);
        dt::decode_row<simd::scalar>(&q, x.data() + t * x_stride + b, 32);
      }
  }
  return x;
}

/// n_tok rows of x_stride uniform values in [-1, 1) from seed.
std::vector<float> random_x(std::size_t n_tok, std::size_t x_stride, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> ud(-1.0f, 1.0f);
  std::vector<float> x(n_tok * x_stride);
  for (float& v : x) v = ud(rng);
  return x;
}

/// `tiled`: the weight has its q4_0 tiles, which the one-token 8-bit kernel reads
/// instead of the rows (AVX-512 with VNNI and VBMI; the other ISAs read the rows).
template <class Isa, class E>
void check_product(std::size_t n_in, std::size_t n_out, std::size_t n_tok, bool tiled = false) {
  const std::uint64_t seed = k_seed ^ (n_in * 1000003u + n_out * 1009u + n_tok);
  const test_weight<E> tw(n_in, n_out, seed, tiled);
  if (tiled && n_out >= mnemo::model::k_q4_0_tile_rows) {
    ASSERT_NE(tw.w.tiles, nullptr) << "n_out " << n_out << ": no tiles attached";
  }
  const std::size_t x_stride = n_in + 3, y_stride = n_out + 5;
  const std::vector<float> x = random_x(n_tok, x_stride, seed + 1);
  const std::vector<float> x_used = as_multiplied<E>(x, x_stride, n_in);
  std::vector<float> y1(n_tok * y_stride, k_sentinel), y2(n_tok * y_stride, k_sentinel),
      y3(n_tok * y_stride, k_sentinel);
  mnemo::model::matmul_workspace ws;
  mnemo::model::mul_mat<Isa>(tw.w, x.data(), x_stride, n_tok, y1.data(), y_stride, 1, ws);
  mnemo::model::mul_mat<Isa>(tw.w, x.data(), x_stride, n_tok, y2.data(), y_stride, 2, ws);
  mnemo::model::mul_mat<Isa>(tw.w, x.data(), x_stride, n_tok, y3.data(), y_stride, 3, ws);
  const std::string where = "seed " + std::to_string(seed) + ", n_in " + std::to_string(n_in) +
                            ", n_out " + std::to_string(n_out) + ", n_tok " +
                            std::to_string(n_tok) + (tiled ? ", tiles" : "");
  const double u = 1.0 / 16777216.0;
  for (std::size_t t = 0; t < n_tok; ++t) {
    for (std::size_t o = 0; o < y_stride; ++o) {
      const float got = y1[t * y_stride + o];
      if (o >= n_out) {  // the stride padding must stay untouched, whatever the threads
        ASSERT_EQ(got, k_sentinel) << where << ": wrote y[" << t << "][" << o << "] past n_out";
        ASSERT_EQ(y2[t * y_stride + o], k_sentinel) << where << ": 2 threads wrote past n_out";
        ASSERT_EQ(y3[t * y_stride + o], k_sentinel) << where << ": 3 threads wrote past n_out";
        continue;
      }
      double exact = 0, abs_sum = 0;
      for (std::size_t i = 0; i < n_in; ++i) {
        const double p = static_cast<double>(x_used[t * x_stride + i]) * tw.decoded[o * n_in + i];
        exact += p;
        abs_sum += std::fabs(p);
      }
      const double tol = (static_cast<double>(n_in) + 4) * u * abs_sum + 1e-30;
      ASSERT_LE(std::fabs(got - exact), tol) << where << ": first difference at y[" << t << "]["
                                             << o << "]: got " << got << ", exact " << exact;
      ASSERT_EQ(std::memcmp(&got, &y2[t * y_stride + o], sizeof(float)), 0)
          << where << ": 1 and 2 threads differ at y[" << t << "][" << o << "]: " << got << " vs "
          << y2[t * y_stride + o];
      ASSERT_EQ(std::memcmp(&got, &y3[t * y_stride + o], sizeof(float)), 0)
          << where << ": 1 and 3 threads differ at y[" << t << "][" << o << "]: " << got << " vs "
          << y3[t * y_stride + o];
    }
  }
}

TYPED_TEST_P(ModelMatmul, MatchesDoubleReference) {
  using Isa = typename TypeParam::isa;
  using E = typename TypeParam::elem;
  if (!runnable<Isa>()) GTEST_SKIP() << Isa::name << " is not available here";
  constexpr bool block = dt::element_traits<E>::block_size > 1;
  // 320 / 300 cross the AVX-512 k-blocking (128) of the packed product; 37 leaves a
  // tail of every vector width for the one-value types.
  // The 8-bit one-token kernel takes q4_0 in groups of 3 blocks and q8_0 in pairs, two
  // groups per loop step: 1, 2, 3, 6 and 10 blocks give every partial group (q4_0: 1
  // and 2 blocks left; q8_0: 1), and odd and even counts of whole groups.
  // q4_0 also with tiles of 16 rows: none (1, 7), whole ones only (32), and whole ones
  // then rows (65, 130).
  constexpr bool q4 = std::is_same_v<E, dt::block_q4_0>;
  std::vector<std::size_t> n_ins = {32, 64, 96, 192, 320};
  if constexpr (!block) n_ins.insert(n_ins.end(), {37, 300});
  for (bool tiled : {false, true})
    for (std::size_t n_in : n_ins)
      for (std::size_t n_out : {1, 7, 32, 65, 130})
        for (std::size_t n_tok : {1, 2, 3, 7, 64, 200}) {
          if (tiled && !q4) continue;
          check_product<Isa, E>(n_in, n_out, n_tok, tiled);
          if (::testing::Test::HasFatalFailure()) return;
        }
}

TYPED_TEST_P(ModelMatmul, CrossoverTokenCounts) {
  using Isa = typename TypeParam::isa;
  using E = typename TypeParam::elem;
  if (!runnable<Isa>()) GTEST_SKIP() << Isa::name << " is not available here";
  const std::size_t k = mnemo::model::k_gemm_min_tokens;
  const std::size_t lanes = mnemo::model::detail::matmul_kernels<Isa>::k_lanes_max_tokens;
  for (std::size_t n_tok : {k - 1, k, k + 5, std::max(lanes, k), std::max(lanes, k) + 1}) {
    check_product<Isa, E>(64, 97, n_tok);
    if (::testing::Test::HasFatalFailure()) return;
  }
}

TYPED_TEST_P(ModelMatmul, UnevenThreadSplits) {
  using Isa = typename TypeParam::isa;
  using E = typename TypeParam::elem;
  if (!runnable<Isa>()) GTEST_SKIP() << Isa::name << " is not available here";
  // Each thread takes one contiguous range of 4-row tiles (streaming; 16-row tiles for
  // q4_0 with tiles, one token) or of panels (packed). Row counts around those units and
  // large enough that 3 threads all get work (the streaming kernel gives a thread at
  // least 64 KiB of weights, 128 KiB for one token): 1 + 4k rows and a panel count that
  // 2 and 3 do not divide.
  const std::size_t n_in = 1024;  // >= 574 KiB of rows for every type at n_out >= 1021
  const std::size_t many = mnemo::model::k_gemm_min_tokens + 1;
  for (bool tiled : {false, true})
    for (std::size_t n_out : {1021, 1026, 1031, 1040})
      for (std::size_t n_tok : {std::size_t{1}, std::size_t{5}, many}) {
        if (tiled && !std::is_same_v<E, dt::block_q4_0>) continue;
        check_product<Isa, E>(n_in, n_out, n_tok, tiled);
        if (::testing::Test::HasFatalFailure()) return;
      }
}

TYPED_TEST_P(ModelMatmul, GetRowIsTheDecodedRow) {
  using Isa = typename TypeParam::isa;
  using E = typename TypeParam::elem;
  if (!runnable<Isa>()) GTEST_SKIP() << Isa::name << " is not available here";
  const test_weight<E> tw(96, 5, k_seed);
  std::vector<float> out(96);
  for (std::size_t r = 0; r < 5; ++r) {
    mnemo::model::get_row<Isa>(tw.w, r, out.data());
    for (std::size_t i = 0; i < 96; ++i)
      ASSERT_EQ(out[i], tw.decoded[r * 96 + i])
          << "seed " << k_seed << ", row " << r << ", value " << i;
  }
}

TYPED_TEST_P(ModelMatmul, ReusedWorkspaceGivesTheSameResult) {
  using Isa = typename TypeParam::isa;
  using E = typename TypeParam::elem;
  if (!runnable<Isa>()) GTEST_SKIP() << Isa::name << " is not available here";
  // One workspace across calls of different shapes and thread counts (it grows, and is
  // reused dirty), against a fresh workspace per call.
  mnemo::model::matmul_workspace shared;
  ASSERT_TRUE(mnemo::model::matmul_reserve<Isa>(shared, 1).is_ok());
  const std::size_t n_tok = mnemo::model::k_gemm_min_tokens + 3;
  for (int round = 0; round < 2; ++round) {
    for (std::size_t n_out : {70, 9}) {
      const test_weight<E> tw(64, n_out, k_seed + n_out);
      std::vector<float> x(n_tok * 64);
      for (std::size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>((i * 37) % 17) - 8.0f;
      std::vector<float> got(n_tok * n_out), want(n_tok * n_out);
      mnemo::model::matmul_workspace fresh;
      mnemo::model::mul_mat<Isa>(tw.w, x.data(), 64, n_tok, got.data(), n_out, 2 - round, shared);
      mnemo::model::mul_mat<Isa>(tw.w, x.data(), 64, n_tok, want.data(), n_out, 1, fresh);
      for (std::size_t i = 0; i < got.size(); ++i)
        ASSERT_EQ(got[i], want[i]) << "seed " << k_seed + n_out << ", n_out " << n_out << ", round "
                                   << round << ": first difference at " << i;
    }
  }
}

TYPED_TEST_P(ModelMatmul, PrefetchTargetChangesNoValue) {
  using Isa = typename TypeParam::isa;
  using E = typename TypeParam::elem;
  if (!runnable<Isa>()) GTEST_SKIP() << Isa::name << " is not available here";
  constexpr bool block = dt::element_traits<E>::block_size > 1;
  const simd::prefetch_target before = simd::current_prefetch_target();
  const std::size_t many = mnemo::model::k_gemm_min_tokens + 1;
  // Several pages of rows, so the page touches and the prefetch front both move; widths
  // with every kind of tail for the one-value types.
  std::vector<std::size_t> n_ins = {32, 1024};
  if constexpr (!block) n_ins.insert(n_ins.end(), {37, 100, 1000, 2816});
  for (std::size_t n_in : n_ins) {
    const std::uint64_t seed = k_seed + n_in;
    const test_weight<E> tw(n_in, 67, seed);
    const std::vector<float> x = random_x(many, n_in, seed + 1);
    for (std::size_t n_tok : {std::size_t{1}, std::size_t{5}, many}) {
      std::vector<float> y[2];
      mnemo::model::matmul_workspace ws;
      for (int t = 0; t < 2; ++t) {
        simd::set_prefetch_target(t == 0 ? simd::prefetch_target::l1 : simd::prefetch_target::l2);
        y[t].assign(n_tok * 67, k_sentinel);
        mnemo::model::mul_mat<Isa>(tw.w, x.data(), n_in, n_tok, y[t].data(), 67, 2, ws);
      }
      for (std::size_t i = 0; i < y[0].size(); ++i)
        ASSERT_EQ(std::memcmp(&y[0][i], &y[1][i], sizeof(float)), 0)
            << "seed " << seed << ", n_in " << n_in << ", n_tok " << n_tok
            << ": prefetch into L1 and L2 differ at " << i << ": " << y[0][i] << " vs " << y[1][i];
      // One token of one-value rows: the streaming loop keeps dtype::dot's order exactly.
      if (block || n_tok != 1) continue;
      const auto* rows = reinterpret_cast<const unsigned char*>(tw.w.data);
      for (std::size_t o = 0; o < 67; ++o) {
        const float want =
            dt::dot<Isa>(x.data(), reinterpret_cast<const E*>(rows + o * tw.w.row_bytes), n_in);
        ASSERT_EQ(std::memcmp(&want, &y[0][o], sizeof(float)), 0)
            << "seed " << seed << ", n_in " << n_in << ": one-token product and dtype::dot "
            << "differ at row " << o << ": " << y[0][o] << " vs " << want;
      }
    }
  }
  simd::set_prefetch_target(before);
}

TYPED_TEST_P(ModelMatmul, ManyProductsOfOneInputAreTheSingleProducts) {
  using Isa = typename TypeParam::isa;
  using E = typename TypeParam::elem;
  if (!runnable<Isa>()) GTEST_SKIP() << Isa::name << " is not available here";
  // mul_mat_many splits the products' rows over the threads as one sequence: every
  // output must be the one mul_mat gives, bit for bit, whatever the thread count, with
  // parts that start and end inside products (q, k, v and gate, up shapes, tails of 1-15
  // rows, 16-row tiles for q4_0), for one token, a few, and prefill (run one by one).
  const std::size_t n_in = 1024, many = mnemo::model::k_gemm_min_tokens + 2;
  const std::vector<std::vector<std::size_t>> groups = {
      {256, 64, 64}, {1021, 255, 259}, {2816, 2816}, {7, 33, 1030}, {5}};
  for (bool tiled : {false, true}) {
    if (tiled && !std::is_same_v<E, dt::block_q4_0>) continue;
    for (const auto& outs : groups)
      for (std::size_t n_tok : {std::size_t{1}, std::size_t{3}, many}) {
        std::vector<std::unique_ptr<test_weight<E>>> ws;
        for (std::size_t o : outs)
          ws.push_back(std::make_unique<test_weight<E>>(n_in, o, k_seed + o * 31 + n_tok, tiled));
        const std::size_t x_stride = n_in + 7;
        const std::vector<float> x = random_x(n_tok, x_stride, k_seed + n_tok);
        for (int threads : {1, 2, 3}) {
          std::vector<std::vector<float>> want(outs.size()), got(outs.size());
          std::vector<mnemo::model::product_out> products;
          mnemo::model::matmul_workspace ws_one, ws_many;
          for (std::size_t i = 0; i < outs.size(); ++i) {
            const std::size_t y_stride = outs[i] + 3;
            want[i].assign(n_tok * y_stride, k_sentinel);
            got[i].assign(n_tok * y_stride, k_sentinel);
            mnemo::model::mul_mat<Isa>(ws[i]->w, x.data(), x_stride, n_tok, want[i].data(),
                                       y_stride, threads, ws_one);
            products.push_back({&ws[i]->w, got[i].data(), y_stride});
          }
          mnemo::model::mul_mat_many<Isa>(products, x.data(), x_stride, n_tok, threads, ws_many);
          for (std::size_t i = 0; i < outs.size(); ++i)
            for (std::size_t j = 0; j < want[i].size(); ++j)
              ASSERT_EQ(std::memcmp(&want[i][j], &got[i][j], sizeof(float)), 0)
                  << "seed " << k_seed << ", outputs " << outs[0] << "..., n_tok " << n_tok
                  << ", threads " << threads << (tiled ? ", tiles" : "") << ": product " << i
                  << " differs at " << j << ": " << got[i][j] << ", mul_mat " << want[i][j];
        }
      }
  }
}

TYPED_TEST_P(ModelMatmul, TokenLanesAreThePackedProductBitForBit) {
  using Isa = typename TypeParam::isa;
  using E = typename TypeParam::elem;
  using kernels = mnemo::model::detail::matmul_kernels<Isa>;
  if (!runnable<Isa>()) GTEST_SKIP() << Isa::name << " is not available here";
  // From k_gemm_min_tokens to k_lanes_max_tokens mul_mat runs the token-lane product
  // (matmul_lanes.inl), which must give the packed product's floats (the same fma chain
  // per output): mul_mat against gemm_panel called panel by panel on the same x. Widths
  // across the lanes' 512-value slices and the panels' k blocks, token counts around
  // the 16-token vectors and the blocks of k_nr tokens, row counts that leave every
  // strip height (1-6 rows) and cross the 48-row items.
  const std::size_t lo = mnemo::model::k_gemm_min_tokens;
  const std::size_t hi = std::max(kernels::k_lanes_max_tokens, lo + 1);
  constexpr bool block = dt::element_traits<E>::block_size > 1;
  std::vector<float> scratch(kernels::gemm_scratch_floats + 16);
  float* aligned =
      scratch.data() + (16 - reinterpret_cast<std::uintptr_t>(scratch.data()) / 4 % 16) % 16;
  for (std::size_t n_in :
       {std::size_t{64}, std::size_t{608}, block ? std::size_t{1088} : std::size_t{1100}})
    for (std::size_t n_out : {1, 2, 3, 4, 5, 7, 47, 100})
      for (std::size_t n_tok : {lo, lo + 2, std::size_t{65}, hi - 1, hi}) {
        const std::uint64_t seed = k_seed ^ (n_in * 31u + n_out * 7u + n_tok);
        const test_weight<E> tw(n_in, n_out, seed);
        const std::size_t x_stride = n_in + 5, y_stride = n_out + 3;
        const std::vector<float> x = random_x(n_tok, x_stride, seed + 1);
        const std::vector<float> x_used = as_multiplied<E>(x, x_stride, n_in);
        std::vector<float> got(n_tok * y_stride, k_sentinel), want(n_tok * y_stride, k_sentinel);
        for (int threads : {1, 3}) {
          mnemo::model::matmul_workspace ws;
          mnemo::model::mul_mat<Isa>(tw.w, x.data(), x_stride, n_tok, got.data(), y_stride, threads,
                                     ws);
          const auto* rows = reinterpret_cast<const unsigned char*>(tw.w.data);
          for (std::size_t o0 = 0; o0 < n_out; o0 += kernels::k_nr)
            kernels::template gemm_panel<E>(
                rows + o0 * tw.w.row_bytes, tw.w.row_bytes, std::min(kernels::k_nr, n_out - o0),
                n_in, x_used.data(), x_stride, n_tok, want.data() + o0, y_stride, aligned);
          for (std::size_t i = 0; i < got.size(); ++i)
            ASSERT_EQ(std::memcmp(&got[i], &want[i], sizeof(float)), 0)
                << "seed " << seed << ", n_in " << n_in << ", n_out " << n_out << ", n_tok "
                << n_tok << ", " << threads << " threads: first difference at y[" << i / y_stride
                << "][" << i % y_stride << "]: " << got[i] << " vs " << want[i];
        }
      }
}

TYPED_TEST_P(ModelMatmul, EmptyProductsWriteNothing) {
  using Isa = typename TypeParam::isa;
  using E = typename TypeParam::elem;
  if (!runnable<Isa>()) GTEST_SKIP() << Isa::name << " is not available here";
  const test_weight<E> tw(32, 3, k_seed);
  std::vector<float> x(32, 1.0f), y(3, k_sentinel);
  mnemo::model::matmul_workspace ws;
  mnemo::model::mul_mat<Isa>(tw.w, x.data(), 32, 0, y.data(), 3, 2, ws);
  for (float v : y) EXPECT_EQ(v, k_sentinel);
}

// The prefill product hands its panels out in detail::spread_panel's order: every
// panel exactly once, and the first items of a round in different runs of panels.
TEST(ModelMatmulOrder, SpreadPanelVisitsEveryPanelOnceAndSpreadsTheFirstItems) {
  for (std::size_t nt = 1; nt <= 9; ++nt)
    for (std::size_t n = 0; n <= 130; ++n) {
      std::vector<int> seen(n, 0);
      for (std::size_t i = 0; i < n; ++i) {
        const std::size_t p = mnemo::model::detail::spread_panel(i, n, nt);
        ASSERT_LT(p, n) << "n " << n << ", nt " << nt << ", item " << i;
        ASSERT_EQ(seen[p]++, 0) << "n " << n << ", nt " << nt << ": panel " << p
                                << " handed out twice, again at item " << i;
      }
      // Items 0 .. nt-1 start the nt runs of at least n / nt panels each, in order
      // (compared without a subtraction, which would wrap for a descending pair).
      if (nt > n) continue;
      for (std::size_t i = 1; i < nt; ++i)
        ASSERT_GE(mnemo::model::detail::spread_panel(i, n, nt),
                  mnemo::model::detail::spread_panel(i - 1, n, nt) + n / nt)
            << "n " << n << ", nt " << nt << ", item " << i;
    }
}

REGISTER_TYPED_TEST_SUITE_P(ModelMatmul, MatchesDoubleReference, CrossoverTokenCounts,
                            ManyProductsOfOneInputAreTheSingleProducts,
                            PrefetchTargetChangesNoValue, UnevenThreadSplits, GetRowIsTheDecodedRow,
                            ReusedWorkspaceGivesTheSameResult,
                            TokenLanesAreThePackedProductBitForBit, EmptyProductsWriteNothing);

template <class Isa>
using types_for = ::testing::Types<combo<Isa, float>, combo<Isa, dt::f16>, combo<Isa, dt::bf16>,
                                   combo<Isa, dt::block_q8_0>, combo<Isa, dt::block_q4_0>>;

INSTANTIATE_TYPED_TEST_SUITE_P(Scalar, ModelMatmul, types_for<simd::scalar>, combo_names);
#if defined(MNEMO_ARCH_X86_64)
INSTANTIATE_TYPED_TEST_SUITE_P(Avx2, ModelMatmul, types_for<simd::avx2>, combo_names);
INSTANTIATE_TYPED_TEST_SUITE_P(Avx512, ModelMatmul, types_for<simd::avx512>, combo_names);
#elif defined(MNEMO_ARCH_AARCH64)
INSTANTIATE_TYPED_TEST_SUITE_P(Neon, ModelMatmul, types_for<simd::neon>, combo_names);
#endif

}  // namespace
