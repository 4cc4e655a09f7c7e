// A bounds-checked little-endian reader over the bytes of a GGUF file, and the helper
// that makes names from a hostile file safe to print.
#pragma once

#if !defined(MNEMO_GGUF_DETAIL_OK_)
#error "mnemo/model/detail/gguf_* headers are internal: include mnemo/gguf/file.hpp"
#endif

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>

namespace mnemo::gguf::detail {

/// Reads fields front to back. Every read checks the remaining bytes first and leaves
/// the position unchanged on failure, so no read can pass the end.
class cursor {
 public:
  explicit cursor(std::span<const std::byte> bytes) noexcept : bytes_(bytes) {}

  std::size_t pos() const noexcept { return pos_; }
  std::size_t size() const noexcept { return bytes_.size(); }
  std::size_t remaining() const noexcept { return bytes_.size() - pos_; }
  const std::byte* data() const noexcept { return bytes_.data(); }

  template <class T>
  bool read(T& out) noexcept {
    static_assert(std::is_trivially_copyable_v<T>);
    if (remaining() < sizeof(T)) return false;
    std::memcpy(&out, bytes_.data() + pos_, sizeof(T));  // unaligned-safe; host is LE
    pos_ += sizeof(T);
    return true;
  }

  /// Moves past `n` bytes.
  bool skip(std::uint64_t n) noexcept {
    if (n > remaining()) return false;
    pos_ += static_cast<std::size_t>(n);
    return true;
  }

  /// A GGUF string: u64 length, then that many bytes (no terminator). On failure `why`
  /// says whether the length or the bytes were missing.
  bool read_string(std::string_view& out, std::uint64_t max_length, const char*& why) noexcept {
    const std::size_t start = pos_;
    std::uint64_t n = 0;
    if (!read(n)) {
      why = "the string length is cut off";
      return false;
    }
    if (n > max_length) {
      why = "the string is longer than the limit";
      pos_ = start;
      return false;
    }
    if (n > remaining()) {
      why = "the string runs past the end of the file";
      pos_ = start;
      return false;
    }
    out = std::string_view(reinterpret_cast<const char*>(bytes_.data() + pos_),
                           static_cast<std::size_t>(n));
    pos_ += static_cast<std::size_t>(n);
    return true;
  }

 private:
  std::span<const std::byte> bytes_;
  std::size_t pos_ = 0;
};

/// Reads a trivially copyable value at a byte offset that is known to be in range.
template <class T>
inline T load_le(const std::byte* p) noexcept {
  T v;
  std::memcpy(&v, p, sizeof(T));
  return v;
}

/// `s` with non-printable bytes as \xNN, cut to 64 bytes: names from a hostile file go
/// into messages.
inline std::string printable(std::string_view s) {
  constexpr std::size_t k_max = 64;
  std::string out;
  const std::size_t n = s.size() < k_max ? s.size() : k_max;
  for (std::size_t i = 0; i < n; ++i) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (c >= 0x20 && c < 0x7f && c != '\\') {
      out.push_back(static_cast<char>(c));
    } else {
      constexpr char k_hex[] = "0123456789abcdef";
      out.append("\\x");
      out.push_back(k_hex[c >> 4]);
      out.push_back(k_hex[c & 15]);
    }
  }
  if (s.size() > k_max) out.append("...");
  return out;
}

}  // namespace mnemo::gguf::detail
