// Every attention-decoder architecture mnemo runs, by its GGUF general.architecture, for
// code that picks one at run time (the examples, a server): attention_decoder is one type
// for all of them, so a caller instantiates its context and memory once.
//
//   MNEMO_ASSIGN_OR_RETURN(auto m, model::open_attention_decoder("any.gguf"));
//
// A new architecture adds its file (a decoder_recipe) and a row here.
#pragma once

#include <string>
#include <string_view>

#include "mnemo/gguf/file.hpp"
#include "mnemo/model/decoder.hpp"
#include "mnemo/model/gemma2.hpp"
#include "mnemo/model/gemma3.hpp"
#include "mnemo/model/llama.hpp"
#include "mnemo/model/phi3.hpp"
#include "mnemo/model/qwen2.hpp"
#include "mnemo/model/qwen3.hpp"

namespace mnemo::model {

inline constexpr const decoder_recipe* k_attention_recipes[] = {
    &llama_arch::recipe, &qwen2_arch::recipe,  &qwen3_arch::recipe,
    &phi3_arch::recipe,  &gemma2_arch::recipe, &gemma3_arch::recipe,
};

/// The recipe of architecture `name`, or null when it is not an attention decoder mnemo
/// runs.
inline const decoder_recipe* find_recipe(std::string_view name) noexcept {
  for (const decoder_recipe* r : k_attention_recipes)
    if (r->name == name) return r;
  return nullptr;
}

/// The names of every architecture above, comma-separated (for messages).
inline std::string attention_architectures() {
  std::string s;
  for (const decoder_recipe* r : k_attention_recipes)
    s += (s.empty() ? "" : ", ") + std::string(r->name);
  return s;
}

/// Loads a file of any architecture above, by its general.architecture.
inline result<attention_decoder> load_attention_decoder(gguf::file file) {
  MNEMO_ASSIGN_OR_RETURN(std::string_view arch, file.get_string("general.architecture"));
  const decoder_recipe* r = find_recipe(arch);
  if (r == nullptr)
    return make_status(
        status_code::unsupported, "architecture '%.*s' is not an attention decoder mnemo runs (%s)",
        static_cast<int>(arch.size()), arch.data(), attention_architectures().c_str());
  return attention_decoder::load(std::move(file), *r);
}

inline result<attention_decoder> open_attention_decoder(const std::string& path,
                                                        gguf::access access = gguf::access::map) {
  MNEMO_ASSIGN_OR_RETURN(gguf::file f, gguf::file::open(path, access));
  auto m = load_attention_decoder(std::move(f));
  if (!m.is_ok()) return status(m.error()).with_context(path);
  return m;
}

}  // namespace mnemo::model
