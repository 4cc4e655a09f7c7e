// The data-driven pre-tokenizers against llama.cpp's own pieces (the fixtures' .pieces
// files: unicode_regex_split's output for each type's rules), and the GPT-2 fast path
// against the regex engine running the same rules.
#include <cstdint>
#include <string>
#include <vector>

#include "text/fixture_files.hpp"
#include <gtest/gtest.h>

#include "mnemo/gguf/file.hpp"
#include "mnemo/text/pre_tokenizer.hpp"

namespace {

using mnemo::text::pre_flag;
using mnemo::text::pre_tokenizer;

std::vector<std::string> pieces(const pre_tokenizer& p, const std::string& text, bool general) {
  std::vector<std::size_t> ends;
  mnemo::text::pre_tokenize_scratch s;
  if (general)
    p.split_general(text, ends, s);
  else
    p.split(text, ends, s);
  std::vector<std::string> out;
  std::size_t begin = 0;
  for (const std::size_t e : ends) {
    out.push_back(text.substr(begin, e - begin));
    begin = e;
  }
  return out;
}

std::string escape_spaces(const std::string& s) {
  std::string out;
  for (const char c : s) out += c == ' ' ? std::string("\xE2\x96\x81") : std::string(1, c);
  return out;
}

std::vector<std::string> pieces_fixtures() {
  std::vector<std::string> out;
  for (const auto& f : mnemo_test::tokenizer_fixture_files()) {
    std::string unused;
    if (mnemo_test::read_file(mnemo_test::tokenizer_fixture_dir() + "/" + f + ".pieces", unused))
      out.push_back(f);
  }
  if (out.empty()) out.push_back("none");  // keeps the suite instantiated; the test skips
  return out;
}

class PreTokenizerPieces : public ::testing::TestWithParam<std::string> {};

TEST_P(PreTokenizerPieces, MatchLlamaCpp) {
  const std::string base = mnemo_test::tokenizer_fixture_dir() + "/" + GetParam();
  std::string inp, pcs;
  if (!mnemo_test::read_file(base + ".inp", inp) || !mnemo_test::read_file(base + ".pieces", pcs))
    GTEST_SKIP() << "no fixtures under " << mnemo_test::tokenizer_fixture_dir();
  auto f = mnemo::gguf::file::open(base);
  ASSERT_TRUE(f.is_ok()) << f.error().to_string();
  auto pre_name = f->get_string("tokenizer.ggml.pre");
  ASSERT_TRUE(pre_name.is_ok()) << pre_name.error().to_string();
  auto model = f->get_string("tokenizer.ggml.model");
  ASSERT_TRUE(model.is_ok());
  if (model.value() == "whitespace") GTEST_SKIP() << "pieces after white-space removal: see .out";
  auto p = pre_tokenizer::for_name(pre_name.value());
  ASSERT_TRUE(p.is_ok()) << p.error().to_string();

  const auto inputs = mnemo_test::read_inputs(inp);
  std::vector<std::vector<std::string>> expected;
  std::istringstream lines(pcs);
  for (std::string line; std::getline(lines, line);) {
    expected.emplace_back();
    ASSERT_TRUE(mnemo_test::parse_pieces_line(line, expected.back())) << line;
  }
  ASSERT_EQ(inputs.size(), expected.size());
  int failures = 0;
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    const std::string text = p->has(pre_flag::escape_spaces) ? escape_spaces(inputs[i]) : inputs[i];
    const auto got = pieces(*p, text, false);
    if (got != expected[i] && ++failures <= 8)
      ADD_FAILURE() << GetParam() << " (" << pre_name.value() << ") string " << i << ": \""
                    << mnemo_test::escape(inputs[i]) << "\"\n  expected "
                    << mnemo_test::join_pieces(expected[i]) << "\n  got      "
                    << mnemo_test::join_pieces(got);
  }
  EXPECT_EQ(failures, 0);
}

INSTANTIATE_TEST_SUITE_P(Fixtures, PreTokenizerPieces, ::testing::ValuesIn(pieces_fixtures()),
                         [](const auto& info) { return mnemo_test::test_name_of(info.param); });

/// Every type of the table compiles.
TEST(PreTokenizerTypes, AllCompile) {
  for (const auto& t : mnemo::text::k_pre_tokenizer_types) {
    auto p = pre_tokenizer::from_type(t);
    EXPECT_TRUE(p.is_ok()) << t.type << ": " << p.error().to_string();
  }
  EXPECT_EQ(pre_tokenizer::for_name("no-such-pre").error().code(), mnemo::status_code::unsupported);
}

/// The hand-written scanners (GPT-2, StarCoder, Llama 3, Qwen 2, Qwen 3.5) agree with the regex
/// engine on the fixture strings and on random mixes of the characters that matter to the rules.
TEST(PreTokenizerFastPath, AgreesWithRegexEngine) {
  std::vector<std::string> texts;
  std::string inp;
  if (mnemo_test::read_file(
          mnemo_test::tokenizer_fixture_dir() + "/ggml-vocab-gpt2-pre-gpt-2.gguf.inp", inp))
    texts = mnemo_test::read_inputs(inp);
  const char* alphabet[] = {" ",
                            "  ",
                            "\t",
                            "\n",
                            "\r",
                            "a",
                            "Z",
                            "'",
                            "s",
                            "re",
                            "ll",
                            "1",
                            "7",
                            "!",
                            ".",
                            "~",
                            "\xC2\xA0",
                            "\xC2\x85",
                            "\xC3\xA9",
                            "\xC2\xBD",
                            "\xE2\x80\x8B",
                            "\xE3\x80\x80",
                            "\xE6\x88\x91",
                            "\xF0\x9F\x98\x80",
                            "\xCC\x81",
                            "\xFF",
                            "\xE2\x85\xA7",
                            "'S",
                            "'Re",
                            "\r\n",
                            "1234",
                            " \xCC\x81",
                            "\t\xCC\x81"
                            "a"};
  std::uint64_t seed = 0x5eed;
  for (int n = 0; n < 3000; ++n) {
    std::string t;
    const int len = 1 + static_cast<int>(seed % 24);
    for (int k = 0; k < len; ++k) {
      seed = seed * 6364136223846793005ull + 1442695040888963407ull;
      t += alphabet[(seed >> 33) % std::size(alphabet)];
    }
    texts.push_back(t);
  }
  for (const char* name : {"gpt-2", "starcoder", "llama-bpe", "qwen2", "qwen35"}) {
    auto p = pre_tokenizer::for_name(name);
    ASSERT_TRUE(p.is_ok());
    ASSERT_TRUE(p->uses_fast_path());
    int failures = 0;
    for (const auto& t : texts) {
      const auto fast = pieces(*p, t, false), general = pieces(*p, t, true);
      if (fast != general && ++failures <= 5)
        ADD_FAILURE() << name << ": \"" << mnemo_test::escape(t) << "\"\n  fast    "
                      << mnemo_test::join_pieces(fast) << "\n  general "
                      << mnemo_test::join_pieces(general);
    }
    EXPECT_EQ(failures, 0) << name << " (seed 0x5eed)";
  }
}

}  // namespace
