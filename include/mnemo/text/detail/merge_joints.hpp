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
#include <cstring>
#include <string_view>
#include <vector>

#include "mnemo/text/detail/hash_index.hpp"

namespace mnemo::text::detail {

/// A unit's bytes packed into 32 bits (1-4 bytes; the length is in the top byte, so a
/// NUL byte is not the empty key).
inline std::uint32_t pack_unit(std::string_view bytes) noexcept {
  std::uint32_t v = 0;
  std::memcpy(&v, bytes.data(), bytes.size() < 3 ? bytes.size() : 3);
  return v | static_cast<std::uint32_t>(bytes.size()) << 24;
}

class merge_joints {
 public:
  void add(std::uint32_t left, std::uint32_t right) {
    if (2 * (n_ + 1) > slots_.size()) grow();
    insert(key(left, right));
  }

  /// Whether some merge joins a symbol ending in `left` with one starting with `right`.
  bool may_join(std::uint32_t left, std::uint32_t right) const noexcept {
    if (slots_.empty()) return false;
    const std::uint64_t k = key(left, right);
    for (std::size_t i = mix64(k) & mask_;; i = (i + 1) & mask_) {
      if (slots_[i] == k) return true;
      if (slots_[i] == 0) return false;
    }
  }

 private:
  static std::uint64_t key(std::uint32_t l, std::uint32_t r) noexcept {
    return std::uint64_t{l} << 32 | r;  // never 0: a packed unit has its length
  }

  void insert(std::uint64_t k) {
    for (std::size_t i = mix64(k) & mask_;; i = (i + 1) & mask_) {
      if (slots_[i] == k) return;
      if (slots_[i] == 0) {
        slots_[i] = k;
        ++n_;
        return;
      }
    }
  }

  void grow() {
    std::vector<std::uint64_t> old = std::move(slots_);
    slots_.assign(old.empty() ? 1024 : 2 * old.size(), 0);
    mask_ = slots_.size() - 1;
    n_ = 0;
    for (const std::uint64_t k : old)
      if (k != 0) insert(k);
  }

  std::vector<std::uint64_t> slots_;  // open addressing, at most half full; 0 is empty
  std::size_t n_ = 0, mask_ = 0;
};

}  // namespace mnemo::text::detail
