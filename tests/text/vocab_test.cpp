// Loading tokenizer metadata: malformed tables get a clear status at load (each case is
// a small GGUF written with gguf::writer), and a hand-checked tiny vocabulary of each
// family encodes as worked out on paper.
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include <gtest/gtest.h>

#include "mnemo/gguf/file.hpp"
#include "mnemo/gguf/writer.hpp"
#include "mnemo/text/text.hpp"

namespace {

using mnemo::status_code;
namespace gguf = mnemo::gguf;
using mnemo::text::token_id;
using mnemo::text::tokenizer;

// A SentencePiece-style vocabulary: 0 <unk>, 1 <s>, 2 </s>, 3 ▁, 4 a, 5 b, 6 ▁a, 7 ab,
// 8 <0x63> ('c' by byte fallback).
struct spm_parts {
  std::vector<std::string> tokens = {"<unk>",
                                     "<s>",
                                     "</s>",
                                     "\xE2\x96\x81",
                                     "a",
                                     "b",
                                     "\xE2\x96\x81"
                                     "a",
                                     "ab",
                                     "<0x63>"};
  std::vector<float> scores = {0, 0, 0, -5, -6, -7, -1, -2, 0};
  std::vector<std::int32_t> types = {2, 3, 3, 1, 1, 1, 1, 1, 6};
};

// A byte-level BPE vocabulary over the letters a, b, space ('Ġ' = U+0120) and merges
// "Ġ a" (rank 0), "a b" (rank 1), "Ġa b" (rank 2).
struct bpe_parts {
  std::vector<std::string> tokens = {"a",
                                     "b",
                                     "\xC4\xA0",
                                     "ab",
                                     "\xC4\xA0"
                                     "a",
                                     "\xC4\xA0"
                                     "ab",
                                     "<|end|>"};
  std::vector<std::int32_t> types = {1, 1, 1, 1, 1, 1, 3};
  std::vector<std::string> merges = {"\xC4\xA0 a", "a b",
                                     "\xC4\xA0"
                                     "a b"};
  std::string pre = "gpt-2";
};

mnemo::result<tokenizer> load(const gguf::writer& w) {
  auto bytes = w.to_bytes();
  if (!bytes.is_ok()) return bytes.error();
  MNEMO_ASSIGN_OR_RETURN(gguf::file f, gguf::file::from_owned_bytes(std::move(bytes).value()));
  return tokenizer::from_gguf(f);
}

gguf::writer write_spm(const spm_parts& p) {
  gguf::writer w;
  w.add_string("tokenizer.ggml.model", "llama")
      .add_array("tokenizer.ggml.tokens", p.tokens)
      .add_array<float>("tokenizer.ggml.scores", p.scores)
      .add_array<std::int32_t>("tokenizer.ggml.token_type", p.types)
      .add("tokenizer.ggml.bos_token_id", std::uint32_t{1})
      .add("tokenizer.ggml.eos_token_id", std::uint32_t{2})
      .add("tokenizer.ggml.unknown_token_id", std::uint32_t{0});
  return w;
}

gguf::writer write_bpe(const bpe_parts& p) {
  gguf::writer w;
  w.add_string("tokenizer.ggml.model", "gpt2")
      .add_string("tokenizer.ggml.pre", p.pre)
      .add_array("tokenizer.ggml.tokens", p.tokens)
      .add_array<std::int32_t>("tokenizer.ggml.token_type", p.types)
      .add_array("tokenizer.ggml.merges", p.merges)
      .add("tokenizer.ggml.eos_token_id", std::uint32_t{6});
  return w;
}

void expect_status(const mnemo::result<tokenizer>& r, status_code code, std::string_view needle) {
  ASSERT_FALSE(r.is_ok()) << "loaded, but expected: " << needle;
  EXPECT_EQ(r.error().code(), code) << r.error().to_string();
  EXPECT_NE(r.error().message().find(needle), std::string::npos)
      << "message \"" << r.error().message() << "\" does not mention \"" << needle << "\"";
}

TEST(TinyVocab, SpmMergesByScore) {
  auto tok = load(write_spm({}));
  ASSERT_TRUE(tok.is_ok()) << tok.error().to_string();
  // "ab a" -> "▁ab▁a": ▁a (-1) beats ab (-2) and the leftmost ▁a goes first; "▁ab" is not
  // a token, so b stays alone; then the second ▁a.
  EXPECT_EQ(tok->encode("ab a", {.add_special = false}), (std::vector<token_id>{6, 5, 6}));
  // BOS by default (SentencePiece default add_bos), EOS on request; 'c' by byte fallback.
  EXPECT_EQ(tok->encode("c"), (std::vector<token_id>{1, 3, 8}));
  EXPECT_EQ(tok->encode("c", {.add_eos = true}), (std::vector<token_id>{1, 3, 8, 2}));
  EXPECT_EQ(tok->encode("c", {.add_special = false, .add_bos = true}),
            (std::vector<token_id>{3, 8}));
  auto text = tok->decode(std::vector<token_id>{1, 6, 5, 6, 8, 2});
  ASSERT_TRUE(text.is_ok());
  EXPECT_EQ(text.value(), "ab ac");
}

TEST(TinyVocab, BpeMergesByRank) {
  auto tok = load(write_bpe({}));
  ASSERT_TRUE(tok.is_ok()) << tok.error().to_string();
  // words "ab", " ab", " ba": in " ab", "Ġ a" (rank 0) wins over "a b" (rank 1), then
  // "Ġa b"; " ba" has no merge at all.
  EXPECT_EQ(tok->encode("ab ab ba"), (std::vector<token_id>{3, 5, 2, 1, 0}));
  EXPECT_EQ(tok->encode("<|end|>", {.parse_special = true}), (std::vector<token_id>{6}));
  EXPECT_EQ(tok->encode("a", {.add_eos = true}), (std::vector<token_id>{0, 6}));
}

TEST(MalformedVocab, UnknownOrMissingModel) {
  gguf::writer none;
  none.add_array("tokenizer.ggml.tokens", spm_parts{}.tokens);
  expect_status(load(none), status_code::not_found, "tokenizer.ggml.model");

  spm_parts p;
  gguf::writer t5;
  t5.add_string("tokenizer.ggml.model", "t5").add_array("tokenizer.ggml.tokens", p.tokens);
  expect_status(load(t5), status_code::unsupported, "t5");
}

TEST(MalformedVocab, MissingArrays) {
  gguf::writer no_tokens;
  no_tokens.add_string("tokenizer.ggml.model", "llama");
  expect_status(load(no_tokens), status_code::not_found, "tokenizer.ggml.tokens");

  spm_parts p;
  gguf::writer no_scores;
  no_scores.add_string("tokenizer.ggml.model", "llama")
      .add_array("tokenizer.ggml.tokens", p.tokens);
  expect_status(load(no_scores), status_code::not_found, "tokenizer.ggml.scores");

  bpe_parts b;
  gguf::writer no_merges;
  no_merges.add_string("tokenizer.ggml.model", "gpt2")
      .add_string("tokenizer.ggml.pre", "gpt-2")
      .add_array("tokenizer.ggml.tokens", b.tokens);
  expect_status(load(no_merges), status_code::not_found, "tokenizer.ggml.merges");

  gguf::writer wrong_type;
  const std::vector<std::uint32_t> numbers = {1, 2, 3};
  wrong_type.add_string("tokenizer.ggml.model", "llama")
      .add_array<std::uint32_t>("tokenizer.ggml.tokens", numbers);
  expect_status(load(wrong_type), status_code::invalid_argument, "tokenizer.ggml.tokens");
}

TEST(MalformedVocab, MismatchedLengths) {
  spm_parts p;
  p.scores.pop_back();
  expect_status(load(write_spm(p)), status_code::corrupt_data, "tokenizer.ggml.scores has 8");
  spm_parts q;
  q.types.push_back(1);
  expect_status(load(write_spm(q)), status_code::corrupt_data, "token_type has 10");
}

TEST(MalformedVocab, BadTokenTypeValue) {
  spm_parts p;
  p.types[4] = 9;
  expect_status(load(write_spm(p)), status_code::corrupt_data, "token 4 has type 9");
}

TEST(MalformedVocab, InvalidUtf8Token) {
  spm_parts p;
  p.tokens[5] = "b\xC3";  // a truncated two-byte sequence
  expect_status(load(write_spm(p)), status_code::corrupt_data, "token 5");
  spm_parts q;
  q.tokens[5] = "\xED\xA0\x80";  // an encoded surrogate
  expect_status(load(write_spm(q)), status_code::corrupt_data, "not valid UTF-8");
}

TEST(MalformedVocab, BadMerges) {
  bpe_parts unknown;
  unknown.merges[0] = "\xC4\xA0 x";
  expect_status(load(write_bpe(unknown)), status_code::corrupt_data, "merge 0: names 'x'");
  bpe_parts no_result;
  no_result.merges.push_back("b a");  // both sides are tokens, "ba" is not
  expect_status(load(write_bpe(no_result)), status_code::corrupt_data, "merge 3: names 'ba'");
  bpe_parts no_space;
  no_space.merges[1] = "ab";
  expect_status(load(write_bpe(no_space)), status_code::corrupt_data, "merge 1: has no space");
}

TEST(MalformedVocab, PreTokenizerNames) {
  bpe_parts p;
  p.pre = "no-such-pre";
  expect_status(load(write_bpe(p)), status_code::unsupported, "no-such-pre");
  p.pre = "llama-bpe";
  auto llama3 = load(write_bpe(p));
  ASSERT_TRUE(llama3.is_ok()) << llama3.error().to_string();
  EXPECT_TRUE(llama3->vocab().add_bos());  // llama3's default, as llama.cpp

  // No pre name selects llama.cpp's "default" type.
  bpe_parts b;
  gguf::writer no_pre;
  no_pre.add_string("tokenizer.ggml.model", "gpt2")
      .add_array("tokenizer.ggml.tokens", b.tokens)
      .add_array("tokenizer.ggml.merges", b.merges);
  auto def = load(no_pre);
  ASSERT_TRUE(def.is_ok()) << def.error().to_string();
  ASSERT_NE(def->vocab().splitter(), nullptr);
  EXPECT_EQ(def->vocab().splitter()->type()->type, "DEFAULT");
}

TEST(MalformedVocab, SpecialIdOutOfRange) {
  spm_parts p;
  gguf::writer w;
  w.add_string("tokenizer.ggml.model", "llama")
      .add_array("tokenizer.ggml.tokens", p.tokens)
      .add_array<float>("tokenizer.ggml.scores", p.scores)
      .add("tokenizer.ggml.bos_token_id", std::uint32_t{9});
  expect_status(load(w), status_code::out_of_range, "bos_token_id = 9");
}

TEST(MalformedVocab, EmptyTokenList) {
  gguf::writer w;
  w.add_string("tokenizer.ggml.model", "llama")
      .add_array("tokenizer.ggml.tokens", std::vector<std::string>{})
      .add_array<float>("tokenizer.ggml.scores", std::vector<float>{});
  expect_status(load(w), status_code::corrupt_data, "empty");
}

TEST(Decode, RejectsIdsOutsideTheVocabulary) {
  auto tok = load(write_spm({}));
  ASSERT_TRUE(tok.is_ok());
  auto r = tok->decode(std::vector<token_id>{4, 9});
  ASSERT_FALSE(r.is_ok());
  EXPECT_EQ(r.error().code(), status_code::out_of_range);
  mnemo::text::stream_decoder dec(tok.value());
  EXPECT_FALSE(dec.push(-1).is_ok());
}

}  // namespace
