// bench/text: tokenizer throughput on ~1 MiB of text per vocabulary family.
//
//   encode/<vocab>        text -> ids (add_special off, parse_special off), bytes/s of input;
//                         BPE's word cache starts empty in every pass
//   decode/<vocab>        ids -> text through stream_decoder, bytes/s of output
//   pre_tokenize/<pre>    the pre-tokenizer alone (text -> pieces) for a tokenizer.ggml.pre
//                         name, on the gpt-2 text; "gpt-2/engine" runs GPT-2's rules through
//                         the regex engine instead of the hand-written scanner, and
//                         "<pre>/backtracker" the engine without its lazy DFA
//
// The text is generated deterministically from llama.cpp's tokenizer test strings (the
// fixtures' .inp file): strings drawn with a fixed-seed LCG, ASCII letters perturbed so
// that words vary, joined by spaces and newlines, until 1 MiB. One thread.
// Fixtures: $MNEMO_FIXTURES_DIR at run time, else the build's MNEMO_FIXTURES_DIR.
#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <optional>
#include <string>
#include <vector>

#include "common/bench_main.hpp"
#include <benchmark/benchmark.h>

#include "mnemo/text/text.hpp"

namespace {

using mnemo::text::token_id;
using mnemo::text::tokenizer;

constexpr std::size_t k_text_bytes = std::size_t{1} << 20;

std::string fixtures_dir() {
  if (const char* env = std::getenv("MNEMO_FIXTURES_DIR")) return env;
  return MNEMO_FIXTURES_DIR;
}

std::string make_text(const std::string& inp_path) {
  std::ifstream f(inp_path, std::ios::binary);
  const std::string all((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  const std::string sep = "\n__ggml_vocab_test__\n";
  std::vector<std::string> pieces;
  for (std::size_t pos = 0, next; (next = all.find(sep, pos)) != std::string::npos;
       pos = next + sep.size())
    if (next > pos) pieces.push_back(all.substr(pos, next - pos));
  std::string out;
  if (pieces.empty()) return out;
  std::uint64_t s = 0x7e57;
  auto rnd = [&] {
    s = s * 6364136223846793005ull + 1442695040888963407ull;
    return s >> 33;
  };
  while (out.size() < k_text_bytes) {
    std::string p = pieces[rnd() % pieces.size()];
    for (char& c : p)  // perturb ~1 in 8 ASCII letters (keeps the text valid UTF-8)
      if (((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')) && rnd() % 8 == 0)
        c = static_cast<char>('a' + rnd() % 26);
    out += p;
    out += rnd() % 4 == 0 ? '\n' : ' ';
  }
  return out;
}

struct corpus {
  std::optional<tokenizer> tok;
  std::string text;
  std::vector<token_id> ids;
};

const corpus& corpus_for(const std::string& vocab_file) {
  static std::vector<std::pair<std::string, corpus>> cache;
  for (auto& [name, c] : cache)
    if (name == vocab_file) return c;
  corpus c;
  const std::string base = fixtures_dir() + "/tokenizer/" + vocab_file;
  auto t = tokenizer::open(base);
  if (t.is_ok()) {
    c.tok.emplace(std::move(t).value());
    c.text = make_text(base + ".inp");
    c.ids = c.tok->encode(c.text, {.add_special = false});
  }
  cache.emplace_back(vocab_file, std::move(c));
  return cache.back().second;
}

void bm_encode(benchmark::State& state, const std::string& vocab_file) {
  const corpus& c = corpus_for(vocab_file);
  if (!c.tok || c.text.empty()) {
    state.SkipWithError("tokenizer fixture not found (set MNEMO_FIXTURES_DIR)");
    return;
  }
  mnemo::text::encode_scratch scratch;
  std::vector<token_id> ids;
  ids.reserve(c.ids.size());
  for (auto _ : state) {
    ids.clear();
    scratch.bpe.words.clear();  // every pass starts cold: no word is known from the last
    c.tok->encode_append(c.text, ids, scratch, {.add_special = false});
    benchmark::DoNotOptimize(ids.data());
  }
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * c.text.size()));
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations() * ids.size()));
  state.counters["text_bytes"] = static_cast<double>(c.text.size());
  state.counters["bytes_per_token"] = static_cast<double>(c.text.size()) /
                                      static_cast<double>(std::max<std::size_t>(1, ids.size()));
  state.counters["threads"] = 1;
}

enum class splitter { as_shipped, engine, backtracker };

void bm_pre_tokenize(benchmark::State& state, const std::string& pre, splitter how) {
  const corpus& c = corpus_for("ggml-vocab-gpt-2.gguf");
  auto p = mnemo::text::pre_tokenizer::for_name(pre);
  if (c.text.empty() || !p.is_ok()) {
    state.SkipWithError("tokenizer fixture not found (set MNEMO_FIXTURES_DIR)");
    return;
  }
  mnemo::text::pre_tokenize_scratch scratch;
  scratch.matcher.use_lazy_dfa(how != splitter::backtracker);
  std::vector<std::size_t> ends;
  for (auto _ : state) {
    if (how != splitter::as_shipped)
      p->split_general(c.text, ends, scratch);
    else
      p->split(c.text, ends, scratch);
    benchmark::DoNotOptimize(ends.data());
  }
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * c.text.size()));
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations() * ends.size()));
  state.counters["threads"] = 1;
}

void bm_decode(benchmark::State& state, const std::string& vocab_file) {
  const corpus& c = corpus_for(vocab_file);
  if (!c.tok || c.text.empty()) {
    state.SkipWithError("tokenizer fixture not found (set MNEMO_FIXTURES_DIR)");
    return;
  }
  std::size_t bytes = 0;
  for (auto _ : state) {
    mnemo::text::stream_decoder dec(*c.tok);
    bytes = 0;
    for (const token_id id : c.ids) {
      auto part = dec.push(id);
      bytes += part.is_ok() ? part.value().size() : 0;
    }
    bytes += dec.finish().size();
    benchmark::DoNotOptimize(bytes);
  }
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * bytes));
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations() * c.ids.size()));
  state.counters["threads"] = 1;
}

const bool registered = [] {
  for (const char* v :
       {"ggml-vocab-llama-spm.gguf", "ggml-vocab-phi-3.gguf", "ggml-vocab-gpt-2.gguf",
        "ggml-vocab-starcoder.gguf", "ggml-vocab-gpt2-pre-gpt-2.gguf",
        "ggml-vocab-gpt2-pre-llama-bpe.gguf", "ggml-vocab-gpt2-pre-stablelm2.gguf",
        "ggml-vocab-gpt2-pre-qwen35.gguf", "ggml-vocab-gpt2-pre-tekken.gguf",
        "ggml-vocab-gpt2-pre-kimi-k2.gguf", "ggml-vocab-gpt2raw-pre-gemma4.gguf"}) {
    std::string name(v);
    name = name.substr(std::string("ggml-vocab-").size());
    name = name.substr(0, name.find(".gguf"));
    benchmark::RegisterBenchmark(("encode/" + name).c_str(), bm_encode, std::string(v))
        ->Unit(benchmark::kMillisecond)
        ->UseRealTime();
    benchmark::RegisterBenchmark(("decode/" + name).c_str(), bm_decode, std::string(v))
        ->Unit(benchmark::kMillisecond)
        ->UseRealTime();
  }
  // qwen2 and deepseek-v3 have no fixture vocabulary: their pre-tokenizers alone
  for (const char* pre : {"gpt-2", "llama-bpe", "qwen2", "qwen35", "deepseek-v3", "deepseek-llm",
                          "tekken", "gpt-4o", "kimi-k2", "afmoe", "bloom", "default"})
    benchmark::RegisterBenchmark((std::string("pre_tokenize/") + pre).c_str(), bm_pre_tokenize,
                                 std::string(pre), splitter::as_shipped)
        ->Unit(benchmark::kMillisecond)
        ->UseRealTime();
  benchmark::RegisterBenchmark("pre_tokenize/gpt-2/engine", bm_pre_tokenize, std::string("gpt-2"),
                               splitter::engine)
      ->Unit(benchmark::kMillisecond)
      ->UseRealTime();
  for (const char* pre : {"gpt-2", "tekken", "kimi-k2", "deepseek-llm", "default"})
    benchmark::RegisterBenchmark((std::string("pre_tokenize/") + pre + "/backtracker").c_str(),
                                 bm_pre_tokenize, std::string(pre), splitter::backtracker)
        ->Unit(benchmark::kMillisecond)
        ->UseRealTime();
  return true;
}();

}  // namespace

MNEMO_BENCH_MAIN();
