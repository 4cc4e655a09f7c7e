// SSM kernels on every ISA against the double references of ssm/reference.hpp:
// causal conv1d (state bit-exact, outputs within f32 rounding) and the selective scan
// (step and chunk paths), over d_state 1, 16, 17 and d_inner 1, 7, 256 (plus 33 for
// lane tails), strided rows as the model passes them, and extreme dt values around
// the softplus cut.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <type_traits>
#include <vector>

#include <gtest/gtest.h>

#include "mnemo/simd/cpu.hpp"
#include "mnemo/ssm/ssm.hpp"

namespace {

namespace simd = mnemo::simd;
namespace ssm = mnemo::ssm;

using all_isas = ::testing::Types<simd::scalar, simd::avx2, simd::avx512, simd::neon>;
struct isa_names {
  template <class Isa>
  static std::string GetName(int) {
    return std::string(Isa::name);
  }
};

template <class Isa>
class SsmKernels : public ::testing::Test {
 protected:
  void SetUp() override {
    if constexpr (!simd::is_compiled<Isa>) {
      GTEST_SKIP() << Isa::name << " is not compiled for this architecture";
    } else if (!simd::supported<Isa>()) {
      GTEST_SKIP() << Isa::name << " is not supported by this CPU";
    }
  }
};
TYPED_TEST_SUITE(SsmKernels, all_isas, isa_names);

constexpr std::uint64_t k_seed = 0x55d1a7e5eedull;

std::vector<float> uniform(std::mt19937_64& rng, std::size_t n, float lo, float hi) {
  std::uniform_real_distribution<float> u(lo, hi);
  std::vector<float> v(n);
  for (auto& x : v) x = u(rng);
  return v;
}

/// |got - want| <= tol * (|want| + rms(want)) for every element; reports the first
/// that is not, with the seed and the case.
void expect_close(const std::vector<float>& got, const std::vector<float>& want, double tol,
                  const std::string& what) {
  ASSERT_EQ(got.size(), want.size());
  double ss = 0;
  for (float w : want) ss += double{w} * w;
  const double rms = want.empty() ? 0.0 : std::sqrt(ss / static_cast<double>(want.size()));
  for (std::size_t i = 0; i < got.size(); ++i) {
    const double err = std::abs(double{got[i]} - want[i]);
    if (!(err <= tol * (std::abs(want[i]) + rms) + 1e-30)) {
      ADD_FAILURE() << what << " seed " << k_seed << ": first difference at element " << i << " of "
                    << got.size() << ": got " << got[i] << " want " << want[i] << " (err " << err
                    << ", rms " << rms << ")";
      return;
    }
  }
}

void expect_bits_equal(const std::vector<float>& got, const std::vector<float>& want,
                       const std::string& what) {
  ASSERT_EQ(got.size(), want.size());
  for (std::size_t i = 0; i < got.size(); ++i)
    if (std::memcmp(&got[i], &want[i], sizeof(float)) != 0) {
      ADD_FAILURE() << what << " seed " << k_seed << ": first difference at element " << i
                    << ": got " << got[i] << " want " << want[i];
      return;
    }
}

template <class Isa>
void conv_matches_reference() {
  std::mt19937_64 rng(k_seed);
  for (std::size_t d_inner : {1, 7, 33, 256})
    for (std::size_t d_conv : {1, 2, 4})
      for (std::size_t n_tokens : {1, 5})
        for (bool silu : {false, true})
          for (bool bias : {false, true}) {
            const std::size_t ld_x = d_inner + 3, ld_out = d_inner + 1, Km1 = d_conv - 1;
            const auto x = uniform(rng, n_tokens * ld_x, -2, 2);
            const auto w = uniform(rng, d_inner * d_conv, -0.5f, 0.5f);
            const auto b = uniform(rng, d_inner, -0.1f, 0.1f);
            auto state = uniform(rng, d_inner * Km1, -2, 2), state_ref = state;
            std::vector<float> out(n_tokens * ld_out, 7.0f), out_ref = out;
            ssm::conv_args a{d_inner,
                             d_conv,
                             n_tokens,
                             x.data(),
                             ld_x,
                             w.data(),
                             bias ? b.data() : nullptr,
                             state.data(),
                             out.data(),
                             ld_out,
                             silu};
            ssm::conv_args r = a;
            r.state = state_ref.data();
            r.out = out_ref.data();
            ASSERT_TRUE(ssm::causal_conv1d<Isa>(a).is_ok());
            ASSERT_TRUE(ssm::reference_conv1d(r).is_ok());
            const std::string what = "conv d_inner " + std::to_string(d_inner) + " d_conv " +
                                     std::to_string(d_conv) + " tokens " +
                                     std::to_string(n_tokens) + (silu ? " silu" : "") +
                                     (bias ? " bias" : "");
            expect_bits_equal(state, state_ref, what + " state");  // raw x values, copied
            expect_close(out, out_ref, 2e-6, what + " out");       // padding columns untouched too
          }
}

/// Random scan inputs shaped like the model's: B and C inside ssm_x's output rows.
struct scan_case {
  std::size_t d_inner, d_state, n_tokens, ld_bc;
  std::vector<float> x, dt, bc, z, A, D, state, y;
  scan_case(std::mt19937_64& rng, std::size_t di, std::size_t ds, std::size_t nt)
      : d_inner(di), d_state(ds), n_tokens(nt), ld_bc(8 + 2 * ds) {
    x = uniform(rng, nt * di, -2, 2);
    dt = uniform(rng, nt * di, -6, 3);
    // The softplus cut and its surroundings: identity above 20, e^x far below 0.
    const float special[] = {20.0f, 20.5f, 19.5f, 25.0f, -30.0f, -90.0f, 0.0f, 60.0f};
    for (std::size_t i = 0; i < dt.size(); i += 5) dt[i] = special[(i / 5) % 8];
    bc = uniform(rng, nt * ld_bc, -1, 1);
    z = uniform(rng, nt * di, -4, 4);
    A = uniform(rng, di * ds, 0.5f, 1.5f);
    for (std::size_t i = 0; i < A.size(); ++i) A[i] *= -static_cast<float>(i % ds + 1);
    D = uniform(rng, di, 0.8f, 1.2f);
    state = uniform(rng, di * ds, -1, 1);
    y.assign(nt * di, 0.0f);
  }
  ssm::scan_args args(bool gate, bool skip) {
    return {d_inner,
            d_state,
            n_tokens,
            x.data(),
            d_inner,
            dt.data(),
            d_inner,
            bc.data() + 8,
            bc.data() + 8 + d_state,
            ld_bc,
            gate ? z.data() : nullptr,
            d_inner,
            A.data(),
            skip ? D.data() : nullptr,
            state.data(),
            y.data(),
            d_inner};
  }
};

template <class Isa>
void scan_matches_reference() {
  std::mt19937_64 rng(k_seed + 1);
  for (std::size_t d_inner : {1, 7, 33, 256})
    for (std::size_t d_state : {1, 16, 17})
      for (std::size_t n_tokens : {1, 3, 40})
        for (auto path : {ssm::scan_path::step, ssm::scan_path::chunk})
          for (int opt = 0; opt < 2; ++opt) {
            scan_case k(rng, d_inner, d_state, n_tokens), r = k;
            const bool gate = opt == 1, skip = opt == 1;
            ASSERT_TRUE(ssm::selective_scan<Isa>(k.args(gate, skip), path).is_ok());
            ASSERT_TRUE(ssm::reference_scan(r.args(gate, skip)).is_ok());
            const std::string what = std::string(path == ssm::scan_path::step ? "step" : "chunk") +
                                     " d_inner " + std::to_string(d_inner) + " d_state " +
                                     std::to_string(d_state) + " tokens " +
                                     std::to_string(n_tokens) + (opt ? " gate+D" : "");
            // f32 state over 40 tokens with a 1-2 ulp exp: 1e-5 of the magnitude.
            expect_close(k.state, r.state, 1e-5, what + " state");
            expect_close(k.y, r.y, 1e-5, what + " y");
          }
}

// Chunk over n tokens == n single steps: the same per-element arithmetic, so the
// state is bit-identical on the vector ISAs. The scalar path is plain float code that
// GCC (GNU mode: -ffp-contract=fast) fuses into FMAs differently in the two inlining
// contexts, so there it agrees to 1e-6 (measured: 2 ulp). y differs only in the order of its
// d_state-term sum (a few ulp of sum |state * C|, well inside 1e-6 of the row's magnitude).
template <class Isa>
void chunk_equals_steps() {
  std::mt19937_64 rng(k_seed + 2);
  for (std::size_t d_inner : {1, 7, 256})
    for (std::size_t d_state : {1, 16, 17}) {
      scan_case chunk(rng, d_inner, d_state, 24), steps = chunk;
      ASSERT_TRUE(ssm::selective_scan<Isa>(chunk.args(true, true), ssm::scan_path::chunk).is_ok());
      for (std::size_t t = 0; t < steps.n_tokens; ++t) {
        auto a = steps.args(true, true);
        a.n_tokens = 1;
        a.x += t * d_inner;
        a.dt += t * d_inner;
        a.B += t * steps.ld_bc;
        a.C += t * steps.ld_bc;
        a.z += t * d_inner;
        a.y += t * d_inner;
        ASSERT_TRUE(ssm::selective_scan<Isa>(a, ssm::scan_path::step).is_ok());
      }
      const std::string what =
          "d_inner " + std::to_string(d_inner) + " d_state " + std::to_string(d_state);
      if constexpr (std::is_same_v<Isa, simd::scalar>)
        expect_close(chunk.state, steps.state, 1e-6, what + " state");
      else
        expect_bits_equal(chunk.state, steps.state, what + " state");
      expect_close(chunk.y, steps.y, 1e-6, what + " y");
    }
}

template <class Isa>
void bad_arguments_are_statuses() {
  std::mt19937_64 rng(k_seed + 3);
  scan_case k(rng, 8, 4, 2);
  auto a = k.args(false, false);
  a.A = nullptr;
  EXPECT_EQ(ssm::selective_scan<Isa>(a).code(), mnemo::status_code::invalid_argument);
  a = k.args(false, false);
  a.ld_bc = 3;
  EXPECT_EQ(ssm::selective_scan<Isa>(a).code(), mnemo::status_code::invalid_argument);
  ssm::conv_args c;
  c.d_inner = 4;
  c.d_conv = ssm::k_max_conv + 1;
  EXPECT_EQ(ssm::causal_conv1d<Isa>(c).code(), mnemo::status_code::invalid_argument);
  c.d_conv = 4;
  c.n_tokens = 0;  // nothing to do, nothing required
  EXPECT_TRUE(ssm::causal_conv1d<Isa>(c).is_ok());
}

// The bodies are instantiated only for ISAs this build compiled.
#define MNEMO_SSM_TYPED(name, fn)                                \
  TYPED_TEST(SsmKernels, name) {                                 \
    if constexpr (simd::is_compiled<TypeParam>) fn<TypeParam>(); \
  }
MNEMO_SSM_TYPED(ConvMatchesReference, conv_matches_reference)
MNEMO_SSM_TYPED(ScanMatchesReference, scan_matches_reference)
MNEMO_SSM_TYPED(ChunkEqualsSteps, chunk_equals_steps)
MNEMO_SSM_TYPED(BadArgumentsAreStatuses, bad_arguments_are_statuses)

}  // namespace
