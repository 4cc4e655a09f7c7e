// One unit of attention work: the query rows of one tile (tokens of one sequence in
// one stream) for a range of KV heads, against one chunk of the stream's cells.
// Plain data, shared by the driver and every ISA's block kernels.
#pragma once

#include <cstddef>
#include <cstdint>

#include "mnemo/attention/kv_view.hpp"
#include "mnemo/attention/params.hpp"
#include "mnemo/simd/f16_widening.hpp"

namespace mnemo::attention::detail {

/// Cells per block: the unit of masking, of K/V decoding and of block skipping.
inline constexpr std::size_t k_block_cells = 64;  // 128 and 256 measured slower
/// Query rows (tokens x group heads) per tile in prefill: the GEMM A panel. K blocks
/// are decoded and transposed once per tile, so larger tiles amortise that better.
inline constexpr std::size_t k_tile_rows = 256;
/// Up to this many rows per KV head a tile is "decode-like": scores cell by cell
/// with K/V read in place, all KV heads in one item so each thread streams whole
/// cell rows, parallel over chunks of cells (split-K). Above it, "prefill-like": a
/// transposed K block and register-tiled GEMMs, one item per KV head.
inline constexpr std::size_t k_dot_form_max_rows = 16;

struct tile {
  std::uint32_t stream;
  std::uint32_t first;  // index into the driver's token order
  std::uint32_t count;  // tokens in the tile
};

/// Per-thread scratch, sized for the largest item (R rows per head, H heads).
struct scratch {
  float* q;                // [H, R, d_k]  gathered queries
  float* o;                // [H, R, d_v]  running numerators
  float* m;                // [H, R]
  float* l;                // [H, R]
  float* s;                // [H, R, k_block_cells]  logits, then probabilities
  float* kf;               // [k_block_cells, d_k]  decoded K rows (prefill)
  float* kt;               // [d_k, k_block_cells]  transposed K block (GEMM form)
  float* vf;               // [k_block_cells, d_v]  decoded V rows (prefill)
  std::uint8_t* keep;      // [tokens, k_block_cells]: token keeps cell
  std::uint8_t* full;      // [tokens]: token keeps every cell of the block
  std::uint8_t* keep_any;  // [k_block_cells]: some token keeps cell
};

/// Where the main pass keeps the logits that an export (mass, logits) reads once the
/// merge has the final log-sum-exp: per stream [its contributing rows, n_head, its
/// cells], masked cells -inf. base null: the export recomputes them instead.
struct logit_store {
  static constexpr std::uint32_t no_slot = 0xffffffffu;
  struct stream_part {
    std::size_t offset = 0;                      // first float of the stream's rows
    std::size_t n_cells = 0;                     // the stream's cells
    std::size_t token_begin = 0, token_end = 0;  // its contributing tokens in `tokens`
  };
  float* base = nullptr;
  const stream_part* streams = nullptr;
  const std::uint32_t* slot = nullptr;    // per token: its row in its stream's part, or no_slot
  const std::uint32_t* tokens = nullptr;  // the contributing tokens, stream by stream
};

struct call {
  shape sh;
  params p;
  const query_batch* q;
  const kv_view* streams;
  const std::uint32_t* order;  // token indices grouped by (stream, sequence)
  std::size_t k_head_bytes;    // bytes of one head's K row
  std::size_t v_head_bytes;
  simd::f16_widening widening;  // the decode tiles and read order follow it (AVX2)
  bool bf16_products;  // product_precision::bf16 requested and the CPU has it (AVX-512 only)
  logit_store store = {};
};

struct item {
  const tile* t;
  std::size_t head_begin, head_end;  // KV heads [begin, end)
  std::size_t cell_begin, cell_end;  // stream-wide cell range of this chunk
  bool decode;                       // run_decode_item (else run_item)
};

}  // namespace mnemo::attention::detail
