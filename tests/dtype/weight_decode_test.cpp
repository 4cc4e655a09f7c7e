// The weight-only decoders (dtype/weight_decode.hpp) against the bit-exact check values
// that llama.cpp's and gguf-py's dequantisers give for the quantised fixture llamas:
// values of row 0 at four places, the sum of all values and a sum weighted by position
// (which catches permuted values). Skips when the fixtures are absent.
#include <cstddef>
#include <filesystem>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "mnemo/dtype/weight_decode.hpp"
#include "mnemo/gguf/file.hpp"

#ifndef MNEMO_FIXTURES_DIR
#define MNEMO_FIXTURES_DIR ""
#endif

namespace {

namespace dt = mnemo::dtype;
namespace gguf = mnemo::gguf;

struct check_values {
  const char* file;
  const char* tensor;
  dt::element_type type;
  float row0[4];  // at j = 0, 37, 130, 255
  double sum;
  double weighted_sum;  // value i times i % 7 + 1
};

// Decoded values the fixtures state for each quantised weight.
const check_values k_checks[] = {
    {"llama-q2_k",
     "token_embd.weight",
     dt::element_type::q2_K,
     {0.483154297f, -1.6270752f, -0.268676758f, -0.461303711f},
     -53.96008301,
     -719.7866211},
    {"llama-q2_k",
     "blk.0.attn_output.weight",
     dt::element_type::q3_K,
     {-0.118240356f, -0.0394134521f, 0.0267448425f, -0.0f},
     1.839425087,
     -1.191801071},
    {"llama-q3_k_m",
     "token_embd.weight",
     dt::element_type::q3_K,
     {0.309326172f, -1.59082031f, -0.375610352f, -0.486083984f},
     18.95336914,
     -716.8815918},
    {"llama-q2_k",
     "blk.0.attn_v.weight",
     dt::element_type::q4_K,
     {0.00177431107f, 0.103599072f, -0.0040473938f, -0.0221824646f},
     -2.250131845,
     -7.897272825},
    {"llama-q4_k_m",
     "token_embd.weight",
     dt::element_type::q4_K,
     {0.25453949f, -1.67602539f, -0.397476196f, -0.408294678f},
     -243.6904106,
     -1632.889008},
    {"llama-q3_k_m",
     "blk.0.attn_v.weight",
     dt::element_type::q5_K,
     {0.0010881424f, 0.100992918f, 4.76837158e-05f, -0.0149025917f},
     -1.599769592,
     -6.010610938},
    {"llama-q5_k_m",
     "token_embd.weight",
     dt::element_type::q5_K,
     {0.352174759f, -1.5887146f, -0.326786041f, -0.498687744f},
     -216.7888165,
     -1625.952232},
    {"llama-q6_k",
     "output.weight",
     dt::element_type::q6_K,
     {0.146890104f, 0.0118655562f, 0.155387878f, -0.00642228127f},
     -35.91306287,
     -237.3812439},
    {"llama-q4_1",
     "output.weight",
     dt::element_type::q6_K,
     {0.146890104f, 0.0118655562f, 0.155387878f, -0.00642228127f},
     -35.91306287,
     -237.3812439},
    {"llama-q4_1",
     "token_embd.weight",
     dt::element_type::q4_1,
     {0.187255859f, -1.6484375f, -0.381835938f, -0.487304688f},
     -199.1325684,
     -1551.732788},
    {"llama-q5_0",
     "token_embd.weight",
     dt::element_type::q5_0,
     {0.338867188f, -1.65991211f, -0.401000977f, -0.504882812f},
     -195.1987305,
     -1529.081787},
    {"llama-q5_1",
     "token_embd.weight",
     dt::element_type::q5_1,
     {0.404296875f, -1.6484375f, -0.316772461f, -0.412780762f},
     -175.6494141,
     -1466.565002},
};

/// The check values are printed to 10 significant digits.
double printed_tolerance(double v) { return 1e-9 * std::max(1.0, std::abs(v)) * 10; }

TEST(WeightDecode, MatchesLlamaCppCheckValues) {
  if (!std::filesystem::is_directory(MNEMO_FIXTURES_DIR))
    GTEST_SKIP() << "fixture directory '" MNEMO_FIXTURES_DIR "' not found";
  for (const check_values& c : k_checks) {
    SCOPED_TRACE(std::string(c.file) + " " + c.tensor);
    // Appended piece by piece: GCC 12 at -O3 reports a false -Warray-bounds on the
    // operator+ chain that starts from the macro's literal.
    std::string path = MNEMO_FIXTURES_DIR;
    path.append("/").append(c.file).append(".gguf");
    auto f = gguf::file::open(path);
    ASSERT_TRUE(f.is_ok()) << f.error().to_string();
    const gguf::tensor* t = f->find_tensor(c.tensor);
    ASSERT_NE(t, nullptr);
    ASSERT_TRUE(t->element_type.has_value());
    ASSERT_EQ(*t->element_type, c.type) << t->type_name;
    const std::size_t n_in = t->dims[0], n_rows = t->n_elements / n_in;
    std::vector<float> row(n_in);
    double sum = 0, weighted = 0;
    for (std::size_t r = 0; r < n_rows; ++r) {
      dt::decode_any_row(c.type, t->data.data() + r * t->row_bytes, row.data(), n_in);
      if (r == 0) {
        const std::size_t at[4] = {0, 37, 130, 255};
        for (std::size_t k = 0; k < 4; ++k)
          EXPECT_EQ(row[at[k]], c.row0[k]) << "row 0, j = " << at[k];
      }
      for (std::size_t j = 0; j < n_in; ++j) {
        const std::size_t i = r * n_in + j;
        sum += row[j];
        weighted += row[j] * static_cast<double>(i % 7 + 1);
      }
    }
    EXPECT_NEAR(sum, c.sum, printed_tolerance(c.sum));
    EXPECT_NEAR(weighted, c.weighted_sum, printed_tolerance(c.weighted_sum));
  }
}

}  // namespace
