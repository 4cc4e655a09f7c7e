// Byte layouts against hand-written GGUF / ggml bytes, traits, names and sizes.
#include <array>
#include <cstdint>
#include <cstring>

#include "dtype/reference.hpp"
#include <gtest/gtest.h>

#include "mnemo/dtype/dtype.hpp"

namespace {

namespace dt = mnemo::dtype;
namespace simd = mnemo::simd;

template <class T, std::size_t N>
T from_bytes(const std::array<unsigned char, N>& bytes) {
  static_assert(sizeof(T) == N);
  T t;
  std::memcpy(&t, bytes.data(), N);
  return t;
}

TEST(DtypeLayout, HalfBytesAreLittleEndian) {
  const auto one = from_bytes<dt::f16>(std::array<unsigned char, 2>{0x00, 0x3c});
  EXPECT_EQ(one.bits, 0x3c00);
  EXPECT_EQ(one.to_float(), 1.0f);
  const auto minus_two = from_bytes<dt::f16>(std::array<unsigned char, 2>{0x00, 0xc0});
  EXPECT_EQ(minus_two.to_float(), -2.0f);
  const auto b_one = from_bytes<dt::bf16>(std::array<unsigned char, 2>{0x80, 0x3f});
  EXPECT_EQ(b_one.bits, 0x3f80);
  EXPECT_EQ(b_one.to_float(), 1.0f);
  EXPECT_EQ(dt::f16::from_float(0.5f).bits, 0x3800);
  EXPECT_EQ(dt::bf16::from_float(-1.0f).bits, 0xbf80);
}

TEST(DtypeLayout, Q80BlockDecodesHandWrittenBytes) {
  // d = 1.0 (f16 0x3c00, bytes 00 3c), qs = 0, 1, ..., 31
  std::array<unsigned char, 34> bytes{0x00, 0x3c};
  for (int i = 0; i < 32; ++i) bytes[2 + i] = static_cast<unsigned char>(i);
  const auto block = from_bytes<dt::block_q8_0>(bytes);
  float out[32];
  dt::decode_row<simd::scalar>(&block, out, 32);
  for (int i = 0; i < 32; ++i) EXPECT_EQ(out[i], static_cast<float>(i)) << "element " << i;

  // d = -0.5 (0xb800), qs[0] = -128 (0x80), qs[31] = 127: signed codes
  std::array<unsigned char, 34> neg{0x00, 0xb8};
  neg[2] = 0x80;
  neg[33] = 0x7f;
  const auto nb = from_bytes<dt::block_q8_0>(neg);
  dt::decode_row<simd::scalar>(&nb, out, 32);
  EXPECT_EQ(out[0], 64.0f);
  EXPECT_EQ(out[1], 0.0f);
  EXPECT_EQ(out[31], -63.5f);
}

TEST(DtypeLayout, Q40BlockDecodesHandWrittenBytes) {
  // d = 1.0; qs[0] = 0x9F: element 0 = low nibble 15 - 8 = 7, element 16 = 9 - 8 = 1.
  // qs[j] = 0x08 elsewhere: low nibble 8 (value 0), high nibble 0 (value -8).
  std::array<unsigned char, 18> bytes{0x00, 0x3c, 0x9f};
  for (int j = 1; j < 16; ++j) bytes[2 + j] = 0x08;
  const auto block = from_bytes<dt::block_q4_0>(bytes);
  float out[32];
  dt::decode_row<simd::scalar>(&block, out, 32);
  EXPECT_EQ(out[0], 7.0f);
  EXPECT_EQ(out[16], 1.0f);
  for (int j = 1; j < 16; ++j) {
    EXPECT_EQ(out[j], 0.0f) << "element " << j;
    EXPECT_EQ(out[j + 16], -8.0f) << "element " << j + 16;
  }
  // d = 2.0 (0x4000): scale applies to (code - 8)
  bytes[1] = 0x40;
  const auto b2 = from_bytes<dt::block_q4_0>(bytes);
  dt::decode_row<simd::scalar>(&b2, out, 32);
  EXPECT_EQ(out[0], 14.0f);
  EXPECT_EQ(out[16], 2.0f);
  EXPECT_EQ(out[17], -16.0f);
}

TEST(DtypeLayout, EncodeWritesGgmlBytes) {
  // q8_0: max |x| = 127 gives d = 1.0 exactly; 2.5 rounds away from zero to 3.
  float x[32] = {};
  x[0] = 127.0f;
  x[1] = 2.5f;
  x[2] = -2.5f;
  x[3] = -0.49f;
  dt::block_q8_0 q8;
  dt::encode_row<simd::scalar>(x, &q8, 32);
  unsigned char b[34];
  std::memcpy(b, &q8, 34);
  EXPECT_EQ(b[0], 0x00);
  EXPECT_EQ(b[1], 0x3c);
  EXPECT_EQ(b[2], 127);
  EXPECT_EQ(b[3], 3);
  EXPECT_EQ(static_cast<std::int8_t>(b[4]), -3);
  EXPECT_EQ(b[5], 0);

  // q4_0: m = -8 (largest magnitude, negative) gives d = 1.0; code = x + 8 rounded
  // down at .5: 7.5 -> 16 clamps to 15, 0.4 -> 8, -8 -> 0.
  float y[32] = {};
  y[0] = -8.0f;
  y[16] = 7.5f;
  y[1] = 0.4f;
  dt::block_q4_0 q4;
  dt::encode_row<simd::scalar>(y, &q4, 32);
  unsigned char c[18];
  std::memcpy(c, &q4, 18);
  EXPECT_EQ(c[0], 0x00);
  EXPECT_EQ(c[1], 0x3c);
  EXPECT_EQ(c[2], 0xf0);  // element 0: code 0, element 16: code 15
  EXPECT_EQ(c[3], 0x88);  // element 1: 0.4 + 8.5 = 8.9 -> 8; element 17: 0 -> 8

  // An all-zero block stores d = -0.0 (0 / -8), as ggml does, and codes 8.
  float z[32] = {};
  dt::encode_row<simd::scalar>(z, &q4, 32);
  std::memcpy(c, &q4, 18);
  EXPECT_EQ(c[0], 0x00);
  EXPECT_EQ(c[1], 0x80);
  for (int j = 2; j < 18; ++j) EXPECT_EQ(c[j], 0x88) << "byte " << j;
}

TEST(DtypeLayout, TraitsAndIds) {
  EXPECT_EQ(dt::element_traits<float>::block_bytes, 4u);
  EXPECT_EQ(dt::element_traits<dt::f16>::block_bytes, 2u);
  EXPECT_EQ(dt::element_traits<dt::bf16>::block_bytes, 2u);
  EXPECT_EQ(dt::element_traits<dt::block_q8_0>::block_bytes, 34u);
  EXPECT_EQ(dt::element_traits<dt::block_q4_0>::block_bytes, 18u);
  EXPECT_EQ(dt::element_traits<dt::block_q8_0>::block_size, 32u);
  EXPECT_EQ(dt::element_traits<dt::block_q4_0>::block_size, 32u);
  EXPECT_EQ(dt::ggml_type_id(dt::element_type::f32), 0u);
  EXPECT_EQ(dt::ggml_type_id(dt::element_type::f16), 1u);
  EXPECT_EQ(dt::ggml_type_id(dt::element_type::q4_0), 2u);
  EXPECT_EQ(dt::ggml_type_id(dt::element_type::q8_0), 8u);
  EXPECT_EQ(dt::ggml_type_id(dt::element_type::bf16), 30u);
  EXPECT_EQ(dt::element_type_of<dt::bf16>, dt::element_type::bf16);
  EXPECT_EQ(dt::to_string(dt::element_type::q4_0), "q4_0");
  EXPECT_EQ(dt::to_string(static_cast<dt::element_type>(5)), "invalid");  // ggml's removed q4_3
  EXPECT_EQ(dt::to_string(dt::element_type::q6_K), "q6_K");
  EXPECT_EQ(dt::block_bytes(dt::element_type::q3_K), 110u);
  EXPECT_EQ(dt::block_size(dt::element_type::q5_0), 32u);
  EXPECT_FALSE(dt::is_kv_type(dt::element_type::q4_K));
  EXPECT_TRUE(dt::is_kv_type(dt::element_type::q4_0));
  EXPECT_EQ(dt::block_bytes(dt::element_type::q8_0), 34u);
  EXPECT_EQ(dt::block_size(dt::element_type::bf16), 1u);

  for (std::uint32_t id : {0u, 1u, 2u, 3u, 6u, 7u, 8u, 10u, 11u, 12u, 13u, 14u, 30u}) {
    auto t = dt::element_type_from_ggml(id);
    ASSERT_TRUE(t.is_ok()) << id;
    EXPECT_EQ(dt::ggml_type_id(*t), id);
  }
  for (std::uint32_t id : {4u, 5u, 9u, 15u, 29u, 31u, 256u, 0xffffffffu}) {
    auto t = dt::element_type_from_ggml(id);
    ASSERT_FALSE(t.is_ok()) << id;
    EXPECT_EQ(t.error().code(), mnemo::status_code::unsupported);
  }
}

TEST(DtypeLayout, RowBytesChecksBlocks) {
  EXPECT_EQ(*dt::row_bytes(dt::element_type::f32, 7), 28u);
  EXPECT_EQ(*dt::row_bytes(dt::element_type::f16, 128), 256u);
  EXPECT_EQ(*dt::row_bytes(dt::element_type::bf16, 3), 6u);
  EXPECT_EQ(*dt::row_bytes(dt::element_type::q8_0, 128), 136u);
  EXPECT_EQ(*dt::row_bytes(dt::element_type::q4_0, 128), 72u);
  EXPECT_EQ(*dt::row_bytes(dt::element_type::q4_0, 0), 0u);
  EXPECT_EQ(dt::row_bytes_of<dt::block_q8_0>(64), 68u);

  auto bad = dt::row_bytes(dt::element_type::q8_0, 33);
  ASSERT_FALSE(bad.is_ok());
  EXPECT_EQ(bad.error().code(), mnemo::status_code::invalid_argument);
  EXPECT_NE(bad.error().message().find("q8_0"), std::string::npos) << bad.error().message();

  auto huge = dt::row_bytes(dt::element_type::f32, SIZE_MAX / 2);
  ASSERT_FALSE(huge.is_ok());
  EXPECT_EQ(huge.error().code(), mnemo::status_code::out_of_range);

  auto invalid = dt::row_bytes(static_cast<dt::element_type>(5), 32);
  ASSERT_FALSE(invalid.is_ok());
  EXPECT_EQ(invalid.error().code(), mnemo::status_code::invalid_argument);
}

TEST(DtypeLayout, ConceptAcceptsExactlyTheStorageTypes) {
  static_assert(dt::kv_element<float> && dt::kv_element<dt::f16> && dt::kv_element<dt::bf16> &&
                dt::kv_element<dt::block_q8_0> && dt::kv_element<dt::block_q4_0>);
  static_assert(!dt::kv_element<double> && !dt::kv_element<std::int8_t> &&
                !dt::kv_element<const dt::f16>);
  SUCCEED();
}

}  // namespace
