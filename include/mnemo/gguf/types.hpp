// GGUF vocabulary: metadata value types, the ggml tensor types whose sizes the reader
// knows, and the limits a file must respect. Format reference: ggml's docs/gguf.md
// (little-endian, versions 2 and 3).
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

#include "mnemo/dtype/element_type.hpp"

namespace mnemo::gguf {

/// The four bytes every GGUF file starts with.
inline constexpr std::string_view k_magic = "GGUF";
/// The data section is aligned to `general.alignment` bytes, 32 when the key is absent.
inline constexpr std::uint32_t k_default_alignment = 32;
/// ggml tensors have at most 4 dimensions.
inline constexpr std::uint32_t k_max_dims = 4;

/// Metadata value types; the enumerators are the u32 codes in the file.
enum class meta_type : std::uint32_t {
  u8 = 0,
  i8 = 1,
  u16 = 2,
  i16 = 3,
  u32 = 4,
  i32 = 5,
  f32 = 6,
  boolean = 7,
  string = 8,
  array = 9,
  u64 = 10,
  i64 = 11,
  f64 = 12,
};

constexpr bool is_valid(meta_type t) noexcept { return static_cast<std::uint32_t>(t) <= 12; }

constexpr std::string_view to_string(meta_type t) noexcept {
  switch (t) {
    case meta_type::u8: return "u8";
    case meta_type::i8: return "i8";
    case meta_type::u16: return "u16";
    case meta_type::i16: return "i16";
    case meta_type::u32: return "u32";
    case meta_type::i32: return "i32";
    case meta_type::f32: return "f32";
    case meta_type::boolean: return "bool";
    case meta_type::string: return "string";
    case meta_type::array: return "array";
    case meta_type::u64: return "u64";
    case meta_type::i64: return "i64";
    case meta_type::f64: return "f64";
  }
  return "invalid";
}

/// Bytes of one value of a fixed-size type; 0 for string, array and invalid codes.
constexpr std::size_t fixed_size(meta_type t) noexcept {
  switch (t) {
    case meta_type::u8:
    case meta_type::i8:
    case meta_type::boolean: return 1;
    case meta_type::u16:
    case meta_type::i16: return 2;
    case meta_type::u32:
    case meta_type::i32:
    case meta_type::f32: return 4;
    case meta_type::u64:
    case meta_type::i64:
    case meta_type::f64: return 8;
    case meta_type::string:
    case meta_type::array: return 0;
  }
  return 0;
}

constexpr bool is_integer(meta_type t) noexcept {
  switch (t) {
    case meta_type::u8:
    case meta_type::i8:
    case meta_type::u16:
    case meta_type::i16:
    case meta_type::u32:
    case meta_type::i32:
    case meta_type::u64:
    case meta_type::i64: return true;
    default: return false;
  }
}

constexpr bool is_signed_integer(meta_type t) noexcept {
  return t == meta_type::i8 || t == meta_type::i16 || t == meta_type::i32 || t == meta_type::i64;
}

/// The metadata type that stores a C++ type exactly (u8 .. f64, bool, string views).
template <meta_type V>
struct meta_type_tag {
  static constexpr meta_type value = V;
};
template <class T>
struct meta_type_of;
template <>
struct meta_type_of<std::uint8_t> : meta_type_tag<meta_type::u8> {};
template <>
struct meta_type_of<std::int8_t> : meta_type_tag<meta_type::i8> {};
template <>
struct meta_type_of<std::uint16_t> : meta_type_tag<meta_type::u16> {};
template <>
struct meta_type_of<std::int16_t> : meta_type_tag<meta_type::i16> {};
template <>
struct meta_type_of<std::uint32_t> : meta_type_tag<meta_type::u32> {};
template <>
struct meta_type_of<std::int32_t> : meta_type_tag<meta_type::i32> {};
template <>
struct meta_type_of<std::uint64_t> : meta_type_tag<meta_type::u64> {};
template <>
struct meta_type_of<std::int64_t> : meta_type_tag<meta_type::i64> {};
template <>
struct meta_type_of<float> : meta_type_tag<meta_type::f32> {};
template <>
struct meta_type_of<double> : meta_type_tag<meta_type::f64> {};
template <>
struct meta_type_of<bool> : meta_type_tag<meta_type::boolean> {};
template <>
struct meta_type_of<std::string_view> : meta_type_tag<meta_type::string> {};

template <class T>
concept meta_value = requires {
  meta_type_of<T>::value;
};

/// Size facts of a ggml tensor type: `block_size` values take `block_bytes` bytes.
struct ggml_type_info {
  std::uint32_t id;
  std::string_view name;
  std::uint32_t block_size;
  std::uint32_t block_bytes;
};

/// The ggml types whose layout the reader knows (ggml/include/ggml.h ids). Tensors of
/// other ids (i-quants, ternary, removed ids) are refused with `unsupported`, because
/// their byte size, and so their place in the file, cannot be checked.
inline constexpr ggml_type_info k_ggml_types[] = {
    {0, "f32", 1, 4},       {1, "f16", 1, 2},       {2, "q4_0", 32, 18},    {3, "q4_1", 32, 20},
    {6, "q5_0", 32, 22},    {7, "q5_1", 32, 24},    {8, "q8_0", 32, 34},    {9, "q8_1", 32, 36},
    {10, "q2_K", 256, 84},  {11, "q3_K", 256, 110}, {12, "q4_K", 256, 144}, {13, "q5_K", 256, 176},
    {14, "q6_K", 256, 210}, {15, "q8_K", 256, 292}, {24, "i8", 1, 1},       {25, "i16", 1, 2},
    {26, "i32", 1, 4},      {27, "i64", 1, 8},      {28, "f64", 1, 8},      {30, "bf16", 1, 2},
};

/// The size facts of ggml type `id`, or nullopt when the reader does not know it.
constexpr std::optional<ggml_type_info> find_ggml_type(std::uint32_t id) noexcept {
  for (const ggml_type_info& t : k_ggml_types)
    if (t.id == id) return t;
  return std::nullopt;
}

// The table and mnemo's storage types must agree wherever both know a type.
static_assert(find_ggml_type(0)->block_bytes == dtype::block_bytes(dtype::element_type::f32));
static_assert(find_ggml_type(1)->block_bytes == dtype::block_bytes(dtype::element_type::f16));
static_assert(find_ggml_type(2)->block_bytes == dtype::block_bytes(dtype::element_type::q4_0));
static_assert(find_ggml_type(8)->block_bytes == dtype::block_bytes(dtype::element_type::q8_0));
static_assert(find_ggml_type(30)->block_bytes == dtype::block_bytes(dtype::element_type::bf16));
static_assert(find_ggml_type(2)->block_size == dtype::block_size(dtype::element_type::q4_0));
static_assert(find_ggml_type(8)->block_size == dtype::block_size(dtype::element_type::q8_0));

/// Caps a file must respect on top of the format's own rules. Each bounds memory or time
/// a hostile file could otherwise claim; a file beyond one gets `unsupported`. The
/// defaults are far above any real model (the largest have ~50 keys, ~10^4 tensors and
/// ~10^6 vocabulary strings).
struct limits {
  std::uint64_t max_tensors = std::uint64_t{1} << 20;
  std::uint64_t max_metadata = std::uint64_t{1} << 20;
  /// Keys and tensor names, in bytes.
  std::uint64_t max_name_length = 4096;
  /// Elements of one array value.
  std::uint64_t max_array_length = std::uint64_t{1} << 26;
  /// Strings in all string arrays together (the reader keeps an 8-byte index per string).
  std::uint64_t max_total_strings = std::uint64_t{1} << 26;
  /// `general.alignment` must be a power of two not above this.
  std::uint32_t max_alignment = 1u << 16;
};

}  // namespace mnemo::gguf
