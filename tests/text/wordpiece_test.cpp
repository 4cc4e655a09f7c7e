// WordPiece (tokenizer.ggml.model "bert") on a hand-made vocabulary, worked out on paper
// from llama.cpp's rules: NFD first code point (accents go), lowercase, punctuation and
// CJK as words of their own, greedy longest match with "▁" marking a word start, [UNK]
// for a word with an uncovered position, [CLS] ... [SEP] with add_special.
#include <cstdint>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "mnemo/gguf/file.hpp"
#include "mnemo/gguf/writer.hpp"
#include "mnemo/text/text.hpp"

namespace {

namespace gguf = mnemo::gguf;
using mnemo::text::token_id;
using ids = std::vector<token_id>;

#define WS "\xE2\x96\x81"  // U+2581, the word-start mark llama.cpp's conversion writes

mnemo::text::tokenizer bert_tokenizer() {
  const std::vector<std::string> tokens = {
      "[PAD]",           "[UNK]", "[CLS]", "[SEP]", WS "hello", WS "world",
      WS "un",           "aff",   "able",  WS "!",  WS ",",     WS "cafe",
      WS "\xE6\x88\x91", WS "x",  "y",     WS "a",  "a",        WS "xy"};
  std::vector<std::int32_t> types(tokens.size(), 1);
  types[0] = types[1] = types[2] = types[3] = 3;
  types[1] = 2;
  gguf::writer w;
  w.add_string("tokenizer.ggml.model", "bert")
      .add_array("tokenizer.ggml.tokens", tokens)
      .add_array<std::int32_t>("tokenizer.ggml.token_type", types)
      .add("tokenizer.ggml.unknown_token_id", std::uint32_t{1})
      .add("tokenizer.ggml.bos_token_id", std::uint32_t{2})
      .add("tokenizer.ggml.seperator_token_id", std::uint32_t{3})
      .add("tokenizer.ggml.padding_token_id", std::uint32_t{0});
  auto bytes = w.to_bytes();
  EXPECT_TRUE(bytes.is_ok());
  auto f = gguf::file::from_owned_bytes(std::move(bytes).value());
  EXPECT_TRUE(f.is_ok());
  auto tok = mnemo::text::tokenizer::from_gguf(*f);
  EXPECT_TRUE(tok.is_ok()) << tok.error().to_string();
  return std::move(tok).value();
}

TEST(WordPiece, PreSplitAndGreedyPieces) {
  const auto tok = bert_tokenizer();
  const mnemo::text::encode_options plain{.add_special = false};
  // "Hello," -> hello , ; "WORLD!" -> world ! ; unaffable -> un aff able
  EXPECT_EQ(tok.encode("Hello, WORLD! unaffable", plain), (ids{4, 10, 5, 9, 6, 7, 8}));
  // accents stripped (precomposed é -> e), CJK ideograph its own word, longest match first
  EXPECT_EQ(tok.encode("caf\xC3\xA9 \xE6\x88\x91xy", plain), (ids{11, 12, 17}));
  // "xyz": x y match, z does not: the whole word is [UNK]; "aa" -> ▁a a
  EXPECT_EQ(tok.encode("xyz aa", plain), (ids{1, 15, 16}));
  // control characters vanish, white space of every kind separates
  EXPECT_EQ(tok.encode("hel\x01lo\xE3\x80\x80world\t", plain), (ids{4, 5}));
  EXPECT_EQ(tok.encode("", plain), ids{});
}

TEST(WordPiece, SpecialTokensAndDecode) {
  const auto tok = bert_tokenizer();
  EXPECT_EQ(tok.encode("hello world"), (ids{2, 4, 5, 3}));  // [CLS] ... [SEP]
  auto text = tok.decode(tok.encode("Hello world unaffable"));
  ASSERT_TRUE(text.is_ok());
  EXPECT_EQ(text.value(), "hello world unaffable");
  EXPECT_EQ(tok.encode("[CLS]hello", {.add_special = false, .parse_special = true}), (ids{2, 4}));
}

}  // namespace
