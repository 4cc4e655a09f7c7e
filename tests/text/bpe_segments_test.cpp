// Long BPE words merged in segments (cut where no merge joins the units on either side,
// detail/merge_joints.hpp) give the ids of the merge loop over the whole word: random
// and one-unit-run words on byte-level, raw-text and ignore_merges vocabularies, first
// with an empty word cache and again with the segments cached.
#include <cstdint>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include "fixture_files.hpp"
#include <gtest/gtest.h>

#include "mnemo/text/tokenizer.hpp"

namespace {

using mnemo::text::token_id;

// Units the fixture vocabularies merge in different ways: escaped and plain spaces,
// letters, digits, newlines, apostrophes, accented letters, Han, an emoji, a lone
// continuation byte (invalid UTF-8).
const char* const k_units[] = {"\xE2\x96\x81",
                               " ",
                               "a",
                               "b",
                               "e",
                               "t",
                               "h",
                               "A",
                               "0",
                               "1",
                               "\n",
                               "'",
                               ".",
                               "\xC3\xA9",
                               "\xE4\xB8\xAD",
                               "\xF0\x9F\x98\x80",
                               "\x80",
                               "in",
                               "the"};

std::string escaped(const std::string& s) {
  std::string out;
  for (const unsigned char c : s) {
    if (c >= 0x20 && c < 0x7F) {
      out.push_back(static_cast<char>(c));
    } else {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02X", c);
      out += buf;
    }
  }
  return out;
}

void expect_same_ids(const mnemo::text::vocab& v, const std::string& word, std::uint64_t seed,
                     mnemo::text::bpe_scratch& cached) {
  namespace detail = mnemo::text::detail;
  mnemo::text::bpe_scratch whole_scratch;
  std::vector<token_id> whole, segments, again;
  detail::bpe_encode_word(v, word, whole, whole_scratch);
  detail::bpe_encode_long_word(v, word, segments, cached);
  detail::bpe_encode_long_word(v, word, again, cached);  // the segments from the cache
  std::size_t i = 0;
  while (i < whole.size() && i < segments.size() && whole[i] == segments[i]) ++i;
  ASSERT_EQ(whole, segments) << "seed " << seed << " word '" << escaped(word)
                             << "': first difference at id " << i;
  ASSERT_EQ(whole, again) << "seed " << seed << " word '" << escaped(word) << "' (cached)";
}

class BpeSegments : public ::testing::TestWithParam<const char*> {};

TEST_P(BpeSegments, MatchTheWholeWordMerge) {
  auto t = mnemo::text::tokenizer::open(mnemo_test::tokenizer_fixture_dir() + "/" + GetParam());
  if (!t.is_ok()) GTEST_SKIP() << "no fixture " << GetParam();
  const mnemo::text::vocab& v = t->vocab();
  mnemo::text::bpe_scratch cached;
  cached.words.bind(v.serial());
  cached.chars.bind(v.serial());
  for (std::uint64_t seed = 0; seed < 300; ++seed) {
    std::mt19937_64 rng(seed);
    std::string word;
    const std::size_t n = 49 + rng() % 300;  // long words (the path is called directly)
    while (word.size() < n) word += k_units[rng() % std::size(k_units)];
    expect_same_ids(v, word, seed, cached);
    if (HasFatalFailure()) return;
  }
  for (const char* unit : k_units) {  // runs of one unit, one other unit inside
    std::string word;
    for (int i = 0; i < 120; ++i) word += i == 60 ? "x" : unit;
    expect_same_ids(v, word, 0, cached);
    if (HasFatalFailure()) return;
  }
}

INSTANTIATE_TEST_SUITE_P(Vocabularies, BpeSegments,
                         ::testing::Values("ggml-vocab-gpt-2.gguf",
                                           "ggml-vocab-gpt2raw-pre-gemma4.gguf",
                                           "ggml-vocab-gpt2-pre-tekken.gguf"),
                         [](const auto& info) { return mnemo_test::test_name_of(info.param); });

}  // namespace
