// layered's declaration, without its implementation: what a model needs to name a
// composite memory (model/decoder_memory.hpp) without making every TU that includes the
// model parse it. Include layered.hpp to use one.
#pragma once

namespace mnemo::memory {

template <class... Parts>
class layered;

}  // namespace mnemo::memory
