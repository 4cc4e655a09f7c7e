// The BPE word cache: a pre-tokenized word's token ids, kept in the caller's scratch so
// a word met again skips its merge loop. BPE encodes each word on its own and the same
// bytes always give the same ids for one vocabulary, so a hit is exact. Text repeats its
// words (Zipf), so most words of a prompt are hits after the first few hundred.
//
// Bounded: words of up to k_max_word bytes, at most k_max_entries words and
// k_max_data_bytes of keys and ids; a full cache is emptied and refilled. It belongs to one
// vocabulary (its serial number): used with another, it empties first.
#pragma once

#if !defined(MNEMO_TEXT_DETAIL_OK_)
#error "mnemo/text/detail/* headers are internal: include mnemo/text/tokenizer.hpp"
#endif

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "mnemo/text/detail/hash_index.hpp"

namespace mnemo::text::detail {

template <class Id>
class word_cache {
 public:
  // Long words repeat too (runs of spaces or symbols, indentation, repeated letters):
  // merging a 600-byte run costs hundreds of heap operations, a hit one hash of it.
  static constexpr std::size_t k_max_word = 1024;
  static constexpr std::size_t k_max_entries = std::size_t{1} << 14;
  static constexpr std::size_t k_max_data_bytes = std::size_t{2} << 20;  // keys and ids

  /// Empties the cache when it was filled for another vocabulary.
  void bind(std::uint64_t vocab_serial) {
    if (vocab_serial != serial_) {
      clear();
      serial_ = vocab_serial;
    }
  }

  static bool cacheable(std::string_view word) noexcept {
    return word.size() > 1 && word.size() <= k_max_word;
  }

  /// The ids of `word`, or false when it is not cached.
  bool find(std::string_view word, std::vector<Id>& out) const {
    if (slots_.empty()) return false;
    const std::uint64_t h = hash_bytes(word);
    for (std::size_t i = h & mask_;; i = (i + 1) & mask_) {
      const slot& s = slots_[i];
      if (s.key_len == 0) return false;
      if (s.hash == h && s.key_len == word.size() &&
          std::memcmp(data_.data() + s.off, word.data(), word.size()) == 0) {
        const std::size_t n = out.size();
        out.resize(n + s.ids_len);
        std::memcpy(out.data() + n, data_.data() + s.off + s.key_len, s.ids_len * sizeof(Id));
        return true;
      }
    }
  }

  /// Remembers `ids` for `word` (@pre cacheable(word) and not cached).
  void insert(std::string_view word, std::span<const Id> ids) {
    const std::size_t bytes = word.size() + ids.size_bytes();
    if (slots_.empty() || n_ + 1 > k_max_entries || data_.size() + bytes > k_max_data_bytes)
      clear_to(2 * k_max_entries);
    const std::uint64_t h = hash_bytes(word);
    std::size_t i = h & mask_;
    while (slots_[i].key_len != 0) i = (i + 1) & mask_;
    slots_[i] = {h, static_cast<std::uint32_t>(data_.size()),
                 static_cast<std::uint16_t>(word.size()), static_cast<std::uint16_t>(ids.size())};
    const std::size_t off = data_.size();
    data_.resize(off + bytes);
    std::memcpy(data_.data() + off, word.data(), word.size());
    std::memcpy(data_.data() + off + word.size(), ids.data(), ids.size_bytes());
    ++n_;
  }

  void clear() {
    slots_.clear();
    data_.clear();
    n_ = 0;
  }

 private:
  // A word's key bytes and its ids lie together in data_ (a hit reads one place), and
  // a slot is 16 bytes: a probe touches less memory than separate key and id arrays did.
  struct slot {
    std::uint64_t hash = 0;
    std::uint32_t off = 0;      // the key in data_, its ids right after it
    std::uint16_t key_len = 0;  // 0: empty (cached words are >= 2 bytes)
    std::uint16_t ids_len = 0;  // at most key_len: every id covers a byte at least
  };

  void clear_to(std::size_t n_slots) {  // a power of two, at least twice k_max_entries
    clear();
    slots_.assign(n_slots, slot{});
    mask_ = n_slots - 1;
  }

  std::vector<slot> slots_;
  std::vector<char> data_;
  std::size_t n_ = 0, mask_ = 0;
  std::uint64_t serial_ = 0;
};

}  // namespace mnemo::text::detail
