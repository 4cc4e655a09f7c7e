// What the attention kernels read: queries with their positions and sequences, and
// one KV view per stream, each made of contiguous segments of cells (STYLE rule 9:
// the memory hands over segments; kernels never take a modulo per element).
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

#include "mnemo/base/seq_set.hpp"
#include "mnemo/base/status.hpp"
#include "mnemo/dtype/dtype.hpp"

namespace mnemo::attention {

/// A run of cells stored contiguously (cells `stride` bytes apart).
/// K: [n_cells, n_head_kv, d_k] of KE; V: [n_cells, n_head_kv, d_v] of VE.
struct kv_segment {
  const void* k = nullptr;
  const void* v = nullptr;
  std::size_t k_stride = 0;  // bytes from one cell's K row to the next
  std::size_t v_stride = 0;
  const pos_t* pos = nullptr;       // [n_cells]; < 0 marks an empty cell
  const seq_set* owners = nullptr;  // [n_cells]; null: every cell belongs to the querying sequence
  std::size_t n_cells = 0;
};

/// One stream: the segments a query of this stream may attend, in cell order.
struct kv_view {
  std::span<const kv_segment> segments;
  std::size_t n_cells() const noexcept {
    std::size_t n = 0;
    for (const auto& s : segments) n += s.n_cells;
    return n;
  }
};

/// Queries [n_tokens, n_head, d_k] f32 with, per token, its position, its primary
/// sequence (only the first id of a coupled token is used: docs/attention.md) and its stream.
struct query_batch {
  const float* q = nullptr;
  std::size_t n_tokens = 0;
  const pos_t* pos = nullptr;             // [n_tokens]
  const seq_id* seq = nullptr;            // [n_tokens]
  const std::uint32_t* stream = nullptr;  // [n_tokens]; null: every token is in stream 0
};

/// Head geometry. n_head is a multiple of n_head_kv (GQA group g = n_head / n_head_kv).
struct shape {
  std::size_t n_head = 0;
  std::size_t n_head_kv = 0;
  std::size_t d_k = 0;
  std::size_t d_v = 0;

  std::size_t group() const noexcept { return n_head / n_head_kv; }

  template <class KE, class VE>
  status validate() const {
    if (n_head == 0 || n_head_kv == 0 || n_head % n_head_kv != 0)
      return make_status(
          status_code::invalid_argument,
          "attention shape: n_head (%zu) must be a positive multiple of n_head_kv (%zu)", n_head,
          n_head_kv);
    if (d_k == 0 || d_v == 0)
      return make_status(status_code::invalid_argument, "attention shape: d_k and d_v must be > 0");
    if (d_k % dtype::element_traits<KE>::block_size != 0 ||
        d_v % dtype::element_traits<VE>::block_size != 0)
      return make_status(status_code::invalid_argument,
                         "attention shape: d_k (%zu) and d_v (%zu) must be multiples of the K/V "
                         "block sizes (%zu, %zu)",
                         d_k, d_v, dtype::element_traits<KE>::block_size,
                         dtype::element_traits<VE>::block_size);
    return {};
  }
};

}  // namespace mnemo::attention
