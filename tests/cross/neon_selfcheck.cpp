// AArch64 self-check, cross-compiled and run under qemu by tests/cross_aarch64.cmake:
// simd::ops<neon> against ops<scalar> (and std::) for every op; the dtype row kernels,
// attention and weight products for neon against scalar / double references. Not a
// GoogleTest binary (no aarch64 gtest here): prints one line per failure and
// "neon selfcheck: PASS" at the end.
#include <algorithm>
#include <bit>
#include <cfloat>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "mnemo/attention/attend.hpp"
#include "mnemo/attention/reference.hpp"
#include "mnemo/dtype/weight_encode.hpp"
#include "mnemo/model/matmul.hpp"
#include "mnemo/simd/simd.hpp"
#if __has_include("mnemo/dtype/dtype.hpp")
#include "mnemo/dtype/dtype.hpp"
#define MNEMO_SELFCHECK_DTYPE 1
#endif

#if !defined(MNEMO_ARCH_AARCH64)
#error "neon_selfcheck.cpp is built for AArch64 only"
#endif

namespace {

namespace simd = mnemo::simd;
using N = simd::ops<simd::neon>;
using S = simd::ops<simd::scalar>;
constexpr std::size_t L = N::lanes;
constexpr std::uint64_t k_seed = 0x6d6e656d6f5eedull;

int g_failures = 0;

#define CHECK(cond, ...)                                          \
  do {                                                            \
    if (!(cond)) {                                                \
      ++g_failures;                                               \
      std::printf("FAIL %s:%d: %s: ", __FILE__, __LINE__, #cond); \
      std::printf(__VA_ARGS__);                                   \
      std::printf("\n");                                          \
      return;                                                     \
    }                                                             \
  } while (0)

std::uint32_t bits(float x) { return std::bit_cast<std::uint32_t>(x); }
float from_bits(std::uint32_t b) { return std::bit_cast<float>(b); }

void check_load_store() {
  alignas(64) float buf[64];
  for (std::size_t off = 0; off <= 3; ++off) {
    for (std::size_t n = 0; n < L; ++n) {
      std::fill(std::begin(buf), std::end(buf), 99.0f);
      float* p = buf + 8 + off;
      for (std::size_t i = 0; i < n; ++i) p[i] = static_cast<float>(i + 1);
      float out[L];
      N::store(out, N::load_partial(p, n));
      for (std::size_t i = 0; i < L; ++i)
        CHECK(out[i] == (i < n ? static_cast<float>(i + 1) : 0.0f), "load_partial n=%zu lane %zu",
              n, i);
      std::fill(std::begin(buf), std::end(buf), -7.0f);
      N::store_partial(p, N::set1(5.0f), n);
      for (std::size_t i = 0; i < L + 4; ++i)
        CHECK(p[i] == (i < n ? 5.0f : -7.0f), "store_partial n=%zu element %zu", n, i);
      CHECK(p[-1] == -7.0f, "store_partial wrote before the pointer");
    }
    float* p = buf + 8 + off;
    for (std::size_t i = 0; i < L; ++i) p[i] = static_cast<float>(i) * 0.5f;
    float out[L + 1] = {};
    out[L] = -1.0f;
    N::store(out, N::load(p));
    for (std::size_t i = 0; i < L; ++i) CHECK(out[i] == p[i], "load/store lane %zu", i);
    CHECK(out[L] == -1.0f, "store wrote past the vector");
    N::store(out, N::zero());
    for (std::size_t i = 0; i < L; ++i) CHECK(bits(out[i]) == 0u, "zero lane %zu", i);
  }
}

void check_arithmetic() {
  const float inf = std::numeric_limits<float>::infinity();
  const float nan = std::numeric_limits<float>::quiet_NaN();
  std::vector<float> a, b;
  std::mt19937_64 rng(k_seed);
  std::uniform_real_distribution<float> dist(-100.0f, 100.0f);
  for (int i = 0; i < 4096; ++i) a.push_back(dist(rng)), b.push_back(dist(rng));
  const float specials[] = {0.0f, -0.0f, 1.0f, -1.0f, inf, -inf, nan, FLT_MIN, FLT_MAX};
  for (float x : specials)
    for (float y : specials) a.push_back(x), b.push_back(y);
  a.resize((a.size() + L - 1) / L * L, 0.0f);
  b.resize(a.size(), 0.0f);
  auto same = [](float x, float y) { return bits(x) == bits(y) || (x != x && y != y); };
  for (std::size_t i = 0; i < a.size(); i += L) {
    const N::vf va = N::load(&a[i]), vb = N::load(&b[i]);
    float add[L], sub[L], mul[L], mx[L], mn[L], fma[L];
    N::store(add, N::add(va, vb));
    N::store(sub, N::sub(va, vb));
    N::store(mul, N::mul(va, vb));
    N::store(mx, N::max(va, vb));
    N::store(mn, N::min(va, vb));
    N::store(fma, N::fma(va, vb, va));
    for (std::size_t j = 0; j < L; ++j) {
      const float x = a[i + j], y = b[i + j];
      CHECK(same(add[j], S::add(x, y)), "add(%a, %a) = %a", x, y, add[j]);
      CHECK(same(sub[j], S::sub(x, y)), "sub(%a, %a) = %a", x, y, sub[j]);
      CHECK(same(mul[j], S::mul(x, y)), "mul(%a, %a) = %a", x, y, mul[j]);
      CHECK(bits(mx[j]) == bits(S::max(x, y)), "max(%a, %a) = %a", x, y, mx[j]);
      CHECK(bits(mn[j]) == bits(S::min(x, y)), "min(%a, %a) = %a", x, y, mn[j]);
      CHECK(same(fma[j], std::fma(x, y, x)), "fma(%a, %a, %a) = %a", x, y, x, fma[j]);
    }
  }
  for (int t = 0; t < 2000; ++t) {
    float v[L];
    double sum = 0.0, abs_sum = 0.0;
    for (float& x : v) x = dist(rng), sum += x, abs_sum += std::fabs(x);
    const float got = N::reduce_add(N::load(v));
    CHECK(std::fabs(got - sum) <= L * FLT_EPSILON * abs_sum, "reduce_add trial %d", t);
    CHECK(N::reduce_max(N::load(v)) == *std::max_element(v, v + L), "reduce_max trial %d", t);
  }
  N::vf rows[L];
  for (std::size_t r = 0; r < L; ++r) {
    float row[L];
    for (std::size_t c = 0; c < L; ++c) row[c] = static_cast<float>(r * L + c);
    rows[r] = N::load(row);
  }
  N::transpose(rows);
  for (std::size_t c = 0; c < L; ++c) {
    float col[L];
    N::store(col, rows[c]);
    for (std::size_t r = 0; r < L; ++r)
      CHECK(col[r] == static_cast<float>(r * L + c), "transpose: [%zu][%zu] = %g", c, r, col[r]);
  }
}

void check_exp() {
  std::vector<float> x;
  for (std::uint64_t b = 0; b < (1ull << 32); b += 4093) {
    const float f = from_bits(static_cast<std::uint32_t>(b));
    if (f >= -87.0f && f <= 88.0f) x.push_back(f);
  }
  for (float f : {0.0f, 88.7f, 88.7228f, -87.29f}) x.push_back(f);
  x.resize((x.size() + L - 1) / L * L, 1.0f);
  for (std::size_t i = 0; i < x.size(); i += L) {
    float out[L];
    N::store(out, N::exp(N::load(&x[i])));
    for (std::size_t j = 0; j < L; ++j) {
      const double want = std::exp(static_cast<double>(x[i + j]));
      const double rel = std::fabs(out[j] - want) / want;
      CHECK(rel <= 2e-7, "exp(%a) = %a, want %a, rel %g", x[i + j], out[j], want, rel);
    }
  }
  const float inf = std::numeric_limits<float>::infinity();
  const float in[] = {
      -inf, inf, std::numeric_limits<float>::quiet_NaN(), -87.31f, -100.0f, 89.0f, FLT_MAX, 0.0f};
  const float want[] = {0.0f, inf, 0.0f /* NaN */, 0.0f, 0.0f, inf, inf, 1.0f};
  for (std::size_t i = 0; i < std::size(in); i += L) {
    float out[L];
    N::store(out, N::exp(N::load(&in[i])));
    for (std::size_t j = 0; j < L; ++j) {
      if (std::isnan(in[i + j])) {
        CHECK(std::isnan(out[j]), "exp(NaN) = %a", out[j]);
      } else {
        CHECK(bits(out[j]) == bits(want[i + j]), "exp(%a) = %a, want %a", in[i + j], out[j],
              want[i + j]);
      }
    }
  }
}

void check_half() {
  for (std::uint32_t h = 0; h < 65536; h += L) {
    std::uint16_t in[L];
    for (std::size_t j = 0; j < L; ++j) in[j] = static_cast<std::uint16_t>(h + j);
    float f[L], b[L];
    N::store(f, N::load_f16(in));
    N::store(b, N::load_bf16(in));
    std::uint32_t w[L];
    for (std::size_t j = 0; j < L; ++j) w[j] = std::uint32_t{in[j]} << 16 | (0xffffu - in[j]);
    typename N::vf lo, hi;
    N::load_bf16_pairs(w, lo, hi);
    float pl[L], ph[L];
    N::store(pl, lo);
    N::store(ph, hi);
    for (std::size_t j = 0; j < L; ++j) {
      CHECK(bits(f[j]) == bits(simd::f16_bits_to_f32(in[j])), "load_f16(0x%04x) = %a", in[j], f[j]);
      CHECK(bits(b[j]) == bits(simd::bf16_bits_to_f32(in[j])), "load_bf16(0x%04x) = %a", in[j],
            b[j]);
      CHECK(bits(ph[j]) == bits(b[j]) &&
                bits(pl[j]) ==
                    bits(simd::bf16_bits_to_f32(static_cast<std::uint16_t>(0xffffu - in[j]))),
            "load_bf16_pairs(0x%08x) = %a, %a", w[j], pl[j], ph[j]);
    }
  }
  std::vector<float> x;
  for (std::uint32_t h = 0; h < 0x7c00u; ++h) {  // f16 values, the ties between, +-1 ulp
    const float v = simd::f16_bits_to_f32(static_cast<std::uint16_t>(h));
    const float mid = (v + simd::f16_bits_to_f32(static_cast<std::uint16_t>(h + 1))) * 0.5f;
    for (float f : {v, mid, std::nextafter(mid, 0.0f), std::nextafter(mid, 1e9f)})
      x.push_back(f), x.push_back(-f);
  }
  std::mt19937_64 rng(k_seed + 1);
  for (int i = 0; i < (1 << 17); ++i) {
    const auto r = static_cast<std::uint32_t>(rng());
    for (std::uint32_t lo : {r & 0xffffu, 0x8000u, 0x7fffu, 0x8001u})
      x.push_back(from_bits((r & 0xffff0000u) | lo));
  }
  for (std::uint32_t b : {0x00000001u, 0x007fffffu, 0x33000000u, 0x477ff000u, 0x7f7fffffu,
                          0x7f800000u, 0x7f800001u, 0x7fc00000u, 0x7fffffffu, 0xff801fffu})
    x.push_back(from_bits(b));
  x.resize((x.size() + L - 1) / L * L, 0.0f);
  for (std::size_t i = 0; i < x.size(); i += L) {
    std::uint16_t h[L], b[L];
    N::store_f16(h, N::load(&x[i]));
    N::store_bf16(b, N::load(&x[i]));
    for (std::size_t j = 0; j < L; ++j) {
      CHECK(h[j] == simd::f32_to_f16_bits(x[i + j]), "store_f16(%a = 0x%08x) = 0x%04x, want 0x%04x",
            x[i + j], bits(x[i + j]), h[j], simd::f32_to_f16_bits(x[i + j]));
      CHECK(b[j] == simd::f32_to_bf16_bits(x[i + j]),
            "store_bf16(%a = 0x%08x) = 0x%04x, want 0x%04x", x[i + j], bits(x[i + j]), b[j],
            simd::f32_to_bf16_bits(x[i + j]));
    }
  }
}

void check_dispatch() {
  CHECK(simd::supported<simd::neon>(), "getauxval(AT_HWCAP) lacks HWCAP_ASIMD");
  CHECK(simd::best_supported_isa_name() == "neon", "best ISA is %.*s",
        static_cast<int>(simd::best_supported_isa_name().size()),
        simd::best_supported_isa_name().data());
  CHECK(simd::dispatch([]<class Isa>(Isa) { return simd::id_of<Isa>; }) == simd::isa_id::neon,
        "dispatch did not pick neon");
}

#if defined(MNEMO_SELFCHECK_DTYPE)
namespace dt = mnemo::dtype;

/// neon against scalar for one storage type: encode, decode, dot, axpy, dot_rows.
/// Quantised types may round a scale differently in the last bit, so decoded values
/// are compared within one quantisation step.
template <class E>
void check_dtype_rows(const char* name, float step) {
  constexpr std::size_t n = 256, rows = 3;
  std::mt19937_64 rng(k_seed + 2);
  std::uniform_real_distribution<float> dist(-2.0f, 2.0f);
  std::vector<float> src(n * rows), x(n);
  for (float& v : src) v = dist(rng);
  for (float& v : x) v = dist(rng);
  const std::size_t elems = n / dt::block_size_of<E>;
  std::vector<E> en(elems * rows), es(elems * rows);
  for (std::size_t r = 0; r < rows; ++r) {
    dt::encode_row<simd::neon>(&src[r * n], &en[r * elems], n);
    dt::encode_row<simd::scalar>(&src[r * n], &es[r * elems], n);
  }
  std::vector<float> dn(n), ds(n);
  dt::decode_row<simd::neon>(en.data(), dn.data(), n);
  dt::decode_row<simd::scalar>(es.data(), ds.data(), n);
  for (std::size_t i = 0; i < n; ++i)
    CHECK(std::fabs(dn[i] - ds[i]) <= step, "%s decode element %zu: neon %a scalar %a", name, i,
          dn[i], ds[i]);
  double abs_sum = 0.0;
  for (std::size_t i = 0; i < n; ++i) abs_sum += std::fabs(x[i] * ds[i]);
  // Same encoded row for both, so only the summation order differs.
  const float dot_n = dt::dot<simd::neon>(x.data(), es.data(), n);
  const float dot_s = dt::dot<simd::scalar>(x.data(), es.data(), n);
  CHECK(std::fabs(dot_n - dot_s) <= 1e-5 * abs_sum + 1e-6, "%s dot: neon %a scalar %a", name, dot_n,
        dot_s);
  std::vector<float> yn(n, 1.0f), ys(n, 1.0f);
  dt::axpy<simd::neon>(0.5f, es.data(), yn.data(), n);
  dt::axpy<simd::scalar>(0.5f, es.data(), ys.data(), n);
  for (std::size_t i = 0; i < n; ++i)
    CHECK(std::fabs(yn[i] - ys[i]) <= 1e-6f * (1.0f + std::fabs(ys[i])),
          "%s axpy element %zu: neon %a scalar %a", name, i, yn[i], ys[i]);
  if constexpr (dt::block_size_of < E >> 1) {  // the in-register decode of one vector
    for (std::size_t i = 0; i < n; i += 4) {
      float lanes[4];
      dt::row_kernels<simd::neon>::store_lanes(en.data(), i, lanes);
      for (std::size_t l = 0; l < 4; ++l)
        CHECK(std::memcmp(&lanes[l], &dn[i + l], sizeof(float)) == 0,
              "%s load_lanes element %zu: %a, decode %a", name, i + l, lanes[l], dn[i + l]);
    }
  }
  float out[rows];
  dt::dot_rows<simd::neon>(x.data(), es.data(), elems * sizeof(E), rows, n, out);
  for (std::size_t r = 0; r < rows; ++r) {
    const float want = dt::dot<simd::scalar>(x.data(), &es[r * elems], n);
    CHECK(std::fabs(out[r] - want) <= 1e-4f * (1.0f + std::fabs(want)),
          "%s dot_rows row %zu: neon %a scalar %a", name, r, out[r], want);
  }
}

void check_dtype() {
  check_dtype_rows<float>("f32", 0.0f);
  check_dtype_rows<dt::f16>("f16", 0.0f);
  check_dtype_rows<dt::bf16>("bf16", 0.0f);
  check_dtype_rows<dt::block_q8_0>("q8_0", 2.0f / 127.0f);
  check_dtype_rows<dt::block_q4_0>("q4_0", 2.0f / 8.0f);
}
#else
// Without include/mnemo/dtype/dtype.hpp (a tree that predates the dtype layer) only
// the simd layer is checked; with it, check_dtype_rows above runs for every type.
void check_dtype() { std::printf("note: mnemo/dtype/dtype.hpp not found, dtype not checked\n"); }
#endif

// Attention on NEON against the double-precision reference: one decode-like and
// one prefill-like call (dot form and GEMM form), f16, q8_0 and q4_0 K/V, GQA 1 (decode
// in address order), GQA 2 (f16: decode in groups of cells) and GQA 4 (f16: K in
// groups, V head by head; q8_0/q4_0 head by head).
template <class E>
void check_attention_type(const char* name, std::size_t n_head_kv) {
  namespace at = mnemo::attention;
  const at::shape sh{8, n_head_kv, 64, 64};
  const std::size_t n_cells = 150, row = n_head_kv * dt::blocks_in_row<E>(64);
  std::vector<E> k(n_cells * row), v(n_cells * row);
  std::vector<float> tmp(n_head_kv * 64);
  std::uint32_t state = 12345;
  auto rnd = [&] {
    state = state * 1664525u + 1013904223u;
    return static_cast<float>(state >> 8) / 8388608.0f - 1.0f;
  };
  for (std::size_t c = 0; c < n_cells; ++c) {
    for (auto& x : tmp) x = rnd();
    dt::row_kernels<simd::scalar>::encode(tmp.data(), k.data() + c * row, n_head_kv * 64);
    for (auto& x : tmp) x = rnd();
    dt::row_kernels<simd::scalar>::encode(tmp.data(), v.data() + c * row, n_head_kv * 64);
  }
  std::vector<mnemo::pos_t> cell_pos(n_cells);
  for (std::size_t c = 0; c < n_cells; ++c) cell_pos[c] = static_cast<mnemo::pos_t>(c);
  const at::kv_segment seg{k.data(),        v.data(), row * sizeof(E), row * sizeof(E),
                           cell_pos.data(), nullptr,  n_cells};
  const at::kv_view view{{&seg, 1}};
  for (std::size_t n_tokens : {std::size_t{1}, std::size_t{40}}) {
    std::vector<float> q(n_tokens * 8 * 64), out(q.size()), ref(q.size());
    for (auto& x : q) x = rnd();
    std::vector<mnemo::pos_t> pos(n_tokens);
    std::vector<mnemo::seq_id> seq(n_tokens, 0);
    for (std::size_t t = 0; t < n_tokens; ++t)
      pos[t] = static_cast<mnemo::pos_t>(n_cells - n_tokens + t);
    const at::query_batch qb{q.data(), n_tokens, pos.data(), seq.data(), nullptr};
    at::params p;
    p.scale = 0.125f;
    CHECK((at::attend<simd::neon, E, E>(sh, p, qb, {&view, 1}, out.data()).is_ok()), "%s attend",
          name);
    CHECK((at::reference_attend<E, E>(sh, p, qb, {&view, 1}, ref.data()).is_ok()), "%s reference",
          name);
    for (std::size_t i = 0; i < out.size(); ++i)
      CHECK(std::fabs(out[i] - ref[i]) <= 5e-5f,
            "%s attention %zu KV heads, %zu tokens, element %zu: neon %g reference %g", name,
            n_head_kv, n_tokens, i, out[i], ref[i]);
  }
}

void check_attention() {
  for (std::size_t n_head_kv : {std::size_t{2}, std::size_t{4}, std::size_t{8}}) {
    check_attention_type<dt::f16>("f16", n_head_kv);
    check_attention_type<dt::block_q8_0>("q8_0", n_head_kv);
    check_attention_type<dt::block_q4_0>("q4_0", n_head_kv);
  }
}

// Weight products on NEON (decode GEMV, few-token tiles, packed prefill GEMM) against a
// double-precision product of the decoded weights, every storage type.
template <class E>
void check_products_type(const char* name) {
  std::uint32_t state = 777;
  auto rnd = [&] {
    state = state * 1664525u + 1013904223u;
    return static_cast<float>(state >> 8) / 8388608.0f - 1.0f;
  };
  for (std::size_t n_in : {std::size_t{32}, std::size_t{320}})
    for (std::size_t n_out : {std::size_t{1}, std::size_t{7}, std::size_t{65}})
      for (std::size_t n_tok :
           {std::size_t{1}, std::size_t{3}, std::size_t{64}, std::size_t{130}}) {
        const std::size_t rb = dt::row_bytes_of<E>(n_in);
        std::vector<E> rows(rb / sizeof(E) * n_out);
        std::vector<float> row(n_in), dec(n_in * n_out), x(n_tok * n_in), y(n_tok * n_out);
        for (std::size_t r = 0; r < n_out; ++r) {
          for (auto& v : row) v = rnd();
          E* d = rows.data() + r * (rb / sizeof(E));
          dt::row_kernels<simd::scalar>::encode(row.data(), d, n_in);
          dt::row_kernels<simd::scalar>::decode(d, dec.data() + r * n_in, n_in);
        }
        for (auto& v : x) v = rnd();
        mnemo::model::weight w;
        w.type = dt::element_type_of<E>;
        w.n_in = n_in;
        w.n_out = n_out;
        w.row_bytes = rb;
        w.data = reinterpret_cast<const std::byte*>(rows.data());
        mnemo::model::matmul_workspace ws;
        mnemo::model::mul_mat<simd::neon>(w, x.data(), n_in, n_tok, y.data(), n_out, 1, ws);
        if constexpr (dt::element_traits<E>::block_size > 1) {
          // quantised weights multiply x rounded to q8_0 (as ggml does)
          for (std::size_t b = 0; b < x.size(); b += 32) {
            dt::block_q8_0 q;
            dt::row_kernels<simd::scalar>::encode(x.data() + b, &q, 32);
            dt::row_kernels<simd::scalar>::decode(&q, x.data() + b, 32);
          }
        }
        for (std::size_t t = 0; t < n_tok; ++t)
          for (std::size_t o = 0; o < n_out; ++o) {
            double want = 0, mag = 0;
            for (std::size_t i = 0; i < n_in; ++i) {
              const double p = static_cast<double>(x[t * n_in + i]) * dec[o * n_in + i];
              want += p;
              mag += std::fabs(p);
            }
            CHECK(std::fabs(y[t * n_out + o] - want) <= (n_in + 4) * mag * 0x1p-24 + 1e-30,
                  "%s mul_mat [%zu -> %zu] x %zu tokens at (%zu, %zu): neon %g reference %g", name,
                  n_in, n_out, n_tok, t, o, y[t * n_out + o], want);
          }
      }
}

void check_products() {
  check_products_type<float>("f32");
  check_products_type<dt::f16>("f16");
  check_products_type<dt::bf16>("bf16");
  check_products_type<dt::block_q8_0>("q8_0");
  check_products_type<dt::block_q4_0>("q4_0");
}

// The weight-only quantised types: mul_mat<neon> gives mul_mat<scalar>'s floats bit for
// bit (exact integer sums, a shared f32 part), weights encoded by the reference
// quantisers.
template <class E>
void check_weight_only_type(const char* name) {
  std::uint32_t state = 4242;
  auto rnd = [&] {
    state = state * 1664525u + 1013904223u;
    return static_cast<float>(state >> 8) / 8388608.0f - 1.0f;
  };
  const std::size_t n_in = 512, n_out = 9;
  const std::size_t rb = dt::row_bytes_of<E>(n_in);
  std::vector<E> rows(rb / sizeof(E) * n_out);
  std::vector<float> row(n_in);
  for (std::size_t r = 0; r < n_out; ++r) {
    for (auto& v : row) v = rnd();
    dt::encode_weight_row(row.data(), rows.data() + r * (rb / sizeof(E)), n_in);
  }
  mnemo::model::weight w;
  w.type = dt::element_type_of<E>;
  w.n_in = n_in;
  w.n_out = n_out;
  w.row_bytes = rb;
  w.data = reinterpret_cast<const std::byte*>(rows.data());
  for (std::size_t n_tok : {std::size_t{1}, std::size_t{5}, std::size_t{50}}) {
    std::vector<float> x(n_tok * n_in), y(n_tok * n_out), ref(n_tok * n_out);
    for (auto& v : x) v = rnd();
    mnemo::model::matmul_workspace ws;
    mnemo::model::mul_mat<simd::neon>(w, x.data(), n_in, n_tok, y.data(), n_out, 2, ws);
    mnemo::model::mul_mat<simd::scalar>(w, x.data(), n_in, n_tok, ref.data(), n_out, 1, ws);
    for (std::size_t i = 0; i < y.size(); ++i)
      CHECK(bits(y[i]) == bits(ref[i]), "%s mul_mat, %zu tokens, output %zu: neon %g scalar %g",
            name, n_tok, i, y[i], ref[i]);
  }
}

void check_weight_only_products() {
  check_weight_only_type<dt::block_q4_1>("q4_1");
  check_weight_only_type<dt::block_q5_0>("q5_0");
  check_weight_only_type<dt::block_q5_1>("q5_1");
  check_weight_only_type<dt::block_q2_K>("q2_K");
  check_weight_only_type<dt::block_q3_K>("q3_K");
  check_weight_only_type<dt::block_q4_K>("q4_K");
  check_weight_only_type<dt::block_q5_K>("q5_K");
  check_weight_only_type<dt::block_q6_K>("q6_K");
}

}  // namespace

int main() {
  check_load_store();
  check_arithmetic();
  check_exp();
  check_half();
  check_dispatch();
  check_dtype();
  check_attention();
  check_products();
  check_weight_only_products();
  if (g_failures != 0) {
    std::printf("neon selfcheck: FAIL (%d checks)\n", g_failures);
    return 1;
  }
  std::printf("neon selfcheck: PASS\n");
  return 0;
}
