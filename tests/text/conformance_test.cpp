// Conformance with llama.cpp: every expected tokenization in the fixture vocabularies
// (llama.cpp's tests/test-tokenizer-0 data: NAME.gguf.inp strings and NAME.gguf.out ids,
// produced with add_special = false, parse_special = false), and decode(encode(s)) == s.
#include <cstdio>
#include <fstream>
#include <iterator>
#include <sstream>
#include <string>
#include <vector>

#include "text/fixture_files.hpp"
#include <gtest/gtest.h>

#include "mnemo/text/text.hpp"

namespace {

using mnemo::text::token_id;
using mnemo_test::escape;

std::string ids_to_string(const std::vector<token_id>& ids) {
  std::string out = "[";
  for (std::size_t i = 0; i < ids.size(); ++i) out += (i ? " " : "") + std::to_string(ids[i]);
  return out + "]";
}

/// Every vocabulary of the fixture directory (new files are picked up when the tests are
/// listed); "none" when the directory is absent, which the tests skip.
std::vector<std::string> vocab_files() {
  auto files = mnemo_test::tokenizer_fixture_files();
  if (files.empty()) files.push_back("none");
  return files;
}

class Conformance : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    const std::string base = mnemo_test::tokenizer_fixture_dir() + "/" + GetParam();
    std::string inp, out;
    if (!mnemo_test::read_file(base + ".inp", inp) || !mnemo_test::read_file(base + ".out", out))
      GTEST_SKIP() << "fixtures not found under " << MNEMO_FIXTURES_DIR;
    inputs_ = mnemo_test::read_inputs(inp);
    expected_ = mnemo_test::read_outputs(out);
    ASSERT_EQ(inputs_.size(), expected_.size()) << base << ": .inp and .out disagree";
    ASSERT_FALSE(inputs_.empty());
    auto tok = mnemo::text::tokenizer::open(base);
    ASSERT_TRUE(tok.is_ok()) << tok.error().to_string();
    tok_.emplace(std::move(tok).value());
  }

  /// Whether llama.cpp's tokenizer loses nothing for this vocabulary: WordPiece and the
  /// whitespace model drop white space and lowercase.
  bool round_trips() const {
    const auto& v = tok_->vocab();
    return v.family() != mnemo::text::tokenizer_family::wpm && !v.splits_at_whitespace() &&
           !v.lowercase();
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
      ADD_FAILURE() << GetParam() << " string " << i << ": \"" << escape(inputs_[i])
                    << "\"\n  expected " << ids_to_string(expected_[i]) << "\n  got      "
                    << ids_to_string(got);
    }
  }
  EXPECT_EQ(failures, 0);
}

TEST_P(Conformance, OneScratchForEveryStringGivesTheSameIds) {
  // One scratch over all strings, twice: BPE's word cache is filled in the first pass
  // and answers nearly every word of the second.
  const mnemo::text::encode_options plain{.add_special = false, .parse_special = false};
  mnemo::text::encode_scratch scratch;
  for (int pass = 0; pass < 2; ++pass)
    for (std::size_t i = 0; i < inputs_.size(); ++i) {
      std::vector<token_id> got;
      tok_->encode_append(inputs_[i], got, scratch, plain);
      ASSERT_EQ(got, expected_[i]) << GetParam() << " pass " << pass << " string " << i << ": \""
                                   << escape(inputs_[i]) << "\"";
    }
}

TEST(WordCache, FollowsTheVocabularyItIsUsedWith) {
  // gpt-2 and starcoder give one word different ids: a scratch that encoded with one
  // must not answer the other from its cache.
  const std::string dir = mnemo_test::tokenizer_fixture_dir();
  auto a = mnemo::text::tokenizer::open(dir + "/ggml-vocab-gpt-2.gguf");
  auto b = mnemo::text::tokenizer::open(dir + "/ggml-vocab-starcoder.gguf");
  if (!a.is_ok() || !b.is_ok()) GTEST_SKIP() << "fixtures not found under " << MNEMO_FIXTURES_DIR;
  const std::string text = "Hello world, the cache follows its vocabulary";
  ASSERT_NE(a->encode(text), b->encode(text));
  mnemo::text::encode_scratch scratch;
  for (const auto* tok : {&*a, &*b, &*a, &*b}) {
    std::vector<token_id> got;
    tok->encode_append(text, got, scratch, {});
    EXPECT_EQ(got, tok->encode(text)) << (tok == &*a ? "gpt-2" : "starcoder");
  }
}

TEST_P(Conformance, DecodeInvertsEncode) {
  if (!round_trips()) GTEST_SKIP() << "this tokenizer does not round-trip in llama.cpp either";
  for (const bool add_special : {false, true}) {
    for (std::size_t i = 0; i < inputs_.size(); ++i) {
      const auto ids = tok_->encode(inputs_[i], {.add_special = add_special});
      auto text = tok_->decode(ids);
      ASSERT_TRUE(text.is_ok()) << text.error().to_string();
      EXPECT_EQ(text.value(), inputs_[i])
          << GetParam() << " string " << i << " (add_special " << add_special << "): \""
          << escape(inputs_[i]) << "\" ids " << ids_to_string(ids);
    }
  }
}

TEST_P(Conformance, StreamingMatchesWholeDecode) {
  if (!round_trips()) GTEST_SKIP() << "this tokenizer does not round-trip in llama.cpp either";
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
        << GetParam() << " string " << i << ": \"" << escape(inputs_[i]) << "\"";
  }
  // The emoji and Khmer strings split characters across tokens in llama.cpp's own
  // vocabularies (the derived ones have a token for each character of their strings).
  if (GetParam().find("-pre-") == std::string::npos) {
    EXPECT_GT(held_back, 0) << "no token ever ended mid-character: the hold-back is untested";
  }
}

INSTANTIATE_TEST_SUITE_P(Vocabularies, Conformance, ::testing::ValuesIn(vocab_files()),
                         [](const auto& info) { return mnemo_test::test_name_of(info.param); });

}  // namespace
