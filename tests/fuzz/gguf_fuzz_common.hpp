// Shared by the GGUF mutation test (tests/gguf/mutation_test.cpp) and the libFuzzer
// target (tests/fuzz/gguf_fuzzer.cpp): small valid seed files, and a walk that touches
// every byte the reader hands out, with consistency checks.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <string>
#include <string_view>
#include <vector>

#include "mnemo/dtype/weight_decode.hpp"
#include "mnemo/gguf/file.hpp"
#include "mnemo/gguf/writer.hpp"

namespace mnemo::gguf::fuzz {

/// Small valid files that together use every value type, both versions, several
/// alignments and several tensor types: the starting points for mutations.
inline std::vector<std::vector<std::byte>> seed_files() {
  std::vector<std::vector<std::byte>> seeds;
  auto bytes_of = [](std::size_t n, unsigned salt) {
    std::vector<std::byte> d(n);
    for (std::size_t i = 0; i < n; ++i) d[i] = static_cast<std::byte>((i * 37 + salt) & 0xff);
    return d;
  };
  {  // every scalar and array type, v3, default alignment, mnemo's storage types
    gguf::writer w(3);
    w.add("general.architecture", std::string_view("llama"))
        .add("a.u8", std::uint8_t{200})
        .add("a.i8", std::int8_t{-100})
        .add("a.u16", std::uint16_t{60000})
        .add("a.i16", std::int16_t{-30000})
        .add("a.u32", std::uint32_t{4000000000u})
        .add("a.i32", std::int32_t{-2000000000})
        .add("a.f32", 1.5f)
        .add("a.bool", true)
        .add("a.u64", std::uint64_t{1} << 40)
        .add("a.i64", std::int64_t{-1} << 40)
        .add("a.f64", 2.25);
    const std::array<std::int32_t, 4> ints{0, 2, 0, 2};
    const std::array<float, 3> floats{0.5f, -1.0f, 3.0f};
    const std::array<bool, 2> bools{true, false};
    const std::vector<std::string> strs{"<unk>", "", "\xe2\x96\x81the"};
    w.add_array<std::int32_t>("b.i32", ints)
        .add_array<float>("b.f32", floats)
        .add_array<bool>("b.bool", bools)
        .add_array("b.str", strs)
        .add_array<std::uint8_t>("b.empty", {});
    w.add_tensor("t.f32", {4, 2}, 0, bytes_of(32, 1))
        .add_tensor("t.f16", {8}, 1, bytes_of(16, 2))
        .add_tensor("t.q8_0", {32, 2}, 8, bytes_of(68, 3))
        .add_tensor("t.q4_0", {32}, 2, bytes_of(18, 4))
        .add_tensor("t.bf16", {2, 1, 1, 3}, 30, bytes_of(12, 5));
    seeds.push_back(w.to_bytes().value());
  }
  {  // v2, alignment 8
    gguf::writer w(2);
    w.add("general.alignment", std::uint32_t{8}).add("x.name", std::string_view("v2"));
    w.add_tensor("a", {3}, 0, bytes_of(12, 6)).add_tensor("b", {5}, 26, bytes_of(20, 7));
    seeds.push_back(w.to_bytes().value());
  }
  {  // alignment 1, no tensors (a vocabulary-only file)
    gguf::writer w(3);
    w.add("general.alignment", std::uint32_t{1});
    const std::vector<std::string> toks{"a", "b", "ab", "abc"};
    const std::array<std::uint64_t, 2> big{0, ~std::uint64_t{0}};
    w.add_array("tokenizer.ggml.tokens", toks).add_array<std::uint64_t>("x.u64", big);
    seeds.push_back(w.to_bytes().value());
  }
  {  // every weight-only quantised type, two rows each (rows of 256: whole blocks of all)
    gguf::writer w(3);
    const std::uint32_t ids[] = {3, 6, 7, 10, 11, 12, 13, 14};
    for (std::uint32_t id : ids) {
      const auto info = gguf::find_ggml_type(id);
      w.add_tensor("q." + std::string(info->name), {256, 2}, id,
                   bytes_of(2 * 256 / info->block_size * info->block_bytes, id));
    }
    seeds.push_back(w.to_bytes().value());
  }
  {  // alignment 64, a k-quant, an empty tensor
    gguf::writer w(3);
    w.add("general.alignment", std::uint32_t{64}).add("x.f64", -0.0);
    w.add_tensor("k", {256}, 12, bytes_of(144, 8)).add_tensor("z", {0, 4}, 0, {});
    w.add_tensor("i", {2, 2}, 27, bytes_of(32, 9));
    seeds.push_back(w.to_bytes().value());
  }
  return seeds;
}

/// Reads everything `f` exposes: every metadata value and array element, the first and
/// last byte of every string and tensor. Returns a checksum (so the reads are not
/// optimised away) and sets `consistent` to false when a view escapes the file or a
/// lookup disagrees with the tables.
inline std::uint64_t walk(const gguf::file& f, bool& consistent) {
  consistent = true;
  const std::byte* lo = f.bytes().data();
  const std::byte* hi = lo + f.bytes().size();
  auto inside = [&](const void* p, std::size_t n) {
    const auto* b = static_cast<const std::byte*>(p);
    return n == 0 || (b >= lo && b <= hi && n <= static_cast<std::size_t>(hi - b));
  };
  std::uint64_t sum = f.version() + f.alignment() + f.data_offset();
  auto touch = [&](std::string_view s) {
    if (!inside(s.data(), s.size())) consistent = false;
    if (!s.empty())
      sum += static_cast<unsigned char>(s.front()) + static_cast<unsigned char>(s.back());
  };
  for (const gguf::kv& kv : f.metadata()) {
    touch(kv.key());
    if (f.find(kv.key()) != &kv) consistent = false;
    const gguf::meta_type t = kv.element_type();
    if (!kv.is_array()) {
      if (is_integer(t)) sum += static_cast<std::uint64_t>(kv.get<std::int64_t>().value_or(7));
      if (t == gguf::meta_type::f32 || t == gguf::meta_type::f64) sum += kv.get<double>().is_ok();
      if (t == gguf::meta_type::boolean) sum += kv.get<bool>().value();
      if (t == gguf::meta_type::string) touch(kv.get<std::string_view>().value());
      continue;
    }
    // (Results are kept in locals: a range-for over `temporary.value()` would dangle.)
    if (t == gguf::meta_type::string) {
      const auto a = kv.get_array<std::string_view>();
      if (!a.is_ok() || a->size() != kv.size()) consistent = false;
      if (a.is_ok())
        for (std::string_view s : *a) touch(s);
    } else if (t == gguf::meta_type::boolean) {
      const auto a = kv.get_array<bool>();
      if (!a.is_ok()) consistent = false;
      if (a.is_ok())
        for (bool b : *a) sum += b;
    } else if (t == gguf::meta_type::f32 || t == gguf::meta_type::f64) {
      const auto a = kv.get_array_as<double>();
      if (!a.is_ok()) consistent = false;
      if (a.is_ok())
        for (double d : *a) sum += d == d;
    } else {
      auto v = kv.get_array_as<std::int64_t>();  // u64 beyond int64 gives out_of_range
      if (v.is_ok())
        for (std::int64_t x : *v) sum += static_cast<std::uint64_t>(x);
      else if (v.error().code() != status_code::out_of_range)
        consistent = false;
    }
  }
  for (const gguf::tensor& t : f.tensors()) {
    touch(t.name);
    if (f.find_tensor(t.name) != &t || !inside(t.data.data(), t.data.size())) consistent = false;
    if (t.file_offset % f.alignment() != 0 || t.file_offset < f.data_offset()) consistent = false;
    if (!t.data.empty())
      sum += std::to_integer<unsigned>(t.data.front()) + std::to_integer<unsigned>(t.data.back());
    // The first row of a stored type decodes from whatever bytes it holds.
    if (t.element_type && t.n_elements != 0 && t.dims[0] <= 4096) {
      if (t.row_bytes > t.data.size()) consistent = false;
      std::vector<float> row(static_cast<std::size_t>(t.dims[0]));
      if (t.row_bytes <= t.data.size() &&
          reinterpret_cast<std::uintptr_t>(t.data.data()) % 4 == 0) {
        dtype::decode_any_row<simd::scalar>(*t.element_type, t.data.data(), row.data(), row.size());
        for (float v : row) sum += v == v;
      }
    }
  }
  return sum;
}

}  // namespace mnemo::gguf::fuzz
