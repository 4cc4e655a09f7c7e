// Small operations on sequence sets that the batch layer needs: subset, hashing and
// printing for messages.
#pragma once

#if !defined(MNEMO_BATCH_DETAIL_OK_)
#error "mnemo/batch/detail/ headers are internal: include mnemo/batch/validate.hpp"
#endif

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>

#include "mnemo/base/seq_set.hpp"

namespace mnemo::batch_detail {

/// a ⊆ b
constexpr bool is_subset(const seq_set& a, const seq_set& b) noexcept {
  for (std::size_t w = 0; w < std::size(a.words); ++w)
    if (a.words[w] & ~b.words[w]) return false;
  return true;
}

/// a ∩ b = ∅
constexpr bool is_disjoint(const seq_set& a, const seq_set& b) noexcept {
  for (std::size_t w = 0; w < std::size(a.words); ++w)
    if (a.words[w] & b.words[w]) return false;
  return true;
}

constexpr void merge_into(seq_set& dst, const seq_set& src) noexcept {
  for (std::size_t w = 0; w < std::size(dst.words); ++w) dst.words[w] |= src.words[w];
}

inline bool seq_set_contains(std::span<const seq_id> ids, seq_id s) noexcept {
  return std::find(ids.begin(), ids.end(), s) != ids.end();
}

struct seq_set_hash {
  std::size_t operator()(const seq_set& s) const noexcept {
    std::uint64_t h = 0x9e3779b97f4a7c15ull;
    for (std::uint64_t w : s.words) h = (h ^ w) * 0xff51afd7ed558ccdull + (h >> 29);
    return static_cast<std::size_t>(h);
  }
};

/// "{0, 3, 7}"
inline std::string format_set(const seq_set& s) {
  std::string r = "{";
  for (seq_id i = 0; i < k_max_seq; ++i) {
    if (!s.contains(i)) continue;
    if (r.size() > 1) r += ", ";
    r += std::to_string(i);
  }
  return r + "}";
}

}  // namespace mnemo::batch_detail
