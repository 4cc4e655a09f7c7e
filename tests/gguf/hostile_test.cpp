// Hand-made truncated, malformed and hostile GGUF files: each must be refused with the
// right status code and a message naming the place, never crash or read out of bounds.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "gguf/test_bytes.hpp"
#include <gtest/gtest.h>

#include "mnemo/gguf/file.hpp"
#include "mnemo/gguf/writer.hpp"

namespace {

using mnemo::status_code;
namespace gguf = mnemo::gguf;
using mnemo::gguf::testing::raw_gguf;

constexpr std::uint64_t k_2_63 = std::uint64_t{1} << 63;

/// Parses from an exactly sized heap copy, so ASan sees a read one past the end.
mnemo::result<gguf::file> open_copy(std::span<const std::byte> bytes,
                                    std::unique_ptr<std::byte[]>& keep,
                                    const gguf::limits& limits = {}) {
  keep = std::make_unique<std::byte[]>(bytes.size() + 1);
  if (!bytes.empty()) std::memcpy(keep.get(), bytes.data(), bytes.size());
  return gguf::file::from_bytes({keep.get(), bytes.size()}, limits);
}

/// Expects a refusal with `code` whose message contains `needle`.
void expect_refused(const raw_gguf& r, status_code code, const std::string& needle,
                    const gguf::limits& limits = {}) {
  std::unique_ptr<std::byte[]> keep;
  auto f = open_copy(r.span(), keep, limits);
  ASSERT_FALSE(f.is_ok()) << "expected a refusal containing '" << needle << "'";
  EXPECT_EQ(f.error().code(), code) << f.error().to_string();
  EXPECT_NE(f.error().message().find(needle), std::string::npos) << f.error().to_string();
}

/// A valid base: one u32 key and one f32 tensor of 4 values, default alignment.
raw_gguf one_tensor(std::initializer_list<std::uint64_t> dims, std::uint32_t type,
                    std::uint64_t offset, std::size_t data_bytes = 32) {
  raw_gguf r;
  r.header(1, 1).kv_u32("x.n", 1).tensor("w", dims, type, offset).pad_to(32).zeros(data_bytes);
  return r;
}

TEST(GgufHostile, BaseFileOpens) {
  std::unique_ptr<std::byte[]> keep;
  auto f = open_copy(one_tensor({4}, 0, 0).span(), keep);
  ASSERT_TRUE(f.is_ok()) << f.error().to_string();
  EXPECT_EQ(f->tensors()[0].n_bytes(), 16u);
}

TEST(GgufHostile, EveryTruncationIsRefusedUntilTheLastTensorEnds) {
  gguf::writer w(3);
  const std::vector<std::string> toks{"a", "bc"};
  w.add("general.architecture", std::string_view("llama"))
      .add("x.f64", 1.0)
      .add_array("tok", toks)
      .add_tensor_f32("a", {3}, std::vector<float>{1, 2, 3})
      .add_tensor_f32("b", {2}, std::vector<float>{4, 5});
  const std::vector<std::byte> full = w.to_bytes().value();
  std::unique_ptr<std::byte[]> keep;
  auto whole = open_copy(full, keep);
  ASSERT_TRUE(whole.is_ok());
  const std::size_t need = whole->tensors()[1].file_offset + 8;  // end of the last data
  for (std::size_t n = 0; n < full.size(); ++n) {
    auto f = open_copy(std::span(full).first(n), keep);
    if (n >= need) {
      EXPECT_TRUE(f.is_ok()) << "prefix " << n << ": " << f.error().to_string();
    } else {
      ASSERT_FALSE(f.is_ok()) << "prefix " << n << " of " << full.size();
      EXPECT_EQ(f.error().code(), status_code::corrupt_data) << "prefix " << n;
    }
  }
}

TEST(GgufHostile, HeaderErrors) {
  expect_refused(raw_gguf{}, status_code::corrupt_data, "not a GGUF file");
  raw_gguf bad_magic;
  bad_magic.u32(0x46554747 ^ 1).u32(3).u64(0).u64(0);
  expect_refused(bad_magic, status_code::corrupt_data, "not a GGUF file");
  expect_refused(raw_gguf{}.header(0, 0, 1), status_code::unsupported, "version 1");
  expect_refused(raw_gguf{}.header(0, 0, 0), status_code::corrupt_data, "version 0");
  expect_refused(raw_gguf{}.header(0, 0, 4), status_code::unsupported, "version 4");
  expect_refused(raw_gguf{}.header(0, 0, 0x03000000), status_code::unsupported, "big-endian");
  raw_gguf cut;
  cut.header(0, 0).b.resize(20);
  expect_refused(cut, status_code::corrupt_data, "metadata count is cut off");
}

TEST(GgufHostile, HugeCountsFailWithoutAllocating) {
  expect_refused(raw_gguf{}.header(k_2_63, 0), status_code::corrupt_data, "cannot fit");
  expect_refused(raw_gguf{}.header(0, std::uint64_t{1} << 40).kv_u32("a", 1),
                 status_code::corrupt_data, "cannot fit");
  raw_gguf long_key;
  long_key.header(0, 1).u64(std::uint64_t{1} << 62).zeros(16);
  expect_refused(long_key, status_code::corrupt_data, "metadata entry 0 at byte 24");
  raw_gguf long_value;
  long_value.header(0, 1).str("k").u32(8).u64(std::uint64_t{1} << 62).zeros(16);
  expect_refused(long_value, status_code::corrupt_data, "runs past the end");
  for (std::uint32_t elem : {0u, 8u, 10u}) {  // u8, string, u64 arrays
    raw_gguf arr;
    arr.header(0, 1).str("arr").u32(9).u32(elem).u64(std::uint64_t{1} << 61).zeros(64);
    expect_refused(arr, status_code::corrupt_data, "key 'arr'");
  }
}

TEST(GgufHostile, LimitsGiveUnsupported) {
  gguf::limits lim;
  lim.max_tensors = 0;
  expect_refused(one_tensor({4}, 0, 0), status_code::unsupported, "exceed the limits", lim);
  lim = {};
  lim.max_array_length = 2;
  raw_gguf arr;
  arr.header(0, 1).str("arr").u32(9).u32(0).u64(3).zeros(3);
  expect_refused(arr, status_code::unsupported, "max_array_length", lim);
  lim = {};
  lim.max_name_length = 3;
  expect_refused(raw_gguf{}.header(0, 1).kv_u32("abcd", 1), status_code::corrupt_data,
                 "longer than the limit", lim);
}

TEST(GgufHostile, ValueTypeErrors) {
  expect_refused(raw_gguf{}.header(0, 1).str("k").u32(13).u32(0), status_code::corrupt_data,
                 "unknown value type 13");
  expect_refused(raw_gguf{}.header(0, 1).str("k").u32(0xffffffffu).u32(0),
                 status_code::corrupt_data, "key 'k'");
  expect_refused(raw_gguf{}.header(0, 1).str("k").u32(9).u32(77).u64(0), status_code::corrupt_data,
                 "unknown array element type 77");
  expect_refused(raw_gguf{}.header(0, 1).str("k").u32(9).u32(9).u64(0).zeros(8),
                 status_code::unsupported, "arrays of arrays");
  expect_refused(raw_gguf{}.header(0, 1).str("b").u32(7).u8(2), status_code::corrupt_data,
                 "bool must be 0 or 1");
  expect_refused(raw_gguf{}.header(0, 1).str("k").u32(4).u8(1), status_code::corrupt_data,
                 "value is cut off");
  // A string whose bytes never end (the length runs past the file).
  raw_gguf s;
  s.header(0, 1).str("k").u32(8).u64(100).zeros(10);
  expect_refused(s, status_code::corrupt_data, "string runs past the end");
  // A hostile key is printed escaped.
  expect_refused(raw_gguf{}.header(0, 1).str(std::string_view("a\x01", 2)).u32(13),
                 status_code::corrupt_data, "a\\x01");
}

TEST(GgufHostile, RepeatedKeyIsRefused) {
  expect_refused(raw_gguf{}.header(0, 2).kv_u32("k.a", 1).kv_str("k.a", "x"),
                 status_code::corrupt_data, "key 'k.a' appears twice (entries at bytes 24 and");
}

TEST(GgufHostile, AlignmentErrors) {
  expect_refused(raw_gguf{}.header(0, 1).kv_u32("general.alignment", 0), status_code::corrupt_data,
                 "not a power of two");
  expect_refused(raw_gguf{}.header(0, 1).kv_u32("general.alignment", 3), status_code::corrupt_data,
                 "not a power of two");
  expect_refused(raw_gguf{}.header(0, 1).kv_u32("general.alignment", 1u << 31),
                 status_code::unsupported, "above the limit");
  expect_refused(raw_gguf{}.header(0, 1).str("general.alignment").u32(10).u64(32),
                 status_code::corrupt_data, "must be a u32");
}

TEST(GgufHostile, TensorRecordErrors) {
  expect_refused(one_tensor({4}, 1000, 0), status_code::unsupported, "ggml type id 1000");
  expect_refused(one_tensor({4}, 4, 0), status_code::unsupported, "tensor 'w'");  // removed id
  expect_refused(one_tensor({}, 0, 0), status_code::corrupt_data, "n_dims is 0");
  expect_refused(one_tensor({1, 1, 1, 1, 1}, 0, 0), status_code::corrupt_data, "n_dims is 5");
  expect_refused(one_tensor({std::uint64_t{1} << 32, std::uint64_t{1} << 32}, 0, 0),
                 status_code::corrupt_data, "overflows 64 bits");
  expect_refused(one_tensor({std::uint64_t{1} << 61, 2}, 0, 0), status_code::corrupt_data,
                 "overflows 64 bits");  // 2^62 values fit, 2^64 bytes do not
  expect_refused(one_tensor({k_2_63}, 0, 0), status_code::corrupt_data, "> 2^63-1");
  expect_refused(one_tensor({33}, 8, 0), status_code::corrupt_data, "not whole q8_0 blocks");
  raw_gguf dup;
  dup.header(2, 0).tensor("w", {4}, 0, 0).tensor("w", {4}, 0, 32).pad_to(32).zeros(64);
  expect_refused(dup, status_code::corrupt_data, "also used by the record");
}

TEST(GgufHostile, TensorDataErrors) {
  expect_refused(one_tensor({4}, 0, 64), status_code::corrupt_data, "runs past the end");
  expect_refused(one_tensor({4}, 0, k_2_63), status_code::corrupt_data, "runs past the end");
  expect_refused(one_tensor({16}, 0, 0), status_code::corrupt_data, "runs past the end");
  expect_refused(one_tensor({4}, 0, 4), status_code::corrupt_data,
                 "not a multiple of the alignment 32");
  raw_gguf overlap;
  overlap.header(2, 0).tensor("a", {16}, 0, 0).tensor("b", {4}, 0, 32).pad_to(32).zeros(64);
  expect_refused(overlap, status_code::corrupt_data, "overlaps tensor 'a'");
  // Same start, listed in the other order.
  raw_gguf same;
  same.header(2, 0).tensor("a", {4}, 0, 0).tensor("b", {4}, 0, 0).pad_to(32).zeros(32);
  expect_refused(same, status_code::corrupt_data, "overlaps");
  // The data section itself would start past the end.
  raw_gguf no_data;
  no_data.header(1, 0).tensor("a", {0}, 0, 0);
  expect_refused(no_data, status_code::corrupt_data, "past the end of the");
}

TEST(GgufHostile, MessagesNameTheTensorAndByte) {
  std::unique_ptr<std::byte[]> keep;
  auto f = open_copy(one_tensor({4}, 0, 4).span(), keep);
  ASSERT_FALSE(f.is_ok());
  // header 24 + key "x.n" (8 + 3 + 4 + 4) = 43: the tensor record starts there.
  EXPECT_NE(f.error().message().find("tensor 'w' (record at byte 43)"), std::string::npos)
      << f.error().message();
}

TEST(GgufHostile, AdjacentAndEmptyTensorsAreFine) {
  raw_gguf r;
  r.header(3, 0).tensor("a", {8}, 0, 0).tensor("b", {8}, 0, 32).tensor("e", {0, 5}, 0, 64);
  r.pad_to(32).zeros(64);
  std::unique_ptr<std::byte[]> keep;
  auto f = open_copy(r.span(), keep);
  ASSERT_TRUE(f.is_ok()) << f.error().to_string();
  EXPECT_EQ(f->find_tensor("e")->n_bytes(), 0u);
  EXPECT_EQ(f->find_tensor("e")->n_elements, 0u);
}

}  // namespace
