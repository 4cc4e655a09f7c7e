// split_stream's configuration and declaration, without its implementation: what a model
// needs to offer split streams (model/decoder_memory.hpp) without making every TU that
// includes the model parse the strategy. Include split_stream.hpp to use one.
#pragma once

#include <cstddef>
#include <vector>

#include "mnemo/attention/params.hpp"
#include "mnemo/attention/rope.hpp"
#include "mnemo/dtype/concepts.hpp"
#include "mnemo/memory/kv_storage.hpp"
#include "mnemo/memory/types.hpp"

namespace mnemo::memory {

struct split_stream_config {
  kv_shape shape;
  std::size_t size_per_stream = 0;  // cells per stream (n_ctx_seq)
  seq_id n_seq_max = 1;             // streams; sequence ids live in [0, n_seq_max)
  std::size_t block_cells = 256;    // cells per block, the copy-on-write unit
  std::size_t pool_blocks = 0;      // 0: n_seq_max * blocks_per_stream() (docs/split-stream.md)
  attention::rope_config rope;      // how cached keys were rotated (for K-shift)
  bool shift_supported = true;      // false for M-RoPE-like models
  /// Per layer, the window its attention masks by (empty: none; a mask only, as in
  /// full_cache_config).
  std::vector<attention::layer_window> windows;

  std::size_t blocks_per_stream() const noexcept {
    return block_cells == 0 ? 0 : (size_per_stream + block_cells - 1) / block_cells;
  }
};

template <dtype::kv_element KE, dtype::kv_element VE = KE>
class split_stream;

}  // namespace mnemo::memory
