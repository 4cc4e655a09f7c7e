// Test harness: each simd::ops<Isa> member driven over plain arrays, compiled once
// per ISA inside that ISA's target region (the kernel pattern), so test bodies can
// call it from ordinary code whatever the build's -march flags are.
#pragma once

#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "mnemo/simd/simd.hpp"

namespace mnemo_test {

namespace simd = mnemo::simd;

enum class binary_op { add, sub, mul, max, min };

template <class Isa>
struct harness {
  static_assert(!std::is_same_v<Isa, Isa>, "harness<Isa>: only compiled ISAs have a harness");
};

MNEMO_BEGIN_TARGET_SCALAR
template <>
struct harness<simd::scalar> {
  using isa = simd::scalar;
#include "simd/harness_body.inl"
};
MNEMO_END_TARGET_SCALAR

#if defined(MNEMO_ARCH_X86_64)
MNEMO_BEGIN_TARGET_AVX2
template <>
struct harness<simd::avx2> {
  using isa = simd::avx2;
#include "simd/harness_body.inl"
};
MNEMO_END_TARGET

MNEMO_BEGIN_TARGET_AVX512
template <>
struct harness<simd::avx512> {
  using isa = simd::avx512;
#include "simd/harness_body.inl"
};
MNEMO_END_TARGET
#elif defined(MNEMO_ARCH_AARCH64)
MNEMO_BEGIN_TARGET_NEON
template <>
struct harness<simd::neon> {
  using isa = simd::neon;
#include "simd/harness_body.inl"
};
MNEMO_END_TARGET_NEON
#endif

/// The harness typed tests compile against: an ISA this build does not contain
/// falls back to scalar so the test body still compiles; its fixture skips it.
template <class Isa>
using harness_for = harness<std::conditional_t<simd::is_compiled<Isa>, Isa, simd::scalar>>;

}  // namespace mnemo_test
