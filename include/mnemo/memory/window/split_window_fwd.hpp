// split_window's configuration and declaration, without its implementation: what a
// model needs to offer a window per sequence (model/decoder_memory.hpp) without making
// every TU that includes the model parse the strategy. Include split_window.hpp to use
// one.
#pragma once

#include "mnemo/dtype/concepts.hpp"
#include "mnemo/memory/types.hpp"
#include "mnemo/memory/window/sliding_window_fwd.hpp"

namespace mnemo::memory {

struct split_window_config {
  /// Every stream's window cache: n_ctx is the context of one sequence (n_ctx_seq),
  /// size an explicit cell count per stream; n_seq_max is ignored (1 per stream).
  sliding_window_config stream;
  seq_id n_seq_max = 1;  // streams; sequence ids live in [0, n_seq_max)

  /// Cells of one stream: pad(n_swa + n_ubatch, 256), min n_ctx (swa_full: n_ctx).
  std::size_t cells_per_stream() const noexcept {
    sliding_window_config c = stream;
    c.n_seq_max = 1;
    return c.cells();
  }
};

template <dtype::kv_element KE, dtype::kv_element VE = KE>
class split_window;

}  // namespace mnemo::memory
