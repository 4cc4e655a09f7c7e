// splitmix64 (Steele, Lea, Flood 2014): a tiny deterministic generator, the same
// sequence on every platform (std:: distributions are not). Sampling, random-weight
// models and tests use it so that a seed reproduces a run anywhere.
#pragma once

#include <cmath>
#include <cstdint>

namespace mnemo {

struct splitmix64 {
  std::uint64_t s = 0;

  std::uint64_t next() noexcept {
    std::uint64_t z = (s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  }
  /// Uniform integer in [lo, hi].
  std::int64_t range(std::int64_t lo, std::int64_t hi) noexcept {
    return lo + static_cast<std::int64_t>(next() % static_cast<std::uint64_t>(hi - lo + 1));
  }
  /// Uniform in [0, 1) with 24 random bits (exact in float).
  float uniform() noexcept { return static_cast<float>(next() >> 40) * 0x1.0p-24f; }
  /// Standard normal (Box-Muller; one value per call, the partner is discarded).
  float normal() noexcept {
    const double u1 = (static_cast<double>(next() >> 11) + 1.0) * 0x1.0p-53;  // (0, 1]
    const double u2 = static_cast<double>(next() >> 11) * 0x1.0p-53;
    return static_cast<float>(std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586 * u2));
  }
};

}  // namespace mnemo
