// Sequence ids and the set of sequences a KV cell belongs to.
#pragma once

#include <bit>
#include <cstdint>

namespace mnemo {

using seq_id = std::int32_t;
using pos_t = std::int32_t;

/// Upper bound on sequence ids (llama.cpp's LLAMA_MAX_SEQ): ids live in [0, 256).
inline constexpr seq_id k_max_seq = 256;

/// A set of sequence ids, one bit each: the owners of a cell.
struct seq_set {
  std::uint64_t words[k_max_seq / 64] = {};

  /// @pre 0 <= s < k_max_seq
  constexpr bool contains(seq_id s) const noexcept { return (words[s >> 6] >> (s & 63)) & 1u; }
  constexpr void insert(seq_id s) noexcept { words[s >> 6] |= std::uint64_t{1} << (s & 63); }
  constexpr void erase(seq_id s) noexcept { words[s >> 6] &= ~(std::uint64_t{1} << (s & 63)); }
  constexpr void clear() noexcept {
    for (auto& w : words) w = 0;
  }
  constexpr bool empty() const noexcept {
    for (auto w : words)
      if (w) return false;
    return true;
  }
  /// The lowest sequence of the set, or -1 when it is empty.
  constexpr seq_id lowest() const noexcept {
    for (int w = 0; w < k_max_seq / 64; ++w)
      if (words[w] != 0) return static_cast<seq_id>(w * 64 + std::countr_zero(words[w]));
    return -1;
  }
  constexpr int count() const noexcept {
    int n = 0;
    for (auto w : words) n += std::popcount(w);
    return n;
  }
  static constexpr seq_set of(seq_id s) noexcept {
    seq_set r;
    r.insert(s);
    return r;
  }
  friend constexpr bool operator==(const seq_set&, const seq_set&) = default;
};

}  // namespace mnemo
