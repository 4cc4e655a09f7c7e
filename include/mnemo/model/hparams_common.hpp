// Reading the `ARCH.*` metadata keys of a GGUF decoder with llama.cpp's defaults,
// shared by every model's *_hparams.hpp: required keys become not_found statuses
// naming the key, wrong types a status with the architecture's name, and the trunk
// keys (context_length, embedding_length, block_count) are read and checked alike.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "mnemo/base/result.hpp"
#include "mnemo/gguf/file.hpp"

namespace mnemo::model {

namespace detail::arch_keys {

/// Reads `ARCH.SUFFIX` keys of one architecture with llama.cpp's defaults.
class reader {
 public:
  reader(const gguf::file& f, std::string_view arch) : f_(&f), arch_(arch) {}

  std::string key(std::string_view suffix) const {
    return std::string(arch_) + "." + std::string(suffix);
  }
  const gguf::kv* find(std::string_view suffix) const { return f_->find(key(suffix)); }

  /// A u32 key, `fallback` when absent (`required`: not_found instead).
  result<std::uint32_t> u32(std::string_view suffix, std::uint32_t fallback,
                            bool required = false) const {
    const std::string k = key(suffix);
    const gguf::kv* kv = f_->find(k);
    if (kv == nullptr) return missing(k, fallback, required);
    auto v = kv->get<std::uint32_t>();
    if (!v.is_ok()) return status(v.error()).with_context(std::string(arch_));
    return *v;
  }
  result<float> f32(std::string_view suffix, float fallback, bool required = false) const {
    const std::string k = key(suffix);
    const gguf::kv* kv = f_->find(k);
    if (kv == nullptr) return missing(k, fallback, required);
    auto v = kv->get<float>();
    if (!v.is_ok()) return status(v.error()).with_context(std::string(arch_));
    return *v;
  }
  result<bool> boolean(std::string_view suffix, bool fallback) const {
    const gguf::kv* kv = f_->find(key(suffix));
    if (kv == nullptr) return fallback;
    auto v = kv->get<bool>();
    if (!v.is_ok()) return status(v.error()).with_context(std::string(arch_));
    return *v;
  }
  /// A per-layer count given as a scalar (the same for every layer) or an array of
  /// n_layer values, as llama.cpp accepts both; `fallback` per layer when absent.
  result<std::vector<std::uint32_t>> per_layer(std::string_view suffix,
                                               const std::vector<std::uint32_t>& fallback,
                                               std::uint32_t n_layer) const {
    const std::string k = key(suffix);
    const gguf::kv* kv = f_->find(k);
    if (kv == nullptr) return fallback;
    if (!kv->is_array()) {
      MNEMO_ASSIGN_OR_RETURN(std::uint32_t v, u32(suffix, 0));
      return std::vector<std::uint32_t>(n_layer, v);
    }
    auto a = kv->get_array_as<std::uint32_t>();
    if (!a.is_ok()) return status(a.error()).with_context(std::string(arch_));
    if (a->size() != n_layer)
      return make_status(status_code::invalid_argument, "%.*s: '%s' has %zu values for %u layers",
                         static_cast<int>(arch_.size()), arch_.data(), k.c_str(), a->size(),
                         n_layer);
    return std::move(a).value();
  }

  /// A per-layer count as a scalar or an array of n_layer equal values (llama.cpp
  /// accepts both; models with uniform layers refuse differing values).
  result<std::uint32_t> uniform_u32(std::string_view suffix, std::uint32_t fallback,
                                    std::uint32_t n_layer) const {
    const gguf::kv* kv = find(suffix);
    if (kv == nullptr || !kv->is_array()) return u32(suffix, fallback);
    MNEMO_ASSIGN_OR_RETURN(auto a, per_layer(suffix, {}, n_layer));
    for (std::uint32_t v : a)
      if (v != a.front())
        return make_status(status_code::unsupported,
                           "%.*s: '%s' differs between layers (%u, %u); only uniform layers are "
                           "supported",
                           static_cast<int>(arch_.size()), arch_.data(), key(suffix).c_str(),
                           a.front(), v);
    return a.empty() ? fallback : a.front();
  }

  /// The keys every decoder requires: context_length, embedding_length and
  /// block_count, the last two > 0.
  template <class Hparams>
  status trunk(Hparams& h) const {
    MNEMO_ASSIGN_OR_RETURN(h.n_ctx_train, u32("context_length", 0, true));
    MNEMO_ASSIGN_OR_RETURN(h.n_embd, u32("embedding_length", 0, true));
    MNEMO_ASSIGN_OR_RETURN(h.n_layer, u32("block_count", 0, true));
    if (h.n_embd == 0 || h.n_layer == 0)
      return make_status(status_code::invalid_argument,
                         "%.*s: embedding_length (%u) and block_count (%u) must be > 0",
                         static_cast<int>(arch_.size()), arch_.data(), h.n_embd, h.n_layer);
    return {};
  }

  /// general.architecture must be `arch`.
  status check_arch() const {
    MNEMO_ASSIGN_OR_RETURN(std::string_view a, f_->get_string("general.architecture"));
    if (a != arch_)
      return make_status(status_code::unsupported,
                         "%.*s: general.architecture is '%.*s', expected '%.*s'",
                         static_cast<int>(arch_.size()), arch_.data(), static_cast<int>(a.size()),
                         a.data(), static_cast<int>(arch_.size()), arch_.data());
    return {};
  }

  /// n_vocab from token_embd.weight's rows, checked against ARCH.vocab_size if set.
  result<std::uint32_t> vocab() const {
    MNEMO_ASSIGN_OR_RETURN(const gguf::tensor* embd, f_->require_tensor("token_embd.weight"));
    const auto n = static_cast<std::uint32_t>(embd->dims[1]);
    MNEMO_ASSIGN_OR_RETURN(std::uint32_t key_n, u32("vocab_size", n));
    if (key_n != n || n == 0)
      return make_status(status_code::invalid_argument,
                         "%.*s: vocab_size is %u but token_embd.weight has %u rows",
                         static_cast<int>(arch_.size()), arch_.data(), key_n, n);
    return n;
  }

 private:
  template <class T>
  result<T> missing(const std::string& k, T fallback, bool required) const {
    if (required)
      return make_status(status_code::not_found, "%.*s: no metadata key '%s'",
                         static_cast<int>(arch_.size()), arch_.data(), k.c_str());
    return fallback;
  }

  const gguf::file* f_;
  std::string_view arch_;
};

}  // namespace detail::arch_keys

}  // namespace mnemo::model
