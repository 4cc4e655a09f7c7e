// A weight matrix as the products see it: n_out rows of n_in values in one storage
// type (GGUF layout, ggml ne = [n_in, n_out]), so y = W x reads row r for output r.
// A view into the GGUF mapping: the file must outlive it (and the weight_tiles that
// hold its tiles, if any).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

#include "mnemo/base/result.hpp"
#include "mnemo/base/status.hpp"
#include "mnemo/dtype/element_type.hpp"
#include "mnemo/gguf/tensor.hpp"

namespace mnemo::model {

/// Rows per tile of the layouts weight::tiles points at (model/weight_tiles.hpp).
inline constexpr std::size_t k_tile_rows = 16;

/// Whether t is a k-quant with a tile layout (q2_K .. q6_K; q4_0 has one too).
constexpr bool is_k_tiled(dtype::element_type t) noexcept {
  using dtype::element_type;
  return t == element_type::q2_K || t == element_type::q3_K || t == element_type::q4_K ||
         t == element_type::q5_K || t == element_type::q6_K;
}

struct weight {
  dtype::element_type type = dtype::element_type::f32;
  /// Values per row (the input width) and rows (the output width).
  std::size_t n_in = 0;
  std::size_t n_out = 0;
  /// Bytes per row: dtype::row_bytes(type, n_in).
  std::size_t row_bytes = 0;
  const std::byte* data = nullptr;
  std::string_view name;
  /// q4_0 and the k-quants only, or null: the whole tiles of k_tile_rows rows again in the
  /// layout the one-token product reads on CPUs with AVX-512 VNNI and VBMI
  /// (model/weight_tiles.hpp).
  const std::byte* tiles = nullptr;

  const std::byte* row(std::size_t r) const noexcept { return data + r * row_bytes; }
  std::size_t n_bytes() const noexcept { return n_out * row_bytes; }
};

/// The weight view of a GGUF tensor of ne [n_in, n_out] (a 1-D tensor is one row).
/// Refuses types mnemo does not store and shapes other than the expected one (pass 0
/// to accept any n_in / n_out).
inline result<weight> weight_from_gguf(const gguf::tensor& t, std::size_t expect_n_in,
                                       std::size_t expect_n_out) {
  if (!t.element_type)
    return make_status(status_code::unsupported,
                       "tensor '%.*s' has type %.*s, which mnemo does not "
                       "compute with (f32, f16, bf16, q8_0, q4_0, q4_1, q5_0, q5_1, q2_K .. q6_K)",
                       static_cast<int>(t.name.size()), t.name.data(),
                       static_cast<int>(t.type_name.size()), t.type_name.data());
  if (t.n_dims > 2 || t.dims[2] != 1 || t.dims[3] != 1)
    return make_status(status_code::invalid_argument,
                       "tensor '%.*s' has %u dimensions, expected "
                       "a matrix",
                       static_cast<int>(t.name.size()), t.name.data(), t.n_dims);
  const std::size_t n_in = static_cast<std::size_t>(t.dims[0]);
  const std::size_t n_out = static_cast<std::size_t>(t.dims[1]);
  if ((expect_n_in != 0 && n_in != expect_n_in) || (expect_n_out != 0 && n_out != expect_n_out))
    return make_status(status_code::invalid_argument,
                       "tensor '%.*s' has shape [%zu, %zu], expected [%zu, %zu] (ggml ne order)",
                       static_cast<int>(t.name.size()), t.name.data(), n_in, n_out, expect_n_in,
                       expect_n_out);
  weight w;
  w.type = *t.element_type;
  w.n_in = n_in;
  w.n_out = n_out;
  w.row_bytes = t.row_bytes;
  w.data = t.data.data();
  w.name = t.name;
  if (n_in % dtype::block_size(w.type) != 0)
    return make_status(status_code::corrupt_data,
                       "tensor '%.*s': a row of %zu values is not whole %.*s blocks of %zu",
                       static_cast<int>(t.name.size()), t.name.data(), n_in,
                       static_cast<int>(t.type_name.size()), t.type_name.data(),
                       dtype::block_size(w.type));
  if (w.row_bytes != n_in / dtype::block_size(w.type) * dtype::block_bytes(w.type) ||
      w.row_bytes * w.n_out != t.data.size())
    return make_status(status_code::corrupt_data, "tensor '%.*s': %zu bytes for %zu rows of %zu",
                       static_cast<int>(t.name.size()), t.name.data(), t.data.size(), n_out,
                       w.row_bytes);
  return w;
}

}  // namespace mnemo::model
