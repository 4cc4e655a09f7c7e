// GGUF metadata as views into the file: one gguf::kv per key, typed getters that check
// the stored type (and the range, for integers), and gguf::array<T>, a read-only view of
// an array value. Nothing here copies file bytes except get_array_as().
#pragma once

#include <cstddef>
#include <cstdint>
#include <iterator>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "mnemo/base/assert.hpp"
#include "mnemo/base/result.hpp"
#include "mnemo/base/status.hpp"
#include "mnemo/gguf/types.hpp"

#if !defined(MNEMO_GGUF_DETAIL_OK_)
#define MNEMO_GGUF_DETAIL_OK_ 1
#include "mnemo/gguf/detail/cursor.hpp"
#undef MNEMO_GGUF_DETAIL_OK_
#else
#include "mnemo/gguf/detail/cursor.hpp"
#endif

namespace mnemo::gguf {

namespace detail {
class parser;
}

/// A read-only view of an array value of element type T (a gguf::meta_value). Elements
/// are decoded on access (the file stores them packed and possibly unaligned), so
/// operator[] and the iterators return values, not references. Strings are views into
/// the file. Valid while the gguf::file lives.
template <meta_value T>
class array {
 public:
  using value_type = T;

  array() noexcept = default;

  std::size_t size() const noexcept { return size_; }
  bool empty() const noexcept { return size_ == 0; }

  /// @pre i < size()
  T operator[](std::size_t i) const noexcept {
    MNEMO_DASSERT(i < size_);
    if constexpr (std::is_same_v<T, std::string_view>) {
      const std::byte* p = strings_[i];  // the u64 length, then the bytes (checked at open)
      const auto n = detail::load_le<std::uint64_t>(p);
      return {reinterpret_cast<const char*>(p + sizeof(std::uint64_t)),
              static_cast<std::size_t>(n)};
    } else if constexpr (std::is_same_v<T, bool>) {
      return data_[i] != std::byte{0};
    } else {
      return detail::load_le<T>(data_ + i * sizeof(T));
    }
  }

  class iterator {
   public:
    using iterator_category = std::input_iterator_tag;
    using value_type = T;
    using difference_type = std::ptrdiff_t;
    using pointer = void;
    using reference = T;

    iterator() noexcept = default;
    T operator*() const noexcept { return (*a_)[i_]; }
    iterator& operator++() noexcept {
      ++i_;
      return *this;
    }
    iterator operator++(int) noexcept {
      iterator old = *this;
      ++i_;
      return old;
    }
    friend bool operator==(const iterator& a, const iterator& b) noexcept { return a.i_ == b.i_; }

   private:
    friend class array;
    iterator(const array* a, std::size_t i) noexcept : a_(a), i_(i) {}
    const array* a_ = nullptr;
    std::size_t i_ = 0;
  };

  iterator begin() const noexcept { return iterator(this, 0); }
  iterator end() const noexcept { return iterator(this, size_); }

  std::vector<T> to_vector() const {
    std::vector<T> out;
    out.reserve(size_);
    for (std::size_t i = 0; i < size_; ++i) out.push_back((*this)[i]);
    return out;
  }

 private:
  friend class kv;
  const std::byte* data_ = nullptr;            // fixed-size elements, packed
  const std::byte* const* strings_ = nullptr;  // string elements: where each one starts
  std::size_t size_ = 0;
};

/// One metadata entry: a key and a scalar or array value, all views into the file.
class kv {
 public:
  std::string_view key() const noexcept { return key_; }
  /// gguf::meta_type::array for arrays.
  meta_type type() const noexcept { return type_; }
  bool is_array() const noexcept { return type_ == meta_type::array; }
  /// The type of the elements of an array; type() for a scalar.
  meta_type element_type() const noexcept { return elem_; }
  /// Elements of an array; 1 for a scalar.
  std::uint64_t size() const noexcept { return count_; }
  /// Byte offset of the entry (its key) in the file.
  std::size_t offset() const noexcept { return offset_; }

  /// The scalar value as T. Integer T accepts every integer type whose value fits
  /// (out_of_range otherwise); float accepts f32, double accepts f32 and f64; bool and
  /// std::string_view need exactly bool and string. A wrong type is invalid_argument.
  template <meta_value T>
  result<T> get() const {
    if (is_array()) return type_error(meta_type_of<T>::value);
    if constexpr (std::is_same_v<T, bool>) {
      if (type_ != meta_type::boolean) return type_error(meta_type::boolean);
      return value_[0] != std::byte{0};
    } else if constexpr (std::is_same_v<T, std::string_view>) {
      if (type_ != meta_type::string) return type_error(meta_type::string);
      return string_at(value_);
    } else if constexpr (std::is_floating_point_v<T>) {
      if (type_ == meta_type::f32) return static_cast<T>(detail::load_le<float>(value_));
      if (std::is_same_v<T, double> && type_ == meta_type::f64)
        return static_cast<T>(detail::load_le<double>(value_));
      return type_error(meta_type_of<T>::value);
    } else {
      if (!is_integer(type_)) return type_error(meta_type_of<T>::value);
      return narrow<T>(value_, type_, 0);
    }
  }

  /// A view of an array whose elements are exactly T (no conversion).
  template <meta_value T>
  result<array<T>> get_array() const {
    if (!is_array() || elem_ != meta_type_of<T>::value) {
      return make_status(status_code::invalid_argument,
                         "gguf: key '%s' (byte %zu) is %s%.*s, not an array of %.*s",
                         detail::printable(key_).c_str(), offset_, is_array() ? "an array of " : "",
                         static_cast<int>(to_string(elem_).size()), to_string(elem_).data(),
                         static_cast<int>(to_string(meta_type_of<T>::value).size()),
                         to_string(meta_type_of<T>::value).data());
    }
    array<T> a;
    a.data_ = value_;
    a.strings_ = strings_;
    a.size_ = static_cast<std::size_t>(count_);
    return a;
  }

  /// A copy of a numeric array converted to T with the rules of get<T>() per element
  /// (e.g. an i32 array of head counts as std::uint32_t); out_of_range names the first
  /// element that does not fit.
  template <class T>
  requires(std::is_arithmetic_v<T> &&
           !std::is_same_v<T, bool>) result<std::vector<T>> get_array_as()
  const {
    const bool ok_type = is_array() && (is_integer(elem_) ? std::is_integral_v<T>
                                        : elem_ == meta_type::f32
                                            ? std::is_floating_point_v<T>
                                            : elem_ == meta_type::f64 && std::is_same_v<T, double>);
    if (!ok_type) return type_error(meta_type_of<T>::value, "an array of ");
    std::vector<T> out;
    out.reserve(static_cast<std::size_t>(count_));
    const std::size_t step = fixed_size(elem_);
    for (std::size_t i = 0; i < count_; ++i) {
      const std::byte* p = value_ + i * step;
      if constexpr (std::is_integral_v<T>) {
        MNEMO_ASSIGN_OR_RETURN(T v, narrow<T>(p, elem_, i));
        out.push_back(v);
      } else if (elem_ == meta_type::f32) {
        out.push_back(static_cast<T>(detail::load_le<float>(p)));
      } else {
        out.push_back(static_cast<T>(detail::load_le<double>(p)));
      }
    }
    return out;
  }

 private:
  friend class detail::parser;
  kv() = default;

  static std::string_view string_at(const std::byte* p) noexcept {
    const auto n = detail::load_le<std::uint64_t>(p);
    return {reinterpret_cast<const char*>(p + sizeof(std::uint64_t)), static_cast<std::size_t>(n)};
  }

  template <class T>
  result<T> narrow(const std::byte* p, meta_type t, std::size_t index) const {
    bool fits = false;
    T out{};
    auto take = [&](auto v) {
      fits = std::in_range<T>(v);
      if (fits) out = static_cast<T>(v);
    };
    switch (t) {
      case meta_type::u8: take(detail::load_le<std::uint8_t>(p)); break;
      case meta_type::i8: take(detail::load_le<std::int8_t>(p)); break;
      case meta_type::u16: take(detail::load_le<std::uint16_t>(p)); break;
      case meta_type::i16: take(detail::load_le<std::int16_t>(p)); break;
      case meta_type::u32: take(detail::load_le<std::uint32_t>(p)); break;
      case meta_type::i32: take(detail::load_le<std::int32_t>(p)); break;
      case meta_type::u64: take(detail::load_le<std::uint64_t>(p)); break;
      case meta_type::i64: take(detail::load_le<std::int64_t>(p)); break;
      default: break;
    }
    if (fits) return out;
    const std::string what = is_array() ? "element " + std::to_string(index) : "the value";
    return make_status(status_code::out_of_range,
                       "gguf: key '%s' (byte %zu): %s of type %.*s does not fit in %.*s",
                       detail::printable(key_).c_str(), offset_, what.c_str(),
                       static_cast<int>(to_string(t).size()), to_string(t).data(),
                       static_cast<int>(to_string(meta_type_of<T>::value).size()),
                       to_string(meta_type_of<T>::value).data());
  }

  status type_error(meta_type wanted, const char* wanted_prefix = "") const {
    return make_status(
        status_code::invalid_argument, "gguf: key '%s' (byte %zu) is %s%.*s, not %s%.*s",
        detail::printable(key_).c_str(), offset_, is_array() ? "an array of " : "",
        static_cast<int>(to_string(elem_).size()), to_string(elem_).data(), wanted_prefix,
        static_cast<int>(to_string(wanted).size()), to_string(wanted).data());
  }

  std::string_view key_;
  meta_type type_ = meta_type::u8;
  meta_type elem_ = meta_type::u8;
  std::uint64_t count_ = 1;
  std::size_t offset_ = 0;
  const std::byte* value_ = nullptr;           // scalar bytes, or first element of an array
  const std::byte* const* strings_ = nullptr;  // string arrays: start of each element
};

}  // namespace mnemo::gguf
