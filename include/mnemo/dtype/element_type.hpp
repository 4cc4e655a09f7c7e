// Run-time names of the storage types (for GGUF tensors, state files and messages) and
// their compile-time traits.
#pragma once

#include <cstddef>
#include <cstdint>
#include <limits>
#include <string_view>

#include "mnemo/base/result.hpp"
#include "mnemo/base/status.hpp"
#include "mnemo/dtype/concepts.hpp"
#include "mnemo/dtype/types.hpp"

namespace mnemo::dtype {

/// A storage type by value. The enumerators are the GGUF / ggml type ids, so a GGUF
/// tensor's type field converts with element_type_from_ggml().
/// f32 .. q4_0 are K/V cache and weight types; q4_1 .. q6_K weight types only
/// (is_kv_type()).
enum class element_type : std::uint8_t {
  f32 = 0,
  f16 = 1,
  q4_0 = 2,
  q4_1 = 3,
  q5_0 = 6,
  q5_1 = 7,
  q8_0 = 8,
  q2_K = 10,
  q3_K = 11,
  q4_K = 12,
  q5_K = 13,
  q6_K = 14,
  bf16 = 30
};

/// Compile-time facts of a storage type.
template <class E>
struct element_traits {
  static_assert(stored_element<E>,
                "dtype::element_traits<E>: E must be float, f16, bf16, block_q8_0, block_q4_0 "
                "or a weight block (block_q4_1 .. block_q6_K)");
};

template <>
struct element_traits<float> {
  static constexpr element_type type = element_type::f32;
  static constexpr std::size_t block_size = 1;   // values per element
  static constexpr std::size_t block_bytes = 4;  // bytes per element
  static constexpr std::string_view name = "f32";
};
template <>
struct element_traits<f16> {
  static constexpr element_type type = element_type::f16;
  static constexpr std::size_t block_size = 1;
  static constexpr std::size_t block_bytes = 2;
  static constexpr std::string_view name = "f16";
};
template <>
struct element_traits<bf16> {
  static constexpr element_type type = element_type::bf16;
  static constexpr std::size_t block_size = 1;
  static constexpr std::size_t block_bytes = 2;
  static constexpr std::string_view name = "bf16";
};
template <>
struct element_traits<block_q8_0> {
  static constexpr element_type type = element_type::q8_0;
  static constexpr std::size_t block_size = k_q8_0_block;
  static constexpr std::size_t block_bytes = sizeof(block_q8_0);
  static constexpr std::string_view name = "q8_0";
};
template <>
struct element_traits<block_q4_0> {
  static constexpr element_type type = element_type::q4_0;
  static constexpr std::size_t block_size = k_q4_0_block;
  static constexpr std::size_t block_bytes = sizeof(block_q4_0);
  static constexpr std::string_view name = "q4_0";
};

template <>
struct element_traits<block_q4_1> {
  static constexpr element_type type = element_type::q4_1;
  static constexpr std::size_t block_size = k_legacy_block;
  static constexpr std::size_t block_bytes = sizeof(block_q4_1);
  static constexpr std::string_view name = "q4_1";
};
template <>
struct element_traits<block_q5_0> {
  static constexpr element_type type = element_type::q5_0;
  static constexpr std::size_t block_size = k_legacy_block;
  static constexpr std::size_t block_bytes = sizeof(block_q5_0);
  static constexpr std::string_view name = "q5_0";
};
template <>
struct element_traits<block_q5_1> {
  static constexpr element_type type = element_type::q5_1;
  static constexpr std::size_t block_size = k_legacy_block;
  static constexpr std::size_t block_bytes = sizeof(block_q5_1);
  static constexpr std::string_view name = "q5_1";
};
template <>
struct element_traits<block_q2_K> {
  static constexpr element_type type = element_type::q2_K;
  static constexpr std::size_t block_size = k_super_block;
  static constexpr std::size_t block_bytes = sizeof(block_q2_K);
  static constexpr std::string_view name = "q2_K";
};
template <>
struct element_traits<block_q3_K> {
  static constexpr element_type type = element_type::q3_K;
  static constexpr std::size_t block_size = k_super_block;
  static constexpr std::size_t block_bytes = sizeof(block_q3_K);
  static constexpr std::string_view name = "q3_K";
};
template <>
struct element_traits<block_q4_K> {
  static constexpr element_type type = element_type::q4_K;
  static constexpr std::size_t block_size = k_super_block;
  static constexpr std::size_t block_bytes = sizeof(block_q4_K);
  static constexpr std::string_view name = "q4_K";
};
template <>
struct element_traits<block_q5_K> {
  static constexpr element_type type = element_type::q5_K;
  static constexpr std::size_t block_size = k_super_block;
  static constexpr std::size_t block_bytes = sizeof(block_q5_K);
  static constexpr std::string_view name = "q5_K";
};
template <>
struct element_traits<block_q6_K> {
  static constexpr element_type type = element_type::q6_K;
  static constexpr std::size_t block_size = k_super_block;
  static constexpr std::size_t block_bytes = sizeof(block_q6_K);
  static constexpr std::string_view name = "q6_K";
};

template <stored_element E>
inline constexpr element_type element_type_of = element_traits<E>::type;

template <stored_element E>
inline constexpr std::size_t block_size_of = element_traits<E>::block_size;

/// Elements (blocks for quantised types) in a row of n values. @pre n % block_size_of<E> == 0
template <stored_element E>
constexpr std::size_t blocks_in_row(std::size_t n) noexcept {
  return n / element_traits<E>::block_size;
}

/// fn(type_tag) for the E of `t` among all stored types, or fn() for a value that is no
/// enumerator (read from a file). The switch every run-time fact below is read from.
template <class Fn>
constexpr decltype(auto) with_traits(element_type t, Fn&& fn) {
  switch (t) {
    case element_type::f32: return fn(element_traits<float>{});
    case element_type::f16: return fn(element_traits<f16>{});
    case element_type::bf16: return fn(element_traits<bf16>{});
    case element_type::q8_0: return fn(element_traits<block_q8_0>{});
    case element_type::q4_0: return fn(element_traits<block_q4_0>{});
    case element_type::q4_1: return fn(element_traits<block_q4_1>{});
    case element_type::q5_0: return fn(element_traits<block_q5_0>{});
    case element_type::q5_1: return fn(element_traits<block_q5_1>{});
    case element_type::q2_K: return fn(element_traits<block_q2_K>{});
    case element_type::q3_K: return fn(element_traits<block_q3_K>{});
    case element_type::q4_K: return fn(element_traits<block_q4_K>{});
    case element_type::q5_K: return fn(element_traits<block_q5_K>{});
    case element_type::q6_K: return fn(element_traits<block_q6_K>{});
  }
  return fn();
}

/// Is `t` one of the enumerators (a value read from a file may not be)?
constexpr bool is_valid(element_type t) noexcept {
  return with_traits(t, []<class... Tr>(Tr...) { return sizeof...(Tr) == 1; });
}

/// Can a K/V cache (and dtype's row kernels) store `t`? False for the weight-only
/// types q4_1 .. q6_K and for invalid values.
constexpr bool is_kv_type(element_type t) noexcept {
  return t == element_type::f32 || t == element_type::f16 || t == element_type::bf16 ||
         t == element_type::q8_0 || t == element_type::q4_0;
}

constexpr std::string_view to_string(element_type t) noexcept {
  return with_traits(t, []<class... Tr>(Tr...) {
    if constexpr (sizeof...(Tr) == 1)
      return (Tr::name, ...);
    else
      return std::string_view("invalid");
  });
}

/// Values per block (1 for f32/f16/bf16, 32 for q8_0 .. q5_1, 256 for the k-quants); 0
/// for an invalid value.
constexpr std::size_t block_size(element_type t) noexcept {
  return with_traits(t, []<class... Tr>(Tr...) -> std::size_t {
    if constexpr (sizeof...(Tr) == 1)
      return (Tr::block_size, ...);
    else
      return 0;
  });
}

/// Bytes per block; 0 for an invalid value.
constexpr std::size_t block_bytes(element_type t) noexcept {
  return with_traits(t, []<class... Tr>(Tr...) -> std::size_t {
    if constexpr (sizeof...(Tr) == 1)
      return (Tr::block_bytes, ...);
    else
      return 0;
  });
}

/// The GGUF / ggml type id of `t`.
constexpr std::uint32_t ggml_type_id(element_type t) noexcept {
  return static_cast<std::uint32_t>(t);
}

/// The storage type of a GGUF tensor type id, or `unsupported` for the ids mnemo does
/// not store (q8_1, q8_K, i-quants, integer types, ...).
inline result<element_type> element_type_from_ggml(std::uint32_t id) {
  if (id <= std::numeric_limits<std::uint8_t>::max()) {
    const auto t = static_cast<element_type>(id);
    if (is_valid(t)) return t;
  }
  return make_status(status_code::unsupported,
                     "ggml type id %u is not a mnemo storage type (f32=0, f16=1, q4_0=2, "
                     "q4_1=3, q5_0=6, q5_1=7, q8_0=8, q2_K..q6_K=10..14, bf16=30)",
                     static_cast<unsigned>(id));
}

/// Bytes of a row of `n` values stored as `t`; invalid_argument when `n` is not a
/// multiple of the block size or `t` is not a valid type, out_of_range on overflow.
inline result<std::size_t> row_bytes(element_type t, std::size_t n) {
  if (!is_valid(t))
    return make_status(status_code::invalid_argument, "row_bytes: invalid element type %u",
                       static_cast<unsigned>(t));
  const std::size_t bs = block_size(t);
  if (n % bs != 0)
    return make_status(status_code::invalid_argument,
                       "row_bytes: a %.*s row holds whole blocks of %zu values, not %zu values",
                       static_cast<int>(to_string(t).size()), to_string(t).data(), bs, n);
  const std::size_t blocks = n / bs;
  if (blocks > std::numeric_limits<std::size_t>::max() / block_bytes(t))
    return make_status(status_code::out_of_range, "row_bytes: %zu values of %.*s overflow size_t",
                       n, static_cast<int>(to_string(t).size()), to_string(t).data());
  return blocks * block_bytes(t);
}

/// Bytes of a row of `n` values of E, unchecked. @pre n % block_size_of<E> == 0
template <stored_element E>
constexpr std::size_t row_bytes_of(std::size_t n) noexcept {
  return n / element_traits<E>::block_size * element_traits<E>::block_bytes;
}

}  // namespace mnemo::dtype
