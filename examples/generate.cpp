// generate: text in, text out. Tokenizes the prompt with the model's own tokenizer
// (GGUF tokenizer.ggml.* keys), decodes it, then samples -n tokens and prints them as
// they come (text::stream_decoder holds back split UTF-8 characters). Speeds go to
// stderr at the end.
//
//   generate MODEL.gguf [-p "text" | --tokens 1,2,3 | --chat] [-n N] [--temp T]
//            [--top-k K] [--top-p P] [--seed S] [--system TEXT] [--chat-template NAME]
//            [--memory KIND] [--kv TYPE] [--threads N] [--ctx N] [--ubatch N]
//            [--batch N] [--prefetch l1|l2] [--save-session FILE] [--load-session FILE]
//
// MODEL.gguf is any architecture mnemo::engine opens (docs/engine.md); --memory and
// --kv are the engine's memory kinds and K/V types (auto: the architecture's default).
// --ctx 0 (the default) sizes the memory for the prompt and -n. Stops early at the end-of-sequence
// token. With --tokens and a model without a tokenizer, the generated ids are printed instead of
// text.
//
// --chat: a conversation over stdin, one user turn per line, formatted with the model's
// chat template (tokenizer.chat_template; --chat-template NAME chooses a built-in one).
// The KV cache is kept between turns and each turn decodes only the tokens the cache
// lacks (common/chat_session.hpp); -n bounds each reply. Per-turn token counts go to
// stderr as each turn ends.
//
// --save-session FILE: after generating, saves the KV cache, its tokens and the model's
// fingerprint (docs/sessions.md). --load-session FILE: starts from such a file instead
// of an empty cache and continues it (-p / --tokens, optional then, are appended), so a
// conversation resumes without decoding its prompt again; with --temp 0 the output is
// what one longer run would have printed. The sampler restarts from its seed.
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <iostream>
#include <optional>
#include <string>
#include <vector>

#if __has_include(<unistd.h>)
#include <unistd.h>  // isatty: the "> " prompt only for a person at a terminal
#define MNEMO_EXAMPLES_HAS_ISATTY 1
#endif

#include "common/chat_session.hpp"
#include "common/cli.hpp"
#include "common/session_file.hpp"

#include "mnemo/engine/engine.hpp"
#include "mnemo/gguf/file.hpp"
#include "mnemo/sampling.hpp"
#include "mnemo/text/chat_template.hpp"
#include "mnemo/text/decoder.hpp"
#include "mnemo/text/tokenizer.hpp"

namespace {

using namespace mnemo;
using clock_type = std::chrono::steady_clock;

struct options {
  std::string model;
  std::optional<std::string> prompt;
  std::vector<std::uint32_t> tokens;
  std::uint32_t n_predict = 32;
  bool chat = false;
  std::optional<std::string> system;
  std::optional<std::string> chat_template;  // a built-in name (or a Jinja template to detect)
  std::optional<std::string> save_session, load_session;
  sampler_params sampling{.temperature = 0.8f, .top_k = 40, .top_p = 0.95f, .seed = 42};
  mnemo_examples::runtime_options rt;
};

int usage() {
  std::fprintf(stderr,
               "usage: generate MODEL.gguf [-p \"text\" | --tokens 1,2,3 | --chat] [-n N]\n"
               "       [--temp T] [--top-k K] [--top-p P] [--seed S]\n"
               "       [--system TEXT] [--chat-template NAME]   (with --chat)\n"
               "       [--save-session FILE] [--load-session FILE]   (without --chat)\n%s",
               mnemo_examples::k_runtime_usage);
  return 2;
}

bool parse_args(int argc, char** argv, options& o) {
  mnemo_examples::arg_cursor args("generate", argc, argv);
  std::vector<std::string> pos;
  bool has_tokens = false;
  while (!args.done()) {
    switch (mnemo_examples::parse_runtime_option(args, o.rt)) {
      case mnemo_examples::option_parse::taken: continue;
      case mnemo_examples::option_parse::bad: return false;
      case mnemo_examples::option_parse::not_mine: break;
    }
    const std::string_view a = args.take();
    if (a == "--chat") {
      o.chat = true;
      continue;
    }
    const bool valued = a == "-p" || a == "--tokens" || a == "-n" || a == "--temp" ||
                        a == "--top-k" || a == "--top-p" || a == "--seed" || a == "--system" ||
                        a == "--chat-template" || a == "--save-session" || a == "--load-session";
    if (valued) {
      const char* v = args.value(a);
      if (v == nullptr) return false;
      bool ok = true;
      if (a == "-p") {
        o.prompt = v;
      } else if (a == "--save-session") {
        o.save_session = v;
      } else if (a == "--load-session") {
        o.load_session = v;
      } else if (a == "--system") {
        o.system = v;
      } else if (a == "--chat-template") {
        auto t = text::chat_template::detect(v);
        if (!t.is_ok()) {
          std::fprintf(stderr, "generate: %s\n", t.error().to_string().c_str());
          return false;
        }
        o.chat_template = v;
      } else if (a == "--tokens") {
        ok = mnemo_examples::parse_u32_list(v, o.tokens, 0, 0x7fffffff);
        has_tokens = true;
      } else if (a == "-n") {
        ok = mnemo_examples::parse_u32(v, o.n_predict);
      } else if (a == "--temp") {
        ok = mnemo_examples::parse_f32(v, o.sampling.temperature) && o.sampling.temperature >= 0;
      } else if (a == "--top-k") {
        ok = mnemo_examples::parse_u32(v, o.sampling.top_k);
      } else if (a == "--top-p") {
        ok = mnemo_examples::parse_f32(v, o.sampling.top_p) && o.sampling.top_p > 0 &&
             o.sampling.top_p <= 1;
      } else {
        ok = mnemo_examples::parse_u64(v, o.sampling.seed);
      }
      if (!ok) return args.complain("bad value for", a), false;
    } else if (a.size() > 1 && a[0] == '-') {
      return args.complain("unknown option", a), false;
    } else {
      pos.emplace_back(a);
    }
  }
  if (pos.size() != 1) return false;
  const int n_inputs = int(o.prompt.has_value()) + int(has_tokens) + int(o.chat);
  if (n_inputs > 1 || (n_inputs == 0 && !o.load_session)) {
    std::fprintf(stderr, "generate: give one of -p TEXT, --tokens IDS or --chat\n");
    return false;
  }
  if (o.chat && (o.save_session || o.load_session)) {
    std::fprintf(stderr, "generate: --save-session and --load-session work without --chat\n");
    return false;
  }
  if (!o.chat && (o.system || o.chat_template)) {
    std::fprintf(stderr, "generate: --system and --chat-template need --chat\n");
    return false;
  }
  o.model = pos[0];
  return true;
}

double seconds_since(clock_type::time_point t0) {
  return std::chrono::duration<double>(clock_type::now() - t0).count();
}

struct timings {
  std::size_t n_prompt = 0, n_generated = 0;
  double t_prompt = 0, t_generate = 0;
};

/// Prints token ids as text through the stream decoder, or as numbers without one.
status echo(std::optional<text::stream_decoder>& dec, std::span<const token_id> ids) {
  for (token_id id : ids) {
    if (dec) {
      MNEMO_ASSIGN_OR_RETURN(std::string_view piece, dec->push(id));
      std::fwrite(piece.data(), 1, piece.size(), stdout);
    } else {
      std::printf(" %d", id);
    }
  }
  std::fflush(stdout);
  return {};
}

/// model: the file opened for its fingerprint when a session is loaded or saved.
status generate(engine& ctx, const options& o, const gguf::file* model,
                std::vector<token_id> prompt, const text::tokenizer* tok, timings& t) {
  MNEMO_ASSIGN_OR_RETURN(sampler smp, sampler::make(o.sampling));
  std::optional<text::stream_decoder> dec;
  if (tok != nullptr)
    dec.emplace(*tok, text::decode_options{.text_start = o.load_session.has_value()});
  // What the cache holds. --load-session starts from the session's tokens (echoed here,
  // main() echoes a fresh prompt); a session keeps no logits, so without new tokens
  // its last one is decoded again to sample from.
  std::vector<token_id> history;
  if (o.load_session) {
    MNEMO_ASSIGN_OR_RETURN(history,
                           mnemo_examples::load_session_file(ctx, *model, *o.load_session));
    MNEMO_RETURN_IF_ERROR(echo(dec, history));
    MNEMO_RETURN_IF_ERROR(echo(dec, prompt));
    if (prompt.empty()) {
      prompt.push_back(history.back());
      history.pop_back();
      MNEMO_RETURN_IF_ERROR(ctx.seq_rm(0, static_cast<pos_t>(history.size()), -1));
    }
  }
  // The prompt, in calls of at most n_batch tokens; logits only for its last token.
  const auto t0 = clock_type::now();
  batch b;
  for (std::size_t i = 0; i < prompt.size(); ++i) {
    b.add(prompt[i], static_cast<pos_t>(history.size() + i), {0}, i + 1 == prompt.size());
    if (b.size() == o.rt.n_batch || i + 1 == prompt.size()) {
      MNEMO_RETURN_IF_ERROR(ctx.decode(b));
      b.clear();
    }
  }
  t.t_prompt = seconds_since(t0);
  t.n_prompt = prompt.size();
  history.insert(history.end(), prompt.begin(), prompt.end());

  const auto t1 = clock_type::now();
  std::optional<token_id> undecoded;  // the last token sampled
  for (std::uint32_t i = 0; i < o.n_predict; ++i) {
    const token_id next = smp.sample(ctx.logits_ith(-1));
    if (next < 0) return make_status(status_code::internal, "generate: no logits to sample");
    ++t.n_generated;
    MNEMO_RETURN_IF_ERROR(echo(dec, {&next, 1}));
    undecoded = next;
    if (tok != nullptr && next == tok->eos()) break;
    if (i + 1 == o.n_predict) break;  // the last token needs no decode
    b.clear();
    b.add(next, static_cast<pos_t>(history.size()), {0}, true);
    MNEMO_RETURN_IF_ERROR(ctx.decode(b));
    history.push_back(next);
    undecoded.reset();
  }
  if (dec) {
    const std::string rest = dec->finish();
    std::fwrite(rest.data(), 1, rest.size(), stdout);
  }
  std::printf("\n");
  t.t_generate = seconds_since(t1);
  if (o.save_session) {  // the session holds every token printed
    if (undecoded) {
      b.clear();
      b.add(*undecoded, static_cast<pos_t>(history.size()), {0}, false);
      MNEMO_RETURN_IF_ERROR(ctx.decode(b));
      history.push_back(*undecoded);
    }
    MNEMO_RETURN_IF_ERROR(mnemo_examples::save_session_file(ctx, *model, *o.save_session, history));
  }
  return {};
}

bool stdin_is_terminal() {
#if defined(MNEMO_EXAMPLES_HAS_ISATTY)
  return isatty(0) != 0;
#else
  return false;
#endif
}

/// --chat: one user turn per line of stdin until its end; empty lines are skipped.
status chat(engine& ctx, const options& o, const text::tokenizer& tok,
            const text::chat_template& tmpl, std::uint32_t n_ctx, timings& t) {
  MNEMO_ASSIGN_OR_RETURN(sampler smp, sampler::make(o.sampling));
  mnemo_examples::chat_session session(ctx, tok, tmpl, {.n_batch = o.rt.n_batch, .n_ctx = n_ctx});
  if (o.system) session.add_system(*o.system);
  std::string line;
  const bool interactive = stdin_is_terminal();
  for (int turn = 1;;) {
    if (interactive) std::fprintf(stderr, "> ");
    if (!std::getline(std::cin, line)) break;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.empty()) continue;
    mnemo_examples::chat_turn_report r;
    MNEMO_RETURN_IF_ERROR(session.prompt(line, r));
    MNEMO_RETURN_IF_ERROR(session.respond(
        smp, o.n_predict,
        [](std::string_view piece) {
          std::fwrite(piece.data(), 1, piece.size(), stdout);
          std::fflush(stdout);
        },
        r));
    std::printf("\n");
    std::fflush(stdout);
    std::fprintf(stderr,
                 "[turn %d: %zu prompt tokens, %zu reused from the cache, %zu decoded; %zu "
                 "generated]\n",
                 turn++, r.n_conversation, r.n_reused, r.n_decoded, r.n_generated);
    t.n_prompt += r.n_decoded;
    t.t_prompt += r.t_prompt;
    t.n_generated += r.n_generated;
    t.t_generate += r.t_generate;
  }
  if (interactive) std::fprintf(stderr, "\n");
  return {};
}

void print_speeds(const timings& t, const engine& e) {
  std::fprintf(stderr,
               "prompt: %zu tokens in %.3f s (%.1f tokens/s); generated: %zu tokens in %.3f s "
               "(%.1f tokens/s); memory %s, kv %s\n",
               t.n_prompt, t.t_prompt, t.t_prompt > 0 ? double(t.n_prompt) / t.t_prompt : 0.0,
               t.n_generated, t.t_generate,
               t.t_generate > 0 ? double(t.n_generated) / t.t_generate : 0.0,
               std::string(to_string(e.options().memory)).c_str(),
               std::string(to_string(e.options().kv)).c_str());
}

/// The chat template --chat-template names, else the model file's own (its metadata
/// only: the engine has read the rest).
result<text::chat_template> chat_template_for(const options& o) {
  if (o.chat_template) return text::chat_template::detect(*o.chat_template);
  MNEMO_ASSIGN_OR_RETURN(gguf::file f, gguf::file::open(o.model));
  auto t = text::chat_template::from_gguf(f);
  if (!t.is_ok() && t.error().code() == status_code::not_found)
    return make_status(status_code::not_found, "%s; choose one with --chat-template NAME",
                       t.error().message().c_str());
  return t;
}

int fail(const status& st) {
  std::fprintf(stderr, "generate: %s\n", st.to_string().c_str());
  return 1;
}

int run_chat(const options& o) {
  auto tmpl = chat_template_for(o);
  if (!tmpl.is_ok()) {
    std::fprintf(stderr, "generate: %s\n", tmpl.error().to_string().c_str());
    return 1;
  }
  std::fprintf(stderr, "chat template: %.*s\n", static_cast<int>(tmpl->name().size()),
               tmpl->name().data());
  const std::uint32_t n_ctx = o.rt.n_ctx != 0 ? o.rt.n_ctx : 4096;
  auto e = engine::open(o.model, mnemo_examples::engine_options_of(o.rt, 1, n_ctx));
  if (!e.is_ok()) return fail(e.error());
  if (!e->has_tokenizer())
    return fail(make_status(status_code::not_found, "--chat needs a tokenizer in the model file"));
  timings t;
  const status st = chat(*e, o, *e->tokenizer(), *tmpl, n_ctx, t);
  if (!st) {
    std::fprintf(stderr, "\n");
    return fail(st);
  }
  print_speeds(t, *e);
  return 0;
}

/// Cells for the prompt and -n tokens, rounded up to 256. A text prompt has at most one
/// token per byte (byte-level BPE and SentencePiece's byte fallback), plus BOS, EOS and
/// SentencePiece's leading space: the memory is sized before the engine tokenizes.
std::uint32_t context_size(const options& o) {
  if (o.rt.n_ctx != 0) return o.rt.n_ctx;
  if (o.load_session) return 4096;  // the session's length is known only once it is read
  const std::size_t n_prompt = o.prompt ? o.prompt->size() + 3 : o.tokens.size();
  return static_cast<std::uint32_t>((n_prompt + o.n_predict + 255) / 256 * 256);
}

}  // namespace

int main(int argc, char** argv) {
  options o;
  if (!parse_args(argc, argv, o)) return usage();
  mnemo_examples::apply_process_settings(o.rt);
  if (o.chat) return run_chat(o);
  auto e = engine::open(o.model, mnemo_examples::engine_options_of(o.rt, 1, context_size(o)));
  if (!e.is_ok()) return fail(e.error());
  if (!e->has_tokenizer() && o.prompt)
    return fail(make_status(status_code::not_found, "-p needs a tokenizer in the model file"));
  std::vector<token_id> prompt;
  if (o.prompt) {
    // Text that continues a session gets no BOS.
    auto ids = e->tokenize(*o.prompt, /*add_special=*/!o.load_session);
    if (!ids.is_ok()) return fail(ids.error());
    prompt = std::move(*ids);
  } else {
    for (std::uint32_t id : o.tokens) prompt.push_back(static_cast<token_id>(id));
  }
  if (prompt.empty() && !o.load_session) {
    std::fprintf(stderr, "generate: the prompt has no tokens\n");
    return 2;
  }
  // Echo the prompt as the tokenizer reads it back, then the continuation (with
  // --load-session, generate() echoes the session and the prompt).
  if (!o.load_session && e->has_tokenizer()) {
    auto text = e->detokenize(prompt);
    if (!text.is_ok()) return fail(text.error());
    std::fwrite(text->data(), 1, text->size(), stdout);
  } else if (!o.load_session) {
    for (token_id id : prompt) std::printf("%s%d", &id == prompt.data() ? "" : " ", id);
    std::printf(" |");
  }
  std::fflush(stdout);

  // A session file names the model by the fingerprint of its GGUF metadata.
  std::optional<gguf::file> model_file;
  if (o.save_session || o.load_session) {
    auto f = gguf::file::open(o.model);
    if (!f.is_ok()) return fail(f.error());
    model_file.emplace(std::move(*f));
  }
  timings t;
  const gguf::file* model = model_file ? &*model_file : nullptr;
  if (const status st = generate(*e, o, model, prompt, e->tokenizer(), t); !st) {
    std::fprintf(stderr, "\n");
    return fail(st);
  }
  print_speeds(t, *e);
  return 0;
}
