// BOS/EOS per the file's keys and the caller's override, special-token text parsing and
// rendering, and the streaming decoder's hold-back, on the fixture vocabularies. Expected
// ids are taken from the fixtures' .out files (llama.cpp's output) or the vocabulary.
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "mnemo/text/text.hpp"

namespace {

using mnemo::text::token_id;
using mnemo::text::tokenizer;
using ids = std::vector<token_id>;

std::optional<tokenizer> open_fixture(const char* name) {
  auto t = tokenizer::open(std::string(MNEMO_FIXTURES_DIR) + "/tokenizer/" + name);
  if (!t.is_ok()) return std::nullopt;
  return std::move(t).value();
}

bool contains(const ids& v, token_id id) {
  for (const token_id x : v)
    if (x == id) return true;
  return false;
}

TEST(SpecialTokens, LlamaSpm) {
  auto tok = open_fixture("ggml-vocab-llama-spm.gguf");
  if (!tok) GTEST_SKIP() << "fixture not found";
  ASSERT_TRUE(tok->vocab().add_bos());
  ASSERT_FALSE(tok->vocab().add_eos());
  // "Hello world" is [15043, 3186] in the .out file
  EXPECT_EQ(tok->encode("Hello world"), (ids{1, 15043, 3186}));
  EXPECT_EQ(tok->encode("Hello world", {.add_eos = true}), (ids{1, 15043, 3186, 2}));
  EXPECT_EQ(tok->encode("Hello world", {.add_bos = false}), (ids{15043, 3186}));
  EXPECT_EQ(tok->encode("Hello world", {.add_special = false, .add_eos = true}),
            (ids{15043, 3186}));
  // parsed "<s>" is the BOS id and the text after it gets the prefix space again
  EXPECT_EQ(tok->encode("<s>Hello", {.add_special = false, .parse_special = true}),
            (ids{1, 15043}));
  const ids plain = tok->encode("<s>Hello", {.add_special = false});
  EXPECT_FALSE(contains(plain, 1));
  auto back = tok->decode(plain);
  ASSERT_TRUE(back.is_ok());
  EXPECT_EQ(back.value(), "<s>Hello");

  auto hidden = tok->decode(ids{1, 15043, 3186, 2});
  auto shown = tok->decode(ids{1, 15043, 3186, 2}, {.render_special = true});
  ASSERT_TRUE(hidden.is_ok() && shown.is_ok());
  EXPECT_EQ(hidden.value(), "Hello world");
  EXPECT_EQ(shown.value(), "<s>Hello world</s>");
  // a continuation keeps its leading space
  auto cont = tok->decode(ids{3186}, {.text_start = false});
  ASSERT_TRUE(cont.is_ok());
  EXPECT_EQ(cont.value(), " world");
}

TEST(SpecialTokens, Gpt2) {
  auto tok = open_fixture("ggml-vocab-gpt-2.gguf");
  if (!tok) GTEST_SKIP() << "fixture not found";
  EXPECT_FALSE(tok->vocab().add_bos());  // no add_bos_token key: the BPE default
  EXPECT_EQ(tok->encode("Hello world"), (ids{15496, 995}));
  EXPECT_EQ(tok->encode("Hello world", {.add_bos = true}), (ids{50256, 15496, 995}));
  EXPECT_EQ(tok->encode("<|endoftext|>", {.parse_special = true}), (ids{50256}));
  EXPECT_EQ(tok->encode("a<|endoftext|>b", {.parse_special = true}), (ids{64, 50256, 65}));
  EXPECT_FALSE(contains(tok->encode("<|endoftext|>"), 50256));
  auto shown = tok->decode(ids{50256}, {.render_special = true});
  auto hidden = tok->decode(ids{50256});
  ASSERT_TRUE(shown.is_ok() && hidden.is_ok());
  EXPECT_EQ(shown.value(), "<|endoftext|>");
  EXPECT_EQ(hidden.value(), "");
}

TEST(StreamDecoder, HoldsBackSplitCharacters) {
  auto tok = open_fixture("ggml-vocab-gpt-2.gguf");
  if (!tok) GTEST_SKIP() << "fixture not found";
  // "🚀 (" is 8582 248 222 357 in the .out file: the rocket's 4 bytes span 3 tokens
  mnemo::text::stream_decoder dec(*tok);
  std::vector<std::string> parts;
  for (const token_id id : ids{8582, 248, 222, 357}) {
    auto p = dec.push(id);
    ASSERT_TRUE(p.is_ok());
    parts.emplace_back(p.value());
  }
  EXPECT_EQ(parts, (std::vector<std::string>{"", "", "\xF0\x9F\x9A\x80", " ("}));
  EXPECT_EQ(dec.finish(), "");
  // an incomplete character left at the end comes out of finish()
  ASSERT_TRUE(dec.push(8582).is_ok());
  EXPECT_EQ(dec.held(), "\xF0\x9F");
  EXPECT_EQ(dec.finish(), "\xF0\x9F");
}

TEST(StreamDecoder, SpmByteFallback) {
  auto tok = open_fixture("ggml-vocab-llama-spm.gguf");
  if (!tok) GTEST_SKIP() << "fixture not found";
  // " this is 🦙.cpp" is 29871 445 338 29871 243 162 169 156 29889 8223: the llama
  // emoji is four <0xNN> byte tokens
  mnemo::text::stream_decoder dec(*tok);
  std::string out;
  int empty_pushes = 0;
  for (const token_id id : ids{29871, 445, 338, 29871, 243, 162, 169, 156, 29889, 8223}) {
    auto p = dec.push(id);
    ASSERT_TRUE(p.is_ok());
    if (p.value().empty()) ++empty_pushes;
    out.append(p.value());
  }
  out += dec.finish();
  EXPECT_EQ(out, " this is \xF0\x9F\xA6\x99.cpp");
  EXPECT_EQ(empty_pushes, 4);  // the leading "▁" (stripped) and 3 partial emoji bytes
}

}  // namespace
