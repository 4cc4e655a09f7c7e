// The memories an attention decoder runs on, configured from its hyper-parameters
// (what every attention architecture offers, written once; mixed into
// attention_decoder):
//  - one full cache for every layer (window layers then use the window as a mask only);
//  - split streams, one per sequence;
//  - the interleaved composite (Gemma 2, 3): global layers on a full cache, window layers
//    on a window-sized sliding_window (iswa_memory, make_iswa), or the same on split
//    streams (iswa_split_memory, make_iswa_split).
// Every memory is configured with the hyper-parameters' layer windows and reports each
// layer's window with its views; the attention mask takes it from there, so the memory
// is the one source of the window (a full cache or split streams apply it as a mask
// only; a sliding window also forgets by it).
// Only the strategies' configurations and declarations are included here, so that a TU
// using one model and one memory parses that memory alone: make_iswa needs
// memory/layered/layered.hpp, memory/full/full_cache.hpp and
// memory/window/sliding_window.hpp included where it is called; make_iswa_split
// layered.hpp, memory/stream/split_stream.hpp and memory/window/split_window.hpp.
#pragma once

#include <cstdint>
#include <vector>

#include "mnemo/attention/params.hpp"
#include "mnemo/base/result.hpp"
#include "mnemo/memory/full/full_cache_fwd.hpp"
#include "mnemo/memory/layered/layered_fwd.hpp"
#include "mnemo/memory/stream/split_stream_fwd.hpp"
#include "mnemo/memory/window/sliding_window_fwd.hpp"
#include "mnemo/memory/window/split_window_fwd.hpp"
#include "mnemo/model/decoder_hparams.hpp"

namespace mnemo::model {

template <class Decoder>
class decoder_memory {
 public:
  /// Global layers (part 0) on a full cache, window layers (part 1) on a sliding window.
  template <class KE, class VE = KE>
  using iswa_memory = memory::layered<memory::full_cache<KE, VE>, memory::sliding_window<KE, VE>>;
  /// Global layers (part 0) on split streams, window layers (part 1) on a window per
  /// sequence.
  template <class KE, class VE = KE>
  using iswa_split_memory =
      memory::layered<memory::split_stream<KE, VE>, memory::split_window<KE, VE>>;

  /// The K/V geometry of every layer, or of `n_layers` of them.
  memory::kv_shape kv_shape() const noexcept { return kv_shape(hp().n_layer); }
  memory::kv_shape kv_shape(std::size_t n_layers) const noexcept {
    return {n_layers, hp().n_head_kv, hp().d_k, hp().d_v};
  }
  /// One full cache of `size` cells for every layer. When window and global layers rotate
  /// keys differently such a cache cannot K-shift (seq_add / seq_div are refused).
  memory::full_cache_config full_cache_config(std::size_t size, seq_id n_seq_max) const {
    memory::full_cache_config c;
    c.shape = kv_shape();
    c.size = size;
    c.n_seq_max = n_seq_max;
    c.rope = hp().rope();
    c.shift_supported = hp().uniform_rope();
    c.windows = hp().windows();
    return c;
  }
  /// One stream of `size_per_stream` cells per sequence for every layer.
  memory::split_stream_config split_stream_config(std::size_t size_per_stream,
                                                  seq_id n_seq_max) const {
    memory::split_stream_config c;
    c.shape = kv_shape();
    c.size_per_stream = size_per_stream;
    c.n_seq_max = n_seq_max;
    c.rope = hp().rope();
    c.windows = hp().windows();
    return c;
  }
  /// The global part of the composite: n_ctx cells for the global layers.
  memory::full_cache_config global_cache_config(std::size_t n_ctx, seq_id n_seq_max) const {
    memory::full_cache_config c;
    c.shape = kv_shape(hp().n_global());
    c.size = n_ctx;
    c.n_seq_max = n_seq_max;
    c.rope = hp().rope_global;
    return c;
  }
  /// The window part: pad(n_swa * n_seq_max + n_ubatch, 256) cells (min n_ctx), as
  /// llama.cpp sizes it, or `size` cells when given (tests use small sizes so that cells
  /// are reused).
  memory::sliding_window_config window_config(std::size_t n_ctx, seq_id n_seq_max,
                                              std::uint32_t n_ubatch, std::size_t size = 0) const {
    memory::sliding_window_config c;
    c.shape = kv_shape(hp().n_local());
    c.n_ctx = n_ctx;
    c.n_seq_max = n_seq_max;
    c.n_ubatch = n_ubatch;
    c.window = attention::window_kind::standard;
    c.n_swa = static_cast<pos_t>(hp().n_swa);
    c.size = size;
    c.rope = hp().rope_local;
    return c;
  }
  /// layer -> part of iswa_memory: 0 global, 1 window.
  std::vector<std::uint8_t> layer_parts() const {
    std::vector<std::uint8_t> parts(hp().n_layer);
    for (std::size_t l = 0; l < hp().n_layer; ++l) parts[l] = hp().local(l) ? 1 : 0;
    return parts;
  }
  /// The interleaved composite. Needs both kinds of layer (a model with only global
  /// layers runs on full_cache_config alone).
  template <class KE, class VE = KE>
  result<iswa_memory<KE, VE>> make_iswa(std::size_t n_ctx, seq_id n_seq_max, std::uint32_t n_ubatch,
                                        std::size_t window_size = 0) const {
    MNEMO_RETURN_IF_ERROR(check_interleaved("full cache"));
    using full_t = memory::full_cache<KE, VE>;
    using window_t = memory::sliding_window<KE, VE>;
    MNEMO_ASSIGN_OR_RETURN(full_t g, full_t::make(global_cache_config(n_ctx, n_seq_max)));
    MNEMO_ASSIGN_OR_RETURN(window_t w,
                           window_t::make(window_config(n_ctx, n_seq_max, n_ubatch, window_size)));
    return iswa_memory<KE, VE>::make(layer_parts(), std::move(g), std::move(w));
  }
  /// The interleaved composite on split streams: n_ctx_seq cells per sequence for the
  /// global layers, pad(n_swa + n_ubatch, 256) per sequence (min n_ctx_seq) or
  /// `window_size` for the window ones.
  template <class KE, class VE = KE>
  result<iswa_split_memory<KE, VE>> make_iswa_split(std::size_t n_ctx_seq, seq_id n_seq_max,
                                                    std::uint32_t n_ubatch,
                                                    std::size_t window_size = 0) const {
    MNEMO_RETURN_IF_ERROR(check_interleaved("split-stream cache"));
    memory::split_window_config wc;
    wc.stream = window_config(n_ctx_seq, 1, n_ubatch, window_size);
    wc.n_seq_max = n_seq_max;
    memory::split_stream_config gc = split_stream_config(n_ctx_seq, n_seq_max);
    gc.shape = kv_shape(hp().n_global());
    gc.rope = hp().rope_global;
    gc.windows.clear();  // the global layers attend without a window
    using split_t = memory::split_stream<KE, VE>;
    using window_t = memory::split_window<KE, VE>;
    MNEMO_ASSIGN_OR_RETURN(split_t gs, split_t::make(gc));
    MNEMO_ASSIGN_OR_RETURN(window_t ws, window_t::make(wc));
    return iswa_split_memory<KE, VE>::make(layer_parts(), std::move(gs), std::move(ws));
  }

 private:
  const decoder_hparams& hp() const noexcept {
    return static_cast<const Decoder&>(*this).hparams();
  }
  const char* name() const noexcept {
    return static_cast<const Decoder&>(*this).recipe().name.data();
  }
  status check_interleaved(const char* instead) const {
    if (hp().n_local() == 0 || hp().n_global() == 0)
      return make_status(status_code::invalid_argument,
                         "%s: the interleaved memory needs window and global layers (this model "
                         "has %u and %u); use one %s",
                         name(), hp().n_local(), hp().n_global(), instead);
    return {};
  }
};

}  // namespace mnemo::model
