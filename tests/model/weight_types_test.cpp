// Loading weights of the weight-only quantised types: one file holding every type (one
// tensor each, as llama-quantize mixes them) gives a weight per tensor whose rows
// decode and multiply; bad input gets a status naming the tensor, never an abort:
// an unknown type id, a type mnemo does not compute with, a row that is not whole
// blocks, and bytes that do not match type x shape.
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "gguf/test_bytes.hpp"
#include <gtest/gtest.h>

#include "mnemo/gguf/file.hpp"
#include "mnemo/gguf/writer.hpp"
#include "mnemo/model/matmul.hpp"
#include "mnemo/model/weight.hpp"

namespace {

namespace dt = mnemo::dtype;
namespace gguf = mnemo::gguf;
using mnemo::status_code;
using mnemo::gguf::testing::raw_gguf;

/// Bytes whose f16 fields are all small finite numbers: every byte 0x21 (f16 0x2121 is
/// about 0.01), so every type decodes to finite values.
std::vector<std::byte> filler(std::size_t n) { return std::vector<std::byte>(n, std::byte{0x21}); }

const dt::element_type k_weight_only[] = {
    dt::element_type::q4_1, dt::element_type::q5_0, dt::element_type::q5_1, dt::element_type::q2_K,
    dt::element_type::q3_K, dt::element_type::q4_K, dt::element_type::q5_K, dt::element_type::q6_K};

TEST(WeightTypes, OneFileMixesEveryType) {
  gguf::writer w(3);
  const std::size_t n_in = 512, n_out = 3;
  for (dt::element_type t : k_weight_only)
    w.add_tensor("w." + std::string(dt::to_string(t)), {n_in, n_out}, dt::ggml_type_id(t),
                 filler(dt::row_bytes(t, n_in).value() * n_out));
  auto bytes = w.to_bytes();
  ASSERT_TRUE(bytes.is_ok()) << bytes.error().to_string();
  auto f = gguf::file::from_bytes(*bytes);
  ASSERT_TRUE(f.is_ok()) << f.error().to_string();
  mnemo::model::matmul_workspace ws;
  const std::vector<float> x(n_in, 1.0f);
  for (dt::element_type t : k_weight_only) {
    SCOPED_TRACE(std::string(dt::to_string(t)));
    const gguf::tensor* tensor = f->find_tensor("w." + std::string(dt::to_string(t)));
    ASSERT_NE(tensor, nullptr);
    auto weight = mnemo::model::weight_from_gguf(*tensor, n_in, n_out);
    ASSERT_TRUE(weight.is_ok()) << weight.error().to_string();
    EXPECT_EQ(weight->type, t);
    std::vector<float> row(n_in), y(n_out);
    mnemo::model::get_row(*weight, n_out - 1, row.data());
    double ref = 0;
    for (float v : row) {
      ASSERT_TRUE(std::isfinite(v));
      ref += v;  // x is all ones
    }
    mnemo::model::mul_mat(*weight, x.data(), n_in, 1, y.data(), n_out, 1, ws);
    EXPECT_NEAR(y[n_out - 1], ref, 1e-2 * (std::abs(ref) + 1));
  }
}

/// A file of one tensor "w" of `dims` and type id `type`, `data_bytes` of data.
raw_gguf one_tensor(std::initializer_list<std::uint64_t> dims, std::uint32_t type,
                    std::size_t data_bytes) {
  raw_gguf r;
  r.header(1, 0).tensor("w", dims, type, 0).pad_to(32).zeros(data_bytes);
  return r;
}

void expect_refused(const raw_gguf& r, status_code code, const std::string& needle) {
  auto f = gguf::file::from_bytes(r.span());
  ASSERT_FALSE(f.is_ok()) << "expected a refusal containing '" << needle << "'";
  EXPECT_EQ(f.error().code(), code) << f.error().to_string();
  EXPECT_NE(f.error().message().find(needle), std::string::npos) << f.error().to_string();
}

TEST(WeightTypes, UnknownTypeIdNamesTensorAndId) {
  expect_refused(one_tensor({256}, 99, 256), status_code::unsupported, "tensor 'w'");
  expect_refused(one_tensor({256}, 99, 256), status_code::unsupported, "ggml type id 99");
}

TEST(WeightTypes, RowsOfPartialBlocksAreRefused) {
  expect_refused(one_tensor({300, 2}, 12, 1024), status_code::corrupt_data,
                 "not whole q4_K blocks");
  expect_refused(one_tensor({128}, 14, 1024), status_code::corrupt_data, "not whole q6_K blocks");
  expect_refused(one_tensor({40}, 6, 1024), status_code::corrupt_data, "not whole q5_0 blocks");
}

TEST(WeightTypes, TypesMnemoDoesNotComputeWithNameTensorAndType) {
  // q8_K (15): the reader knows its size, no product takes it as a weight.
  auto f = gguf::file::from_bytes(one_tensor({256, 2}, 15, 584).span());
  ASSERT_TRUE(f.is_ok()) << f.error().to_string();
  auto w = mnemo::model::weight_from_gguf(f->tensors()[0], 0, 0);
  ASSERT_FALSE(w.is_ok());
  EXPECT_EQ(w.error().code(), status_code::unsupported);
  EXPECT_NE(w.error().message().find("'w'"), std::string::npos) << w.error().to_string();
  EXPECT_NE(w.error().message().find("q8_K"), std::string::npos) << w.error().to_string();
}

TEST(WeightTypes, BytesNotMatchingTypeAndShapeAreRefused) {
  auto f = gguf::file::from_bytes(one_tensor({256, 2}, 12, 288).span());
  ASSERT_TRUE(f.is_ok()) << f.error().to_string();
  gguf::tensor t = f->tensors()[0];
  ASSERT_TRUE(mnemo::model::weight_from_gguf(t, 256, 2).is_ok());
  t.data = t.data.first(t.data.size() - 1);  // one byte short
  auto short_w = mnemo::model::weight_from_gguf(t, 256, 2);
  ASSERT_FALSE(short_w.is_ok());
  EXPECT_EQ(short_w.error().code(), status_code::corrupt_data);
  EXPECT_NE(short_w.error().message().find("'w'"), std::string::npos);
  t = f->tensors()[0];
  t.dims[0] = 128;  // half a super-block per row
  t.dims[1] = 4;
  auto partial = mnemo::model::weight_from_gguf(t, 0, 0);
  ASSERT_FALSE(partial.is_ok());
  EXPECT_EQ(partial.error().code(), status_code::corrupt_data);
}

}  // namespace
