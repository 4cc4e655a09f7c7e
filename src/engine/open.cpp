// engine::open: the one run-time switch from (architecture, memory kind, K/V type,
// eviction policy) to a compile-time engine_backend_for<Model, Memory>. Each memory
// family is opened in a file of its own (open_parts.hpp); a combination not offered
// gets a status naming it and what this build has.
#include <string>
#include <type_traits>
#include <utility>

#include "engine/open_parts.hpp"

#include "mnemo/gguf/file.hpp"
#include "mnemo/model/architectures.hpp"
#include "mnemo/model/jamba.hpp"
#include "mnemo/model/mamba.hpp"

namespace mnemo {
namespace engine_detail {

/// Every attention architecture (llama, qwen2, qwen3, phi3, gemma2, gemma3) runs on one
/// full cache or split streams; those with windowed layers also on the interleaved
/// composites; those without on the bounded cache.
result<backend_ptr> open_attention(model::attention_decoder& m, backend_args& a, memory_kind k) {
  const bool interleaved = m.hparams().n_local() > 0 && m.hparams().n_global() > 0;
  if (k == memory_kind::full) return open_attention_full(m, a);
  if (k == memory_kind::split) return open_attention_split(m, a);
  if (k == memory_kind::bounded && !interleaved) return open_attention_bounded(m, a);
  if ((k == memory_kind::iswa || k == memory_kind::iswa_split) && interleaved)
    return open_attention_iswa(m, a, k);
  return unknown_kind(
      a.arch, k,
      interleaved ? "auto, iswa, iswa-split, full, split" : "auto, full, split, bounded");
}

/// Each architecture's memory when the options say automatic.
memory_kind default_kind(const model::attention_decoder& m, const engine_options& o) {
  // The composite needs both kinds of layer; otherwise one full cache does.
  const auto& hp = m.hparams();
  if (hp.n_local() > 0 && hp.n_global() > 0) return memory_kind::iswa;
  return o.policy != evict_policy::none ? memory_kind::bounded : memory_kind::full;
}
memory_kind default_kind(const model::mamba_model&, const engine_options&) {
  return memory_kind::recurrent;
}
memory_kind default_kind(const model::jamba_model&, const engine_options&) {
  return memory_kind::hybrid;
}

status check_options(const engine_options& o) {
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
  return open(m, a, k);
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
