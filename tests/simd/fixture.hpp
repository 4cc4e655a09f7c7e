// Shared by the simd typed tests: the ISA list, a fixture that skips ISAs this
// build or CPU lacks, deterministic inputs and first-mismatch reporting.
#pragma once

#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "simd/harness.hpp"
#include <gtest/gtest.h>

#include "mnemo/simd/simd.hpp"

namespace mnemo_test {

using all_isa_types = ::testing::Types<simd::scalar, simd::avx2, simd::avx512, simd::neon>;

struct isa_type_names {
  template <class Isa>
  static std::string GetName(int) {
    return std::string(Isa::name);
  }
};

template <class Isa>
class SimdIsaTest : public ::testing::Test {
 protected:
  using H = harness_for<Isa>;
  void SetUp() override {
    if constexpr (!simd::is_compiled<Isa>) {
      GTEST_SKIP() << Isa::name << " is not compiled for this architecture";
    } else if (!simd::supported<Isa>()) {
      GTEST_SKIP() << Isa::name << " is not supported by this CPU";
    }
  }
};

inline constexpr std::uint64_t k_seed = 0x6d6e656d6f5eedull;

/// A buffer of n floats starting `offset` floats past a 64-byte boundary, with
/// guard floats around it, so loads/stores go through misaligned pointers.
struct offset_buffer {
  static constexpr std::size_t guard = 32;
  offset_buffer(std::size_t n, std::size_t offset, float fill)
      : storage(n + offset + 2 * guard + 16, fill) {
    const auto base = reinterpret_cast<std::uintptr_t>(storage.data() + guard);
    const std::size_t skew = (64 - base % 64) % 64 / sizeof(float);
    data = storage.data() + guard + skew + offset;
  }
  std::vector<float> storage;
  float* data = nullptr;
};

inline std::string hex(float x) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "0x%08x", std::bit_cast<std::uint32_t>(x));
  return buf;
}
inline std::string hex(std::uint16_t x) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "0x%04x", static_cast<unsigned>(x));
  return buf;
}
inline std::string hex(std::uint32_t x) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "0x%08x", static_cast<unsigned>(x));
  return buf;
}
inline std::uint32_t bits(float x) { return std::bit_cast<std::uint32_t>(x); }
inline std::uint16_t bits(std::uint16_t x) { return x; }

/// Index of the first element whose bits differ, or n.
template <class T>
std::size_t first_bit_mismatch(const T* got, const T* want, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i)
    if (bits(got[i]) != bits(want[i])) return i;
  return n;
}

/// Fails with the seed, the index, the input and both results of the first element
/// whose bits differ.
template <class In, class Out>
void expect_bits_equal(const std::vector<In>& in, const std::vector<Out>& got,
                       const std::vector<Out>& want, std::uint64_t seed) {
  ASSERT_EQ(got.size(), want.size());
  const std::size_t i = first_bit_mismatch(got.data(), want.data(), got.size());
  if (i != got.size()) {
    ADD_FAILURE() << "seed " << seed << ": first difference at element " << i << " of "
                  << got.size() << ": input " << hex(in[i]) << " got " << hex(got[i]) << " want "
                  << hex(want[i]);
  }
}

}  // namespace mnemo_test
