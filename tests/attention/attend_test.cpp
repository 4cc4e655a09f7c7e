// The fast attention kernel against the double-precision reference, typed over
// ISA x element type, on random scenarios: every window kind, soft-cap, GQA 1..8,
// d in {64, 80, 128, 256}, 0/1/many cells, several segments and streams, shared
// cells, misaligned views, decode (dot form) and prefill (GEMM form) tiles, split-K.
#include <cmath>
#include <random>
#include <sstream>
#include <string>
#include <type_traits>
#include <vector>

#include "attention/kv_builder.hpp"
#include "common/scoped_setting.hpp"
#include <gtest/gtest.h>

#include "mnemo/attention/attend.hpp"
#include "mnemo/attention/product_precision.hpp"
#include "mnemo/attention/reference.hpp"
#include "mnemo/simd/cpu.hpp"
#include "mnemo/simd/f16_widening.hpp"
#include "mnemo/simd/half.hpp"

namespace {

using namespace mnemo;
using mnemo_test::kv_stream;
using mnemo_test::stream_spec;

template <class Isa, class E>
struct combo {
  using isa = Isa;
  using elem = E;
};

template <class C>
class AttendTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if constexpr (!simd::is_compiled<typename C::isa>) {
      GTEST_SKIP() << C::isa::name << " is not compiled for this architecture";
    } else if (!simd::supported<typename C::isa>()) {
      GTEST_SKIP() << "this CPU has no " << C::isa::name;
    }
  }
};

#define MNEMO_COMBOS(I)                                                           \
  combo<simd::I, float>, combo<simd::I, dtype::f16>, combo<simd::I, dtype::bf16>, \
      combo<simd::I, dtype::block_q8_0>, combo<simd::I, dtype::block_q4_0>
using Combos = ::testing::Types<MNEMO_COMBOS(scalar), MNEMO_COMBOS(avx2), MNEMO_COMBOS(avx512),
                                MNEMO_COMBOS(neon)>;
#undef MNEMO_COMBOS
TYPED_TEST_SUITE(AttendTest, Combos);

/// One random call: shape, params, streams and tokens.
template <class E>
struct scenario {
  attention::shape sh;
  attention::params p;
  std::vector<kv_stream<E, E>> streams;
  std::vector<float> q;
  std::vector<pos_t> pos;
  std::vector<seq_id> seq;
  std::vector<std::uint32_t> stream;

  /// Forced values (0: drawn): tokens, KV heads, GQA group.
  scenario(std::uint32_t seed, std::size_t forced_tokens = 0, std::size_t forced_heads_kv = 0,
           std::size_t forced_group = 0) {
    std::mt19937 rng(seed);
    auto pick = [&](auto... xs) {
      const std::size_t v[] = {static_cast<std::size_t>(xs)...};
      return v[std::uniform_int_distribution<std::size_t>(0, sizeof...(xs) - 1)(rng)];
    };
    const std::size_t block = dtype::block_size_of<E>;
    do sh.d_k = pick(64, 80, 128, 256);
    while (sh.d_k % block != 0);
    sh.d_v = sh.d_k;
    sh.n_head_kv = forced_heads_kv ? forced_heads_kv : pick(1, 2, 2, 5);
    sh.n_head = sh.n_head_kv * (forced_group ? forced_group : pick(1, 2, 4, 8));
    const std::size_t n_streams = pick(1, 1, 2, 3);
    streams.resize(n_streams);
    std::size_t max_cells = 0;
    for (auto& st : streams) {
      stream_spec s;
      s.n_cells = pick(0, 1, 5, 64, 65, 130, 300, 700);
      s.n_segments = pick(1, 2, 3, 9);  // 9: short segments, blocks of a few cells
      s.pad = pick(0, 1, 5);
      s.misalign = pick(0, 1);
      s.with_owners = pick(0, 1) == 1;
      max_cells = std::max(max_cells, s.n_cells);
      std::uniform_int_distribution<int> coin(0, 9);
      st.build(
          s, sh, rng,
          [&](std::size_t c) { return coin(rng) == 0 ? pos_t{-1} : static_cast<pos_t>(c); },
          [&](std::size_t) {
            seq_set o;
            for (seq_id x = 0; x < 3; ++x)
              if (coin(rng) < 6) o.insert(x);
            return o;
          });
    }
    p.scale = 1.0f / std::sqrt(static_cast<float>(sh.d_k));
    p.causal = pick(0, 1, 1) == 1;
    p.window = static_cast<attention::window_kind>(pick(0, 1, 2, 3));
    p.n_swa = static_cast<pos_t>(pick(1, max_cells, max_cells + 7, 17) + (max_cells == 0));
    p.softcap = pick(0, 0, 1) ? 3.0f : 0.0f;

    const std::size_t n_tokens = forced_tokens ? forced_tokens : pick(1, 2, 5, 40);
    std::uniform_real_distribution<float> u(-1.0f, 1.0f);
    q.resize(n_tokens * sh.n_head * sh.d_k);
    for (auto& x : q) x = u(rng) * 2.0f;
    for (std::size_t t = 0; t < n_tokens; ++t) {
      stream.push_back(static_cast<std::uint32_t>(pick(0, 1, 2) % n_streams));
      seq.push_back(static_cast<seq_id>(pick(0, 1, 2)));
      pos.push_back(
          static_cast<pos_t>(std::uniform_int_distribution<std::size_t>(0, max_cells + 2)(rng)));
    }
  }

  attention::query_batch batch() const {
    return {q.data(), pos.size(), pos.data(), seq.data(), stream.data()};
  }
  std::vector<attention::kv_view> views() const {
    std::vector<attention::kv_view> v;
    for (const auto& s : streams) v.push_back(s.view());
    return v;
  }
  std::string describe() const {
    std::ostringstream os;
    os << "d=" << sh.d_k << " heads=" << sh.n_head << "/" << sh.n_head_kv
       << " tokens=" << pos.size() << " streams=" << streams.size() << " causal=" << p.causal
       << " window=" << attention::to_string(p.window) << " n_swa=" << p.n_swa
       << " softcap=" << p.softcap;
    return os.str();
  }
};

/// Index of the first |a - b| > tol (infinities equal only to themselves), or -1.
std::ptrdiff_t first_difference(const std::vector<float>& a, const std::vector<float>& b,
                                float tol) {
  for (std::size_t i = 0; i < a.size(); ++i)
    if (a[i] != b[i] && !(std::fabs(a[i] - b[i]) <= tol)) return static_cast<std::ptrdiff_t>(i);
  return -1;
}

constexpr float k_tol = 5e-5f;  // outputs are convex combinations of values in [-1, 1]

/// attend() on `sc` with `threads` against the reference: "" or the first difference.
template <class Isa, class E>
std::string compare_with_reference(const scenario<E>& sc, std::uint32_t seed, int threads,
                                   attention::workspace& ws) {
  const auto views = sc.views();
  const std::size_t n = sc.pos.size() * sc.sh.n_head * sc.sh.d_v;
  std::vector<float> ref(n), got(n, NAN);
  const status r = attention::reference_attend<E, E>(sc.sh, sc.p, sc.batch(), views, ref.data());
  if (!r.is_ok()) return "reference: " + r.to_string();
  attention::options opt;
  opt.n_threads = threads;
  const status s =
      attention::attend<Isa, E, E>(sc.sh, sc.p, sc.batch(), views, got.data(), ws, opt);
  if (!s.is_ok()) return s.to_string();
  const auto i = first_difference(ref, got, k_tol);
  if (i < 0) return "";
  std::ostringstream os;
  os << "seed " << seed << " (" << sc.describe() << "): first difference at " << i << ": reference "
     << ref[static_cast<std::size_t>(i)] << ", got " << got[static_cast<std::size_t>(i)];
  return os.str();
}

TYPED_TEST(AttendTest, MatchesReference) {
  using Isa = typename TypeParam::isa;
  using E = typename TypeParam::elem;
  if constexpr (simd::is_compiled<Isa>) {
    attention::workspace ws;  // reused across calls, as a decode loop does
    for (std::uint32_t seed = 1; seed <= 60; ++seed) {
      const scenario<E> sc(seed);
      ASSERT_EQ(compare_with_reference<Isa>(sc, seed, static_cast<int>(seed % 3) + 1, ws), "");
    }
  }
}

// One token at GQA 1, 2, 3, 4, 8 and 12 takes each decode read order (decode_steps.inl):
// address order at GQA 1; with K/V read in place groups of eight cells at GQA 2 and 3,
// K in groups and V head by head at GQA 4, head by head from GQA 8; q8_0/q4_0 head by
// head from GQA 2. AVX2 runs each twice: with widening f16 cheap (four-row x three-cell
// dot tiles from four rows), and costly (every item head by head, and the eight-row tiles
// at GQA 8 and 12, with four rows left at 12). 5 and 8 KV heads leave a remainder of the
// four-head dots and spread a group's prefetches unevenly and evenly over its heads;
// windows leave partial groups.
TYPED_TEST(AttendTest, DecodeReadOrdersMatchReference) {
  using Isa = typename TypeParam::isa;
  using E = typename TypeParam::elem;
  if constexpr (simd::is_compiled<Isa>) {
    constexpr std::size_t gqa[] = {1, 2, 3, 4, 8, 12};
    // Only AVX2 reads the setting; the other ISAs run once.
    const std::vector<simd::f16_widening> settings =
        std::is_same_v<Isa, simd::avx2>
            ? std::vector{simd::f16_widening::cheap, simd::f16_widening::costly}
            : std::vector{simd::current_f16_widening()};
    for (const simd::f16_widening widening : settings) {
      const mnemo_test::scoped_setting set(&simd::current_f16_widening, &simd::set_f16_widening,
                                           widening);
      attention::workspace ws;
      for (std::uint32_t seed = 200; seed < 260; ++seed) {
        const scenario<E> sc(seed, 1, seed % 2 == 0 ? 8 : 5, gqa[seed / 2 % 6]);
        ASSERT_EQ(compare_with_reference<Isa>(sc, seed, static_cast<int>(seed % 3) + 1, ws), "")
            << (widening == simd::f16_widening::costly ? "costly" : "cheap") << " widening";
      }
    }
  }
}

/// The model of bf16 products: `sc` with its scaled queries and its K and V values
/// rounded to bf16 (round to nearest even), K and V held as f32 rows, scale 1.
template <class E>
struct bf16_product_model {
  attention::params p;
  std::vector<float> q;
  std::vector<std::vector<float>> k, v;  // per stream, [cells, n_head_kv, d]
  std::vector<std::vector<attention::kv_segment>> segments;
  std::vector<attention::kv_view> views;

  static float round(float x) { return simd::bf16_bits_to_f32(simd::f32_to_bf16_bits(x)); }

  /// Rows [cells, n_head_kv, d] of f32 rounded to bf16 from rows of E (stride bytes apart).
  static void round_rows(const void* rows, std::size_t stride, std::size_t cells, std::size_t heads,
                         std::size_t d, float* dst) {
    const std::size_t head_bytes = dtype::blocks_in_row<E>(d) * sizeof(E);
    for (std::size_t j = 0; j < cells; ++j)
      for (std::size_t h = 0; h < heads; ++h) {
        float* out = dst + (j * heads + h) * d;
        dtype::decode_row<simd::scalar>(
            reinterpret_cast<const E*>(static_cast<const std::byte*>(rows) + j * stride +
                                       h * head_bytes),
            out, d);
        for (std::size_t i = 0; i < d; ++i) out[i] = round(out[i]);
      }
  }

  explicit bf16_product_model(const scenario<E>& sc) : p(sc.p) {
    p.scale = 1.0f;
    for (const float x : sc.q) q.push_back(round(x * sc.p.scale));
    const std::size_t kr = sc.sh.n_head_kv * sc.sh.d_k, vr = sc.sh.n_head_kv * sc.sh.d_v;
    for (const auto& st : sc.streams) {
      std::vector<float>& ks = k.emplace_back(st.pos.size() * kr);
      std::vector<float>& vs = v.emplace_back(st.pos.size() * vr);
      std::size_t cell = 0;
      for (auto& seg : segments.emplace_back(st.segments)) {
        round_rows(seg.k, seg.k_stride, seg.n_cells, sc.sh.n_head_kv, sc.sh.d_k,
                   ks.data() + cell * kr);
        round_rows(seg.v, seg.v_stride, seg.n_cells, sc.sh.n_head_kv, sc.sh.d_v,
                   vs.data() + cell * vr);
        seg.k = ks.data() + cell * kr;
        seg.v = vs.data() + cell * vr;
        seg.k_stride = kr * sizeof(float);
        seg.v_stride = vr * sizeof(float);
        cell += seg.n_cells;
      }
    }
    for (const auto& segs : segments) views.push_back(attention::kv_view{segs});
  }
};

// With bf16 products requested, decode items of 4 to 16 rows per KV head on a CPU with
// AVX512_BF16 (AVX-512 kernels, K and V as f16 or bf16) equal the double-precision
// reference over bf16-rounded queries, keys and values, within the rounding of the
// probabilities to bf16 (relative 2^-9, values in [-1, 1]); bf16_dots_test checks the
// tiles exactly. Every other ISA, element type, CPU, and fewer rows keep f32 products
// and equal the plain reference. One token per sequence at GQA 2, 3, 4, 8 and 12 takes
// every read order (GQA 4: K in groups in bf16); d 80 leaves half a bf16 vector per row.
TYPED_TEST(AttendTest, Bf16ProductsMatchTheirModel) {
  using Isa = typename TypeParam::isa;
  using E = typename TypeParam::elem;
  if constexpr (simd::is_compiled<Isa>) {
    constexpr std::size_t gqa[] = {2, 3, 4, 8, 12};
    const bool bf16_cpu = std::is_same_v<Isa, simd::avx512> &&
                          attention::bf16_products_supported() &&
                          (std::is_same_v<E, dtype::f16> || std::is_same_v<E, dtype::bf16>);
    const mnemo_test::scoped_setting set(&attention::current_product_precision,
                                         &attention::set_product_precision,
                                         attention::product_precision::bf16);
    attention::workspace ws;
    std::size_t differs_from_f32[5] = {};  // seeds per GQA whose outputs f32 would not give
    for (std::uint32_t seed = 300; seed < 340; ++seed) {
      const std::size_t group = gqa[seed / 2 % 5];
      const bool rounds = bf16_cpu && group >= 4;
      const scenario<E> sc(seed, 1, seed % 2 == 0 ? 8 : 5, group);
      const auto views = sc.views();
      const std::size_t n = sc.pos.size() * sc.sh.n_head * sc.sh.d_v;
      std::vector<float> f32_ref(n), ref(n), got(n, NAN);
      ASSERT_TRUE((attention::reference_attend<E, E>(sc.sh, sc.p, sc.batch(), views, f32_ref.data())
                       .is_ok()));
      if (rounds) {
        const bf16_product_model<E> m(sc);
        const attention::query_batch qb{m.q.data(), sc.pos.size(), sc.pos.data(), sc.seq.data(),
                                        sc.stream.data()};
        ASSERT_TRUE((attention::reference_attend<float, float>(sc.sh, m.p, qb, m.views, ref.data())
                         .is_ok()));
      } else {
        ref = f32_ref;
      }
      attention::options opt;
      opt.n_threads = static_cast<int>(seed % 3) + 1;
      ASSERT_TRUE((attention::attend<Isa, E, E>(sc.sh, sc.p, sc.batch(), views, got.data(), ws, opt)
                       .is_ok()));
      const auto i = first_difference(ref, got, rounds ? 4e-3f : k_tol);
      ASSERT_EQ(i, -1) << "seed " << seed << " (" << sc.describe() << ", "
                       << (rounds ? "bf16" : "f32") << " products): first difference at " << i
                       << ": reference " << ref[static_cast<std::size_t>(i)] << ", got "
                       << got[static_cast<std::size_t>(i)];
      differs_from_f32[seed / 2 % 5] += rounds && first_difference(f32_ref, got, k_tol) >= 0;
    }
    // The rounding is visible at every GQA from 4: f32 products would not give these
    // outputs.
    for (std::size_t i = 0; i < 5; ++i) {
      if (bf16_cpu && gqa[i] >= 4) {
        EXPECT_GT(differs_from_f32[i], 2u) << "GQA " << gqa[i];
      }
    }
  }
}

// The export from the attention pass's stored logits and, with a store too small, from
// logits computed again: mass, lse and logits against the double-precision reference.
TYPED_TEST(AttendTest, ExportsMassLogSumExpAndLogits) {
  using Isa = typename TypeParam::isa;
  using E = typename TypeParam::elem;
  if constexpr (simd::is_compiled<Isa>) {
    for (const std::size_t max_stored : {std::size_t{1} << 24, std::size_t{0}})
      for (std::uint32_t seed = 100; seed < 130; ++seed) {
        const scenario<E> sc(seed);
        const auto views = sc.views();
        const std::size_t nt = sc.pos.size(), g = sc.sh.group(), H = sc.sh.n_head;
        std::vector<std::uint8_t> rows(nt);
        std::vector<std::uint32_t> logit_row(nt, 0), rows_in_stream(views.size(), 0);
        for (std::size_t t = 0; t < nt; ++t) {
          rows[t] = (t + seed) % 3 != 0;
          if (rows[t]) logit_row[t] = rows_in_stream[sc.stream[t]]++;
        }
        std::vector<std::vector<float>> mass_ref, mass_got, lg_ref, lg_got;
        std::vector<float*> pr, pg, lr, lgp;
        for (std::size_t s = 0; s < views.size(); ++s) {
          const std::size_t n = views[s].n_cells();
          mass_ref.emplace_back(sc.sh.n_head_kv * n + 1, 0.0f);
          mass_got.emplace_back(sc.sh.n_head_kv * n + 1, 0.0f);
          // A stream's logits only every other seed: the sink then skips the others.
          const bool wants_logits = (seed + s) % 2 == 0;
          lg_ref.emplace_back(rows_in_stream[s] * H * n + 1, -INFINITY);
          lg_got.emplace_back(lg_ref.back());
          lr.push_back(wants_logits ? lg_ref[s].data() : nullptr);
          lgp.push_back(wants_logits ? lg_got[s].data() : nullptr);
        }
        for (std::size_t i = 0; i < views.size(); ++i) {
          pr.push_back(mass_ref[i].data());
          pg.push_back(mass_got[i].data());
        }
        std::vector<float> lse_ref(nt * H), lse_got(nt * H);
        std::vector<float> out_ref(nt * H * sc.sh.d_v), out_got(out_ref.size());
        attention::mass_sink sr{pr, rows.data(), lse_ref.data(), lr, logit_row.data()};
        attention::mass_sink sg{pg, rows.data(), lse_got.data(), lgp, logit_row.data()};
        ASSERT_TRUE(
            (attention::reference_attend<E, E>(sc.sh, sc.p, sc.batch(), views, out_ref.data(), sr)
                 .is_ok()));
        attention::options opt;
        opt.n_threads = 2;
        attention::workspace ws;
        ws.max_stored_logits = max_stored;
        ASSERT_TRUE((attention::attend<Isa, E, E>(sc.sh, sc.p, sc.batch(), views, out_got.data(),
                                                  ws, opt, sg)
                         .is_ok()));
        const std::string where = "seed " + std::to_string(seed) + " (" + sc.describe() +
                                  ") stored logits up to " + std::to_string(max_stored);
        for (std::size_t i = 0; i < lse_ref.size(); ++i) {
          if (std::isinf(lse_ref[i])) {
            ASSERT_TRUE(std::isinf(lse_got[i]) && lse_got[i] < 0) << where << " row " << i;
          } else {
            ASSERT_NEAR(lse_ref[i], lse_got[i], 1e-4f * (1.0f + std::fabs(lse_ref[i])))
                << where << " lse of row " << i;
          }
        }
        for (std::size_t s = 0; s < views.size(); ++s) {
          const auto i = first_difference(mass_ref[s], mass_got[s], 1e-4f);
          ASSERT_EQ(i, -1) << where << " stream " << s << " mass differs at " << i << ": "
                           << mass_ref[s][i] << " vs " << mass_got[s][i];
          const auto j = first_difference(lg_ref[s], lg_got[s], 1e-4f);
          ASSERT_EQ(j, -1) << where << " stream " << s << " logit differs at " << j << ": "
                           << lg_ref[s][j] << " vs " << lg_got[s][j];
          // Every contributing row that attends something adds exactly 1 per query head.
          for (std::size_t hk = 0; hk < sc.sh.n_head_kv; ++hk) {
            double expect = 0, sum = 0;
            for (std::size_t t = 0; t < nt; ++t)
              for (std::size_t hh = 0; hh < g; ++hh)
                if (sc.stream[t] == s && rows[t] && !std::isinf(lse_ref[t * H + hk * g + hh]))
                  expect += 1;
            for (std::size_t c = 0; c < views[s].n_cells(); ++c)
              sum += mass_got[s][hk * views[s].n_cells() + c];
            ASSERT_NEAR(sum, expect, 1e-3 * (1 + expect))
                << where << " stream " << s << " head " << hk;
          }
        }
      }
  }
}

TYPED_TEST(AttendTest, EmptyRowsAreZeroNotNan) {
  using Isa = typename TypeParam::isa;
  using E = typename TypeParam::elem;
  if constexpr (simd::is_compiled<Isa>) {
    scenario<E> sc(7, 3);
    for (auto& p : sc.pos) p = 0;
    sc.p.causal = true;
    for (auto& st : sc.streams)
      for (auto& cp : st.pos) cp = cp < 0 ? cp : cp + 1;  // every cell is in the future
    std::vector<float> out(sc.pos.size() * sc.sh.n_head * sc.sh.d_v, NAN);
    ASSERT_TRUE(
        (attention::attend<Isa, E, E>(sc.sh, sc.p, sc.batch(), sc.views(), out.data()).is_ok()));
    for (std::size_t i = 0; i < out.size(); ++i) ASSERT_EQ(out[i], 0.0f) << "element " << i;
  }
}

TYPED_TEST(AttendTest, RejectsMalformedCalls) {
  using Isa = typename TypeParam::isa;
  using E = typename TypeParam::elem;
  if constexpr (simd::is_compiled<Isa>) {
    scenario<E> sc(3, 2);
    std::vector<float> out(sc.pos.size() * sc.sh.n_head * sc.sh.d_v);
    auto run = [&](attention::shape sh, attention::params p, std::vector<std::uint32_t> stream,
                   std::vector<seq_id> seq) {
      attention::query_batch qb{sc.q.data(), sc.pos.size(), sc.pos.data(), seq.data(),
                                stream.data()};
      return attention::attend<Isa, E, E>(sh, p, qb, sc.views(), out.data());
    };
    auto bad_sh = sc.sh;
    bad_sh.n_head_kv = sc.sh.n_head + 1;  // n_head is not a multiple of it
    EXPECT_EQ(run(bad_sh, sc.p, sc.stream, sc.seq).code(), status_code::invalid_argument);
    auto bad_p = sc.p;
    bad_p.window = attention::window_kind::standard;
    bad_p.n_swa = 0;
    EXPECT_EQ(run(sc.sh, bad_p, sc.stream, sc.seq).code(), status_code::invalid_argument);
    EXPECT_EQ(run(sc.sh, sc.p, {99, 0}, sc.seq).code(), status_code::out_of_range);
    EXPECT_EQ(run(sc.sh, sc.p, sc.stream, {-1, 0}).code(), status_code::out_of_range);
    EXPECT_EQ(run(sc.sh, sc.p, sc.stream, {256, 0}).code(), status_code::out_of_range);
  }
}

}  // namespace
