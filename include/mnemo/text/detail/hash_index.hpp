// Open-addressing hash indexes for the vocabulary: token text -> id, and a merge table
// (left id, right id) -> (rank, merged id). Linear probing over a power-of-two table at
// most half full; they are built once at load and only read afterwards.
#pragma once

#if !defined(MNEMO_TEXT_DETAIL_OK_)
#error "mnemo/text/detail/* headers are internal: include mnemo/text/tokenizer.hpp"
#endif

#include <algorithm>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string_view>
#include <vector>

namespace mnemo::text::detail {

/// A 64-bit hash of a byte string (multiply-xorshift over 8-byte words; quality is
/// enough for a table indexed by its high bits, and it is much faster than FNV on the
/// 2..20-byte strings the SPM merge loop looks up).
inline std::uint64_t hash_bytes(std::string_view s) noexcept {
  constexpr std::uint64_t k = 0x9E3779B97F4A7C15ull;
  std::uint64_t h = s.size() * k;
  std::size_t i = 0;
  for (; i + 8 <= s.size(); i += 8) {
    std::uint64_t w;
    std::memcpy(&w, s.data() + i, 8);
    h = (h ^ w) * k;
    h ^= h >> 29;
  }
  if (i < s.size()) {
    std::uint64_t w = 0;
    std::memcpy(&w, s.data() + i, s.size() - i);
    h = (h ^ w) * k;
    h ^= h >> 29;
  }
  return (h ^ (h >> 32)) * k;
}

inline std::uint64_t mix64(std::uint64_t x) noexcept {
  x ^= x >> 33;
  x *= 0xFF51AFD7ED558CCDull;
  x ^= x >> 33;
  x *= 0xC4CEB9FE1A85EC53ull;
  return x ^ (x >> 33);
}

inline std::size_t table_bits_for(std::size_t n) noexcept {
  return static_cast<std::size_t>(std::bit_width(std::max<std::size_t>(n * 2, 16) - 1));
}

/// text -> id over a vocabulary whose texts the caller provides at lookup (`text_of`).
/// Later insertions of an existing text replace the earlier id (llama.cpp keeps the
/// last duplicate too).
class text_index {
 public:
  template <class TextOf>
  void build(std::size_t n, TextOf&& text_of) {
    bits_ = table_bits_for(n);
    slots_.assign(std::size_t{1} << bits_, -1);
    for (std::size_t id = 0; id < n; ++id) {
      const std::string_view t = text_of(id);
      std::size_t i = slot(hash_bytes(t));
      while (slots_[i] >= 0 && text_of(static_cast<std::size_t>(slots_[i])) != t) i = next(i);
      slots_[i] = static_cast<std::int32_t>(id);
    }
  }

  /// The id of `t`, or -1.
  template <class TextOf>
  std::int32_t find(std::string_view t, TextOf&& text_of) const noexcept {
    if (slots_.empty()) return -1;
    for (std::size_t i = slot(hash_bytes(t));; i = next(i)) {
      const std::int32_t id = slots_[i];
      if (id < 0 || text_of(static_cast<std::size_t>(id)) == t) return id;
    }
  }

 private:
  std::size_t slot(std::uint64_t h) const noexcept {
    return static_cast<std::size_t>(h >> (64 - bits_));
  }
  std::size_t next(std::size_t i) const noexcept { return (i + 1) & (slots_.size() - 1); }

  std::size_t bits_ = 0;
  std::vector<std::int32_t> slots_;
};

/// (left, right) token pair -> merge rank and merged token. The first insertion of a
/// pair wins (llama.cpp's bpe_ranks.emplace keeps the first rank).
class merge_index {
 public:
  struct entry {
    std::uint64_t key = ~std::uint64_t{0};  // empty
    std::int32_t rank = -1;
    std::int32_t merged = -1;
  };

  void reserve(std::size_t n) {
    bits_ = table_bits_for(n);
    slots_.assign(std::size_t{1} << bits_, entry{});
  }

  /// @pre reserve(n) with n >= the number of insertions.
  void insert(std::int32_t left, std::int32_t right, std::int32_t rank, std::int32_t merged) {
    const std::uint64_t key = make_key(left, right);
    std::size_t i = slot(key);
    while (slots_[i].key != ~std::uint64_t{0}) {
      if (slots_[i].key == key) return;
      i = next(i);
    }
    slots_[i] = {key, rank, merged};
  }

  /// The entry for the pair, or nullptr.
  const entry* find(std::int32_t left, std::int32_t right) const noexcept {
    if (slots_.empty()) return nullptr;
    const std::uint64_t key = make_key(left, right);
    for (std::size_t i = slot(key);; i = next(i)) {
      if (slots_[i].key == key) return &slots_[i];
      if (slots_[i].key == ~std::uint64_t{0}) return nullptr;
    }
  }

  bool empty() const noexcept { return slots_.empty(); }

 private:
  static std::uint64_t make_key(std::int32_t l, std::int32_t r) noexcept {
    return (static_cast<std::uint64_t>(static_cast<std::uint32_t>(l)) << 32) |
           static_cast<std::uint32_t>(r);
  }
  std::size_t slot(std::uint64_t key) const noexcept {
    return static_cast<std::size_t>(mix64(key) >> (64 - bits_));
  }
  std::size_t next(std::size_t i) const noexcept { return (i + 1) & (slots_.size() - 1); }

  std::size_t bits_ = 0;
  std::vector<entry> slots_;
};

}  // namespace mnemo::text::detail
