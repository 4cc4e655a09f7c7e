// A raw little-endian byte emitter for hand-made (usually broken) GGUF files in tests.
// Unlike gguf::writer it checks nothing: every field is written as given.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <span>
#include <string_view>
#include <vector>

namespace mnemo::gguf::testing {

struct raw_gguf {
  std::vector<std::byte> b;

  template <class T>
  raw_gguf& put(T v) {
    const auto* p = reinterpret_cast<const std::byte*>(&v);
    b.insert(b.end(), p, p + sizeof(T));
    return *this;
  }
  raw_gguf& u8(std::uint8_t v) { return put(v); }
  raw_gguf& u32(std::uint32_t v) { return put(v); }
  raw_gguf& u64(std::uint64_t v) { return put(v); }
  raw_gguf& str(std::string_view s) {
    u64(s.size());
    const auto* p = reinterpret_cast<const std::byte*>(s.data());
    b.insert(b.end(), p, p + s.size());
    return *this;
  }
  raw_gguf& zeros(std::size_t n) {
    b.insert(b.end(), n, std::byte{0});
    return *this;
  }
  /// Zero bytes up to the next multiple of `a`.
  raw_gguf& pad_to(std::size_t a) { return zeros((a - b.size() % a) % a); }

  raw_gguf& header(std::uint64_t n_tensors, std::uint64_t n_kv, std::uint32_t version = 3) {
    b.insert(b.end(), {std::byte{'G'}, std::byte{'G'}, std::byte{'U'}, std::byte{'F'}});
    return u32(version).u64(n_tensors).u64(n_kv);
  }
  raw_gguf& kv_u32(std::string_view key, std::uint32_t v) { return str(key).u32(4).u32(v); }
  raw_gguf& kv_str(std::string_view key, std::string_view v) { return str(key).u32(8).str(v); }
  raw_gguf& tensor(std::string_view name, std::initializer_list<std::uint64_t> dims,
                   std::uint32_t type, std::uint64_t offset) {
    str(name).u32(static_cast<std::uint32_t>(dims.size()));
    for (std::uint64_t d : dims) u64(d);
    return u32(type).u64(offset);
  }

  std::span<const std::byte> span() const { return b; }
};

}  // namespace mnemo::gguf::testing
