// Quest (evict/quest.hpp, evict/quest_attend.hpp) against an independent fp64 model of
// its rule: page min/max recomputed from the keys and rounded outward to bf16, the
// bound (of the query, or of its halves rounded to bf16 with bf16 bounds), the top
// pages per KV head (or per layer) with the newest page forced and ties to the older
// page; the attention over the selected pages against an fp64 softmax over exactly
// those cells (f32 and f16 storage, GQA, partial last page); every page selected gives
// the plain kernel's output; the bound holds for every key; bytes read; bad calls get
// a status. Seeds are printed on failure.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <type_traits>
#include <vector>

#include "common/splitmix64.hpp"
#include "evict/needle_model.hpp"
#include <gtest/gtest.h>

#include "mnemo/dtype/rows.hpp"
#include "mnemo/evict/last_recent.hpp"
#include "mnemo/evict/quest_attend.hpp"

namespace {

using namespace mnemo;

struct case_spec {
  std::size_t n_cells, page, top, n_head_kv, group, d;
  bool per_head;
};

/// Cells [n, n_head_kv, d] of keys and values, and one query row [n_head, d].
struct data {
  std::vector<float> k, v, q;
  std::vector<pos_t> pos;
};

data make_data(const case_spec& c, std::uint64_t seed) {
  mnemo_test::splitmix64 g{seed};
  data x;
  x.k.resize(c.n_cells * c.n_head_kv * c.d);
  x.v.resize(x.k.size());
  x.q.resize(c.n_head_kv * c.group * c.d);
  for (float& f : x.k) f = static_cast<float>(g.normal());
  for (float& f : x.v) f = static_cast<float>(g.normal());
  for (float& f : x.q) f = static_cast<float>(g.normal());
  // A few keys aligned with the first query head, so some pages stand out.
  for (std::size_t j = 3; j < c.n_cells; j += 37)
    for (std::size_t i = 0; i < c.d; ++i) x.k[j * c.n_head_kv * c.d + i] += 0.8f * x.q[i];
  x.pos.resize(c.n_cells);
  for (std::size_t j = 0; j < c.n_cells; ++j) x.pos[j] = static_cast<pos_t>(j);
  return x;
}

/// The spacing of bf16 values (8 significant bits) around x != 0.
double bf16_ulp(double x) {
  int e = 0;
  (void)std::frexp(x, &e);  // |x| = m 2^e, m in [0.5, 1)
  return std::ldexp(1.0, e - 8);
}

/// x rounded to bf16 toward -inf (up = false) or +inf.
double bf16_outward(double x, bool up) {
  if (x == 0.0) return 0.0;
  const double ulp = bf16_ulp(x);
  return (up ? std::ceil(x / ulp) : std::floor(x / ulp)) * ulp;
}

/// x rounded to bf16, to nearest, ties to even.
double bf16_nearest(double x) {
  if (x == 0.0) return 0.0;
  const double ulp = bf16_ulp(x);
  return std::nearbyint(x / ulp) * ulp;  // the default rounding mode: to nearest even
}

/// fp64 model of the page scores, [sets][pages] (the newest page's > any bound), and of
/// each score's magnitude (the largest sum of |terms|), the scale of its f32 rounding.
/// bf16_query: the bound of the query's halves rounded to bf16 (bf16 bounds).
struct brute_scores {
  std::vector<std::vector<double>> score, magnitude;
};
brute_scores brute_page_scores(const case_spec& c, const data& x, bool bf16_query) {
  const std::size_t np = (c.n_cells + c.page - 1) / c.page;
  const std::size_t sets = c.per_head ? c.n_head_kv : 1, hps = c.per_head ? 1 : c.n_head_kv;
  brute_scores b;
  b.score.assign(sets, std::vector<double>(np, -1e300));
  b.magnitude.assign(sets, std::vector<double>(np, 0.0));
  for (std::size_t s = 0; s < sets; ++s) {
    for (std::size_t p = 0; p < np; ++p)
      for (std::size_t hh = 0; hh < hps; ++hh) {
        const std::size_t h = s * hps + hh;
        for (std::size_t qi = 0; qi < c.group; ++qi) {
          const float* q = &x.q[(h * c.group + qi) * c.d];
          double u = 0.0, mag = 0.0;
          for (std::size_t ch = 0; ch < c.d; ++ch) {
            double lo = 1e300, hi = -1e300;
            for (std::size_t j = p * c.page; j < std::min(c.n_cells, (p + 1) * c.page); ++j) {
              const double kv = x.k[(j * c.n_head_kv + h) * c.d + ch];
              lo = std::min(lo, kv);
              hi = std::max(hi, kv);
            }
            lo = bf16_outward(lo, false);
            hi = bf16_outward(hi, true);
            const double qc = bf16_query ? bf16_nearest(q[ch]) : q[ch];
            const double term = std::max(qc * lo, qc * hi);
            u += term;
            mag += std::abs(term);
          }
          b.score[s][p] = std::max(b.score[s][p], u);
          b.magnitude[s][p] = std::max(b.magnitude[s][p], mag);
        }
      }
    b.score[s][np - 1] = 1e301;
  }
  return b;
}

/// fp64 model of the selection: [sets][pages] increasing.
std::vector<std::vector<std::uint32_t>> brute_selection(const case_spec& c, const brute_scores& b) {
  const std::size_t np = (c.n_cells + c.page - 1) / c.page, k = std::min(c.top, np);
  std::vector<std::vector<std::uint32_t>> sel(b.score.size());
  for (std::size_t s = 0; s < sel.size(); ++s) {
    const std::vector<double>& score = b.score[s];
    std::vector<std::uint32_t> order(np);
    for (std::size_t p = 0; p < np; ++p) order[p] = static_cast<std::uint32_t>(p);
    std::stable_sort(order.begin(), order.end(),
                     [&](std::uint32_t a, std::uint32_t b) { return score[a] > score[b]; });
    sel[s].assign(order.begin(), order.begin() + static_cast<std::ptrdiff_t>(k));
    std::sort(sel[s].begin(), sel[s].end());
  }
  return sel;
}

/// fp64 attention of the query row over the selected cells; k / v as stored (decoded).
std::vector<double> brute_attention(const case_spec& c, const std::vector<float>& k,
                                    const std::vector<float>& v, const data& x,
                                    const std::vector<std::vector<std::uint32_t>>& sel) {
  const std::size_t H = c.n_head_kv * c.group;
  std::vector<double> out(H * c.d, 0.0);
  const double scale = 1.0 / std::sqrt(static_cast<double>(c.d));
  for (std::size_t qh = 0; qh < H; ++qh) {
    const std::size_t h = qh / c.group;
    const auto& pages = sel[c.per_head ? h : 0];
    std::vector<std::size_t> cells;
    for (std::uint32_t p : pages)
      for (std::size_t j = p * c.page; j < std::min(c.n_cells, (p + 1) * c.page); ++j)
        cells.push_back(j);
    std::vector<double> l(cells.size());
    double mx = -1e300, z = 0.0;
    for (std::size_t i = 0; i < cells.size(); ++i) {
      double dot = 0.0;
      for (std::size_t ch = 0; ch < c.d; ++ch)
        dot += double(x.q[qh * c.d + ch]) * k[(cells[i] * c.n_head_kv + h) * c.d + ch];
      mx = std::max(mx, l[i] = dot * scale);
    }
    for (double& e : l) z += (e = std::exp(e - mx));
    for (std::size_t i = 0; i < cells.size(); ++i)
      for (std::size_t ch = 0; ch < c.d; ++ch)
        out[qh * c.d + ch] += l[i] / z * v[(cells[i] * c.n_head_kv + h) * c.d + ch];
  }
  return out;
}

/// bf16_bounds: the index's setting; the model rounds the query where the index
/// computes bf16 bounds (bf16_bounds() on this CPU).
template <class E>
void check_case(const case_spec& c, std::uint64_t seed, double tol, bool bf16_bounds) {
  SCOPED_TRACE(::testing::Message()
               << "seed " << seed << " cells " << c.n_cells << " page " << c.page << " top "
               << c.top << " heads " << c.n_head_kv << "x" << c.group << " per_head " << c.per_head
               << " bf16 bounds " << bf16_bounds);
  const data x = make_data(c, seed);
  evict::quest_config qc;
  qc.page_size = c.page;
  qc.top_pages = c.top;
  qc.n_head_kv = c.n_head_kv;
  qc.d_k = c.d;
  qc.per_head = c.per_head;
  qc.bf16_bounds = bf16_bounds;
  auto ix = evict::quest_index::make(qc).value();
  // Stored rows in E (what the cache holds) and their decoded values (what the
  // index and the reference see).
  const std::size_t row = c.n_head_kv * c.d;
  std::vector<E> ks(x.k.size()), vs(x.v.size());
  std::vector<float> kd(x.k.size()), vd(x.v.size());
  for (std::size_t j = 0; j < c.n_cells; ++j) {
    dtype::encode_row<simd::scalar>(&x.k[j * row], &ks[j * row], row);
    dtype::encode_row<simd::scalar>(&x.v[j * row], &vs[j * row], row);
    dtype::decode_row<simd::scalar>(&ks[j * row], &kd[j * row], row);
    dtype::decode_row<simd::scalar>(&vs[j * row], &vd[j * row], row);
    ix.append(&kd[j * row]);
  }
  data xd = x;
  xd.k = kd;
  ix.select(x.q.data(), c.group);
  const brute_scores model = brute_page_scores(c, xd, ix.bf16_bounds());
  const auto want = brute_selection(c, model);
  for (std::size_t s = 0; s < want.size(); ++s) {
    const auto scores = ix.scores(s);
    ASSERT_EQ(scores.size(), model.score[s].size());
    for (std::size_t p = 0; p + 1 < scores.size(); ++p)
      ASSERT_NEAR(scores[p], model.score[s][p], 1e-5 * model.magnitude[s][p])
          << "set " << s << " page " << p;
    ASSERT_EQ(scores.back(), std::numeric_limits<float>::infinity());
    const auto got = ix.selected(s);
    ASSERT_EQ(std::vector<std::uint32_t>(got.begin(), got.end()), want[s]) << "set " << s;
  }
  // The bound holds for every key of every page.
  for (std::size_t j = 0; j < c.n_cells; ++j)
    for (std::size_t h = 0; h < c.n_head_kv; ++h)
      for (std::size_t qi = 0; qi < c.group; ++qi) {
        const float* q = &x.q[(h * c.group + qi) * c.d];
        double dot = 0.0;
        for (std::size_t ch = 0; ch < c.d; ++ch)
          dot += double(q[ch]) * kd[(j * c.n_head_kv + h) * c.d + ch];
        ASSERT_GE(ix.bound(j / c.page, h, q) + 1e-4, dot) << "cell " << j << " head " << h;
      }
  // Attention over the selected pages.
  const attention::shape sh{c.n_head_kv * c.group, c.n_head_kv, c.d, c.d};
  attention::params ap;
  ap.scale = 1.0f / std::sqrt(static_cast<float>(c.d));
  const attention::kv_segment cells{ks.data(),    vs.data(), row * sizeof(E), row * sizeof(E),
                                    x.pos.data(), nullptr,   c.n_cells};
  const pos_t qpos[1] = {static_cast<pos_t>(c.n_cells - 1)};
  const seq_id qseq[1] = {0};
  const attention::query_batch qb{x.q.data(), 1, qpos, qseq, nullptr};
  attention::workspace ws;
  evict::quest_scratch scr;
  std::vector<float> out(sh.n_head * c.d);
  const status st =
      evict::quest_attend<simd::native, E, E>(ix, cells, sh, ap, qb, out.data(), ws, scr, {1});
  ASSERT_TRUE(st.is_ok()) << st.message();
  const auto ref = brute_attention(c, kd, vd, xd, want);
  for (std::size_t i = 0; i < out.size(); ++i)
    ASSERT_NEAR(out[i], ref[i], tol) << "first difference at " << i;
  // Bytes read: the selected cells' K and V rows of each head, plus the metadata.
  std::size_t cells_read = 0;
  for (std::size_t s = 0; s < want.size(); ++s) cells_read += ix.selected_cells(s);
  const std::size_t per_set_heads = c.per_head ? 1 : c.n_head_kv;
  const std::size_t np = (c.n_cells + c.page - 1) / c.page, B = evict::quest_index::page_block;
  const std::size_t meta_bytes = (np + B - 1) / B * B * c.n_head_kv * c.d * 2 * 2;  // 2 bf16
  EXPECT_EQ(ix.metadata_bytes(), meta_bytes);
  EXPECT_EQ((evict::quest_bytes_read<E, E>(ix, sh)),
            cells_read * per_set_heads * 2 * c.d * sizeof(E) + meta_bytes);
  EXPECT_LE(ix.selected_cells(0), qc.read_budget());
}

TEST(EvictQuest, SelectionAndAttentionMatchFp64) {
  const case_spec cases[] = {
      {203, 8, 5, 2, 2, 16, true},  {203, 8, 5, 2, 2, 16, false}, {64, 16, 2, 1, 4, 32, true},
      {130, 4, 40, 2, 1, 16, true}, {37, 8, 1, 2, 3, 16, true},   {1, 16, 3, 2, 2, 16, false},
      {256, 16, 4, 4, 2, 64, true},
  };
  for (std::uint64_t seed = 1; seed <= 4; ++seed)
    for (const case_spec& c : cases) {
      check_case<float>(c, seed, 2e-5, false);
      check_case<dtype::f16>(c, seed, 1e-3, false);
    }
}

// The same with bf16 bounds (the default): the bounds of the query's halves rounded
// to bf16 (the fp64 model rounds them too); the attention is unchanged.
TEST(EvictQuest, Bf16BoundsSelectionMatchesFp64) {
  if (!simd::detail::cpu().avx512_bf16 || !std::is_same_v<simd::native, simd::avx512>)
    GTEST_SKIP() << "bf16 bounds need the AVX-512 build on a CPU with AVX512_BF16";
  const case_spec cases[] = {
      {203, 8, 5, 2, 2, 16, true}, {203, 8, 5, 2, 2, 16, false}, {64, 16, 2, 1, 4, 32, true},
      {37, 8, 1, 2, 3, 16, true},  {650, 4, 9, 2, 5, 24, true},  {256, 16, 4, 4, 2, 64, true},
  };
  for (std::uint64_t seed = 1; seed <= 4; ++seed)
    for (const case_spec& c : cases) check_case<dtype::f16>(c, seed, 1e-3, true);
  auto ix = evict::quest_index::make({4, 3, 2, 16, true}).value();
  EXPECT_TRUE(ix.bf16_bounds());  // the default
}

/// The bf16 block kernels over KV head h of `meta` ([blocks, n_head_kv, d, B] words)
/// against two f32 FMAs per channel of the bf16-rounded q+ then q-, as vdpbf16ps is
/// specified: equal within 4e-6 of the terms' magnitude (f32 rounding of the sums in
/// another order, should a CPU add the pair otherwise; bit for bit on Zen 4), far
/// below the 2^-9 of a query rounded otherwise.
void check_bf16_blocks([[maybe_unused]] const evict::quest_index& ix,
                       [[maybe_unused]] const std::vector<std::uint32_t>& meta,
                       [[maybe_unused]] const float* q, [[maybe_unused]] std::size_t group,
                       [[maybe_unused]] std::size_t h, [[maybe_unused]] std::size_t n_head_kv) {
#if defined(MNEMO_ARCH_X86_64)
  if (!simd::detail::cpu().avx512_bf16) return;
  const std::size_t d = ix.config().d_k, B = evict::quest_index::page_block, np = ix.n_pages();
  const std::size_t n_blocks = (np + B - 1) / B, stride = n_head_kv * d * B;
  std::vector<std::uint32_t> qw(group * d);
  std::vector<float> qp(group * d), qm(group * d);
  for (std::size_t i = 0; i < group * d; ++i) {
    qp[i] = static_cast<float>(bf16_nearest(std::max(q[i], 0.0f)));
    qm[i] = static_cast<float>(bf16_nearest(std::min(q[i], 0.0f)));
    qw[i] = std::uint32_t{simd::f32_to_bf16_bits(qp[i])} << 16 | simd::f32_to_bf16_bits(qm[i]);
  }
  for (std::size_t b = 0; b < n_blocks; ++b) {
    const bool two = b + 1 < n_blocks;
    std::vector<float> got(2 * B, -1e30f);
    const std::uint32_t* blk = &meta[b * stride + h * d * B];
    if (two)
      evict::detail::quest_block_bounds_bf16<2>(blk, stride, qw.data(), group, d, got.data());
    else
      evict::detail::quest_block_bounds_bf16<1>(blk, stride, qw.data(), group, d, got.data());
    for (std::size_t i = 0; i < (two ? 2 : 1) * B && b * B + i < np; ++i) {
      const std::size_t page = b * B + i;
      float want = -1e30f;
      double magnitude = 0.0;
      for (std::size_t r = 0; r < group; ++r) {
        float u = 0.0f;
        for (std::size_t ch = 0; ch < d; ++ch) {
          u = std::fma(qp[r * d + ch], ix.page_max(page, h, ch), u);
          u = std::fma(qm[r * d + ch], ix.page_min(page, h, ch), u);
          magnitude += std::abs(double(qp[r * d + ch]) * ix.page_max(page, h, ch)) +
                       std::abs(double(qm[r * d + ch]) * ix.page_min(page, h, ch));
        }
        want = std::max(want, u);
      }
      ASSERT_NEAR(got[i], want, 4e-6 * magnitude)
          << "bf16 bounds, group " << group << " head " << h << " page " << page;
    }
  }
#endif
}

// The vectorised page bounds (a block of pages per vector pass, four query rows at a
// time, then two, then one) equal the scalar bound() bit for bit on this CPU's ISA
// and on the scalar path, for partial blocks, odd d_k and every group size to 5; the
// index's min/max equal the keys' recomputed ones rounded outward to bf16. Where the
// CPU has AVX512_BF16, the bf16 kernels (one and two blocks) equal two FMAs per
// channel of the rounded query's halves, the positive one first (check_bf16_blocks).
TEST(EvictQuest, BlockBoundsEqualTheScalarBound) {
  for (std::uint64_t seed = 1; seed <= 3; ++seed)
    for (std::size_t d : {1, 3, 8, 20})
      for (std::size_t n_cells : {1, 5, 63, 64, 65, 140}) {
        const case_spec c{n_cells, 4, 3, 2, 5, d, true};
        SCOPED_TRACE(::testing::Message() << "seed " << seed << " d " << d << " cells " << n_cells);
        const data x = make_data(c, seed);
        auto ix = evict::quest_index::make({4, 3, 2, d, true, false}).value();
        for (std::size_t j = 0; j < n_cells; ++j) ix.append(&x.k[j * 2 * d]);
        const std::size_t np = ix.n_pages(), B = evict::quest_index::page_block;
        for (std::size_t p = 0; p < np; ++p)
          for (std::size_t h = 0; h < 2; ++h)
            for (std::size_t ch = 0; ch < d; ++ch) {
              float lo = 1e30f, hi = -1e30f;
              for (std::size_t j = p * 4; j < std::min(n_cells, p * 4 + 4); ++j) {
                lo = std::min(lo, x.k[(j * 2 + h) * d + ch]);
                hi = std::max(hi, x.k[(j * 2 + h) * d + ch]);
              }
              ASSERT_EQ(ix.page_min(p, h, ch), bf16_outward(lo, false)) << "page " << p;
              ASSERT_EQ(ix.page_max(p, h, ch), bf16_outward(hi, true)) << "page " << p;
            }
        // The index's metadata blocks, read back through page_min / page_max.
        const std::size_t n_blocks = (np + B - 1) / B;
        std::vector<std::uint32_t> meta(n_blocks * 2 * d * B, 0u);
        for (std::size_t p = 0; p < np; ++p)
          for (std::size_t h = 0; h < 2; ++h)
            for (std::size_t ch = 0; ch < d; ++ch)
              meta[((p / B * 2 + h) * d + ch) * B + p % B] =
                  std::uint32_t{simd::f32_to_bf16_bits(ix.page_max(p, h, ch))} << 16 |
                  simd::f32_to_bf16_bits(ix.page_min(p, h, ch));
        for (std::size_t group = 1; group <= 5; ++group) {
          std::vector<float> qpm(group * d * 2);
          for (std::size_t h = 0; h < 2; ++h) {
            const float* q = &x.q[h * 5 * d];  // the first `group` rows of head h
            for (std::size_t i = 0; i < group * d; ++i) {
              qpm[2 * i] = q[i] > 0.0f ? q[i] : 0.0f;
              qpm[2 * i + 1] = q[i] < 0.0f ? q[i] : 0.0f;
            }
            check_bf16_blocks(ix, meta, q, group, h, 2);
            for (std::size_t b = 0; b * B < np; ++b) {
              std::vector<float> nat(B, -1e30f), sca(B, -1e30f);
              const std::uint32_t* blk = &meta[(b * 2 + h) * d * B];
              evict::detail::quest_block_bounds<simd::native>(blk, qpm.data(), group, d,
                                                              nat.data());
              evict::detail::quest_block_bounds<simd::scalar>(blk, qpm.data(), group, d,
                                                              sca.data());
              for (std::size_t i = 0; i < B && b * B + i < np; ++i) {
                float want = -1e30f;
                for (std::size_t r = 0; r < group; ++r)
                  want = std::max(want, ix.bound(b * B + i, h, q + r * d));
                ASSERT_EQ(nat[i], want)
                    << "group " << group << " head " << h << " page " << b * B + i;
                ASSERT_EQ(sca[i], want)
                    << "group " << group << " head " << h << " page " << b * B + i;
              }
            }
          }
        }
      }
}

TEST(EvictQuest, EveryPageSelectedIsThePlainKernel) {
  const case_spec c{150, 16, 100, 2, 2, 16, true};
  const data x = make_data(c, 9);
  evict::quest_config qc{16, 100, 2, 16, true, true};
  auto ix = evict::quest_index::make(qc).value();
  for (std::size_t j = 0; j < c.n_cells; ++j) ix.append(&x.k[j * 32]);
  ix.select(x.q.data(), c.group);
  EXPECT_EQ(ix.selected_cells(0), c.n_cells);
  const attention::shape sh{4, 2, 16, 16};
  attention::params ap;
  ap.scale = 0.25f;
  const attention::kv_segment cells{x.k.data(),   x.v.data(), 32 * 4,   32 * 4,
                                    x.pos.data(), nullptr,    c.n_cells};
  const pos_t qpos[1] = {149};
  const seq_id qseq[1] = {0};
  const attention::query_batch qb{x.q.data(), 1, qpos, qseq, nullptr};
  attention::workspace ws;
  evict::quest_scratch scr;
  std::vector<float> a(64), b(64);
  ASSERT_TRUE((
      evict::quest_attend<simd::native, float, float>(ix, cells, sh, ap, qb, a.data(), ws, scr, {1})
          .is_ok()));
  const attention::kv_view view{std::span(&cells, 1)};
  ASSERT_TRUE((attention::attend<simd::native, float, float>(sh, ap, qb, std::span(&view, 1),
                                                             b.data(), ws, {1})
                   .is_ok()));
  for (std::size_t i = 0; i < a.size(); ++i) EXPECT_NEAR(a[i], b[i], 1e-6) << i;
}

TEST(EvictQuest, BadInputGetsAStatus) {
  EXPECT_FALSE(evict::quest_index::make({0, 4, 1, 16, true, true}).is_ok());
  EXPECT_FALSE(evict::quest_index::make({16, 4, 1, 0, true, true}).is_ok());
  auto ix = evict::quest_index::make({4, 2, 1, 16, true, true}).value();
  std::vector<float> k(16 * 8, 0.5f), q(32, 1.0f), out(64);
  std::vector<pos_t> pos = {0, 1, 2, 3, 4, 5, 6, 7};
  for (std::size_t j = 0; j < 8; ++j) ix.append(&k[j * 16]);
  ix.select(q.data(), 1);
  const attention::shape sh{1, 1, 16, 16};
  attention::params ap;
  attention::workspace ws;
  evict::quest_scratch scr;
  const attention::kv_segment short_cells{k.data(), k.data(), 64, 64, pos.data(), nullptr, 5};
  const pos_t qpos[2] = {7, 8};
  const seq_id qseq[2] = {0, 0};
  const attention::query_batch one{q.data(), 1, qpos, qseq, nullptr};
  const attention::query_batch two{q.data(), 2, qpos, qseq, nullptr};
  EXPECT_FALSE((evict::quest_attend<simd::native, float, float>(ix, short_cells, sh, ap, one,
                                                                out.data(), ws, scr)
                    .is_ok()));
  const attention::kv_segment cells{k.data(), k.data(), 64, 64, pos.data(), nullptr, 8};
  EXPECT_FALSE(
      (evict::quest_attend<simd::native, float, float>(ix, cells, sh, ap, two, out.data(), ws, scr)
           .is_ok()));
  EXPECT_TRUE(
      (evict::quest_attend<simd::native, float, float>(ix, cells, sh, ap, one, out.data(), ws, scr)
           .is_ok()));
}

}  // namespace

// ---- the needle model (docs/eviction.md, quality table) -------------------------------
namespace needle {

using namespace evict_test;
const bool k_big = std::getenv("MNEMO_EVICT_BIG") != nullptr;

/// Quest over the needle model's sequence: the cache holds every token, each decode
/// row reads `budget / page` pages per KV head. Returns the decode rows' outputs and
/// whether head 0's pages held the needle at the question.
std::pair<std::vector<float>, bool> run_quest(const needle_model& nm, const synthetic& s,
                                              std::size_t budget, std::size_t page) {
  const std::size_t d = needle_model::d, row = 2 * d, n_prefill = nm.spec().n_prompt - 1;
  evict::quest_config qc{page, std::max<std::size_t>(1, budget / page), 2, d, true, true};
  auto ix = evict::quest_index::make(qc).value();
  std::vector<pos_t> pos(s.n_tokens);
  for (std::size_t j = 0; j < s.n_tokens; ++j) pos[j] = static_cast<pos_t>(j);
  const attention::shape sh{2, 2, d, d};
  attention::params ap;
  ap.scale = 0.25f;
  attention::workspace ws;
  evict::quest_scratch scr;
  std::vector<float> out, o(row);
  bool kept = false;
  for (std::size_t t = 0; t < s.n_tokens; ++t) {
    ix.append(&s.k[t * row]);
    if (t < n_prefill) continue;
    ix.select(&s.q[t * row], 1);
    if (t == n_prefill)
      for (std::uint32_t p : ix.selected(0))
        kept |= static_cast<pos_t>(p * page) <= s.needle &&
                s.needle < static_cast<pos_t>((p + 1) * page);
    const attention::kv_segment cells{s.k.data(), s.v.data(), row * 4, row * 4,
                                      pos.data(), nullptr,    t + 1};
    const seq_id seq[1] = {0};
    const attention::query_batch qb{&s.q[t * row], 1, &pos[t], seq, nullptr};
    EXPECT_TRUE((evict::quest_attend<simd::native, float, float>(ix, cells, sh, ap, qb, o.data(),
                                                                 ws, scr, {1})
                     .is_ok()));
    out.insert(out.end(), o.begin(), o.end());
  }
  return {out, kept};
}

// Head 0's question query has only channel 0, where filler keys are 0 and the
// needle's is 1: every filler page bounds to 0 and the needle's page to the logit,
// so Quest reads it at any budget of two pages or more.
TEST(EvictQuest, NeedleModelReadsTheNeedlePage) {
  const std::size_t n_prompt = k_big ? 2048 : 512, n_seeds = k_big ? 8 : 3, page = 16;
  std::printf(
      "| quest (page %zu) | budget | needle read | answer right | top-1 | first div | KL |\n",
      page);
  for (std::size_t b : {n_prompt / 16, n_prompt / 8, n_prompt / 4, n_prompt / 2, 2 * n_prompt}) {
    quality_sum sum;
    for (std::uint64_t seed = 1; seed <= n_seeds; ++seed) {
      const needle_spec sp = table_spec(n_prompt, seed);
      const needle_model nm(sp);
      const synthetic s = nm.rows(nm.full_sequence());
      const run_result full = run_synthetic(s, n_prompt - 1, 32, s.n_tokens, evict::last_recent{});
      const auto [out, read] = run_quest(nm, s, b, page);
      const quality q = needle_quality(nm, full, out, read, 2 * needle_model::d);
      EXPECT_TRUE(q.needle_kept && q.answer_right) << "budget " << b << " seed " << seed;
      if (b >= n_prompt + sp.n_decode) {
        EXPECT_EQ(q.top1_agreement, 1.0) << "seed " << seed;
        EXPECT_LT(q.kl, 1e-9) << "seed " << seed;
      }
      sum.add(q);
    }
    std::printf("| quest | %zu ", b);
    sum.print(n_seeds);
  }
}

}  // namespace needle
