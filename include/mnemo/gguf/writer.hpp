// gguf::writer: builds a GGUF v2/v3 file in memory (metadata of every type, tensors laid
// out at `general.alignment`), for tests, fuzz seeds and random-weight models.
//
//   gguf::writer w;                       // version 3, alignment 32
//   w.add("general.architecture", std::string_view("llama"))
//    .add("llama.block_count", std::uint32_t{2})
//    .add_tensor_f32("output_norm.weight", {128}, weights);
//   MNEMO_RETURN_IF_ERROR(w.write("model.gguf"));
//
// Misuse (a repeated key or tensor name, a bad shape, data of the wrong size) is recorded
// and returned by to_bytes()/write(), so calls chain without a check after each.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <initializer_list>
#include <set>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "mnemo/base/result.hpp"
#include "mnemo/base/status.hpp"
#include "mnemo/gguf/types.hpp"

namespace mnemo::gguf {

class writer {
 public:
  /// @pre version is 2 or 3 (recorded as an error otherwise).
  explicit writer(std::uint32_t version = 3) : version_(version) {
    if (version != 2 && version != 3)
      fail(make_status(status_code::invalid_argument, "gguf::writer: version %u is not 2 or 3",
                       static_cast<unsigned>(version)));
  }

  /// A scalar of the exact type T (std::uint32_t{2} writes a u32). "general.alignment"
  /// must be a u32 power of two; it sets the alignment of the data section.
  template <meta_value T>
  writer& add(std::string_view key, T value) {
    if (!begin_key(key, meta_type_of<T>::value)) return *this;
    if constexpr (std::is_same_v<T, std::uint32_t>) {
      if (key == "general.alignment") {
        if (value == 0 || (value & (value - 1)) != 0) {
          fail(make_status(status_code::invalid_argument,
                           "gguf::writer: alignment %u is not a power of two",
                           static_cast<unsigned>(value)));
          return *this;
        }
        alignment_ = value;
      }
    }
    put_value(meta_, value);
    return *this;
  }
  writer& add_string(std::string_view key, std::string_view value) {
    return add<std::string_view>(key, value);
  }

  /// An array of T (numbers, bool or std::string_view).
  template <meta_value T>
  writer& add_array(std::string_view key, std::span<const T> values) {
    if (!begin_key(key, meta_type::array)) return *this;
    put_scalar(meta_, static_cast<std::uint32_t>(meta_type_of<T>::value));
    put_scalar(meta_, static_cast<std::uint64_t>(values.size()));
    for (const T& v : values) put_value(meta_, v);
    return *this;
  }
  writer& add_array(std::string_view key, const std::vector<std::string>& values) {
    std::vector<std::string_view> views(values.begin(), values.end());
    return add_array<std::string_view>(key, views);
  }

  /// A tensor of ggml type `ggml_type` with dims in ggml order (fastest first); `data`
  /// must hold exactly the tensor's bytes.
  writer& add_tensor(std::string_view name, std::span<const std::uint64_t> dims,
                     std::uint32_t ggml_type, std::vector<std::byte> data) {
    const std::string n(name);
    if (!tensor_names_.insert(n).second)
      return fail(make_status(status_code::invalid_argument,
                              "gguf::writer: tensor '%s' is added twice", n.c_str()));
    if (dims.empty() || dims.size() > k_max_dims)
      return fail(make_status(status_code::invalid_argument,
                              "gguf::writer: tensor '%s' has %zu dims, not 1..4", n.c_str(),
                              dims.size()));
    const auto info = find_ggml_type(ggml_type);
    if (!info)
      return fail(make_status(status_code::unsupported, "gguf::writer: unknown ggml type %u",
                              static_cast<unsigned>(ggml_type)));
    std::uint64_t bytes = dims[0] / info->block_size * info->block_bytes;
    bool ok = dims[0] % info->block_size == 0;
    for (std::size_t d = 1; d < dims.size(); ++d)
      ok = ok && !__builtin_mul_overflow(bytes, dims[d], &bytes);
    if (!ok || bytes != data.size())
      return fail(make_status(status_code::invalid_argument,
                              "gguf::writer: tensor '%s': %zu data bytes do not match its shape "
                              "and type %s",
                              n.c_str(), data.size(), std::string(info->name).c_str()));
    tensors_.push_back(
        {n, std::vector<std::uint64_t>(dims.begin(), dims.end()), ggml_type, std::move(data)});
    return *this;
  }
  writer& add_tensor(std::string_view name, std::initializer_list<std::uint64_t> dims,
                     std::uint32_t ggml_type, std::vector<std::byte> data) {
    return add_tensor(name, std::span(dims.begin(), dims.size()), ggml_type, std::move(data));
  }

  /// An f32 tensor from floats.
  writer& add_tensor_f32(std::string_view name, std::initializer_list<std::uint64_t> dims,
                         std::span<const float> values) {
    std::vector<std::byte> data(values.size_bytes());
    if (!values.empty()) std::memcpy(data.data(), values.data(), data.size());
    return add_tensor(name, std::span(dims.begin(), dims.size()), 0, std::move(data));
  }

  /// The first misuse, or ok.
  const status& error() const noexcept { return error_; }

  /// The whole file: header, metadata in insertion order, tensor records in insertion
  /// order, zero padding to the alignment, then each tensor's data at a multiple of the
  /// alignment (each padded to it, as ggml writes them).
  result<std::vector<std::byte>> to_bytes() const {
    if (!error_.is_ok()) return error_;
    std::vector<std::byte> out;
    out.insert(out.end(), reinterpret_cast<const std::byte*>(k_magic.data()),
               reinterpret_cast<const std::byte*>(k_magic.data()) + 4);
    put_scalar(out, version_);
    put_scalar(out, static_cast<std::uint64_t>(tensors_.size()));
    put_scalar(out, n_kv_);
    out.insert(out.end(), meta_.begin(), meta_.end());
    std::uint64_t offset = 0;
    for (const tensor& t : tensors_) {
      put_value(out, std::string_view(t.name));
      put_scalar(out, static_cast<std::uint32_t>(t.dims.size()));
      for (std::uint64_t d : t.dims) put_scalar(out, d);
      put_scalar(out, t.ggml_type);
      put_scalar(out, offset);
      offset += pad(t.data.size());
    }
    out.resize(pad(out.size()));
    for (const tensor& t : tensors_) {
      out.insert(out.end(), t.data.begin(), t.data.end());
      out.resize(pad(out.size()));
    }
    return out;
  }

  /// Writes to_bytes() to `path`.
  status write(const std::string& path) const {
    MNEMO_ASSIGN_OR_RETURN(std::vector<std::byte> bytes, to_bytes());
    std::FILE* f = std::fopen(path.c_str(), "wb");
    if (f == nullptr)
      return make_status(status_code::io_error, "gguf::writer: cannot create '%s'", path.c_str());
    const bool ok = std::fwrite(bytes.data(), 1, bytes.size(), f) == bytes.size();
    if (std::fclose(f) != 0 || !ok)
      return make_status(status_code::io_error, "gguf::writer: cannot write '%s'", path.c_str());
    return {};
  }

 private:
  struct tensor {
    std::string name;
    std::vector<std::uint64_t> dims;
    std::uint32_t ggml_type;
    std::vector<std::byte> data;
  };

  writer& fail(status s) {
    if (error_.is_ok()) error_ = std::move(s);
    return *this;
  }

  bool begin_key(std::string_view key, meta_type type) {
    if (!keys_.insert(std::string(key)).second) {
      fail(make_status(status_code::invalid_argument, "gguf::writer: key '%s' is added twice",
                       std::string(key).c_str()));
      return false;
    }
    ++n_kv_;
    put_value(meta_, key);
    put_scalar(meta_, static_cast<std::uint32_t>(type));
    return true;
  }

  std::size_t pad(std::size_t n) const { return (n + alignment_ - 1) / alignment_ * alignment_; }

  template <class T>
  static void put_scalar(std::vector<std::byte>& out, T v) {
    const auto* p = reinterpret_cast<const std::byte*>(&v);  // little-endian host
    out.insert(out.end(), p, p + sizeof(T));
  }

  template <class T>
  static void put_value(std::vector<std::byte>& out, T v) {
    if constexpr (std::is_same_v<T, std::string_view>) {
      put_scalar(out, static_cast<std::uint64_t>(v.size()));
      const auto* p = reinterpret_cast<const std::byte*>(v.data());
      out.insert(out.end(), p, p + v.size());
    } else if constexpr (std::is_same_v<T, bool>) {
      out.push_back(std::byte{v ? std::uint8_t{1} : std::uint8_t{0}});
    } else {
      put_scalar(out, v);
    }
  }

  std::uint32_t version_;
  std::uint32_t alignment_ = k_default_alignment;
  std::uint64_t n_kv_ = 0;
  std::vector<std::byte> meta_;
  std::vector<tensor> tensors_;
  std::set<std::string, std::less<>> keys_;
  std::set<std::string, std::less<>> tensor_names_;
  status error_;
};

}  // namespace mnemo::gguf
