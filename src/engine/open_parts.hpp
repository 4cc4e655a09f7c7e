// The pieces of engine::open shared by the translation units of the mnemo::engine
// library (src/engine/*.cpp). Each memory family is opened in a file of its own, so the
// library's instantiations compile in parallel and a change to one strategy recompiles
// its file only; open.cpp maps (architecture, memory kind) onto them.
//
// Private to the library: not installed, included by src/engine/*.cpp only.
#pragma once

#include <cstddef>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "mnemo/dtype/dtype.hpp"
#include "mnemo/engine/backend_for.hpp"
#include "mnemo/engine/engine.hpp"
#include "mnemo/text/tokenizer.hpp"

namespace mnemo {
namespace model {
class attention_decoder;
class mamba_model;
class jamba_model;
}  // namespace model

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

// ---- one function per memory family, each in its own file --------------------------

/// attention_full.cpp: one full cache, every K/V type.
result<backend_ptr> open_attention_full(model::attention_decoder& m, backend_args& a);
/// attention_split.cpp: split streams, every K/V type.
result<backend_ptr> open_attention_split(model::attention_decoder& m, backend_args& a);
/// attention_bounded.cpp: a bounded cache under o.policy (f16).
result<backend_ptr> open_attention_bounded(model::attention_decoder& m, backend_args& a);
/// attention_iswa.cpp: the interleaved composites, k = iswa or iswa_split (f32, f16).
result<backend_ptr> open_attention_iswa(model::attention_decoder& m, backend_args& a,
                                        memory_kind k);
/// recurrent.cpp: mamba on recurrent state; jamba on hybrid or hybrid-split.
result<backend_ptr> open_mamba(model::mamba_model& m, backend_args& a, memory_kind k);
result<backend_ptr> open_jamba(model::jamba_model& m, backend_args& a, memory_kind k);

}  // namespace engine_detail
}  // namespace mnemo
