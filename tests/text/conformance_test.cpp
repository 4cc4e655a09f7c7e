// Conformance with llama.cpp: every expected tokenization in the fixture vocabularies
// (llama.cpp's tests/test-tokenizer-0 data: NAME.gguf.inp strings and NAME.gguf.out ids,
// produced with add_special = false, parse_special = false), and decode(encode(s)) == s.
#include <cstdio>
#include <fstream>
#include <iterator>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "mnemo/text/text.hpp"

namespace {

using mnemo::text::token_id;

std::string fixture(const std::string& name) {
  return std::string(MNEMO_FIXTURES_DIR) + "/tokenizer/" + name;
}

bool read_file(const std::string& path, std::string& out) {
  std::ifstream f(path, std::ios::binary);
  if (!f) return false;
  out.assign(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>());
  return true;
}

/// The test strings, split as llama.cpp's test does: at each "\n__ggml_vocab_test__\n".
std::vector<std::string> read_inputs(const std::string& text) {
  const std::string sep = "\n__ggml_vocab_test__\n";
  std::vector<std::string> out;
  for (std::size_t pos = 0;;) {
    const std::size_t next = text.find(sep, pos);
    if (next == std::string::npos) break;
    out.push_back(text.substr(pos, next - pos));
    pos = next + sep.size();
  }
  return out;
}

std::vector<std::vector<token_id>> read_outputs(const std::string& text) {
  std::vector<std::vector<token_id>> out;
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) {
    std::istringstream ids(line);
    out.emplace_back();
    for (long id; ids >> id;) out.back().push_back(static_cast<token_id>(id));
  }
  return out;
}

std::string escape(const std::string& s) {
  std::string out;
  for (const unsigned char c : s) {
    char buf[8];
    if (c == '\n')
      out += "\\n";
    else if (c == '\t')
      out += "\\t";
    else if (c == '\\')
      out += "\\\\";
    else if (c < 0x20 || c == 0x7F)
      std::snprintf(buf, sizeof buf, "\\x%02X", c), out += buf;
    else
      out.push_back(static_cast<char>(c));
  }
  return out;
}

std::string ids_to_string(const std::vector<token_id>& ids) {
  std::string out = "[";
  for (std::size_t i = 0; i < ids.size(); ++i) out += (i ? " " : "") + std::to_string(ids[i]);
  return out + "]";
}

struct vocab_case {
  const char* file;
  const char* test_name;
};

class Conformance : public ::testing::TestWithParam<vocab_case> {
 protected:
  void SetUp() override {
    const std::string base = fixture(GetParam().file);
    std::string inp, out;
    if (!read_file(base + ".inp", inp) || !read_file(base + ".out", out))
      GTEST_SKIP() << "fixtures not found under " << MNEMO_FIXTURES_DIR;
    inputs_ = read_inputs(inp);
    expected_ = read_outputs(out);
    ASSERT_EQ(inputs_.size(), expected_.size()) << base << ": .inp and .out disagree";
    ASSERT_FALSE(inputs_.empty());
    auto tok = mnemo::text::tokenizer::open(base);
    ASSERT_TRUE(tok.is_ok()) << tok.error().to_string();
    tok_.emplace(std::move(tok).value());
  }

  std::vector<std::string> inputs_;
  std::vector<std::vector<token_id>> expected_;
  std::optional<mnemo::text::tokenizer> tok_;
};

TEST_P(Conformance, MatchesLlamaCpp) {
  const mnemo::text::encode_options plain{.add_special = false, .parse_special = false};
  int failures = 0;
  for (std::size_t i = 0; i < inputs_.size(); ++i) {
    const std::vector<token_id> got = tok_->encode(inputs_[i], plain);
    if (got != expected_[i]) {
      ++failures;
      ADD_FAILURE() << GetParam().file << " string " << i << ": \"" << escape(inputs_[i])
                    << "\"\n  expected " << ids_to_string(expected_[i]) << "\n  got      "
                    << ids_to_string(got);
    }
  }
  EXPECT_EQ(failures, 0);
}

TEST_P(Conformance, DecodeInvertsEncode) {
  for (const bool add_special : {false, true}) {
    for (std::size_t i = 0; i < inputs_.size(); ++i) {
      const auto ids = tok_->encode(inputs_[i], {.add_special = add_special});
      auto text = tok_->decode(ids);
      ASSERT_TRUE(text.is_ok()) << text.error().to_string();
      EXPECT_EQ(text.value(), inputs_[i])
          << GetParam().file << " string " << i << " (add_special " << add_special << "): \""
          << escape(inputs_[i]) << "\" ids " << ids_to_string(ids);
    }
  }
}

TEST_P(Conformance, StreamingMatchesWholeDecode) {
  int held_back = 0;
  for (std::size_t i = 0; i < inputs_.size(); ++i) {
    const auto ids = tok_->encode(inputs_[i]);
    mnemo::text::stream_decoder dec(*tok_);
    std::string streamed;
    for (const token_id id : ids) {
      auto part = dec.push(id);
      ASSERT_TRUE(part.is_ok()) << part.error().to_string();
      // Every piece handed out is whole UTF-8 characters (the inputs are valid UTF-8).
      std::string_view v = part.value();
      if (!dec.held().empty()) ++held_back;
      if (!v.empty()) {
        EXPECT_LT(static_cast<unsigned char>(v.back()), 0xC0)
            << "string " << i << ": a piece ends with a lead byte";
      }
      streamed.append(v);
    }
    streamed += dec.finish();
    EXPECT_EQ(streamed, inputs_[i])
        << GetParam().file << " string " << i << ": \"" << escape(inputs_[i]) << "\"";
  }
  // The emoji and Khmer strings split characters across tokens in every vocabulary here.
  EXPECT_GT(held_back, 0) << "no token ever ended mid-character: the hold-back is untested";
}

INSTANTIATE_TEST_SUITE_P(Vocabularies, Conformance,
                         ::testing::Values(vocab_case{"ggml-vocab-llama-spm.gguf", "LlamaSpm"},
                                           vocab_case{"ggml-vocab-phi-3.gguf", "Phi3"},
                                           vocab_case{"ggml-vocab-gpt-2.gguf", "Gpt2"},
                                           vocab_case{"ggml-vocab-starcoder.gguf", "Starcoder"}),
                         [](const ::testing::TestParamInfo<vocab_case>& info) {
                           return info.param.test_name;
                         });

}  // namespace
