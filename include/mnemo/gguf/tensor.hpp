// One entry of a GGUF tensor table, checked at open: shape, type, byte size and where
// its data lies in the file.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string_view>

#include "mnemo/dtype/element_type.hpp"

namespace mnemo::gguf {

struct tensor {
  /// A view into the file.
  std::string_view name;
  /// 1..4.
  std::uint32_t n_dims = 0;
  /// ggml `ne`: the fastest-varying dimension first; entries past n_dims are 1. A matrix
  /// [n_in, n_out] is PyTorch's (n_out, n_in).
  std::array<std::uint64_t, 4> dims{1, 1, 1, 1};
  /// The ggml type id from the file, and its name in ggml ("f16", "q4_K", ...).
  std::uint32_t ggml_type = 0;
  std::string_view type_name;
  /// Set when mnemo has a storage type for ggml_type (f32, f16, bf16, q8_0, q4_0).
  std::optional<dtype::element_type> element_type;
  /// Product of dims (0 when a dimension is 0).
  std::uint64_t n_elements = 0;
  /// The offset stored in the file, relative to the data section; a multiple of the
  /// file's alignment.
  std::uint64_t offset = 0;
  /// Byte offset of the data from the start of the file, and of this tensor's record in
  /// the tensor table (for messages).
  std::size_t file_offset = 0;
  std::size_t info_offset = 0;
  /// The tensor's bytes in the file (mapping or caller's buffer): inside the file and
  /// overlapping no other tensor. Aligned to the file's alignment when the buffer is.
  std::span<const std::byte> data;
  /// Bytes of one row (dims[0] values).
  std::size_t row_bytes = 0;

  std::size_t n_bytes() const noexcept { return data.size(); }
};

}  // namespace mnemo::gguf
