// full_cache's configuration and declaration, without its implementation: what a model
// needs to offer a full cache (model/decoder_memory.hpp) without making every TU that
// includes the model parse the strategy. Include full_cache.hpp to use one.
#pragma once

#include <cstddef>
#include <vector>

#include "mnemo/attention/params.hpp"
#include "mnemo/attention/rope.hpp"
#include "mnemo/dtype/concepts.hpp"
#include "mnemo/memory/kv_storage.hpp"
#include "mnemo/memory/types.hpp"

namespace mnemo::memory {

struct full_cache_config {
  kv_shape shape;
  std::size_t size = 0;         // cells
  seq_id n_seq_max = 1;         // sequence ids live in [0, n_seq_max), at most 256
  attention::rope_config rope;  // how cached keys were rotated (for K-shift)
  bool shift_supported = true;  // false for M-RoPE-like models: seq_add/div are refused
  /// Per layer, the window its attention masks by (empty: none). A full cache forgets
  /// nothing: the window is a mask only, reported with the layer's views.
  std::vector<attention::layer_window> windows;
};

template <dtype::kv_element KE, dtype::kv_element VE = KE>
class full_cache;

}  // namespace mnemo::memory
