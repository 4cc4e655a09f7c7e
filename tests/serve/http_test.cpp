// mnemo-server over HTTP: the test starts the server binary on a free loopback port
// with the llama-tiny fixture and talks to it with cpp-httplib's client: every
// endpoint, streamed and whole answers that agree, the prefix cache across requests,
// concurrent clients, a full queue (503 with Retry-After), cancellation by
// disconnecting, and every error path, after which the server still serves.
#include <atomic>
#include <chrono>
#include <cstdio>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>
#include <httplib.h>
#include <nlohmann/json.hpp>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

extern char** environ;

namespace {

using json = nlohmann::json;
using namespace std::chrono_literals;

const char* k_key = "test-key";

class Server : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    const std::string model = std::string(MNEMO_FIXTURES_DIR) + "/llama-tiny.gguf";
    if (access(model.c_str(), R_OK) != 0) return;
    int out[2];
    ASSERT_EQ(pipe(out), 0);
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, out[1], 1);
    posix_spawn_file_actions_addclose(&fa, out[0]);
    std::vector<std::string> args = {
        MNEMO_SERVER_BIN, "--model", model, "--port",    "0", "--slots",   "2",   "--ctx",
        "4096",           "--queue", "2",   "--threads", "1", "--api-key", k_key, "--max-body",
        "65536"};
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    ASSERT_EQ(posix_spawn(&pid_, MNEMO_SERVER_BIN, &fa, nullptr, argv.data(), environ), 0);
    posix_spawn_file_actions_destroy(&fa);
    close(out[1]);
    // The first line names the port: "mnemo-server: listening on http://127.0.0.1:PORT ..."
    std::string line;
    char c = 0;
    while (read(out[0], &c, 1) == 1 && c != '\n') line += c;
    close(out[0]);
    const auto at = line.find("127.0.0.1:");
    ASSERT_NE(at, std::string::npos) << "server said: " << line;
    port_ = std::stoi(line.substr(at + 10));
  }
  static void TearDownTestSuite() {
    if (pid_ > 0) {
      kill(pid_, SIGTERM);
      int st = 0;
      waitpid(pid_, &st, 0);
      EXPECT_TRUE(WIFEXITED(st) && WEXITSTATUS(st) == 0) << "server exit status " << st;
    }
  }
  void SetUp() override {
    if (port_ == 0) GTEST_SKIP() << "no llama-tiny.gguf at " << MNEMO_FIXTURES_DIR;
  }

  static httplib::Client client(bool with_key = true) {
    httplib::Client c("127.0.0.1", port_);
    c.set_read_timeout(60, 0);
    if (with_key) c.set_bearer_token_auth(k_key);
    return c;
  }
  static httplib::Result post(const char* path, const std::string& body, bool with_key = true) {
    return client(with_key).Post(path, body, "application/json");
  }
  static json metrics_value(const std::string& name) {
    auto r = client().Get("/metrics");
    if (!r) return nullptr;
    const std::string key = "\nmnemo_" + name + " ";
    const auto at = r->body.find(key);
    if (at == std::string::npos) return nullptr;
    return std::stoll(r->body.substr(at + key.size()));
  }
  /// Streams a request; returns the concatenated text pieces and the events.
  static std::string stream_text(const std::string& path, const std::string& body,
                                 std::vector<json>& events, bool chat) {
    std::string buf, text;
    httplib::Client c = client();
    httplib::Headers h = {{"Authorization", std::string("Bearer ") + k_key}};
    auto r = c.Post(path.c_str(), h, body, "application/json");
    if (!r) return "<no answer>";
    buf = r->body;
    for (std::size_t at = 0; (at = buf.find("data: ", at)) != std::string::npos;) {
      const auto end = buf.find("\n\n", at);
      const std::string data = buf.substr(at + 6, end - at - 6);
      at = end;
      if (data == "[DONE]") {
        events.push_back("[DONE]");
        continue;
      }
      json ev = json::parse(data);
      events.push_back(ev);
      if (ev["choices"].empty()) continue;
      const json& ch = ev["choices"][0];
      if (chat && ch["delta"].contains("content"))
        text += ch["delta"]["content"].get<std::string>();
      if (!chat) text += ch["text"].get<std::string>();
    }
    return text;
  }

  static inline pid_t pid_ = 0;
  static inline int port_ = 0;
};

TEST_F(Server, HealthModelsTokenizeDetokenize) {
  auto h = client(false).Get("/health");
  ASSERT_TRUE(h);
  EXPECT_EQ(h->status, 200);
  auto m = client().Get("/v1/models");
  ASSERT_TRUE(m);
  EXPECT_EQ(json::parse(m->body)["data"][0]["id"], "llama-tiny.gguf");
  auto t = post("/tokenize", R"({"content":"the cat"})");
  ASSERT_TRUE(t);
  ASSERT_EQ(t->status, 200) << t->body;
  json ids = json::parse(t->body)["tokens"];
  ASSERT_FALSE(ids.empty());
  auto d = post("/detokenize", json{{"tokens", ids}}.dump());
  ASSERT_TRUE(d);
  EXPECT_EQ(json::parse(d->body)["content"], "the cat");
}

TEST_F(Server, StreamedAndWholeAnswersAgreeAndThePrefixIsReused) {
  std::string prompt;
  for (int i = 0; i < 12; ++i) prompt += "the cat sat on the mat ";
  const json req = {
      {"prompt", prompt}, {"max_tokens", 12}, {"temperature", 0}, {"ignore_eos", true}};
  auto whole = post("/v1/completions", req.dump());
  ASSERT_TRUE(whole);
  ASSERT_EQ(whole->status, 200) << whole->body;
  const json w = json::parse(whole->body);
  EXPECT_EQ(w["object"], "text_completion");
  EXPECT_EQ(w["choices"][0]["finish_reason"], "length");
  EXPECT_EQ(w["usage"]["completion_tokens"], 12);
  json sreq = req;
  sreq["stream"] = true;
  sreq["stream_options"] = {{"include_usage", true}};
  std::vector<json> events;
  const std::string streamed = stream_text("/v1/completions", sreq.dump(), events, false);
  EXPECT_EQ(streamed, w["choices"][0]["text"].get<std::string>());
  ASSERT_GE(events.size(), 3u);
  EXPECT_EQ(events.back(), "[DONE]");
  const json& u = events[events.size() - 2]["usage"];
  EXPECT_EQ(u["completion_tokens"], 12);
  EXPECT_GT(u["prompt_tokens_details"]["cached_tokens"].get<int>(), 16)
      << "the second request did not reuse the first one's prefix";
}

TEST_F(Server, ChatCompletionStreamsDeltas) {
  const json req = {
      {"messages",
       {{{"role", "system"}, {"content", "Be brief."}}, {{"role", "user"}, {"content", "Hi"}}}},
      {"max_tokens", 5},
      {"temperature", 0},
      {"stream", true},
      {"ignore_eos", true}};
  std::vector<json> events;
  const std::string text = stream_text("/v1/chat/completions", req.dump(), events, true);
  ASSERT_GE(events.size(), 2u);
  EXPECT_EQ(events[0]["object"], "chat.completion.chunk");
  EXPECT_EQ(events[0]["choices"][0]["delta"]["role"], "assistant");
  json whole_req = req;
  whole_req.erase("stream");
  auto whole = post("/v1/chat/completions", whole_req.dump());
  ASSERT_TRUE(whole);
  ASSERT_EQ(whole->status, 200) << whole->body;
  EXPECT_EQ(json::parse(whole->body)["choices"][0]["message"]["content"].get<std::string>(), text);
}

TEST_F(Server, ConcurrentClientsAllGetTheirAnswer) {
  std::vector<std::thread> th;
  std::atomic<int> ok{0}, busy{0}, other{0};
  for (int i = 0; i < 6; ++i)
    th.emplace_back([&, i] {
      const json req = {{"prompt", "client " + std::to_string(i)},
                        {"max_tokens", 8},
                        {"seed", i},
                        {"ignore_eos", true}};
      for (int attempt = 0; attempt < 200; ++attempt) {
        auto r = post("/v1/completions", req.dump());
        if (r && r->status == 503 && r->has_header("Retry-After")) {
          ++busy;
          std::this_thread::sleep_for(20ms);
          continue;
        }
        if (r && r->status == 200 && json::parse(r->body)["usage"]["completion_tokens"] == 8)
          ++ok;
        else
          ++other;
        return;
      }
    });
  for (auto& t : th) t.join();
  EXPECT_EQ(ok.load(), 6) << busy.load() << " refusals, " << other.load() << " failures";
}

TEST_F(Server, AFullQueueAnswers503AndDisconnectingFreesTheSlots) {
  // Requests of earlier tests may still be finishing: start from an idle server.
  for (int i = 0; i < 500; ++i) {
    if (metrics_value("slots_busy") == 0 && metrics_value("queue_depth") == 0) break;
    std::this_thread::sleep_for(10ms);
  }
  ASSERT_EQ(metrics_value("slots_busy"), 0);
  ASSERT_EQ(metrics_value("queue_depth"), 0);
  const double cancelled_before = metrics_value("requests_cancelled_total").get<double>();
  // Four long generations fill the 2 slots and the queue of 2; only an accepted (200)
  // stream counts as started.
  std::atomic<int> started{0};
  std::atomic<bool> stop{false};
  std::vector<std::thread> th;
  for (int i = 0; i < 4; ++i)
    th.emplace_back([&, i] {
      httplib::Client c = client();
      const json req = {{"prompt", "long " + std::to_string(i)},
                        {"max_tokens", 4000},
                        {"ignore_eos", true},
                        {"stream", true}};
      bool counted = false;
      bool accepted = false;
      httplib::Request r;
      r.method = "POST";
      r.path = "/v1/completions";
      r.body = req.dump();
      r.set_header("Content-Type", "application/json");
      r.set_header("Authorization", std::string("Bearer ") + k_key);
      r.response_handler = [&](const httplib::Response& res) {
        accepted = res.status == 200;
        return true;
      };
      r.content_receiver = [&](const char*, std::size_t, std::uint64_t, std::uint64_t) {
        if (accepted && !counted) {
          counted = true;
          ++started;
        }
        return !stop.load();  // false: hang up
      };
      (void)c.send(r);
    });
  for (int i = 0; i < 600 && started.load() < 4; ++i) std::this_thread::sleep_for(10ms);
  ASSERT_EQ(started.load(), 4);
  auto refused = post("/v1/completions", R"({"prompt":"one more","max_tokens":2})");
  ASSERT_TRUE(refused);
  EXPECT_EQ(refused->status, 503) << refused->body;
  EXPECT_EQ(refused->get_header_value("Retry-After"), "1");
  EXPECT_EQ(json::parse(refused->body)["error"]["code"], "queue_full");
  stop.store(true);
  for (auto& t : th) t.join();
  // The slots free at once (well before 4000 tokens each).
  json busy, cancelled;
  for (int i = 0; i < 500; ++i) {
    busy = metrics_value("slots_busy");
    cancelled = metrics_value("requests_cancelled_total");
    if (busy == 0 && cancelled.get<double>() >= cancelled_before + 4) break;
    std::this_thread::sleep_for(10ms);
  }
  EXPECT_EQ(busy, 0);
  EXPECT_EQ(cancelled.get<double>(), cancelled_before + 4);
  auto after = post("/v1/completions", R"({"prompt":"still there","max_tokens":2})");
  ASSERT_TRUE(after);
  EXPECT_EQ(after->status, 200) << after->body;
}

struct bad_request {
  const char* path;
  std::string body;
  int status;
  const char* code;  // error.code, or nullptr for null
};

TEST_F(Server, EveryErrorPathAnswersAnErrorObjectAndServingGoesOn) {
  std::string long_ids = "[";
  for (int i = 0; i < 5000; ++i) long_ids += (i ? ",5" : "5");
  long_ids += "]";
  const bad_request cases[] = {
      {"/v1/completions", "{not json", 400, "invalid_json"},
      {"/v1/completions", "{\"prompt\":\"\xc3\x28\"}", 400, "invalid_utf8"},
      {"/v1/completions", R"({"prompt":1})", 400, "invalid_type"},
      {"/v1/completions", R"({"prompt":"a","max_tokens":"10"})", 400, "invalid_type"},
      {"/v1/completions", R"({"prompt":"a","max_tokens":-5})", 400, "invalid_value"},
      {"/v1/completions", R"({"prompt":"a","max_tokens":1000000000000})", 400, "invalid_value"},
      {"/v1/completions", R"({"prompt":"a","temperature":9})", 400, "invalid_value"},
      {"/v1/completions", R"({"prompt":"a","bogus":1})", 400, "unknown_parameter"},
      {"/v1/completions", R"({"prompt":)" + long_ids + "}", 400, "context_length_exceeded"},
      {"/v1/completions", R"({"prompt":")" + std::string(70000, 'a') + R"("})", 413, nullptr},
      {"/v1/chat/completions", R"({"messages":[]})", 400, "invalid_type"},
      {"/v1/chat/completions", R"({"messages":[{"role":"user","content":7}]})", 400,
       "invalid_type"},
      {"/tokenize", R"({"content":5})", 400, "invalid_type"},
      {"/detokenize", R"({"tokens":[-1]})", 400, "invalid_value"},
      {"/v1/nothing", "{}", 404, nullptr},
  };
  for (const bad_request& c : cases) {
    auto r = post(c.path, c.body);
    ASSERT_TRUE(r) << c.path << " " << c.body.substr(0, 60);
    EXPECT_EQ(r->status, c.status) << c.body.substr(0, 60) << " -> " << r->body;
    const json e = json::parse(r->body, nullptr, false);
    ASSERT_TRUE(e.is_object() && e.contains("error")) << r->body;
    EXPECT_FALSE(e["error"]["message"].get<std::string>().empty());
    if (c.code) {
      EXPECT_EQ(e["error"]["code"], c.code) << c.body.substr(0, 60);
    }
  }
  auto no_key = post("/v1/completions", R"({"prompt":"a"})", false);
  ASSERT_TRUE(no_key);
  EXPECT_EQ(no_key->status, 401);
  EXPECT_EQ(json::parse(no_key->body)["error"]["code"], "invalid_api_key");
  auto fine = post("/v1/completions", R"({"prompt":"a","max_tokens":3})");
  ASSERT_TRUE(fine);
  EXPECT_EQ(fine->status, 200) << fine->body;
}

TEST_F(Server, MetricsAreExposedInPrometheusText) {
  auto r = client().Get("/metrics");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200);
  for (const char* name : {"requests_total", "generated_tokens_total", "queue_depth", "slots_busy",
                           "prefix_cache_hits_total", "cells_used", "prefix_cache_cells"})
    EXPECT_FALSE(metrics_value(name).is_null()) << name;
  EXPECT_NE(r->body.find("# TYPE mnemo_requests_total counter"), std::string::npos);
}

}  // namespace
