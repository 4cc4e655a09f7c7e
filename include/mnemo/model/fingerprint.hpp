// A model's fingerprint: a hash of what decides the meaning of its cached state, so a
// session file written with one model is refused by another (docs/sessions.md). It
// covers every tensor's name, ggml type and shape, general.architecture and every
// `<arch>.*` hyper-parameter (the `rope.scaling.*` keys among them), and the values of
// the RoPE frequency tensors (`rope_freqs`: Llama 3.1 files carry their scaling only
// there, and cached keys were rotated with it), but not the other weights (hashing
// gigabytes at every load would cost more than the decode it saves) nor the tokenizer
// keys.
//
// Two files with the same shapes and hyper-parameters but other weights share a
// fingerprint: the name (general.name) is stored beside it to tell them apart in
// messages, and the check is against mistakes, not malice.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "mnemo/gguf/file.hpp"
#include "mnemo/memory/session_format.hpp"
#include "mnemo/memory/state_format.hpp"

namespace mnemo::model {

namespace fingerprint_detail {

class hasher {
 public:
  template <class T>
  void put(T v) {
    memory::byte_writer(bytes_).put(v);
  }
  void put(std::string_view s) {
    put(static_cast<std::uint64_t>(s.size()));
    memory::byte_writer(bytes_).put_bytes(s.data(), s.size());
  }
  void put_bytes(const std::byte* p, std::size_t n) {
    put(static_cast<std::uint64_t>(n));
    memory::byte_writer(bytes_).put_bytes(p, n);
  }
  std::uint64_t digest() const { return memory::checksum64(bytes_); }

 private:
  std::vector<std::uint8_t> bytes_;
};

/// Adds a metadata value in a canonical form: integers as 64-bit, floats as double.
/// The reader has checked every value, so the conversions cannot fail except for
/// integers beyond the chosen width, which are hashed by their status code.
inline void put_value(hasher& h, const gguf::kv& v) {
  using gguf::meta_type;
  const meta_type t = v.element_type();
  const bool is_unsigned64 = t == meta_type::u64;
  if (!v.is_array()) {
    if (t == meta_type::string) {
      h.put(v.get<std::string_view>().value_or(std::string_view{}));
    } else if (t == meta_type::boolean) {
      h.put(static_cast<std::uint8_t>(v.get<bool>().value_or(false)));
    } else if (t == meta_type::f32 || t == meta_type::f64) {
      h.put(v.get<double>().value_or(0.0));
    } else if (is_unsigned64) {
      h.put(v.get<std::uint64_t>().value_or(std::uint64_t{0}));
    } else {
      h.put(v.get<std::int64_t>().value_or(std::int64_t{0}));
    }
    return;
  }
  if (t == meta_type::string) {
    if (auto a = v.get_array<std::string_view>())
      for (std::string_view s : *a) h.put(s);
  } else if (t == meta_type::boolean) {
    if (auto a = v.get_array<bool>())
      for (bool b : *a) h.put(static_cast<std::uint8_t>(b));
  } else if (t == meta_type::f32 || t == meta_type::f64) {
    for (double d : v.get_array_as<double>().value_or(std::vector<double>{})) h.put(d);
  } else if (is_unsigned64) {
    for (std::uint64_t u : v.get_array_as<std::uint64_t>().value_or(std::vector<std::uint64_t>{}))
      h.put(u);
  } else {
    for (std::int64_t i : v.get_array_as<std::int64_t>().value_or(std::vector<std::int64_t>{}))
      h.put(i);
  }
}

/// Tensors whose values decide how keys are rotated (llama.cpp's names): hashed whole.
inline bool rotates_keys(std::string_view tensor_name) noexcept {
  return tensor_name == "rope_freqs.weight" || tensor_name == "rope_factors_long.weight" ||
         tensor_name == "rope_factors_short.weight";
}

}  // namespace fingerprint_detail

/// The fingerprint of a GGUF model file (any architecture, also one mnemo cannot run).
inline memory::session_model fingerprint(const gguf::file& f) {
  fingerprint_detail::hasher h;
  const std::string_view arch = f.get_string("general.architecture").value_or(std::string_view{});
  h.put(arch);
  const std::string prefix = std::string(arch) + ".";
  for (const gguf::kv& v : f.metadata()) {  // file order: a reordered file is another file
    if (arch.empty() || !v.key().starts_with(prefix)) continue;
    h.put(v.key());
    h.put(static_cast<std::uint32_t>(v.type()));
    h.put(static_cast<std::uint32_t>(v.element_type()));
    h.put(v.size());
    fingerprint_detail::put_value(h, v);
  }
  for (const gguf::tensor& t : f.tensors()) {
    h.put(t.name);
    h.put(t.ggml_type);
    h.put(t.n_dims);
    for (std::uint64_t d : t.dims) h.put(d);
    if (fingerprint_detail::rotates_keys(t.name)) h.put_bytes(t.data.data(), t.data.size());
  }
  memory::session_model m;
  m.fingerprint = h.digest();
  m.architecture = std::string(arch);
  m.name = std::string(f.get_string("general.name").value_or(std::string_view{}));
  return m;
}

}  // namespace mnemo::model
