// mnemo-server: an OpenAI-compatible HTTP server over mnemo::engine and
// mnemo::serve::scheduler (continuous batching, chunked prefill, prefix cache). This
// file only wires them to cpp-httplib; docs/server.md describes the API.
//
//   mnemo-server --model model.gguf --port 8080 --slots 4 --ctx 4096
//   curl localhost:8080/v1/completions -d '{"prompt": "Once upon", "max_tokens": 16}'
#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <ctime>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <variant>
#include <vector>

#include "common/cli.hpp"
#include <httplib.h>

#include "mnemo/engine/engine.hpp"
#include "mnemo/gguf/file.hpp"
#include "mnemo/serve/openai_request.hpp"
#include "mnemo/serve/openai_response.hpp"
#include "mnemo/serve/reply_channel.hpp"
#include "mnemo/serve/scheduler.hpp"
#include "mnemo/text/chat_template.hpp"

namespace {

using namespace mnemo;
using namespace mnemo::serve;
using namespace std::chrono_literals;

struct options {
  std::string model, host = "127.0.0.1", api_key, chat_template, memory;
  std::uint32_t port = 8080, n_ctx = 0, threads = 0, max_body = 8u << 20, step_tokens = 256;
  std::uint32_t slots = 4, cached = 0, queue = 64, block = 16;
  std::uint64_t cache_tokens = 0;
  kv_type kv = kv_type::f16;
};

int print_usage() {
  std::fprintf(stderr,
               "usage: mnemo-server --model FILE.gguf [--host 127.0.0.1] [--port 8080 (0: any)]\n"
               "  [--slots 4] [--ctx N: tokens per slot, default 4096/slots] [--kv f16]\n"
               "  [--memory split|full|... (default: the architecture's split streams)]\n"
               "  [--threads N] [--chat-template NAME] [--api-key KEY] [--queue 64]\n"
               "  [--cache-seqs N: finished prefixes kept, default = slots]\n"
               "  [--cache-tokens N: their share, default cache-seqs * ctx]\n"
               "  [--step-tokens 256] [--block 16] [--max-body BYTES]\n");
  return 2;
}

bool parse_args(int argc, char** argv, options& o) {
  mnemo_examples::arg_cursor a("mnemo-server", argc, argv);
  bool cached_set = false;
  while (!a.done()) {
    const std::string_view opt = a.take();
    auto str = [&](std::string& out) {
      const char* v = a.value(opt);
      if (v) out = v;
      return v != nullptr;
    };
    auto u32 = [&](std::uint32_t& out, std::uint32_t lo, std::uint32_t hi) {
      if (mnemo_examples::parse_u32(a.value(opt), out, lo, hi)) return true;
      std::fprintf(stderr, "mnemo-server: %.*s needs an integer in [%u, %u]\n",
                   static_cast<int>(opt.size()), opt.data(), lo, hi);
      return false;
    };
    bool ok = true;
    if (opt == "--model")
      ok = str(o.model);
    else if (opt == "--host")
      ok = str(o.host);
    else if (opt == "--port")
      ok = u32(o.port, 0, 65535);
    else if (opt == "--slots")
      ok = u32(o.slots, 1, 256);
    else if (opt == "--ctx")
      ok = u32(o.n_ctx, 8, 1u << 20);
    else if (opt == "--threads")
      ok = u32(o.threads, 0, 1024);
    else if (opt == "--chat-template")
      ok = str(o.chat_template);
    else if (opt == "--api-key")
      ok = str(o.api_key);
    else if (opt == "--memory")
      ok = str(o.memory);
    else if (opt == "--queue")
      ok = u32(o.queue, 0, 1u << 20);
    else if (opt == "--cache-seqs")
      ok = cached_set = u32(o.cached, 0, 256);
    else if (opt == "--step-tokens")
      ok = u32(o.step_tokens, 2, 1u << 16);
    else if (opt == "--block")
      ok = u32(o.block, 1, 4096);
    else if (opt == "--max-body")
      ok = u32(o.max_body, 1024, 1u << 30);
    else if (opt == "--cache-tokens") {
      std::uint32_t v = 0;
      ok = u32(v, 0, 1u << 30);
      o.cache_tokens = v;
    } else if (opt == "--kv") {
      std::string v;
      ok = str(v);
      if (ok) {
        auto k = parse_kv_type(v);
        if (!k.is_ok()) std::fprintf(stderr, "mnemo-server: %s\n", k.error().message().c_str());
        ok = k.is_ok();
        if (ok) o.kv = *k;
      }
    } else {
      std::fprintf(stderr, "mnemo-server: unknown option %.*s\n", static_cast<int>(opt.size()),
                   opt.data());
      ok = false;
    }
    if (!ok) return false;
  }
  if (!cached_set) o.cached = o.slots;
  if (o.n_ctx == 0) o.n_ctx = std::max<std::uint32_t>(256, 4096 / o.slots);
  return !o.model.empty();
}

/// The engine with split streams when the architecture has them (the default), else
/// with the memory asked for or the architecture's default.
result<engine> open_engine(const options& o, const scheduler_options& so) {
  engine_options eo;
  eo.kv = o.kv;
  eo.n_threads = static_cast<int>(o.threads);
  std::vector<memory_kind> kinds;
  if (!o.memory.empty()) {
    MNEMO_ASSIGN_OR_RETURN(memory_kind k, parse_memory_kind(o.memory));
    kinds = {k};
  } else {
    kinds = {memory_kind::split, memory_kind::iswa_split, memory_kind::hybrid_split,
             memory_kind::automatic};
  }
  status last;
  for (memory_kind k : kinds) {
    eo.memory = k;
    result<engine> e = engine::open(o.model, engine_options_for(so, eo));
    if (e.is_ok() || kinds.size() == 1) return e;
    last = e.error();
  }
  return last;
}

result<text::chat_template> chat_template_for(const options& o) {
  if (!o.chat_template.empty()) return text::chat_template::detect(o.chat_template);
  if (auto f = gguf::file::open(o.model); f.is_ok())
    if (auto t = text::chat_template::from_gguf(*f); t.is_ok()) return t;
  std::fprintf(stderr, "mnemo-server: the model names no chat template; chat uses chatml\n");
  return text::chat_template::from_name("chatml");
}

std::int64_t now_seconds() { return static_cast<std::int64_t>(std::time(nullptr)); }

void send_error(httplib::Response& res, const api_error& e) {
  res.status = e.http_status;
  if (e.http_status == 503) res.set_header("Retry-After", "1");
  res.set_content(error_body(e), "application/json");
}

struct server_state {
  options opt;
  engine* eng = nullptr;
  scheduler* sched = nullptr;
  std::optional<text::chat_template> tmpl;
  std::string model_id;
  parse_limits limits;
  std::atomic<std::uint64_t> next_id{1};
};

/// Tokenizes, submits and answers one completion or chat request.
void serve_generation(server_state& st, api_kind kind, const httplib::Request& req,
                      httplib::Response& res) {
  std::string prompt_text;
  std::vector<token_id> ids;
  generation_params params;
  bool stream = false, include_usage = false;
  if (kind == api_kind::completion) {
    auto p = parse_completion(req.body, st.limits);
    if (!p.ok()) return send_error(res, p.error);
    params = std::move(p.value->params);
    stream = p.value->stream;
    include_usage = p.value->include_usage;
    if (auto* t = std::get_if<std::vector<token_id>>(&p.value->prompt))
      ids = std::move(*t);
    else
      prompt_text = std::get<std::string>(p.value->prompt);
  } else {
    auto p = parse_chat(req.body, st.limits);
    if (!p.ok()) return send_error(res, p.error);
    params = std::move(p.value->params);
    stream = p.value->stream;
    include_usage = p.value->include_usage;
    auto text = st.tmpl->apply(p.value->messages, true);
    if (!text.is_ok())
      return send_error(res, api_error::invalid(text.error().message(), "messages"));
    prompt_text = std::move(*text);
    if (!st.tmpl->stop_text().empty()) params.stop.emplace_back(st.tmpl->stop_text());
  }
  if (ids.empty()) {
    auto t = st.eng->tokenize(prompt_text, true, true);
    if (!t.is_ok()) return send_error(res, to_api_error(t.error()));
    ids = std::move(*t);
    if (ids.empty()) return send_error(res, api_error::invalid("the prompt is empty", "prompt"));
  }
  auto channel = std::make_shared<reply_channel>();
  request r;
  r.prompt = std::move(ids);
  r.params = std::move(params);
  r.sink = channel;
  auto cancelled = r.cancelled;
  if (status s = st.sched->submit(std::move(r)); !s.is_ok())
    return send_error(res, to_api_error(s));

  const std::string id =
      (kind == api_kind::chat ? "chatcmpl-" : "cmpl-") + std::to_string(st.next_id.fetch_add(1));
  const std::int64_t created = now_seconds();
  const std::string model = st.model_id;
  // Both answers are written in chunks as the reply arrives, so a failed write (the
  // client went away) cancels the request at once: a stream writes its events, a whole
  // answer writes JSON's leading whitespace while it waits.
  auto provider = [=, first = true](std::size_t, httplib::DataSink& sink) mutable {
    std::string whole;
    while (true) {
      reply_channel::batch got = channel->take(100ms);
      bool ok = true;
      if (stream && !got.text.empty()) {
        const std::string ev =
            stream_event(kind, id, model, created, got.text, std::nullopt, nullptr, first);
        first = false;
        ok = sink.write(ev.data(), ev.size());
      } else if (stream && !got.done) {
        ok = sink.write(": keep-alive\n\n", 14);
      } else if (!stream) {
        whole += got.text;
        if (!got.done) ok = sink.write(" ", 1);
      }
      if (!ok) {
        cancelled->store(true);
        return false;
      }
      if (!got.done) continue;
      std::string tail;
      if (got.why == finish_reason::error) {
        api_error e = to_api_error(got.error);
        tail = stream ? stream_error_event(e) : error_body(e);
      } else if (stream) {
        tail = stream_event(kind, id, model, created, {}, got.why, nullptr, first);
        if (include_usage) tail += stream_event(kind, id, model, created, {}, got.why, &got.u);
        tail += "data: [DONE]\n\n";
      } else {
        tail = response_body(kind, id, model, created, whole, got.why, got.u);
      }
      sink.write(tail.data(), tail.size());
      sink.done();
      return true;
    }
  };
  if (stream) {
    res.set_header("Cache-Control", "no-cache");
    res.set_chunked_content_provider("text/event-stream", provider,
                                     [cancelled](bool) { cancelled->store(true); });
  } else {
    // "application/json; charset=utf-8", not "application/json": httplib compresses the
    // latter, and a compressor would hold back the whitespace that detects a hang-up.
    res.set_chunked_content_provider("application/json; charset=utf-8", provider,
                                     [cancelled](bool) { cancelled->store(true); });
  }
}

void install_routes(httplib::Server& svr, server_state& st) {
  svr.set_pre_routing_handler([&st](const httplib::Request& req, httplib::Response& res) {
    if (st.opt.api_key.empty() || req.path == "/health")
      return httplib::Server::HandlerResponse::Unhandled;
    if (req.get_header_value("Authorization") == "Bearer " + st.opt.api_key)
      return httplib::Server::HandlerResponse::Unhandled;
    send_error(res,
               {401, "authentication_error", "invalid or missing API key", "", "invalid_api_key"});
    return httplib::Server::HandlerResponse::Handled;
  });
  svr.set_error_handler([](const httplib::Request&, httplib::Response& res) {
    if (!res.body.empty()) return;
    const char* msg = res.status == 404   ? "no such endpoint"
                      : res.status == 413 ? "the request body is too large"
                                          : "bad request";
    res.set_content(
        error_body({res.status, res.status >= 500 ? "server_error" : "invalid_request_error", msg,
                    "", ""}),
        "application/json");
  });
  svr.set_exception_handler(
      [](const httplib::Request&, httplib::Response& res, std::exception_ptr) {
        send_error(res, {500, "server_error", "internal error", "", ""});
      });
  svr.Get("/health", [](const httplib::Request&, httplib::Response& res) {
    res.set_content(R"({"status":"ok"})", "application/json");
  });
  svr.Get("/v1/models", [&st](const httplib::Request&, httplib::Response& res) {
    nlohmann::json j = {{"object", "list"},
                        {"data",
                         {{{"id", st.model_id},
                           {"object", "model"},
                           {"created", now_seconds()},
                           {"owned_by", "mnemo"}}}}};
    res.set_content(dump(j), "application/json");
  });
  svr.Get("/metrics", [&st](const httplib::Request&, httplib::Response& res) {
    res.set_content(to_prometheus(st.sched->metrics()), "text/plain; version=0.0.4");
  });
  svr.Post("/tokenize", [&st](const httplib::Request& req, httplib::Response& res) {
    auto p = parse_tokenize(req.body, st.limits);
    if (!p.ok()) return send_error(res, p.error);
    auto ids = st.eng->tokenize(p.value->content, p.value->add_special, true);
    if (!ids.is_ok()) return send_error(res, to_api_error(ids.error()));
    res.set_content(dump({{"tokens", *ids}}), "application/json");
  });
  svr.Post("/detokenize", [&st](const httplib::Request& req, httplib::Response& res) {
    auto p = parse_detokenize(req.body, st.limits);
    if (!p.ok()) return send_error(res, p.error);
    auto text = st.eng->detokenize(*p.value);
    if (!text.is_ok()) return send_error(res, to_api_error(text.error()));
    res.set_content(dump({{"content", *text}}), "application/json");
  });
  svr.Post("/v1/completions", [&st](const httplib::Request& req, httplib::Response& res) {
    serve_generation(st, api_kind::completion, req, res);
  });
  svr.Post("/v1/chat/completions", [&st](const httplib::Request& req, httplib::Response& res) {
    serve_generation(st, api_kind::chat, req, res);
  });
}

}  // namespace

int main(int argc, char** argv) {
  options o;
  if (!parse_args(argc, argv, o)) return print_usage();

  // SIGINT / SIGTERM are taken by a thread of their own (sigwait) that stops the server.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);
  std::signal(SIGPIPE, SIG_IGN);

  scheduler_options so;
  so.n_slots = static_cast<seq_id>(o.slots);
  so.n_cached = static_cast<seq_id>(o.cached);
  so.n_ctx_slot = o.n_ctx;
  so.step_tokens = std::max(o.step_tokens, o.slots + 1);
  so.queue_max = o.queue;
  so.block_tokens = o.block;
  so.cache_tokens_max = o.cache_tokens;

  result<engine> eng = open_engine(o, so);
  if (!eng.is_ok()) {
    std::fprintf(stderr, "mnemo-server: %s\n", eng.error().to_string().c_str());
    return 1;
  }
  result<text::chat_template> tmpl = chat_template_for(o);
  if (!tmpl.is_ok()) {
    std::fprintf(stderr, "mnemo-server: %s\n", tmpl.error().to_string().c_str());
    return 1;
  }
  auto sched = scheduler::make(*eng, so);
  if (!sched.is_ok()) {
    std::fprintf(stderr, "mnemo-server: %s\n", sched.error().to_string().c_str());
    return 1;
  }

  server_state st;
  st.opt = o;
  st.eng = &*eng;
  st.sched = sched->get();
  st.tmpl.emplace(*tmpl);
  st.model_id = o.model.substr(
      o.model.find_last_of('/') == std::string::npos ? 0 : o.model.find_last_of('/') + 1);
  st.limits.max_tokens_max = o.n_ctx;
  st.limits.default_max_tokens = std::min<std::uint32_t>(256, o.n_ctx);
  st.limits.n_vocab = eng->n_vocab();

  std::atomic<bool> stopping{false};
  std::thread worker([&] {
    while (!stopping.load()) {
      if (!st.sched->step()) st.sched->wait_for_work(50ms);
    }
    st.sched->cancel_all(make_status(status_code::aborted, "the server is shutting down"));
  });

  httplib::Server svr;
  // Every streaming client holds a thread: room for all slots, the queue and a few more.
  const std::size_t n_http = o.slots + std::min<std::uint32_t>(o.queue, 64) + 4;
  svr.new_task_queue = [n_http] { return new httplib::ThreadPool(n_http); };
  svr.set_payload_max_length(o.max_body);
  install_routes(svr, st);

  int port = static_cast<int>(o.port);
  if (port == 0)
    port = svr.bind_to_any_port(o.host);
  else if (!svr.bind_to_port(o.host, port))
    port = -1;
  if (port < 0) {
    std::fprintf(stderr, "mnemo-server: cannot listen on %s:%u\n", o.host.c_str(), o.port);
    stopping.store(true);
    st.sched->wake();
    worker.join();
    return 1;
  }
  std::thread signal_waiter([&] {
    int sig = 0;
    sigwait(&signals, &sig);
    svr.stop();
  });
  std::printf(
      "mnemo-server: listening on http://%s:%d (model %s, memory %.*s, %u slots of %u "
      "tokens)\n",
      o.host.c_str(), port, st.model_id.c_str(),
      static_cast<int>(to_string(eng->options().memory).size()),
      to_string(eng->options().memory).data(), o.slots, o.n_ctx);
  std::fflush(stdout);
  svr.listen_after_bind();

  stopping.store(true);
  st.sched->wake();
  worker.join();
  pthread_kill(signal_waiter.native_handle(), SIGTERM);
  signal_waiter.join();
  return 0;
}
