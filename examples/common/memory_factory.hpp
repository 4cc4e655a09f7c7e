// One switch from the run-time choice `--memory full|split` x `--kv TYPE` to the
// compile-time memory type, so an example writes its body once as a generic lambda:
//
//   status st = mnemo_examples::with_context(model, rt, n_seq, [&](auto& ctx) -> status {
//     ... ctx.decode(b) ... ctx.memory().report() ...
//   });
//
// Each (strategy, element type) pair instantiates the context and the model's forward
// pass once: ten instantiations per example, the price of a static hot path.
#pragma once

#include <cstddef>
#include <string_view>
#include <utility>

#include "common/cli.hpp"

#include "mnemo/base/result.hpp"
#include "mnemo/base/status.hpp"
#include "mnemo/context.hpp"
#include "mnemo/dtype/dtype.hpp"
#include "mnemo/memory/full/full_cache.hpp"
#include "mnemo/memory/stream/split_stream.hpp"
#include "mnemo/model/architectures.hpp"

namespace mnemo_examples {

template <class Memory>
struct memory_tag {
  using type = Memory;
};

template <class Memory>
struct memory_maker;  // every strategy the examples offer specialises this

/// Unified cache: n_ctx cells shared by every sequence.
template <class KE>
struct memory_maker<mnemo::memory::full_cache<KE>> {
  static constexpr std::string_view name = "full";
  static mnemo::result<mnemo::memory::full_cache<KE>> make(const mnemo::model::attention_decoder& m,
                                                           std::size_t n_ctx, mnemo::seq_id n_seq) {
    return mnemo::memory::full_cache<KE>::make(m.full_cache_config(n_ctx, n_seq));
  }
};

/// One stream per sequence, n_ctx / n_seq cells each (llama.cpp's n_ctx_seq with
/// kv_unified = false).
template <class KE>
struct memory_maker<mnemo::memory::split_stream<KE>> {
  static constexpr std::string_view name = "split";
  static mnemo::result<mnemo::memory::split_stream<KE>> make(
      const mnemo::model::attention_decoder& m, std::size_t n_ctx, mnemo::seq_id n_seq) {
    const std::size_t per_stream =
        n_seq > 0 ? (n_ctx + static_cast<std::size_t>(n_seq) - 1) / n_seq : 0;
    return mnemo::memory::split_stream<KE>::make(m.split_stream_config(per_stream, n_seq));
  }
};

/// Calls f(memory_tag<Memory>{}) for the named strategy and K/V type; f returns a
/// status. invalid_argument for an unknown name (the examples check names first).
template <class F>
mnemo::status visit_memory(std::string_view memory, std::string_view kv, F&& f) {
  namespace dt = mnemo::dtype;
  auto by_kv = [&]<template <class, class> class Strategy>() -> mnemo::status {
    if (kv == "f32") return f(memory_tag<Strategy<float, float>>{});
    if (kv == "f16") return f(memory_tag<Strategy<dt::f16, dt::f16>>{});
    if (kv == "bf16") return f(memory_tag<Strategy<dt::bf16, dt::bf16>>{});
    if (kv == "q8_0") return f(memory_tag<Strategy<dt::block_q8_0, dt::block_q8_0>>{});
    if (kv == "q4_0") return f(memory_tag<Strategy<dt::block_q4_0, dt::block_q4_0>>{});
    return mnemo::make_status(mnemo::status_code::invalid_argument,
                              "unknown K/V type '%.*s' (f32, f16, bf16, q8_0, q4_0)",
                              static_cast<int>(kv.size()), kv.data());
  };
  if (memory == "full") return by_kv.template operator()<mnemo::memory::full_cache>();
  if (memory == "split") return by_kv.template operator()<mnemo::memory::split_stream>();
  return mnemo::make_status(mnemo::status_code::invalid_argument,
                            "unknown memory '%.*s' (full, split)", static_cast<int>(memory.size()),
                            memory.data());
}

/// Builds the memory the options name (n_ctx cells for n_seq sequences), a context
/// over it and `m` (any attention architecture: llama, qwen2, qwen3, phi3, gemma2,
/// gemma3; a window architecture then masks its window layers in the one cache), and
/// returns f(context&).
template <class F>
mnemo::status with_context(const mnemo::model::attention_decoder& m, const runtime_options& o,
                           mnemo::seq_id n_seq, std::size_t n_ctx, F&& f) {
  return visit_memory(o.memory, o.kv, [&]<class Memory>(memory_tag<Memory>) -> mnemo::status {
    MNEMO_ASSIGN_OR_RETURN(Memory mem, memory_maker<Memory>::make(m, n_ctx, n_seq));
    mnemo::context_params p;
    p.n_ubatch = o.n_ubatch;
    p.n_batch = o.n_batch;
    p.n_seq_max = n_seq;
    p.n_threads = o.threads;
    using context_t = mnemo::context<mnemo::model::attention_decoder, Memory>;
    MNEMO_ASSIGN_OR_RETURN(context_t ctx, context_t::make(m, std::move(mem), p));
    return f(ctx);
  });
}

}  // namespace mnemo_examples
