// gguf::writer -> gguf::file round trips: every value type (extremes included), arrays of
// every element type, tensors of several ggml types, versions 2 and 3, alignments 1, 8,
// 32 and 64; plus the typed getters' conversion rules and the writer's own refusals.
#include <algorithm>
#include <array>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <limits>
#include <optional>
#include <random>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

#include <gtest/gtest.h>

#include "mnemo/gguf/file.hpp"
#include "mnemo/gguf/writer.hpp"

namespace {

using mnemo::status_code;
using mnemo::dtype::element_type;
namespace gguf = mnemo::gguf;

template <class T>
using lim = std::numeric_limits<T>;

struct tensor_case {
  const char* name;
  std::vector<std::uint64_t> dims;
  std::uint32_t type;
  std::size_t bytes;
};

const std::vector<tensor_case>& tensor_cases() {
  static const std::vector<tensor_case> cases = {
      {"f32", {3, 5}, 0, 60},    {"f16", {7}, 1, 14},           {"bf16", {2, 2, 2}, 30, 16},
      {"q8_0", {64, 3}, 8, 204}, {"q4_0", {32, 1, 2}, 2, 36},   {"q4_K", {256, 2}, 12, 288},
      {"q6_K", {512}, 14, 420},  {"i32", {1, 1, 1, 9}, 26, 36}, {"empty", {4, 0}, 0, 0},
      {"f64", {1}, 28, 8},
  };
  return cases;
}

std::vector<std::byte> pattern(std::size_t n, std::mt19937& rng) {
  std::vector<std::byte> d(n);
  for (auto& b : d) b = static_cast<std::byte>(rng());
  return d;
}

class GgufRoundTrip : public ::testing::TestWithParam<std::tuple<std::uint32_t, std::uint32_t>> {};

TEST_P(GgufRoundTrip, EveryTypeAndTensor) {
  const auto [version, alignment] = GetParam();
  const unsigned seed = version * 1000 + alignment;
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937 rng(seed);
  gguf::writer w(version);
  if (alignment != 32 || version == 2) w.add("general.alignment", alignment);
  w.add("s.u8", lim<std::uint8_t>::max())
      .add("s.i8", lim<std::int8_t>::min())
      .add("s.u16", lim<std::uint16_t>::max())
      .add("s.i16", lim<std::int16_t>::min())
      .add("s.u32", lim<std::uint32_t>::max())
      .add("s.i32", lim<std::int32_t>::min())
      .add("s.f32", -3.25f)
      .add("s.bool", false)
      .add_string("s.string", "h\xc3\xa9llo")
      .add_string("s.empty", "")
      .add("s.u64", lim<std::uint64_t>::max())
      .add("s.i64", lim<std::int64_t>::min())
      .add("s.f64", 1e300);
  const std::array<std::uint8_t, 3> u8s{0, 1, 255};
  const std::array<std::int16_t, 2> i16s{-1, 32767};
  const std::array<std::uint64_t, 2> u64s{0, lim<std::uint64_t>::max()};
  const std::array<std::int64_t, 2> i64s{lim<std::int64_t>::min(), 5};
  const std::array<double, 2> f64s{0.5, -2.0};
  const std::array<bool, 3> bools{true, false, true};
  const std::vector<std::string> strs{"", "a", std::string(300, 'x'), "\xe2\x96\x81"};
  w.add_array<std::uint8_t>("a.u8", u8s)
      .add_array<std::int16_t>("a.i16", i16s)
      .add_array<std::uint64_t>("a.u64", u64s)
      .add_array<std::int64_t>("a.i64", i64s)
      .add_array<double>("a.f64", f64s)
      .add_array<bool>("a.bool", bools)
      .add_array("a.str", strs)
      .add_array<float>("a.empty", {});
  std::vector<std::vector<std::byte>> datas;
  for (const tensor_case& t : tensor_cases()) {
    datas.push_back(pattern(t.bytes, rng));
    w.add_tensor(t.name, t.dims, t.type, datas.back());
  }
  auto bytes = w.to_bytes();
  ASSERT_TRUE(bytes.is_ok()) << bytes.error().to_string();
  auto r = gguf::file::from_bytes(*bytes);
  ASSERT_TRUE(r.is_ok()) << r.error().to_string();
  const gguf::file& f = *r;

  EXPECT_EQ(f.version(), version);
  EXPECT_EQ(f.alignment(), alignment);
  EXPECT_EQ(f.data_offset() % alignment, 0u);
  EXPECT_EQ(f.get<std::uint8_t>("s.u8").value(), 255);
  EXPECT_EQ(f.get<std::int8_t>("s.i8").value(), -128);
  EXPECT_EQ(f.get<std::uint16_t>("s.u16").value(), 65535);
  EXPECT_EQ(f.get<std::int16_t>("s.i16").value(), -32768);
  EXPECT_EQ(f.get_u32("s.u32").value(), lim<std::uint32_t>::max());
  EXPECT_EQ(f.get_i32("s.i32").value(), lim<std::int32_t>::min());
  EXPECT_EQ(f.get_f32("s.f32").value(), -3.25f);
  EXPECT_EQ(f.get_bool("s.bool").value(), false);
  EXPECT_EQ(f.get_string("s.string").value(), "h\xc3\xa9llo");
  EXPECT_EQ(f.get_string("s.empty").value(), "");
  EXPECT_EQ(f.get_u64("s.u64").value(), lim<std::uint64_t>::max());
  EXPECT_EQ(f.get_i64("s.i64").value(), lim<std::int64_t>::min());
  EXPECT_EQ(f.get_f64("s.f64").value(), 1e300);

  EXPECT_EQ(f.get_array<std::uint8_t>("a.u8")->to_vector(),
            std::vector<std::uint8_t>(u8s.begin(), u8s.end()));
  EXPECT_EQ(f.get_array<std::int16_t>("a.i16")->to_vector(),
            std::vector<std::int16_t>(i16s.begin(), i16s.end()));
  EXPECT_EQ(f.get_array<std::uint64_t>("a.u64")->to_vector(),
            std::vector<std::uint64_t>(u64s.begin(), u64s.end()));
  EXPECT_EQ(f.get_array<std::int64_t>("a.i64")->to_vector(),
            std::vector<std::int64_t>(i64s.begin(), i64s.end()));
  EXPECT_EQ(f.get_array<double>("a.f64")->to_vector(),
            std::vector<double>(f64s.begin(), f64s.end()));
  EXPECT_EQ(f.get_array<bool>("a.bool")->to_vector(),
            std::vector<bool>(bools.begin(), bools.end()));
  auto s = f.get_array<std::string_view>("a.str");
  ASSERT_TRUE(s.is_ok());
  ASSERT_EQ(s->size(), strs.size());
  for (std::size_t i = 0; i < strs.size(); ++i) EXPECT_EQ((*s)[i], strs[i]) << "string " << i;
  EXPECT_TRUE(f.get_array<float>("a.empty")->empty());
  const mnemo::gguf::kv* kv = f.find("a.str");
  ASSERT_NE(kv, nullptr);
  EXPECT_TRUE(kv->is_array());
  EXPECT_EQ(kv->element_type(), gguf::meta_type::string);
  EXPECT_EQ(kv->size(), 4u);
  // Iteration sees every key once, in the order written.
  ASSERT_EQ(f.metadata().size(), 21u + (alignment != 32 || version == 2));
  EXPECT_EQ(f.metadata().back().key(), "a.empty");

  ASSERT_EQ(f.tensors().size(), tensor_cases().size());
  for (std::size_t i = 0; i < tensor_cases().size(); ++i) {
    const tensor_case& c = tensor_cases()[i];
    SCOPED_TRACE(c.name);
    const mnemo::gguf::tensor& t = f.tensors()[i];
    EXPECT_EQ(t.name, c.name);
    EXPECT_EQ(t.n_dims, c.dims.size());
    for (std::size_t d = 0; d < 4; ++d) EXPECT_EQ(t.dims[d], d < c.dims.size() ? c.dims[d] : 1u);
    EXPECT_EQ(t.ggml_type, c.type);
    EXPECT_EQ(t.type_name, c.name == std::string_view("empty") ? "f32" : c.name);
    EXPECT_EQ(t.n_bytes(), c.bytes);
    EXPECT_EQ(t.file_offset % alignment, 0u);
    EXPECT_EQ(t.file_offset, f.data_offset() + t.offset);
    ASSERT_TRUE(std::equal(t.data.begin(), t.data.end(), datas[i].begin(), datas[i].end()));
    EXPECT_EQ(f.find_tensor(c.name), &t);
  }
  EXPECT_EQ(f.find_tensor("q4_K")->element_type, element_type::q4_K);
  EXPECT_EQ(f.find_tensor("i32")->element_type, std::nullopt);  // read, not computed with
  EXPECT_EQ(f.find_tensor("q4_0")->element_type, element_type::q4_0);
  EXPECT_EQ(f.find_tensor("q8_0")->row_bytes, 68u);
  EXPECT_EQ(f.find_tensor("bf16")->element_type, element_type::bf16);
}

INSTANTIATE_TEST_SUITE_P(VersionsAndAlignments, GgufRoundTrip,
                         ::testing::Combine(::testing::Values(2u, 3u),
                                            ::testing::Values(1u, 8u, 32u, 64u)));

TEST(GgufGetters, ConversionRules) {
  gguf::writer w;
  const std::array<std::int32_t, 3> neg{1, -1, 2};
  w.add("u8", std::uint8_t{7})
      .add("i32.neg", std::int32_t{-1})
      .add("u64.big", std::uint64_t{1} << 40)
      .add("f32", 0.5f)
      .add("f64", 0.25)
      .add_string("str", "x")
      .add_array<std::int32_t>("arr", neg);
  auto r = gguf::file::from_owned_bytes(w.to_bytes().value());
  ASSERT_TRUE(r.is_ok());
  const gguf::file& f = *r;
  EXPECT_EQ(f.get_u32("u8").value(), 7u);  // any integer type that fits
  EXPECT_EQ(f.get_i64("u8").value(), 7);
  EXPECT_EQ(f.get_i32("i32.neg").value(), -1);
  EXPECT_EQ(f.get_u32("i32.neg").error().code(), status_code::out_of_range);
  EXPECT_EQ(f.get_u32("u64.big").error().code(), status_code::out_of_range);
  EXPECT_EQ(f.get_u64("u64.big").value(), std::uint64_t{1} << 40);
  EXPECT_EQ(f.get_f64("f32").value(), 0.5);                                   // f32 widens
  EXPECT_EQ(f.get_f32("f64").error().code(), status_code::invalid_argument);  // no narrowing
  EXPECT_EQ(f.get_u32("f32").error().code(), status_code::invalid_argument);
  EXPECT_EQ(f.get_string("u8").error().code(), status_code::invalid_argument);
  EXPECT_EQ(f.get_bool("u8").error().code(), status_code::invalid_argument);
  EXPECT_EQ(f.get_u32("arr").error().code(), status_code::invalid_argument);
  EXPECT_EQ(f.get_u32("missing").error().code(), status_code::not_found);
  EXPECT_EQ(f.find("missing"), nullptr);
  EXPECT_EQ(f.get_array<std::uint32_t>("arr").error().code(), status_code::invalid_argument);
  EXPECT_EQ(f.get_array<std::int32_t>("u8").error().code(), status_code::invalid_argument);
  auto as_u = f.get_array_as<std::uint32_t>("arr");
  ASSERT_FALSE(as_u.is_ok());
  EXPECT_EQ(as_u.error().code(), status_code::out_of_range);
  EXPECT_NE(as_u.error().message().find("element 1"), std::string::npos) << as_u.error().message();
  EXPECT_EQ(f.get_array_as<std::int64_t>("arr").value(), (std::vector<std::int64_t>{1, -1, 2}));
  EXPECT_EQ(f.get_array_as<float>("arr").error().code(), status_code::invalid_argument);
  EXPECT_EQ(f.require_tensor("nope").error().code(), status_code::not_found);
}

// from_bytes(temporary vector) does not compile (it would dangle); from_owned_bytes keeps it.
template <class V>
concept from_bytes_accepts = requires(V&& v) {
  gguf::file::from_bytes(static_cast<V&&>(v));
};
static_assert(!from_bytes_accepts<std::vector<std::byte>>);
static_assert(from_bytes_accepts<const std::vector<std::byte>&>);

TEST(GgufWriter, RefusesMisuse) {
  EXPECT_FALSE(gguf::writer(1).to_bytes().is_ok());
  EXPECT_FALSE(gguf::writer().add("k", 1).add("k", 2).to_bytes().is_ok());
  EXPECT_FALSE(gguf::writer().add("general.alignment", std::uint32_t{3}).to_bytes().is_ok());
  EXPECT_FALSE(
      gguf::writer().add_tensor("t", {4}, 0, std::vector<std::byte>(15)).to_bytes().is_ok());
  EXPECT_FALSE(
      gguf::writer().add_tensor("t", {33}, 8, std::vector<std::byte>(34)).to_bytes().is_ok());
  EXPECT_FALSE(gguf::writer()
                   .add_tensor("t", {1, 1, 1, 1, 1}, 0, std::vector<std::byte>(4))
                   .to_bytes()
                   .is_ok());
  EXPECT_FALSE(
      gguf::writer().add_tensor("t", {4}, 99, std::vector<std::byte>(4)).to_bytes().is_ok());
  gguf::writer dup;
  dup.add_tensor_f32("t", {1}, std::vector<float>{1})
      .add_tensor_f32("t", {1}, std::vector<float>{2});
  EXPECT_EQ(dup.error().code(), status_code::invalid_argument);
}

TEST(GgufFile, OpensAMappedOrReadFileWithAlignedTensorData) {
  gguf::writer w;
  w.add("general.alignment", std::uint32_t{64}).add_string("general.architecture", "llama");
  std::vector<float> v(100);
  for (std::size_t i = 0; i < v.size(); ++i) v[i] = static_cast<float>(i) * 0.5f;
  w.add_tensor_f32("a", {10, 10}, v).add_tensor_f32("b", {3}, std::vector<float>{1, 2, 3});
  const std::string path = ::testing::TempDir() + "mnemo_gguf_roundtrip.gguf";
  ASSERT_TRUE(w.write(path).is_ok());
  for (const gguf::access access : {gguf::access::map, gguf::access::read}) {
    SCOPED_TRACE(access == gguf::access::map ? "map" : "read");
    auto r = gguf::file::open(path, access);
    ASSERT_TRUE(r.is_ok()) << r.error().to_string();
    gguf::file f = std::move(r).value();  // views survive the move: the bytes stay put
    const auto* b = f.find_tensor("b");
    ASSERT_NE(b, nullptr);
    EXPECT_EQ(reinterpret_cast<std::uintptr_t>(b->data.data()) % 64, 0u);
    float x;
    std::memcpy(&x, f.find_tensor("a")->data.data() + 4 * 99, 4);
    EXPECT_EQ(x, 49.5f);
    EXPECT_EQ(f.get_string("general.architecture").value(), "llama");
  }
  std::remove(path.c_str());
  for (const std::string& bad : {path, ::testing::TempDir()})  // missing; a directory
    for (const gguf::access access : {gguf::access::map, gguf::access::read}) {
      auto r = gguf::file::open(bad, access);
      ASSERT_FALSE(r.is_ok()) << bad;
      EXPECT_EQ(r.error().code(), status_code::io_error) << bad << ": " << r.error().to_string();
    }
}

}  // namespace
