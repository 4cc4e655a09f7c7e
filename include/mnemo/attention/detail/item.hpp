// One unit of attention work: the query rows of one tile (tokens of one sequence
// in one stream, times the query heads of one GQA group) against one chunk of the
// stream's cells. Plain data, shared by the driver and every ISA's block kernels.
#pragma once

#include <cstddef>
#include <cstdint>

#include "mnemo/attention/kv_view.hpp"
#include "mnemo/attention/params.hpp"

namespace mnemo::attention::detail {

/// Cells per block: K/V rows decoded together; small enough for L1 (64 x 128 f32 =
/// 32 KiB at d = 128 would not be, so K and V blocks live in L2 and the score tile
/// [rows, 64] in L1).
inline constexpr std::size_t k_block_cells = 64;
/// Query rows (tokens x group heads) per tile in prefill: the gemm A panel.
inline constexpr std::size_t k_tile_rows = 64;
/// Up to this many rows the scores are computed cell by cell (decode), above it
/// with a transposed K block and a register-tiled GEMM (prefill).
inline constexpr std::size_t k_dot_form_max_rows = 16;

struct tile {
  std::uint32_t stream;
  std::uint32_t first;  // index into the driver's token order
  std::uint32_t count;  // tokens in the tile
};

/// Per-thread scratch, sized for the largest tile (floats unless noted).
struct scratch {
  float* q;           // [rows, d_k]   gathered queries of the tile
  float* o;           // [rows, d_v]   running numerators
  float* m;           // [rows]
  float* l;           // [rows]
  float* s;           // [rows, k_block_cells]  logits, then probabilities
  float* kf;          // [k_block_cells, d_k]   decoded K block
  float* kt;          // [d_k, k_block_cells]   transposed K block (GEMM form)
  float* vf;          // [k_block_cells, d_v]   decoded V block
  std::uint8_t* keep; // [tokens, k_block_cells]
};

struct call {
  shape sh;
  params p;
  const query_batch* q;
  const kv_view* streams;
  const std::uint32_t* order;  // token indices grouped by (stream, sequence)
  std::size_t k_head_bytes;    // bytes of one head's K row
  std::size_t v_head_bytes;
};

struct item {
  const tile* t;
  std::size_t head_kv;
  std::size_t cell_begin, cell_end;  // stream-wide cell range of this chunk
};

}  // namespace mnemo::attention::detail
