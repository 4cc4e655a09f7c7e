// sliding_window's configuration and declaration, without its implementation: what a
// model needs to offer a window cache (model/decoder_memory.hpp) without making every TU
// that includes the model parse the strategy. Include sliding_window.hpp to use one.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>

#include "mnemo/attention/params.hpp"
#include "mnemo/attention/rope.hpp"
#include "mnemo/dtype/concepts.hpp"
#include "mnemo/memory/kv_storage.hpp"
#include "mnemo/memory/types.hpp"

namespace mnemo::memory {

struct sliding_window_config {
  kv_shape shape;
  std::size_t n_ctx = 0;         // the context a full cache would hold (cells)
  seq_id n_seq_max = 1;          // sequence ids live in [0, n_seq_max), at most 256
  std::uint32_t n_ubatch = 512;  // the largest micro-batch
  attention::window_kind window = attention::window_kind::standard;
  pos_t n_swa = 0;              // the window size
  bool swa_full = false;        // n_ctx cells and nothing forgotten
  std::size_t size = 0;         // cells; 0: the formula below (explicit: tests)
  attention::rope_config rope;  // how cached keys were rotated (for K-shift)
  bool shift_supported = true;  // false for M-RoPE-like models
  seq_id seq_label_base = 0;    // statuses name sequence s as s + this (split_window's streams)

  static constexpr std::size_t k_pad = 256;
  /// Cells of the cache: size, else n_ctx with swa_full, else
  /// min(n_ctx, pad(n_swa * n_seq_max + n_ubatch, 256)), as llama.cpp sizes its SWA cache.
  std::size_t cells() const noexcept {
    if (size != 0) return size;
    if (swa_full || n_swa <= 0) return n_ctx;
    const std::size_t want =
        static_cast<std::size_t>(n_swa) * static_cast<std::size_t>(n_seq_max) + n_ubatch;
    return std::min(n_ctx, (want + k_pad - 1) / k_pad * k_pad);
  }
};

template <dtype::kv_element KE, dtype::kv_element VE = KE>
class sliding_window;

}  // namespace mnemo::memory
