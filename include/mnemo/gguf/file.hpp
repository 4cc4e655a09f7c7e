// gguf::file: a GGUF v2/v3 model file, memory-mapped read-only (or read into memory, with
// gguf::access::read) and checked once at open. Metadata and tensors are views into those
// bytes; no tensor byte is copied again.
//
//   MNEMO_ASSIGN_OR_RETURN(auto f, gguf::file::open("model.gguf"));
//   MNEMO_ASSIGN_OR_RETURN(std::uint32_t n_layer, f.get_u32("llama.block_count"));
//   const gguf::tensor* wq = f.find_tensor("blk.0.attn_q.weight");
//
// What open() checks, and the limits, are listed in docs/gguf.md. A file that passes
// can be walked without bounds checks: every string, array and tensor range lies in it.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "mnemo/base/aligned_buffer.hpp"
#include "mnemo/base/result.hpp"
#include "mnemo/base/status.hpp"
#include "mnemo/gguf/metadata.hpp"
#include "mnemo/gguf/tensor.hpp"
#include "mnemo/gguf/types.hpp"

#define MNEMO_GGUF_DETAIL_OK_ 1
#include "mnemo/gguf/detail/mapping.hpp"
#include "mnemo/gguf/detail/parse.hpp"
#undef MNEMO_GGUF_DETAIL_OK_

namespace mnemo::gguf {

/// How gguf::file::open brings a file's bytes into memory.
enum class access {
  /// mmap: nothing is read up front, and the pages are the kernel's to share between
  /// processes and to drop under memory pressure (4 KiB pages).
  map,
  /// Read into memory the file owns, on huge pages where the OS gives them (as
  /// llama.cpp's --no-mmap): the whole file is read at open and stays resident, and
  /// products stream weights with fewer TLB misses (a 155M f16 Llama generated about 4%
  /// more tokens/s on a Zen 4 VM, docs/performance.md).
  read,
};

class file {
 public:
  /// Maps `path` and parses it. io_error when the file cannot be opened or mapped;
  /// corrupt_data / unsupported (with the key or tensor and the byte offset) when it is
  /// not a GGUF file this reader accepts.
  /// @note The mapping is MAP_PRIVATE and read-only; truncating the file on disk while it
  /// is mapped makes later reads fault (SIGBUS), as with any mapped file.
  static result<file> open(const std::string& path, const limits& limits = {}) {
    return open(path, access::map, limits);
  }

  /// The same, with the bytes brought in as `how` says; with gguf::access::read also
  /// io_error when the file shrinks while it is read and no_space when its memory cannot
  /// be allocated.
  static result<file> open(const std::string& path, access how, const limits& limits = {}) {
    file f;
    if (how == access::read) {
      MNEMO_ASSIGN_OR_RETURN(f.read_, detail::read_file(path));
      f.bytes_ = f.read_.span();
    } else {
      MNEMO_ASSIGN_OR_RETURN(f.mapping_, detail::file_mapping::map(path));
      f.bytes_ = f.mapping_.bytes();
    }
    MNEMO_RETURN_IF_ERROR(f.parse(f.bytes_, limits).with_context(path));
    return f;
  }

  /// Parses bytes the caller owns and keeps alive (and unchanged) for the life of the
  /// result; nothing is copied. Tensor data is aligned only as far as `bytes` is.
  static result<file> from_bytes(std::span<const std::byte> bytes, const limits& limits = {}) {
    file f;
    MNEMO_RETURN_IF_ERROR(f.parse(bytes, limits));
    return f;
  }

  /// A temporary buffer would dangle: use from_owned_bytes to hand it over.
  static result<file> from_bytes(std::vector<std::byte>&&, const limits& = {}) = delete;

  /// Parses bytes the file then owns (e.g. gguf::writer output). Tensor data is aligned
  /// only as far as the vector's storage is (operator new: 16 bytes).
  static result<file> from_owned_bytes(std::vector<std::byte> bytes, const limits& limits = {}) {
    file f;
    f.owned_ = std::move(bytes);  // the heap block does not move with the file
    MNEMO_RETURN_IF_ERROR(f.parse(f.owned_, limits));
    return f;
  }

  file(file&&) noexcept = default;
  file& operator=(file&&) noexcept = default;
  file(const file&) = delete;
  file& operator=(const file&) = delete;
  ~file() = default;

  /// 2 or 3.
  std::uint32_t version() const noexcept { return c_.version; }
  /// `general.alignment`, or 32.
  std::uint32_t alignment() const noexcept { return c_.alignment; }
  /// Where the data section starts (a multiple of alignment()).
  std::size_t data_offset() const noexcept { return c_.data_offset; }
  /// The whole file.
  std::span<const std::byte> bytes() const noexcept { return bytes_; }

  // --- metadata ---

  /// Every entry, in file order.
  std::span<const kv> metadata() const noexcept { return c_.metadata; }

  /// The entry for `key`, or nullptr. O(log n).
  const kv* find(std::string_view key) const noexcept {
    const auto& m = c_.metadata;
    auto it = std::lower_bound(c_.metadata_by_key.begin(), c_.metadata_by_key.end(), key,
                               [&](std::uint32_t i, std::string_view k) { return m[i].key() < k; });
    if (it == c_.metadata_by_key.end() || m[*it].key() != key) return nullptr;
    return &m[*it];
  }

  /// The entry for `key`, or not_found.
  result<const kv*> require(std::string_view key) const {
    if (const kv* kv = find(key)) return kv;
    return make_status(status_code::not_found, "gguf: no metadata key '%s'",
                       detail::printable(key).c_str());
  }

  /// A scalar as T: not_found, invalid_argument (wrong type) or out_of_range (an
  /// integer that does not fit T); see gguf::kv::get.
  template <meta_value T>
  result<T> get(std::string_view key) const {
    MNEMO_ASSIGN_OR_RETURN(const kv* kv, require(key));
    return kv->get<T>();
  }
  result<std::uint32_t> get_u32(std::string_view key) const { return get<std::uint32_t>(key); }
  result<std::uint64_t> get_u64(std::string_view key) const { return get<std::uint64_t>(key); }
  result<std::int32_t> get_i32(std::string_view key) const { return get<std::int32_t>(key); }
  result<std::int64_t> get_i64(std::string_view key) const { return get<std::int64_t>(key); }
  result<float> get_f32(std::string_view key) const { return get<float>(key); }
  result<double> get_f64(std::string_view key) const { return get<double>(key); }
  result<bool> get_bool(std::string_view key) const { return get<bool>(key); }
  /// A view into the file.
  result<std::string_view> get_string(std::string_view key) const {
    return get<std::string_view>(key);
  }

  /// An array whose elements are exactly T, as a view into the file.
  template <meta_value T>
  result<array<T>> get_array(std::string_view key) const {
    MNEMO_ASSIGN_OR_RETURN(const kv* kv, require(key));
    return kv->get_array<T>();
  }

  /// A numeric array converted element-wise to T (a copy); see gguf::kv::get_array_as.
  template <class T>
  result<std::vector<T>> get_array_as(std::string_view key) const {
    MNEMO_ASSIGN_OR_RETURN(const kv* kv, require(key));
    return kv->get_array_as<T>();
  }

  // --- tensors ---

  /// Every tensor, in file order.
  std::span<const tensor> tensors() const noexcept { return c_.tensors; }

  /// The tensor named `name`, or nullptr. O(log n).
  const tensor* find_tensor(std::string_view name) const noexcept {
    const auto& t = c_.tensors;
    auto it = std::lower_bound(c_.tensors_by_name.begin(), c_.tensors_by_name.end(), name,
                               [&](std::uint32_t i, std::string_view n) { return t[i].name < n; });
    if (it == c_.tensors_by_name.end() || t[*it].name != name) return nullptr;
    return &t[*it];
  }

  /// The tensor named `name`, or not_found.
  result<const tensor*> require_tensor(std::string_view name) const {
    if (const tensor* t = find_tensor(name)) return t;
    return make_status(status_code::not_found, "gguf: no tensor '%s'",
                       detail::printable(name).c_str());
  }

 private:
  file() = default;

  status parse(std::span<const std::byte> bytes, const limits& limits) {
    bytes_ = bytes;
    return detail::parser(bytes, limits).parse(c_);
  }

  detail::file_mapping mapping_;    // open() with gguf::access::map only
  aligned_buffer<std::byte> read_;  // open() with gguf::access::read only
  std::vector<std::byte> owned_;    // from_owned_bytes() only
  std::span<const std::byte> bytes_;
  detail::contents c_;
};

}  // namespace mnemo::gguf
