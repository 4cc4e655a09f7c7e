// Request parsing (serve/openai_request.hpp) and response shapes
// (serve/openai_response.hpp): valid bodies give the typed request, every bad body an
// error naming the field with a 4xx status; a fuzz loop mutates valid bodies and feeds
// random bytes (MNEMO_SERVE_FUZZ_SEED=n replays one seed).
#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "mnemo/base/rng.hpp"
#include "mnemo/serve/openai_request.hpp"
#include "mnemo/serve/openai_response.hpp"

namespace {

using namespace mnemo;
using namespace mnemo::serve;

parse_limits limits() {
  parse_limits l;
  l.max_tokens_max = 1000;
  l.n_vocab = 512;
  return l;
}

TEST(OpenAIRequest, ParsesACompletion) {
  auto p = parse_completion(
      R"({"model":"m","prompt":"Hello","max_tokens":7,"temperature":0.5,"top_p":0.9,)"
      R"("top_k":40,"seed":-3,"stop":["\n","END"],"stream":true,)"
      R"("stream_options":{"include_usage":true}})",
      limits());
  ASSERT_TRUE(p.ok()) << p.error.message;
  EXPECT_EQ(std::get<std::string>(p.value->prompt), "Hello");
  EXPECT_EQ(p.value->params.max_tokens, 7u);
  EXPECT_FLOAT_EQ(p.value->params.temperature, 0.5f);
  EXPECT_FLOAT_EQ(p.value->params.top_p, 0.9f);
  EXPECT_EQ(p.value->params.top_k, 40u);
  EXPECT_EQ(p.value->params.seed, static_cast<std::uint64_t>(-3));
  EXPECT_EQ(p.value->params.stop, (std::vector<std::string>{"\n", "END"}));
  EXPECT_TRUE(p.value->stream);
  EXPECT_TRUE(p.value->include_usage);

  auto ids = parse_completion(R"({"prompt":[1,2,511]})", limits());
  ASSERT_TRUE(ids.ok());
  EXPECT_EQ(std::get<std::vector<token_id>>(ids.value->prompt), (std::vector<token_id>{1, 2, 511}));
  EXPECT_EQ(ids.value->params.max_tokens, limits().default_max_tokens);
  EXPECT_FALSE(ids.value->params.seed.has_value());
}

TEST(OpenAIRequest, ParsesAChat) {
  auto p = parse_chat(R"({"messages":[{"role":"system","content":"Be brief."},)"
                      R"({"role":"user","content":[{"type":"text","text":"Hi"},)"
                      R"({"type":"text","text":"!"}]}],"max_completion_tokens":3})",
                      limits());
  ASSERT_TRUE(p.ok()) << p.error.message;
  ASSERT_EQ(p.value->messages.size(), 2u);
  EXPECT_EQ(p.value->messages[1].content, "Hi!");
  EXPECT_EQ(p.value->params.max_tokens, 3u);
}

struct bad_case {
  const char* body;
  const char* param;  // the field the error must name ("" for the body as a whole)
};

TEST(OpenAIRequest, RefusesBadBodiesNamingTheField) {
  const bad_case cases[] = {
      {"", ""},
      {"{", ""},
      {"[1,2]", ""},
      {"null", ""},
      {R"({"prompt":"a",})", ""},
      {"{\"prompt\":\"\xff\xfe\"}", ""},      // invalid UTF-8
      {"{\"prompt\":\"\xed\xa0\x80\"}", ""},  // an encoded surrogate
      {R"({"prompt":"\ud800"})", ""},         // a lone surrogate escape
      {R"({})", "prompt"},
      {R"({"prompt":5})", "prompt"},
      {R"({"prompt":[1,"x"]})", "prompt"},
      {R"({"prompt":[-1]})", "prompt"},
      {R"({"prompt":[512]})", "prompt"},
      {R"({"prompt":[1e3]})", "prompt"},
      {R"({"prompt":"a","max_tokens":-1})", "max_tokens"},
      {R"({"prompt":"a","max_tokens":0})", "max_tokens"},
      {R"({"prompt":"a","max_tokens":1001})", "max_tokens"},
      {R"({"prompt":"a","max_tokens":18446744073709551615})", "max_tokens"},
      {R"({"prompt":"a","max_tokens":1e400})", ""},
      {R"({"prompt":"a","max_tokens":2.5})", "max_tokens"},
      {R"({"prompt":"a","max_tokens":"7"})", "max_tokens"},
      {R"({"prompt":"a","temperature":"hot"})", "temperature"},
      {R"({"prompt":"a","temperature":-0.1})", "temperature"},
      {R"({"prompt":"a","top_p":0})", "top_p"},
      {R"({"prompt":"a","top_k":-2})", "top_k"},
      {R"({"prompt":"a","stop":[1]})", "stop"},
      {R"({"prompt":"a","stop":["a","b","c","d","e"]})", "stop"},
      {R"({"prompt":"a","stream":"yes"})", "stream"},
      {R"({"prompt":"a","stream_options":{"x":1}})", "x"},
      {R"({"prompt":"a","n":2})", "n"},
      {R"({"prompt":"a","frequency_penalty":0.5})", "frequency_penalty"},
      {R"({"prompt":"a","logit_bias":{}})", "logit_bias"},
      {R"({"prompt":"a","model":3})", "model"},
  };
  for (const bad_case& c : cases) {
    auto p = parse_completion(c.body, limits());
    ASSERT_FALSE(p.ok()) << c.body;
    EXPECT_EQ(p.error.http_status, 400) << c.body;
    EXPECT_FALSE(p.error.message.empty()) << c.body;
    EXPECT_EQ(p.error.param, c.param) << c.body << ": " << p.error.message;
  }
  const bad_case chats[] = {
      {R"({"messages":[]})", "messages"},
      {R"({"messages":"hi"})", "messages"},
      {R"({"messages":[1]})", "messages"},
      {R"({"messages":[{"content":"x"}]})", "messages.role"},
      {R"({"messages":[{"role":"user","content":5}]})", "messages.content"},
      {R"({"messages":[{"role":"user","content":[{"type":"image_url"}]}]})", "messages.content"},
      {R"({"messages":[{"role":"user","content":"x","tool_calls":[]}]})", "tool_calls"},
  };
  for (const bad_case& c : chats) {
    auto p = parse_chat(c.body, limits());
    ASSERT_FALSE(p.ok()) << c.body;
    EXPECT_EQ(p.error.param, c.param) << c.body << ": " << p.error.message;
  }
}

TEST(OpenAIRequest, RefusesDeepNestingBeforeParsing) {
  std::string deep = R"({"prompt":"a","user":)";
  deep += std::string(100000, '[');
  auto p = parse_completion(deep, limits());
  ASSERT_FALSE(p.ok());
  EXPECT_NE(p.error.message.find("nests"), std::string::npos) << p.error.message;
}

TEST(OpenAIRequest, FuzzedBodiesNeverCrashAndFailWithA400) {
  const std::vector<std::string> seeds = {
      R"({"model":"m","prompt":"Hello","max_tokens":7,"temperature":0.5,"stop":["\n"]})",
      R"({"prompt":[1,2,3],"stream":true,"stream_options":{"include_usage":true},"seed":9})",
      R"({"messages":[{"role":"user","content":"Hi"}],"top_p":0.5,"top_k":3})",
  };
  const char* env = std::getenv("MNEMO_SERVE_FUZZ_SEED");
  const std::uint64_t first = env ? std::strtoull(env, nullptr, 10) : 1;
  const std::uint64_t last = env ? first : 1000;
  const char alphabet[] = "{}[]\":,0123456789-.eE\\u tfnrl\xff\xc3\xa9\x80";
  for (std::uint64_t seed = first; seed <= last; ++seed) {
    splitmix64 g{seed};
    std::string body = seeds[static_cast<std::size_t>(g.range(0, 2))];
    if (g.range(0, 9) == 0) body.clear();
    const int edits = static_cast<int>(g.range(1, 8));
    for (int e = 0; e < edits; ++e) {
      const std::size_t at =
          body.empty()
              ? 0
              : static_cast<std::size_t>(g.range(0, static_cast<std::int64_t>(body.size()) - 1));
      const char c = alphabet[g.range(0, sizeof(alphabet) - 2)];
      switch (g.range(0, 2)) {
        case 0: body.insert(body.begin() + static_cast<std::ptrdiff_t>(at), c); break;
        case 1:
          if (!body.empty()) body.erase(at, 1);
          break;
        default:
          if (!body.empty()) body[at] = c;
          break;
      }
    }
    for (int kind = 0; kind < 4; ++kind) {
      api_error err;
      bool ok = false;
      switch (kind) {
        case 0: {
          auto p = parse_completion(body, limits());
          ok = p.ok();
          err = p.error;
          break;
        }
        case 1: {
          auto p = parse_chat(body, limits());
          ok = p.ok();
          err = p.error;
          break;
        }
        case 2: {
          auto p = parse_tokenize(body, limits());
          ok = p.ok();
          err = p.error;
          break;
        }
        default: {
          auto p = parse_detokenize(body, limits());
          ok = p.ok();
          err = p.error;
          break;
        }
      }
      if (!ok) {
        ASSERT_EQ(err.http_status, 400) << "seed " << seed << " body " << body;
        ASSERT_FALSE(err.message.empty()) << "seed " << seed;
        // The error body must itself be valid JSON, whatever the message quotes.
        ASSERT_FALSE(nlohmann::json::parse(error_body(err), nullptr, false).is_discarded())
            << "seed " << seed;
      }
    }
  }
}

TEST(OpenAIResponse, ShapesAndInvalidUtf8Text) {
  const usage u{5, 2, 3};
  auto j = nlohmann::json::parse(
      response_body(api_kind::chat, "id1", "m", 1, "Hi\xe2", finish_reason::length, u));
  EXPECT_EQ(j["object"], "chat.completion");
  EXPECT_EQ(j["choices"][0]["message"]["content"], "Hi\xef\xbf\xbd");
  EXPECT_EQ(j["choices"][0]["finish_reason"], "length");
  EXPECT_EQ(j["usage"]["total_tokens"], 7);
  EXPECT_EQ(j["usage"]["prompt_tokens_details"]["cached_tokens"], 3);
  const std::string ev = stream_event(api_kind::completion, "id", "m", 1, "x", std::nullopt);
  ASSERT_TRUE(ev.starts_with("data: ") && ev.ends_with("\n\n"));
  auto c = nlohmann::json::parse(ev.substr(6));
  EXPECT_EQ(c["choices"][0]["text"], "x");
  EXPECT_TRUE(c["choices"][0]["finish_reason"].is_null());
  auto err = nlohmann::json::parse(error_body(api_error::invalid("bad", "max_tokens")));
  EXPECT_EQ(err["error"]["param"], "max_tokens");
  EXPECT_TRUE(err["error"]["code"].is_null());
}

}  // namespace
