// Where a BPE merge can join two symbols: the pairs (last unit of a merge's left side,
// first unit of its right side), a unit being one UTF-8 character for raw-text
// vocabularies and one byte for byte-level ones.
//
// A symbol that spans the place between units x and y is made by a first merge that
// joins a symbol ending in x with one starting with y, so where (x, y) is no merge's
// joint no symbol ever spans: the merge loop runs on each side alone with the same
// result (merges on one side never change the pairs or ranks on the other). Long words
// (Gemma 4's whole lines) are cut there into short segments that the word cache keeps.
#pragma once

#if !defined(MNEMO_TEXT_DETAIL_OK_)
#error "mnemo/text/detail/* headers are internal: include mnemo/text/tokenizer.hpp"
#endif

#include <cstddef>
#include <cstdint>
#include <string_view>
#include <vector>

namespace mnemo::text::detail {

/// A unit's bytes packed into 32 bits: up to three bytes and the length, so a NUL byte
/// is not the empty key (4-byte characters that share their first three bytes share a
/// key, which only makes may_join answer true more often).
inline std::uint32_t pack_unit(std::string_view bytes) noexcept {
  const auto b = [&](std::size_t i) {
    return i < bytes.size() ? static_cast<std::uint32_t>(static_cast<unsigned char>(bytes[i])) : 0u;
  };
  return b(0) | b(1) << 8 | b(2) << 16 | static_cast<std::uint32_t>(bytes.size()) << 24;
}

/// The joints as a bit set indexed by a hash of the pair (128 KiB, which stays in the cache
/// while a text is encoded; an exact hash set of a 50k-merge vocabulary's joints took a cache
/// miss per probe: Gemma 4 encoded 1.2x slower). A collision only makes may_join true where no
/// merge joins: a cut is missed, never made wrongly.
class merge_joints {
 public:
  void add(std::uint32_t left, std::uint32_t right) {
    if (bits_.empty()) bits_.assign(k_words, 0);
    const std::uint64_t h = bit_of(left, right);
    bits_[h >> 6] |= std::uint64_t{1} << (h & 63);
  }

  /// Whether some merge may join a symbol ending in `left` with one starting with
  /// `right` (false: certainly none does).
  bool may_join(std::uint32_t left, std::uint32_t right) const noexcept {
    if (bits_.empty()) return false;
    const std::uint64_t h = bit_of(left, right);
    return (bits_[h >> 6] >> (h & 63)) & 1u;
  }

 private:
  static constexpr unsigned k_log2_bits = 20;
  static constexpr std::size_t k_words = (std::size_t{1} << k_log2_bits) / 64;

  static std::uint64_t bit_of(std::uint32_t l, std::uint32_t r) noexcept {
    const std::uint64_t k = (std::uint64_t{l} << 32 | r) * 0x9E3779B97F4A7C15ull;
    return k >> (64 - k_log2_bits);
  }

  std::vector<std::uint64_t> bits_;  // [k_words]
};

}  // namespace mnemo::text::detail
