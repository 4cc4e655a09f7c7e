// mnemo demo: a small serving loop, end to end, in a few seconds on two cores.
//   1. which SIMD paths this build has and this CPU runs;
//   2. writes a deterministic random-weight Llama GGUF to a temporary file (with the
//      llama SentencePiece vocabulary when the fixtures are beside the repository,
//      else a byte vocabulary) and loads it with its tokenizer;
//   3. serves simulated clients with continuous batching through the unified (full)
//      KV cache: clients arrive at different steps with prompts of different lengths;
//      every step batches the prompt chunks of new clients with one token of every
//      running client; a finished client frees its sequence (seq_rm) and a waiting one
//      takes the slot;
//   4. tokens/s, the memory report, and a self-check: one client's whole token stream
//      re-decoded alone in a fresh context must give the logits it got inside the
//      shared batches (max |diff| <= 1e-4 * max |logit|), else FAIL and exit code 1.
//
//   demo [--clients N] [--tokens M] [--slots S] [--threads T (1)] [--quiet]
//        [--model PATH]  (a GGUF of any attention architecture with its tokenizer, instead
//                         of the random Llama: llama, qwen2, qwen3, phi3, gemma2, gemma3)
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

#include "common/cli.hpp"
#include "common/random_llama.hpp"

#include "mnemo/context.hpp"
#include "mnemo/memory/full/full_cache.hpp"
#include "mnemo/model/architectures.hpp"
#include "mnemo/sampling.hpp"
#include "mnemo/simd/cpu.hpp"
#include "mnemo/text/tokenizer.hpp"
#include "mnemo/text/utf8.hpp"

namespace {

using namespace mnemo;
using clock_type = std::chrono::steady_clock;
// f32 K/V: with f16, a product summed in another order (one token vs many) can round
// a cached value to the neighbouring f16 and move the logits by ~5e-5 of their scale,
// too close to the self-check's 1e-4 limit to be a portable check.
using cache_t = memory::full_cache<float>;
using context_t = context<model::attention_decoder, cache_t>;

constexpr std::uint32_t k_prompt_chunk = 32;  // most prompt tokens of one client per step

const char* const k_prompts[] = {
    "Once upon a time",
    "The capital of France is",
    "A KV cache stores the keys and values of every token a sequence has seen, so that",
    "Write a haiku about memory bandwidth.",
    ("In continuous batching, a server does not wait for the slowest request: each step "
     "takes one token from every running sequence and the prompt chunks of new ones, and"),
    "def fibonacci(n):",
    "Rolling back a failed batch leaves the cache exactly as it was before the call.",
    "Q: Why is decode attention memory-bound?\nA:",
};

struct options {
  std::uint32_t clients = 8, tokens = 24, slots = 4;
  // One thread by default: the model is small enough that a step is a fraction of a
  // millisecond, and on a shared machine a 2-thread OpenMP step can stall at its
  // barriers for a scheduler slice (docs/performance.md, "Method").
  int threads = 1;
  bool quiet = false;
  std::string model;  // empty: the random-weight Llama
};

struct client {
  std::vector<token_id> prompt, generated;
  std::uint32_t arrives = 0, wants = 0, fed = 0;  // fed: prompt tokens decoded so far
  seq_id slot = -1;
  bool done = false;
  std::optional<sampler> smp;              // sampler has no empty state
  std::vector<std::vector<float>> logits;  // rows it received (kept for the checked client)
};

int usage() {
  std::fprintf(stderr,
               "usage: demo [--clients N] [--tokens M] [--slots S] [--threads T] [--quiet]\n"
               "            [--model PATH]\n");
  return 2;
}

bool parse_args(int argc, char** argv, options& o) {
  mnemo_examples::arg_cursor args("demo", argc, argv);
  while (!args.done()) {
    const std::string_view a = args.take();
    if (a == "--quiet") {
      o.quiet = true;
      continue;
    }
    if (a == "--model") {
      const char* v = args.value(a);
      if (v == nullptr) return args.complain("bad value for", a), false;
      o.model = v;
      continue;
    }
    std::uint32_t* dst = a == "--clients"  ? &o.clients
                         : a == "--tokens" ? &o.tokens
                         : a == "--slots"  ? &o.slots
                                           : nullptr;
    std::uint32_t threads = 0;
    if (a == "--threads") dst = &threads;
    if (dst == nullptr) return args.complain("unknown argument", a), false;
    const char* v = args.value(a);
    if (v == nullptr || !mnemo_examples::parse_u32(v, *dst, a == "--threads" ? 0 : 1, 256))
      return args.complain("bad value for", a), false;
    if (a == "--threads") o.threads = static_cast<int>(threads);
  }
  return true;
}

double seconds_since(clock_type::time_point t0) {
  return std::chrono::duration<double>(clock_type::now() - t0).count();
}

/// Printable, one line, at most n bytes (cut at a UTF-8 character boundary).
std::string one_line(std::string s, std::size_t n) {
  for (char& c : s)
    if (c == '\n' || c == '\r' || c == '\t') c = ' ';
  if (s.size() <= n) return s;
  n = text::utf8_complete_prefix(std::string_view(s).substr(0, n));
  return s.substr(0, n) + "...";
}

struct serve_stats {
  std::size_t steps = 0, prompt_tokens = 0, generated = 0, peak_cells = 0;
  double seconds = 0;
};

/// The serving loop. Client `checked` keeps every logits row it receives.
status serve(context_t& ctx, std::vector<client>& cs, const options& o, std::size_t checked,
             serve_stats& st) {
  std::vector<std::size_t> slot_owner(o.slots, SIZE_MAX);
  std::vector<std::pair<std::size_t, std::uint32_t>> rows;  // (client, batch index) with output
  batch b;
  const auto t0 = clock_type::now();
  for (std::uint32_t step = 0;; ++step) {
    bool all_done = true;
    for (const client& c : cs) all_done &= c.done;
    if (all_done) break;
    // Admit arrived clients into free slots, in arrival order.
    for (std::size_t i = 0; i < cs.size(); ++i) {
      client& c = cs[i];
      if (c.done || c.slot >= 0 || c.arrives > step) continue;
      const auto free = std::find(slot_owner.begin(), slot_owner.end(), SIZE_MAX);
      if (free == slot_owner.end()) break;
      *free = i;
      c.slot = static_cast<seq_id>(free - slot_owner.begin());
    }
    // One batch: a prompt chunk of each prefilling client, one token of each generating one.
    b.clear();
    rows.clear();
    for (std::size_t i = 0; i < cs.size(); ++i) {
      client& c = cs[i];
      if (c.slot < 0 || c.done) continue;
      if (c.fed < c.prompt.size()) {
        const std::uint32_t n = std::min<std::uint32_t>(
            k_prompt_chunk, static_cast<std::uint32_t>(c.prompt.size()) - c.fed);
        for (std::uint32_t j = 0; j < n; ++j) {
          const bool last = c.fed + j + 1 == c.prompt.size();
          if (last) rows.push_back({i, b.size()});
          b.add(c.prompt[c.fed + j], static_cast<pos_t>(c.fed + j), {c.slot}, last);
        }
        c.fed += n;
        st.prompt_tokens += n;
      } else {
        rows.push_back({i, b.size()});
        b.add(c.generated.back(), static_cast<pos_t>(c.prompt.size() + c.generated.size() - 1),
              {c.slot}, true);
      }
    }
    if (b.empty()) continue;  // nobody has arrived yet
    MNEMO_RETURN_IF_ERROR(ctx.decode(b));
    st.peak_cells = std::max(st.peak_cells, ctx.memory().used());
    ++st.steps;
    // Sample for every client that got logits; free the slots of finished clients.
    for (const auto& [i, idx] : rows) {
      client& c = cs[i];
      const auto row = ctx.logits_ith(static_cast<std::int32_t>(idx));
      if (i == checked) c.logits.emplace_back(row.begin(), row.end());
      c.generated.push_back(c.smp->sample(row));
      ++st.generated;
      if (c.generated.size() == c.wants) {
        c.done = true;
        MNEMO_RETURN_IF_ERROR(ctx.seq_rm(c.slot, -1, -1));
        slot_owner[static_cast<std::size_t>(c.slot)] = SIZE_MAX;
      }
    }
    if (!o.quiet) {
      std::printf("  step %3u  batch %3u tokens |", step, b.size());
      for (std::uint32_t s = 0; s < o.slots; ++s) {
        const std::size_t i = slot_owner[s];
        if (i == SIZE_MAX) {
          std::printf("      -      |");
          continue;
        }
        const client& c = cs[i];
        if (c.generated.empty())
          std::printf(" c%zu read %3u/%-3zu|", i, c.fed, c.prompt.size());
        else
          std::printf(" c%zu gen %3zu/%-3u|", i, c.generated.size(), c.wants);
      }
      std::printf("\n");
    }
  }
  st.seconds = seconds_since(t0);
  return {};
}

/// Decodes client c's prompt and generated tokens (all but the last, which was never
/// fed back) alone, in one batch, in a fresh context; returns max |diff| against the
/// rows it got while batched, and the largest |logit| in `scale`.
status self_check(const model::attention_decoder& m, const client& c, int threads, float& worst,
                  float& scale) {
  std::vector<token_id> stream = c.prompt;
  stream.insert(stream.end(), c.generated.begin(), c.generated.end() - 1);
  MNEMO_ASSIGN_OR_RETURN(cache_t cache, cache_t::make(m.full_cache_config(stream.size(), 1)));
  context_params p;
  p.n_ubatch = static_cast<std::uint32_t>(stream.size());
  p.n_threads = threads;
  MNEMO_ASSIGN_OR_RETURN(context_t ctx, context_t::make(m, std::move(cache), p));
  batch b;
  for (std::size_t i = 0; i < stream.size(); ++i)
    b.add(stream[i], static_cast<pos_t>(i), {0}, i + 1 >= c.prompt.size());
  MNEMO_RETURN_IF_ERROR(ctx.decode(b));
  if (ctx.n_outputs() != c.logits.size())
    return make_status(status_code::internal, "self-check: %u rows alone, %zu in the batch",
                       ctx.n_outputs(), c.logits.size());
  worst = 0;
  scale = 0;
  for (std::uint32_t r = 0; r < ctx.n_outputs(); ++r) {
    const auto alone = ctx.output_row(r);
    for (std::size_t v = 0; v < alone.size(); ++v) {
      const float d = std::fabs(alone[v] - c.logits[r][v]);
      worst = std::isnan(d) ? INFINITY : std::max(worst, d);
      scale = std::max(scale, std::fabs(c.logits[r][v]));
    }
  }
  return {};
}

int fail(const status& st) {
  std::fprintf(stderr, "demo: %s\n", st.to_string().c_str());
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  options o;
  if (!parse_args(argc, argv, o)) return usage();
  std::printf(
      "mnemo demo: continuous batching through a unified KV cache\n\n[1/4] SIMD: native "
      "%s;",
      simd::native::name.data());
  for (const auto& s : simd::isa_report())
    std::printf(" %s %s", s.name.data(),
                s.compiled ? (s.supported ? "(compiled, runs here)" : "(compiled, not this CPU)")
                           : "(not compiled)");

  // A small model: 4 layers, d_model 256, 8 heads on 4 KV heads of 32. An untied output
  // matrix: tied random weights mostly repeat the last token.
  mnemo_examples::random_llama_config mc;
  mc.n_embd = 256;
  mc.n_layer = 4;
  mc.n_head = 8;
  mc.n_head_kv = 4;
  mc.n_ff = 768;
  mc.n_ctx = 1024;
  mc.seed = 7;
  std::string vocab = "byte vocabulary (tokens are bytes)";
#ifdef MNEMO_FIXTURES_DIR
  const std::filesystem::path spm =
      std::filesystem::path(MNEMO_FIXTURES_DIR) / "tokenizer" / "ggml-vocab-llama-spm.gguf";
  std::error_code ec;
  if (std::filesystem::exists(spm, ec)) {
    mc.vocab_from = spm.string();
    vocab = "llama SentencePiece vocabulary (32000 tokens)";
  }
#endif
  if (mc.vocab_from.empty()) mc.n_vocab = 512;
  std::error_code tmp_ec;
  const auto dir = std::filesystem::temp_directory_path(tmp_ec);
  const std::string path =
      (dir /
       ("mnemo-demo-" + std::to_string(clock_type::now().time_since_epoch().count()) + ".gguf"))
          .string();
  const auto t_write = clock_type::now();
  if (!o.model.empty()) {
    vocab = "the file's vocabulary";
  } else if (status st = mnemo_examples::write_random_llama(mc, path); !st) {
    return fail(st);
  }
  auto m = model::open_attention_decoder(o.model.empty() ? path : o.model);
  if (o.model.empty()) std::filesystem::remove(path, tmp_ec);  // the mapping stays valid (POSIX)
  if (!m.is_ok()) return fail(m.error());
  auto tok = text::tokenizer::from_gguf(m->file());
  if (!tok.is_ok()) return fail(tok.error());
  std::printf(
      "\n\n[2/4] model: %s %s, %u layers, d_model %u, %u heads / %u KV heads, %s; loaded in "
      "%.2f s\n",
      o.model.empty() ? "random-weight" : o.model.c_str(), m->recipe().name.data(),
      m->hparams().n_layer, m->hparams().n_embd, m->hparams().n_head, m->hparams().n_head_kv,
      vocab.c_str(), seconds_since(t_write));

  // Clients: arrival every 3 steps, prompts of different lengths, 3 output lengths.
  std::vector<client> cs(o.clients);
  std::size_t longest = 0;
  for (std::uint32_t i = 0; i < o.clients; ++i) {
    client& c = cs[i];
    c.prompt = tok->encode(k_prompts[i % std::size(k_prompts)]);
    c.arrives = 3 * i;
    c.wants = o.tokens + 4 * (i % 3);
    auto s = sampler::make({.temperature = 0.8f, .top_k = 40, .top_p = 0.95f, .seed = 100 + i});
    if (!s.is_ok()) return fail(s.error());
    c.smp.emplace(std::move(s).value());
    longest = std::max<std::size_t>(longest, c.prompt.size() + c.wants);
  }
  const std::size_t checked = std::min<std::size_t>(2, cs.size() - 1);  // overlaps others

  const std::size_t cells = (o.slots * longest + 255) / 256 * 256;
  auto cache = cache_t::make(m->full_cache_config(cells, static_cast<seq_id>(o.slots)));
  if (!cache.is_ok()) return fail(cache.error());
  context_params p;
  p.n_ubatch = 256;
  p.n_seq_max = static_cast<seq_id>(o.slots);
  p.n_threads = o.threads;
  auto ctx = context_t::make(*m, std::move(cache).value(), p);
  if (!ctx.is_ok()) return fail(ctx.error());
  std::printf(
      "\n[3/4] serving %u clients on %u slots (f32 KV cache of %zu cells, %d threads); each "
      "step: prompt chunks of <= %u tokens + one token per running client\n",
      o.clients, o.slots, cells, o.threads, k_prompt_chunk);
  serve_stats st;
  if (status s = serve(*ctx, cs, o, checked, st); !s) return fail(s);

  std::printf("\n  generated text (random weights: expect gibberish, the point is the plumbing)\n");
  for (std::size_t i = 0; i < cs.size(); ++i) {
    auto prompt = tok->decode(cs[i].prompt);
    auto gen = tok->decode(cs[i].generated, {.text_start = false});
    if (!prompt.is_ok() || !gen.is_ok()) return fail(prompt.is_ok() ? gen.error() : prompt.error());
    std::printf("  c%zu [%zu+%zu tokens] \"%s\" -> \"%s\"\n", i, cs[i].prompt.size(),
                cs[i].generated.size(), one_line(*prompt, 40).c_str(), one_line(*gen, 60).c_str());
  }

  const auto report = ctx->memory().report();
  std::printf(
      "\n[4/4] %zu steps in %.3f s: %zu prompt + %zu generated tokens, %.0f tokens/s "
      "(%.0f generated/s)\n  KV memory: %zu bytes for %zu cells (f32), peak %zu cells used, "
      "%zu after every client left\n",
      st.steps, st.seconds, st.prompt_tokens, st.generated,
      double(st.prompt_tokens + st.generated) / st.seconds, double(st.generated) / st.seconds,
      report.total_bytes, report.cells, st.peak_cells, report.cells_used);

  float worst = 0, scale = 0;
  if (status s = self_check(*m, cs[checked], o.threads, worst, scale); !s) return fail(s);
  const bool ok = worst <= 1e-4f * scale;
  std::printf(
      "  self-check: client c%zu re-decoded alone in a fresh context: %zu logits rows, "
      "max |diff| %.2e vs batched (limit 1e-4 * max |logit| = %.2e): %s\n",
      checked, cs[checked].logits.size(), static_cast<double>(worst),
      static_cast<double>(1e-4f * scale), ok ? "PASS" : "FAIL");
  return ok ? 0 : 1;
}
