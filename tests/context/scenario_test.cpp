// examples/common/scenario.hpp: the fixtures' scenario format and its statuses on
// malformed input (never a crash or an exception).
#include <string>

#include "common/scenario.hpp"
#include <gtest/gtest.h>

namespace {

using mnemo_examples::parse_scenario;

TEST(Scenario, ParsesCallsAndOperations) {
  const char* text = R"({"model": "m.gguf", "scenario": "branch", "n_vocab": 512,
    "kv_type": "f32", "calls": [
      {"before": "", "tokens": [5, 6], "pos": [0, 1], "seq": [0, 0]},
      {"before": "seq_cp 0 1 0 32", "tokens": [7], "pos": [32], "seq": [1]}]})";
  auto sc = parse_scenario(text);
  ASSERT_TRUE(sc.is_ok()) << sc.error().to_string();
  EXPECT_EQ(sc->name, "branch");
  EXPECT_EQ(sc->n_vocab, 512u);
  ASSERT_EQ(sc->calls.size(), 2u);
  EXPECT_EQ(sc->n_rows(), 3u);
  EXPECT_TRUE(sc->calls[0].before.name.empty());
  EXPECT_EQ(sc->calls[1].before.name, "seq_cp");
  EXPECT_EQ(sc->calls[1].before.args, (std::vector<std::int32_t>{0, 1, 0, 32}));
  EXPECT_EQ(sc->calls[1].pos[0], 32);
}

TEST(Scenario, MalformedInputGivesStatus) {
  const char* bad[] = {
      "",
      "{",
      "[1, 2]",
      R"({"calls": 3})",
      R"({"calls": [{"tokens": [1], "pos": [0]}]})",
      R"({"calls": [{"tokens": [1, 2], "pos": [0], "seq": [0]}]})",
      R"({"calls": [{"tokens": [1.5], "pos": [0], "seq": [0]}]})",
      R"({"calls": [{"tokens": [1e12], "pos": [0], "seq": [0]}]})",
      R"({"calls": [{"before": "seq_cp 0 1", "tokens": [], "pos": [], "seq": []}]})",
      R"({"calls": [{"before": "seq_zap 0", "tokens": [], "pos": [], "seq": []}]})",
      R"({"calls": [{"before": "seq_rm 0 x 1", "tokens": [], "pos": [], "seq": []}]})",
      R"({"calls": []} trailing)",
      R"({"a": "unterminated)",
      R"({"a": "\q"})",
      R"({"a": tru})",
      R"({"a": -})",
  };
  for (const char* t : bad) {
    auto sc = parse_scenario(t);
    EXPECT_FALSE(sc.is_ok()) << "accepted: " << t;
    if (!sc.is_ok()) {
      EXPECT_EQ(sc.error().code(), mnemo::status_code::corrupt_data) << t;
    }
  }
  std::string deep(200, '[');
  EXPECT_FALSE(parse_scenario(deep).is_ok());
}

TEST(Scenario, StringEscapes) {
  auto v = mnemo_examples::json_parser::parse(R"({"s": "a\"b\\c\u00e9\ud83d\ude00"})");
  ASSERT_TRUE(v.is_ok()) << v.error().to_string();
  EXPECT_EQ(v->get("s")->str, "a\"b\\c\xc3\xa9\xf0\x9f\x98\x80");
}

}  // namespace
