// generate: text in, text out. Tokenizes the prompt with the model's own tokenizer
// (GGUF tokenizer.ggml.* keys), decodes it, then samples -n tokens and prints them as
// they come (text::stream_decoder holds back split UTF-8 characters). Speeds go to
// stderr at the end.
//
//   generate MODEL.gguf [-p "text" | --tokens 1,2,3] [-n N] [--temp T] [--top-k K]
//            [--top-p P] [--seed S] [--memory full|split] [--kv TYPE] [--threads N]
//            [--ctx N] [--ubatch N] [--batch N] [--prefetch l1|l2]
//
// Stops early at the end-of-sequence token. With --tokens and a model without a
// tokenizer, the generated ids are printed instead of text.
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <optional>
#include <string>
#include <vector>

#include "common/cli.hpp"

#include "mnemo/engine/engine.hpp"
#include "mnemo/sampling.hpp"
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
  sampler_params sampling{.temperature = 0.8f, .top_k = 40, .top_p = 0.95f, .seed = 42};
  mnemo_examples::runtime_options rt;
};

int usage() {
  std::fprintf(stderr,
               "usage: generate MODEL.gguf [-p \"text\" | --tokens 1,2,3] [-n N] [--temp T]\n"
               "       [--top-k K] [--top-p P] [--seed S]\n%s",
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
    const bool valued = a == "-p" || a == "--tokens" || a == "-n" || a == "--temp" ||
                        a == "--top-k" || a == "--top-p" || a == "--seed";
    if (valued) {
      const char* v = args.value(a);
      if (v == nullptr) return false;
      bool ok = true;
      if (a == "-p") {
        o.prompt = v;
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
  if (o.prompt.has_value() == has_tokens) {
    std::fprintf(stderr, "generate: give either -p TEXT or --tokens IDS\n");
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

status generate(engine& ctx, const options& o, const std::vector<token_id>& prompt,
                const text::tokenizer* tok, timings& t) {
  MNEMO_ASSIGN_OR_RETURN(sampler smp, sampler::make(o.sampling));
  // The prompt, in calls of at most n_batch tokens; logits only for its last token.
  const auto t0 = clock_type::now();
  batch b;
  for (std::size_t i = 0; i < prompt.size(); ++i) {
    b.add(prompt[i], static_cast<pos_t>(i), {0}, i + 1 == prompt.size());
    if (b.size() == o.rt.n_batch || i + 1 == prompt.size()) {
      MNEMO_RETURN_IF_ERROR(ctx.decode(b));
      b.clear();
    }
  }
  t.t_prompt = seconds_since(t0);
  t.n_prompt = prompt.size();

  std::optional<text::stream_decoder> dec;
  if (tok != nullptr) dec.emplace(*tok, text::decode_options{.text_start = false});
  const auto t1 = clock_type::now();
  pos_t p = static_cast<pos_t>(prompt.size());
  for (std::uint32_t i = 0; i < o.n_predict; ++i) {
    const token_id next = smp.sample(ctx.logits_ith(-1));
    if (next < 0) return make_status(status_code::internal, "generate: no logits to sample");
    ++t.n_generated;
    if (dec) {
      MNEMO_ASSIGN_OR_RETURN(std::string_view piece, dec->push(next));
      std::fwrite(piece.data(), 1, piece.size(), stdout);
    } else {
      std::printf(" %d", next);
    }
    std::fflush(stdout);
    if (tok != nullptr && next == tok->eos()) break;
    if (i + 1 == o.n_predict) break;  // the last token needs no decode
    b.clear();
    b.add(next, p++, {0}, true);
    MNEMO_RETURN_IF_ERROR(ctx.decode(b));
  }
  if (dec) {
    const std::string rest = dec->finish();
    std::fwrite(rest.data(), 1, rest.size(), stdout);
  }
  std::printf("\n");
  t.t_generate = seconds_since(t1);
  return {};
}

}  // namespace

int main(int argc, char** argv) {
  options o;
  if (!parse_args(argc, argv, o)) return usage();
  mnemo_examples::apply_process_settings(o.rt);
  // The prompt decides the context size, so it is read before the engine opens.
  auto tok = text::tokenizer::open(o.model);
  if (!tok.is_ok() && o.prompt) {
    std::fprintf(stderr, "generate: %s\n", tok.error().to_string().c_str());
    return 1;
  }
  std::vector<token_id> prompt;
  if (o.prompt) {
    prompt = tok->encode(*o.prompt);
  } else {
    for (std::uint32_t id : o.tokens) prompt.push_back(static_cast<token_id>(id));
  }
  if (prompt.empty()) {
    std::fprintf(stderr, "generate: the prompt has no tokens\n");
    return 2;
  }
  // Echo the prompt as the tokenizer reads it back, then the continuation.
  if (tok.is_ok()) {
    auto text = tok->decode(prompt);
    if (!text.is_ok()) {
      std::fprintf(stderr, "generate: %s\n", text.error().to_string().c_str());
      return 1;
    }
    std::fwrite(text->data(), 1, text->size(), stdout);
  } else {
    for (token_id id : prompt) std::printf("%s%d", &id == prompt.data() ? "" : " ", id);
    std::printf(" |");
  }
  std::fflush(stdout);

  std::uint32_t n_ctx = o.rt.n_ctx;
  if (n_ctx == 0)
    n_ctx = (static_cast<std::uint32_t>(prompt.size()) + o.n_predict + 255) / 256 * 256;
  engine_options eo;
  eo.memory = parse_memory_kind(o.rt.memory).value_or(memory_kind::automatic);
  eo.kv = parse_kv_type(o.rt.kv).value_or(kv_type::f16);  // both checked by the parser
  eo.n_ctx = n_ctx;
  eo.n_ubatch = o.rt.n_ubatch;
  eo.n_batch = o.rt.n_batch;
  eo.n_threads = eo.n_threads_batch = o.rt.threads;
  eo.use_mmap = !o.rt.no_mmap;
  auto e = engine::open(o.model, eo);
  if (!e.is_ok()) {
    std::fprintf(stderr, "\ngenerate: %s\n", e.error().to_string().c_str());
    return 1;
  }
  timings t;
  const status st = generate(*e, o, prompt, e->tokenizer(), t);
  if (!st) {
    std::fprintf(stderr, "\ngenerate: %s\n", st.to_string().c_str());
    return 1;
  }
  std::fprintf(stderr,
               "prompt: %zu tokens in %.3f s (%.1f tokens/s); generated: %zu tokens in %.3f s "
               "(%.1f tokens/s); memory %s, kv %s\n",
               t.n_prompt, t.t_prompt, t.t_prompt > 0 ? double(t.n_prompt) / t.t_prompt : 0.0,
               t.n_generated, t.t_generate,
               t.t_generate > 0 ? double(t.n_generated) / t.t_generate : 0.0, o.rt.memory.c_str(),
               o.rt.kv.c_str());
  return 0;
}
