// The tensor table of a GGUF file: records read and sized (with overflow checks), then
// placed in the data section and checked: aligned, inside the file, unique names, no
// two tensors sharing a byte.
#pragma once

#if !defined(MNEMO_GGUF_DETAIL_OK_)
#error "mnemo/model/detail/gguf_* headers are internal: include mnemo/gguf/file.hpp"
#endif

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "mnemo/base/status.hpp"
#include "mnemo/dtype/element_type.hpp"
#include "mnemo/gguf/detail/cursor.hpp"
#include "mnemo/gguf/metadata.hpp"
#include "mnemo/gguf/tensor.hpp"
#include "mnemo/gguf/types.hpp"

namespace mnemo::gguf::detail {

/// Everything gguf::file keeps after a successful parse; views point into the bytes.
struct contents {
  std::uint32_t version = 0;
  std::uint32_t alignment = k_default_alignment;
  std::size_t data_offset = 0;
  std::vector<kv> metadata;  // in file order
  std::vector<std::uint32_t> metadata_by_key;
  std::vector<const std::byte*> strings;  // start of every string-array element
  std::vector<tensor> tensors;            // in file order
  std::vector<std::uint32_t> tensors_by_name;
};

using ull = unsigned long long;

/// "gguf: tensor 'blk.0.attn_q.weight' (record at byte 1234)"
inline std::string tensor_where(const tensor& t) {
  return "gguf: tensor '" + printable(t.name) + "' (record at byte " +
         std::to_string(t.info_offset) + ")";
}

/// Multiplies into `acc`; false on overflow.
inline bool mul_checked(std::uint64_t& acc, std::uint64_t x) noexcept {
  return !__builtin_mul_overflow(acc, x, &acc);
}

/// Type facts, element count, row bytes and total bytes of one record.
/// @pre t.dims and t.ggml_type are read.
inline status size_tensor(tensor& t, std::uint64_t& n_bytes) {
  const auto info = find_ggml_type(t.ggml_type);
  if (!info)
    return make_status(status_code::unsupported,
                       "%s: ggml type id %u is unknown or not supported by this reader",
                       tensor_where(t).c_str(), static_cast<unsigned>(t.ggml_type));
  t.type_name = info->name;
  if (auto e = dtype::element_type_from_ggml(t.ggml_type); e.is_ok()) t.element_type = *e;
  if (t.dims[0] % info->block_size != 0)
    return make_status(status_code::corrupt_data, "%s: a row of %llu values is not whole %s blocks",
                       tensor_where(t).c_str(), static_cast<ull>(t.dims[0]),
                       std::string(info->name).c_str());
  std::uint64_t row = t.dims[0] / info->block_size;
  if (!mul_checked(row, info->block_bytes))
    return make_status(status_code::corrupt_data, "%s: a row of %llu values overflows 64 bits",
                       tensor_where(t).c_str(), static_cast<ull>(t.dims[0]));
  const bool empty = std::find(t.dims.begin(), t.dims.end(), 0) != t.dims.end();
  std::uint64_t n = 1, bytes = row;
  for (std::size_t d = 0; d < k_max_dims && !empty; ++d) {
    if (!mul_checked(n, t.dims[d]) || (d > 0 && !mul_checked(bytes, t.dims[d])))
      return make_status(status_code::corrupt_data,
                         "%s: the product of the dims overflows 64 bits at dim %zu (%llu)",
                         tensor_where(t).c_str(), d, static_cast<ull>(t.dims[d]));
  }
  t.n_elements = empty ? 0 : n;
  t.row_bytes = static_cast<std::size_t>(row);
  n_bytes = empty ? 0 : bytes;
  return {};
}

/// Reads `n` tensor records; `n_bytes[i]` receives the size of tensor i.
inline status parse_tensor_infos(cursor& cur, std::uint64_t n, const limits& limits, contents& out,
                                 std::vector<std::uint64_t>& n_bytes) {
  for (std::uint64_t i = 0; i < n; ++i) {
    tensor t;
    t.info_offset = cur.pos();
    const char* why = "";
    if (!cur.read_string(t.name, limits.max_name_length, why))
      return make_status(status_code::corrupt_data, "gguf: tensor %llu at byte %zu: name: %s",
                         static_cast<ull>(i), cur.pos(), why);
    const std::size_t at_dims = cur.pos();
    if (!cur.read(t.n_dims))
      return make_status(status_code::corrupt_data, "%s: n_dims is cut off at byte %zu",
                         tensor_where(t).c_str(), at_dims);
    if (t.n_dims == 0 || t.n_dims > k_max_dims)
      return make_status(status_code::corrupt_data, "%s: n_dims is %u, not in 1..4",
                         tensor_where(t).c_str(), static_cast<unsigned>(t.n_dims));
    for (std::uint32_t d = 0; d < t.n_dims; ++d) {
      const std::size_t at = cur.pos();
      if (!cur.read(t.dims[d]))
        return make_status(status_code::corrupt_data, "%s: dim %u is cut off at byte %zu",
                           tensor_where(t).c_str(), static_cast<unsigned>(d), at);
      if (t.dims[d] > static_cast<std::uint64_t>(INT64_MAX))  // ggml's ne is int64
        return make_status(status_code::corrupt_data, "%s: dim %u at byte %zu is %llu (> 2^63-1)",
                           tensor_where(t).c_str(), static_cast<unsigned>(d), at,
                           static_cast<ull>(t.dims[d]));
    }
    const std::size_t at_type = cur.pos();
    if (!cur.read(t.ggml_type) || !cur.read(t.offset))
      return make_status(status_code::corrupt_data, "%s: type or offset cut off at byte %zu",
                         tensor_where(t).c_str(), at_type);
    std::uint64_t bytes = 0;
    MNEMO_RETURN_IF_ERROR(size_tensor(t, bytes));
    out.tensors.push_back(t);
    n_bytes.push_back(bytes);
  }
  return {};
}

/// Places every tensor after the table (which ends at `table_end`) and checks the
/// ranges, the names and overlaps.
inline status check_tensors(std::span<const std::byte> file, std::size_t table_end,
                            const std::vector<std::uint64_t>& n_bytes, contents& out) {
  const std::size_t a = out.alignment;
  // table_end <= file.size() and a <= 2^31, so this cannot wrap for any real buffer.
  out.data_offset = (table_end + a - 1) / a * a;
  if (!out.tensors.empty() && out.data_offset > file.size())
    return make_status(status_code::corrupt_data,
                       "gguf: the data section would start at byte %zu, past the end of the "
                       "%zu-byte file",
                       out.data_offset, file.size());
  const std::uint64_t data_size = file.size() - std::min(out.data_offset, file.size());
  for (std::size_t i = 0; i < out.tensors.size(); ++i) {
    tensor& t = out.tensors[i];
    if (t.offset % a != 0)
      return make_status(status_code::corrupt_data,
                         "%s: data offset %llu is not a multiple of the alignment %zu",
                         tensor_where(t).c_str(), static_cast<ull>(t.offset), a);
    if (t.offset > data_size || n_bytes[i] > data_size - t.offset)
      return make_status(status_code::corrupt_data,
                         "%s: data [%llu, +%llu) in the data section (at byte %zu) runs past "
                         "the end of the %zu-byte file",
                         tensor_where(t).c_str(), static_cast<ull>(t.offset),
                         static_cast<ull>(n_bytes[i]), out.data_offset, file.size());
    t.file_offset = out.data_offset + static_cast<std::size_t>(t.offset);
    t.data = file.subspan(t.file_offset, static_cast<std::size_t>(n_bytes[i]));
  }

  auto& idx = out.tensors_by_name;
  const auto& ts = out.tensors;
  idx.resize(ts.size());
  for (std::uint32_t i = 0; i < idx.size(); ++i) idx[i] = i;
  std::stable_sort(idx.begin(), idx.end(),
                   [&](std::uint32_t x, std::uint32_t y) { return ts[x].name < ts[y].name; });
  for (std::size_t i = 1; i < idx.size(); ++i)
    if (ts[idx[i - 1]].name == ts[idx[i]].name)
      return make_status(status_code::corrupt_data,
                         "%s: the name is also used by the record at byte %zu",
                         tensor_where(ts[idx[i]]).c_str(), ts[idx[i - 1]].info_offset);

  // Overlaps: sort the non-empty ranges by start; each must begin after the last ends.
  std::vector<std::uint32_t> by_start;
  for (std::uint32_t i = 0; i < ts.size(); ++i)
    if (!ts[i].data.empty()) by_start.push_back(i);
  std::sort(by_start.begin(), by_start.end(), [&](std::uint32_t x, std::uint32_t y) {
    return ts[x].file_offset < ts[y].file_offset;
  });
  for (std::size_t i = 1; i < by_start.size(); ++i) {
    const tensor& p = ts[by_start[i - 1]];
    const tensor& t = ts[by_start[i]];
    if (t.file_offset < p.file_offset + p.n_bytes())
      return make_status(status_code::corrupt_data,
                         "%s: data at bytes [%zu, %zu) overlaps tensor '%s' at [%zu, %zu)",
                         tensor_where(t).c_str(), t.file_offset, t.file_offset + t.n_bytes(),
                         printable(p.name).c_str(), p.file_offset, p.file_offset + p.n_bytes());
  }
  return {};
}

}  // namespace mnemo::gguf::detail
