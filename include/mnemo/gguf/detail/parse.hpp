// The GGUF parser: one pass over the header, the metadata and the tensor table, then the
// checks that need all of them (duplicates, alignment, data ranges, overlaps). Every
// count and length is compared with the bytes that remain before it is used, so a
// hostile count fails at once and never sizes an allocation.
#pragma once

#if !defined(MNEMO_GGUF_DETAIL_OK_)
#error "mnemo/model/detail/gguf_* headers are internal: include mnemo/gguf/file.hpp"
#endif

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <span>
#include <string_view>
#include <vector>

#include "mnemo/base/status.hpp"
#include "mnemo/gguf/detail/cursor.hpp"
#include "mnemo/gguf/detail/tensors.hpp"
#include "mnemo/gguf/metadata.hpp"
#include "mnemo/gguf/types.hpp"

namespace mnemo::gguf::detail {

class parser {
 public:
  parser(std::span<const std::byte> bytes, const limits& limits) noexcept
      : cur_(bytes), limits_(limits) {}

  status parse(contents& out) {
    MNEMO_RETURN_IF_ERROR(parse_header(out));
    MNEMO_RETURN_IF_ERROR(parse_metadata(out));
    MNEMO_RETURN_IF_ERROR(check_keys(out));
    MNEMO_RETURN_IF_ERROR(read_alignment(out));
    std::vector<std::uint64_t> n_bytes;
    MNEMO_RETURN_IF_ERROR(parse_tensor_infos(cur_, n_tensors_, limits_, out, n_bytes));
    return check_tensors(std::span(cur_.data(), cur_.size()), cur_.pos(), n_bytes, out);
  }

 private:
  // Smallest encodings, for the count-versus-bytes checks: a key/value needs a key
  // length (8), a type (4) and a 1-byte value; a tensor record a name length (8),
  // n_dims (4), one dim (8), a type (4) and an offset (8).
  static constexpr std::uint64_t k_min_kv_bytes = 13;
  static constexpr std::uint64_t k_min_tensor_bytes = 32;

  status corrupt(const char* where, std::size_t at, const char* what) const {
    return make_status(status_code::corrupt_data, "gguf: %s at byte %zu: %s", where, at, what);
  }

  status parse_header(contents& out) {
    if (cur_.size() < 4 ||
        std::string_view(reinterpret_cast<const char*>(cur_.data()), 4) != k_magic) {
      return make_status(status_code::corrupt_data,
                         "gguf: not a GGUF file (%zu bytes; it must start with \"GGUF\")",
                         cur_.size());
    }
    cur_.skip(4);
    std::uint32_t version = 0;
    if (!cur_.read(version)) return corrupt("header", cur_.pos(), "the version is cut off");
    if (version == 1)
      return make_status(status_code::unsupported,
                         "gguf: version 1 (32-bit counts) is not supported; convert the file "
                         "to version 3");
    if (version != 0 && (version & 0xFFFFu) == 0)
      return make_status(status_code::unsupported,
                         "gguf: version field 0x%08x: a big-endian file? only little-endian "
                         "files are supported",
                         static_cast<unsigned>(version));
    if (version == 0) return corrupt("header", 4, "version 0 does not exist");
    if (version > 3)
      return make_status(status_code::unsupported,
                         "gguf: version %u is newer than this reader (versions 2 and 3)",
                         static_cast<unsigned>(version));
    out.version = version;
    if (!cur_.read(n_tensors_)) return corrupt("header", cur_.pos(), "the tensor count is cut off");
    if (!cur_.read(n_kv_)) return corrupt("header", cur_.pos(), "the metadata count is cut off");
    const std::uint64_t left = cur_.remaining();
    if (n_kv_ > left / k_min_kv_bytes || n_tensors_ > left / k_min_tensor_bytes ||
        n_kv_ * k_min_kv_bytes + n_tensors_ * k_min_tensor_bytes > left) {
      return make_status(status_code::corrupt_data,
                         "gguf: header claims %llu metadata entries and %llu tensors, which "
                         "cannot fit in the %llu bytes that follow it",
                         static_cast<unsigned long long>(n_kv_),
                         static_cast<unsigned long long>(n_tensors_),
                         static_cast<unsigned long long>(left));
    }
    // The tables are indexed with u32, whatever the limits say.
    constexpr std::uint64_t k_u32_max = 0xFFFF'FFFFu;
    if (n_kv_ > std::min(limits_.max_metadata, k_u32_max) ||
        n_tensors_ > std::min(limits_.max_tensors, k_u32_max))
      return make_status(status_code::unsupported,
                         "gguf: %llu metadata entries and %llu tensors exceed the limits "
                         "(%llu, %llu)",
                         static_cast<unsigned long long>(n_kv_),
                         static_cast<unsigned long long>(n_tensors_),
                         static_cast<unsigned long long>(limits_.max_metadata),
                         static_cast<unsigned long long>(limits_.max_tensors));
    return {};
  }

  status name_error(const char* what, std::uint64_t index, std::size_t at, const char* why) {
    return make_status(status_code::corrupt_data, "gguf: %s %llu at byte %zu: %s", what,
                       static_cast<unsigned long long>(index), at, why);
  }

  status entry_error(status_code code, const kv& kv, std::size_t at, const char* what) {
    return make_status(code, "gguf: key '%s' (entry at byte %zu), at byte %zu: %s",
                       printable(kv.key_).c_str(), kv.offset_, at, what);
  }

  /// Reads `count` values of fixed-size or string type `t` (a scalar when !array).
  status read_values(kv& kv, meta_type t, std::uint64_t count, contents& out) {
    kv.value_ = cur_.data() + cur_.pos();
    if (t == meta_type::string) {
      if (kv.is_array()) {
        // At least 8 bytes per string: a count beyond that is hostile; fail before the
        // string index grows.
        if (count > cur_.remaining() / 8)
          return entry_error(status_code::corrupt_data, kv, cur_.pos(),
                             "the array claims more strings than the bytes that remain hold");
        if (count > limits_.max_total_strings - out.strings.size())
          return entry_error(status_code::unsupported, kv, cur_.pos(),
                             "too many strings in string arrays (gguf::limits::max_total_strings)");
        string_starts_.push_back(out.strings.size());
      }
      for (std::uint64_t i = 0; i < count; ++i) {
        const std::byte* start = cur_.data() + cur_.pos();
        std::string_view s;
        const char* why = "";
        if (!cur_.read_string(s, std::numeric_limits<std::uint64_t>::max(), why))
          return entry_error(status_code::corrupt_data, kv, cur_.pos(), why);
        if (kv.is_array()) out.strings.push_back(start);
      }
      return {};
    }
    const std::uint64_t size = fixed_size(t);
    if (count > cur_.remaining() / size)
      return entry_error(
          status_code::corrupt_data, kv, cur_.pos(),
          kv.is_array() ? "the array runs past the end of the file" : "the value is cut off");
    if (t == meta_type::boolean) {
      for (std::uint64_t i = 0; i < count; ++i)
        if (std::to_integer<unsigned>(kv.value_[i]) > 1)
          return entry_error(status_code::corrupt_data, kv, cur_.pos() + i,
                             "a bool must be 0 or 1");
    }
    cur_.skip(count * size);
    return {};
  }

  status read_type(kv& kv, meta_type& t, const char* what) {
    std::uint32_t code = 0;
    const std::size_t at = cur_.pos();
    if (!cur_.read(code)) return entry_error(status_code::corrupt_data, kv, at, "cut off");
    t = static_cast<meta_type>(code);
    if (!is_valid(t))
      return make_status(status_code::corrupt_data,
                         "gguf: key '%s' (entry at byte %zu), at byte %zu: unknown %s %u",
                         printable(kv.key_).c_str(), kv.offset_, at, what,
                         static_cast<unsigned>(code));
    return {};
  }

  status parse_metadata(contents& out) {
    for (std::uint64_t i = 0; i < n_kv_; ++i) {
      kv kv;
      kv.offset_ = cur_.pos();
      const char* why = "";
      if (!cur_.read_string(kv.key_, limits_.max_name_length, why))
        return name_error("metadata entry", i, cur_.pos(), why);
      MNEMO_RETURN_IF_ERROR(read_type(kv, kv.type_, "value type"));
      kv.elem_ = kv.type_;
      if (kv.is_array()) {
        MNEMO_RETURN_IF_ERROR(read_type(kv, kv.elem_, "array element type"));
        if (kv.elem_ == meta_type::array)
          return entry_error(status_code::unsupported, kv, cur_.pos() - 4,
                             "arrays of arrays are not supported");
        const std::size_t at = cur_.pos();
        if (!cur_.read(kv.count_))
          return entry_error(status_code::corrupt_data, kv, at, "the array length is cut off");
        if (kv.count_ > cur_.remaining())  // every element takes at least one byte
          return entry_error(status_code::corrupt_data, kv, at,
                             "the array length exceeds the bytes that remain");
        if (kv.count_ > limits_.max_array_length)
          return entry_error(status_code::unsupported, kv, at,
                             "the array is longer than gguf::limits::max_array_length");
      }
      MNEMO_RETURN_IF_ERROR(read_values(kv, kv.elem_, kv.count_, out));
      out.metadata.push_back(kv);
    }
    // The string index is complete: point the string arrays into it.
    std::size_t next = 0;
    for (kv& kv : out.metadata)
      if (kv.is_array() && kv.elem_ == meta_type::string)
        kv.strings_ = out.strings.data() + string_starts_[next++];
    return {};
  }

  status check_keys(contents& out) {
    auto& idx = out.metadata_by_key;
    idx.resize(out.metadata.size());
    for (std::uint32_t i = 0; i < idx.size(); ++i) idx[i] = i;
    const auto& m = out.metadata;
    std::stable_sort(idx.begin(), idx.end(),
                     [&](std::uint32_t a, std::uint32_t b) { return m[a].key_ < m[b].key_; });
    for (std::size_t i = 1; i < idx.size(); ++i) {
      const kv& a = m[idx[i - 1]];
      const kv& b = m[idx[i]];
      if (a.key_ == b.key_)
        return make_status(status_code::corrupt_data,
                           "gguf: key '%s' appears twice (entries at bytes %zu and %zu)",
                           printable(a.key_).c_str(), a.offset_, b.offset_);
    }
    return {};
  }

  status read_alignment(contents& out) {
    const auto& m = out.metadata;
    const auto it =
        std::lower_bound(out.metadata_by_key.begin(), out.metadata_by_key.end(),
                         std::string_view("general.alignment"),
                         [&](std::uint32_t a, std::string_view key) { return m[a].key_ < key; });
    if (it == out.metadata_by_key.end() || m[*it].key_ != "general.alignment") return {};
    const kv& kv = m[*it];
    if (kv.type_ != meta_type::u32)
      return entry_error(status_code::corrupt_data, kv, kv.offset_,
                         "general.alignment must be a u32");
    const auto a = load_le<std::uint32_t>(kv.value_);
    if (a == 0 || (a & (a - 1)) != 0)
      return make_status(status_code::corrupt_data,
                         "gguf: general.alignment (entry at byte %zu) is %u, not a power of two",
                         kv.offset_, static_cast<unsigned>(a));
    if (a > limits_.max_alignment)
      return make_status(status_code::unsupported,
                         "gguf: general.alignment (entry at byte %zu) is %u, above the limit %u",
                         kv.offset_, static_cast<unsigned>(a),
                         static_cast<unsigned>(limits_.max_alignment));
    out.alignment = a;
    return {};
  }

  cursor cur_;
  limits limits_;
  std::uint64_t n_tensors_ = 0;
  std::uint64_t n_kv_ = 0;
  std::vector<std::size_t> string_starts_;  // per string array, its first index in strings
};

}  // namespace mnemo::gguf::detail
