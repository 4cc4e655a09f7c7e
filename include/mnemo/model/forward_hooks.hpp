// What a decoder's workspace carries besides activations: the caller's abort callback,
// checked between layers so that a long micro-batch stops within one layer's time.
// The context sets it (context_params::hooks); a forward pass that stops returns
// status_code::aborted and the context rolls the memory back like any failed decode.
#pragma once

#include <cstddef>

#include "mnemo/base/hooks.hpp"
#include "mnemo/base/status.hpp"

namespace mnemo::model {

struct forward_hooks {
  abort_callback abort;

  /// aborted when the callback asks, before layer `layer` (> 0) of a forward pass.
  status between_layers(const char* model, std::size_t layer) const {
    if (layer == 0 || !abort.requested()) return {};
    return make_status(status_code::aborted, "%s: stopped by the abort callback before layer %zu",
                       model, layer);
  }
};

}  // namespace mnemo::model
