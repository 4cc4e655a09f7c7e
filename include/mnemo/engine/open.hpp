// engine::open: the one run-time switch from (architecture, memory kind, K/V type,
// eviction policy) to a compile-time engine_backend_for<Model, Memory>. Each
// combination listed here instantiates its model's forward pass once; a combination not
// listed gets `unsupported` with the list this build has.
//
// Included by exactly one TU (src/c/mnemo.cpp, the mnemo::c library): every
// instantiation lives there, so a program that uses the engine compiles none of them.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>

#include "mnemo/dtype/dtype.hpp"
#include "mnemo/engine/backend_for.hpp"
#include "mnemo/engine/engine.hpp"
#include "mnemo/evict/evict.hpp"
#include "mnemo/gguf/file.hpp"
#include "mnemo/memory/memory.hpp"
#include "mnemo/model/model.hpp"
#include "mnemo/text/tokenizer.hpp"

namespace mnemo {
namespace engine_detail {

using backend_ptr = std::unique_ptr<engine_backend>;

template <class E>
inline constexpr kv_type kv_of = kv_type::f32;
template <>
inline constexpr kv_type kv_of<dtype::f16> = kv_type::f16;
template <>
inline constexpr kv_type kv_of<dtype::bf16> = kv_type::bf16;
template <>
inline constexpr kv_type kv_of<dtype::block_q8_0> = kv_type::q8_0;
template <>
inline constexpr kv_type kv_of<dtype::block_q4_0> = kv_type::q4_0;

/// f.template operator()<KE>() for the K/V element type `t` names, among KEs.
template <class... KEs, class F>
result<backend_ptr> with_kv(kv_type t, const char* what, F&& f) {
  result<backend_ptr> r = make_status(status_code::unsupported, "%s: K/V type %s is not offered",
                                      what, std::string(to_string(t)).c_str());
  bool found = false;
  ((!found && kv_of<KEs> == t ? (found = true, r = f.template operator()<KEs>(), 0) : 0), ...);
  if (!found) {
    std::string names;
    ((names += (names.empty() ? "" : ", ") + std::string(to_string(kv_of<KEs>))), ...);
    r = make_status(status_code::unsupported, "%s: K/V type %s is not in this build (%s)", what,
                    std::string(to_string(t)).c_str(), names.c_str());
  }
  return r;
}

inline status unknown_kind(std::string_view arch, memory_kind k, const char* offered) {
  return make_status(
      status_code::invalid_argument, "%.*s: memory kind '%s' does not fit this architecture (%s)",
      static_cast<int>(arch.size()), arch.data(), std::string(to_string(k)).c_str(), offered);
}

inline context_params context_params_of(const engine_options& o) {
  context_params p;
  p.n_ubatch = o.n_ubatch;
  p.n_batch = o.n_batch;
  p.n_seq_max = o.n_seq_max;
  p.n_threads = o.n_threads;
  p.n_threads_batch = o.n_threads_batch;
  p.recompute = o.recompute;
  p.hooks = o.hooks;
  return p;
}

/// Cells per sequence when n_ctx is shared by n_seq streams.
inline std::size_t per_seq(const engine_options& o) {
  const auto n = static_cast<std::size_t>(o.n_seq_max > 0 ? o.n_seq_max : 1);
  return (static_cast<std::size_t>(o.n_ctx) + n - 1) / n;
}

/// The model moves into its backend, then the memory is made from it.
struct backend_args {
  std::optional<text::tokenizer> tok;
  const engine_options& o;
  std::string_view arch;
};
template <class Memory, class Model, class MakeMemory>
result<backend_ptr> build(Model& m, backend_args& a, MakeMemory&& make_memory) {
  return engine_backend_for<Model, Memory>::make(std::move(m), std::move(a.tok), a.arch,
                                                 context_params_of(a.o),
                                                 std::forward<MakeMemory>(make_memory));
}

template <class KE>
result<backend_ptr> attention_bounded(model::attention_decoder& m, backend_args& a) {
  const engine_options& o = a.o;
  auto with_policy = [&]<class Policy>(Policy policy) {
    return build<memory::bounded<Policy, KE>>(m, a, [&](const model::attention_decoder& mm) {
      memory::bounded_config c;
      c.shape = mm.kv_shape();
      c.budget = o.evict_budget;
      c.max_ubatch = o.n_ubatch;
      c.n_seq_max = o.n_seq_max;
      c.rope = mm.hparams().rope();
      return memory::bounded<Policy, KE>::make(c, policy);
    });
  };
  switch (o.policy) {
    case evict_policy::h2o: return with_policy(evict::h2o{});
    case evict_policy::tova: return with_policy(evict::tova{});
    case evict_policy::snapkv: return with_policy(evict::snapkv{});
    case evict_policy::streaming_llm: return with_policy(evict::streaming_llm{});
    case evict_policy::none: break;
  }
  return make_status(status_code::invalid_argument,
                     "%.*s: memory 'bounded' needs an eviction policy (h2o, tova, snapkv, "
                     "streaming_llm)",
                     static_cast<int>(a.arch.size()), a.arch.data());
}

/// Every attention architecture (llama, qwen2, qwen3, phi3, gemma2, gemma3) runs on one
/// full cache or split streams; those with windowed layers also on the interleaved
/// composites; those without on the bounded cache.
inline result<backend_ptr> open_attention(model::attention_decoder m, backend_args& a,
                                          memory_kind k) {
  const engine_options& o = a.o;
  using model_t = model::attention_decoder;
  const bool interleaved = m.hparams().n_local() > 0 && m.hparams().n_global() > 0;
  if (k == memory_kind::full)
    return with_kv<float, dtype::f16, dtype::bf16, dtype::block_q8_0, dtype::block_q4_0>(
        o.kv, "full", [&]<class KE>() {
          return build<memory::full_cache<KE>>(m, a, [&](const model_t& mm) {
            return memory::full_cache<KE>::make(mm.full_cache_config(o.n_ctx, o.n_seq_max));
          });
        });
  if (k == memory_kind::split)
    return with_kv<float, dtype::f16, dtype::bf16, dtype::block_q8_0, dtype::block_q4_0>(
        o.kv, "split", [&]<class KE>() {
          return build<memory::split_stream<KE>>(m, a, [&](const model_t& mm) {
            return memory::split_stream<KE>::make(mm.split_stream_config(per_seq(o), o.n_seq_max));
          });
        });
  if (k == memory_kind::bounded && !interleaved)
    return with_kv<dtype::f16>(o.kv, "bounded",
                               [&]<class KE>() { return attention_bounded<KE>(m, a); });
  if ((k == memory_kind::iswa || k == memory_kind::iswa_split) && interleaved)
    return with_kv<float, dtype::f16>(o.kv, "iswa", [&]<class KE>() -> result<backend_ptr> {
      if (k == memory_kind::iswa)
        return build<model_t::iswa_memory<KE>>(m, a, [&](const model_t& mm) {
          return mm.make_iswa<KE>(o.n_ctx, o.n_seq_max, o.n_ubatch);
        });
      return build<model_t::iswa_split_memory<KE>>(m, a, [&](const model_t& mm) {
        return mm.make_iswa_split<KE>(per_seq(o), o.n_seq_max, o.n_ubatch);
      });
    });
  return unknown_kind(
      a.arch, k,
      interleaved ? "auto, iswa, iswa-split, full, split" : "auto, full, split, bounded");
}

inline result<backend_ptr> open_mamba(model::mamba_model m, backend_args& a, memory_kind k) {
  if (k != memory_kind::recurrent) return unknown_kind(a.arch, k, "auto, recurrent");
  return build<memory::recurrent>(m, a, [&](const model::mamba_model& mm) {
    return memory::recurrent::make(mm.recurrent_config(a.o.n_seq_max));
  });
}

inline result<backend_ptr> open_jamba(model::jamba_model m, backend_args& a, memory_kind k) {
  const engine_options& o = a.o;
  if (k != memory_kind::hybrid && k != memory_kind::hybrid_split)
    return unknown_kind(a.arch, k, "auto, hybrid, hybrid-split");
  return with_kv<float, dtype::f16>(o.kv, "jamba", [&]<class KE>() -> result<backend_ptr> {
    using model_t = model::jamba_model;
    auto hybrid = [&]<class KV>(auto make_kv) {
      using mem_t = memory::layered<KV, memory::recurrent>;
      return build<mem_t>(m, a, [&, make_kv](const model_t& mm) -> result<mem_t> {
        MNEMO_ASSIGN_OR_RETURN(KV kv, make_kv(mm));
        MNEMO_ASSIGN_OR_RETURN(auto rec, memory::recurrent::make(mm.recurrent_config(o.n_seq_max)));
        return mem_t::make(mm.layer_parts(0, 1), std::move(kv), std::move(rec));
      });
    };
    if (k == memory_kind::hybrid_split)
      return hybrid.template operator()<memory::split_stream<KE>>([&](const model_t& mm) {
        return memory::split_stream<KE>::make(mm.split_stream_config(per_seq(o), o.n_seq_max));
      });
    return hybrid.template operator()<memory::full_cache<KE>>([&](const model_t& mm) {
      return memory::full_cache<KE>::make(mm.full_cache_config(o.n_ctx, o.n_seq_max));
    });
  });
}

/// Each architecture's memory when the options say automatic.
inline memory_kind default_kind(const model::attention_decoder& m, const engine_options& o) {
  // The composite needs both kinds of layer; otherwise one full cache does.
  const auto& hp = m.hparams();
  if (hp.n_local() > 0 && hp.n_global() > 0) return memory_kind::iswa;
  return o.policy != evict_policy::none ? memory_kind::bounded : memory_kind::full;
}
inline memory_kind default_kind(const model::mamba_model&, const engine_options&) {
  return memory_kind::recurrent;
}
inline memory_kind default_kind(const model::jamba_model&, const engine_options&) {
  return memory_kind::hybrid;
}

inline status check_options(const engine_options& o) {
  if (o.n_seq_max < 1 || o.n_seq_max > k_max_seq)
    return make_status(status_code::invalid_argument, "n_seq_max %d is outside [1, %d]",
                       o.n_seq_max, k_max_seq);
  if (o.n_ctx == 0 || o.n_ubatch == 0)
    return make_status(status_code::invalid_argument, "n_ctx (%u) and n_ubatch (%u) must be > 0",
                       o.n_ctx, o.n_ubatch);
  if (o.n_threads < 0 || o.n_threads_batch < 0)
    return make_status(status_code::invalid_argument,
                       "n_threads (%d) and n_threads_batch (%d) must be >= 0 (0: default)",
                       o.n_threads, o.n_threads_batch);
  if (o.policy != evict_policy::none && o.memory != memory_kind::automatic &&
      o.memory != memory_kind::bounded)
    return make_status(status_code::invalid_argument,
                       "eviction policy '%s' needs memory 'bounded' or 'auto' (got '%s')",
                       std::string(to_string(o.policy)).c_str(),
                       std::string(to_string(o.memory)).c_str());
  if (o.policy != evict_policy::none && o.evict_budget == 0)
    return make_status(status_code::invalid_argument, "eviction policy '%s' needs evict_budget > 0",
                       std::string(to_string(o.policy)).c_str());
  return {};
}

/// The attention architectures load through their recipe; the others by themselves.
template <class Model>
result<Model> load_model(gguf::file file) {
  if constexpr (std::is_same_v<Model, model::attention_decoder>)
    return model::load_attention_decoder(std::move(file));
  else
    return Model::load(std::move(file));
}

/// Loads Model from `file` and opens its memory; o.memory becomes the kind used.
template <class Model, class Open>
result<backend_ptr> load_and_open(gguf::file file, engine_options& o, std::string_view arch,
                                  Open open) {
  MNEMO_ASSIGN_OR_RETURN(Model m, load_model<Model>(std::move(file)));
  if (o.memory == memory_kind::automatic) o.memory = default_kind(m, o);
  const memory_kind k = o.memory;
  o.hooks.progress(0.6f);
  if (o.hooks.abort.requested()) return aborted_status("while loading the model");
  backend_args a{std::nullopt, o, arch};
  auto tok = text::tokenizer::from_gguf(m.file());
  if (tok.is_ok())
    a.tok.emplace(std::move(*tok));
  else
    o.hooks.log(log_level::info, "engine: no tokenizer (%s)", tok.error().to_string().c_str());
  o.hooks.progress(0.7f);
  return open(std::move(m), a, k);
}

}  // namespace engine_detail

result<engine> engine::open(const std::string& path, const engine_options& options) {
  using namespace engine_detail;
  engine_options o = options;
  MNEMO_RETURN_IF_ERROR(check_options(o).with_context("engine"));
  o.hooks.progress(0.0f);
  MNEMO_ASSIGN_OR_RETURN(
      gguf::file file, gguf::file::open(path, o.use_mmap ? gguf::access::map : gguf::access::read));
  o.hooks.progress(0.3f);
  if (o.hooks.abort.requested()) return aborted_status("while loading the model");
  MNEMO_ASSIGN_OR_RETURN(std::string_view arch_view, file.get_string("general.architecture"));
  const std::string arch(arch_view);
  result<backend_ptr> b =
      make_status(status_code::unsupported, "architecture '%s' is not supported (%s, mamba, jamba)",
                  arch.c_str(), model::attention_architectures().c_str());
  if (model::find_recipe(arch) != nullptr)
    b = load_and_open<model::attention_decoder>(std::move(file), o, arch, open_attention);
  else if (arch == "mamba")
    b = load_and_open<model::mamba_model>(std::move(file), o, arch, open_mamba);
  else if (arch == "jamba")
    b = load_and_open<model::jamba_model>(std::move(file), o, arch, open_jamba);
  if (!b.is_ok()) {
    status st = b.error();
    o.hooks.log(log_level::error, "engine: %s: %s", path.c_str(), st.to_string().c_str());
    return std::move(st).with_context(path);
  }
  engine e(std::move(*b), o);
  o.hooks.progress(1.0f);
  const memory::memory_report r = e.report();
  o.hooks.log(log_level::info,
              "engine: %s, memory %s, K/V %s, %zu bytes, %d sequences, threads %d / %d batch",
              arch.c_str(), std::string(to_string(o.memory)).c_str(),
              std::string(to_string(o.kv)).c_str(), r.total_bytes, o.n_seq_max,
              e.options().n_threads, e.options().n_threads_batch);
  return e;
}

}  // namespace mnemo
