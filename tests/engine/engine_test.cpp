// mnemo::engine on the fixture models: the handle gives the same logits as the
// compile-time context it dispatches to (bit for bit: the same instantiation), every
// architecture opens with its default memory, bad options get a status naming them,
// sequence operations and state I/O forward to the memory, an abort leaves the memory
// as before, and text round-trips through the file's tokenizer.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "mnemo/engine/engine.hpp"
// The template path the engine must match (this test compiles one instantiation).
#include "mnemo/context.hpp"
#include "mnemo/memory/full/full_cache.hpp"
#include "mnemo/model/llama.hpp"

namespace {

using namespace mnemo;

std::string fixture(const char* name) { return std::string(MNEMO_FIXTURES_DIR) + "/" + name; }

bool have_fixtures() {
  std::FILE* f = std::fopen(fixture("llama-tiny.gguf").c_str(), "rb");
  if (f == nullptr) return false;
  std::fclose(f);
  return true;
}

#define NEED_FIXTURES() \
  if (!have_fixtures()) GTEST_SKIP() << "no fixtures at " << MNEMO_FIXTURES_DIR

std::vector<token_id> prompt(std::size_t n, std::uint64_t seed) {
  splitmix64 g{seed};
  std::vector<token_id> t(n);
  for (auto& x : t) x = static_cast<token_id>(g.range(3, 511));
  return t;
}

batch seq_batch(const std::vector<token_id>& t, seq_id s, pos_t p0, bool all_outputs) {
  batch b;
  for (std::size_t i = 0; i < t.size(); ++i)
    b.add(t[i], p0 + static_cast<pos_t>(i), {s}, all_outputs || i + 1 == t.size());
  return b;
}

engine open_or_fail(const char* name, const engine_options& o) {
  auto e = engine::open(fixture(name), o);
  EXPECT_TRUE(e.is_ok()) << name << ": " << e.error().to_string();
  return std::move(e).value();
}

TEST(Engine, MatchesTheTemplateContextBitForBit) {
  NEED_FIXTURES();
  engine_options o;
  o.kv = kv_type::f32;
  o.n_seq_max = 2;
  o.n_ctx = 256;
  o.n_ubatch = 16;
  o.n_threads = o.n_threads_batch = 2;
  engine e = open_or_fail("llama-tiny.gguf", o);
  EXPECT_EQ(e.options().memory, memory_kind::full);

  auto m = model::llama_model::open(fixture("llama-tiny.gguf"));
  ASSERT_TRUE(m.is_ok()) << m.error().to_string();
  using ctx_t = context<model::llama_model, memory::full_cache<float>>;
  auto cache = memory::full_cache<float>::make(m->full_cache_config(256, 2));
  ASSERT_TRUE(cache.is_ok());
  auto ctx = ctx_t::make(*m, std::move(cache).value(), [] {
    context_params p;
    p.n_ubatch = 16;
    p.n_seq_max = 2;
    p.n_threads = p.n_threads_batch = 2;
    return p;
  }());
  ASSERT_TRUE(ctx.is_ok()) << ctx.error().to_string();

  const std::vector<batch> calls = {seq_batch(prompt(40, 1), 0, 0, true),
                                    seq_batch(prompt(7, 2), 1, 0, true),
                                    seq_batch(prompt(1, 3), 0, 40, true)};
  for (std::size_t c = 0; c < calls.size(); ++c) {
    ASSERT_TRUE(e.decode(calls[c])) << "call " << c;
    ASSERT_TRUE(ctx->decode(calls[c])) << "call " << c;
    ASSERT_EQ(e.n_outputs(), ctx->n_outputs());
    const auto a = e.logits(), b = ctx->logits();
    ASSERT_EQ(a.size(), b.size());
    for (std::size_t i = 0; i < a.size(); ++i)
      ASSERT_EQ(a[i], b[i]) << "call " << c << ", element " << i;
  }
  EXPECT_EQ(e.logits_ith(-1).data(), e.logits().data() + (e.n_outputs() - 1) * e.n_vocab());
}

TEST(Engine, EveryArchitectureOpensWithItsDefaultMemory) {
  NEED_FIXTURES();
  struct row {
    const char* file;
    const char* arch;
    memory_kind kind;
  };
  for (const row& r : {row{"llama-tiny.gguf", "llama", memory_kind::full},
                       row{"gemma3-iswa.gguf", "gemma3", memory_kind::iswa},
                       row{"mamba.gguf", "mamba", memory_kind::recurrent},
                       row{"jamba.gguf", "jamba", memory_kind::hybrid}}) {
    engine_options o;
    o.n_ctx = 128;
    o.n_threads = 2;
    engine e = open_or_fail(r.file, o);
    EXPECT_EQ(e.architecture(), r.arch);
    EXPECT_EQ(e.options().memory, r.kind) << r.file;
    ASSERT_TRUE(e.decode(seq_batch(prompt(9, 4), 0, 0, false))) << r.file;
    const auto row = e.logits_ith(-1);
    ASSERT_EQ(row.size(), e.n_vocab());
    for (float x : row) ASSERT_TRUE(std::isfinite(x)) << r.file;
    EXPECT_EQ(e.seq_pos_max(0), 8) << r.file;
    EXPECT_GT(e.report().total_bytes, 0u) << r.file;
  }
}

TEST(Engine, BadOptionsGetAStatusNamingThem) {
  NEED_FIXTURES();
  auto expect = [](const char* file, engine_options o, status_code code, const char* word) {
    auto e = engine::open(fixture(file), o);
    ASSERT_FALSE(e.is_ok()) << file << " opened with a bad option (" << word << ")";
    EXPECT_EQ(e.error().code(), code) << e.error().to_string();
    EXPECT_NE(e.error().message().find(word), std::string::npos) << e.error().to_string();
  };
  engine_options o;
  o.memory = memory_kind::iswa;
  expect("llama-tiny.gguf", o, status_code::invalid_argument, "iswa");
  o.memory = memory_kind::full;
  expect("mamba.gguf", o, status_code::invalid_argument, "full");
  o.memory = memory_kind::automatic;
  o.kv = kv_type::q8_0;
  expect("gemma3-iswa.gguf", o, status_code::unsupported, "q8_0");
  o.kv = kv_type::f16;
  o.memory = memory_kind::split;
  o.policy = evict_policy::h2o;
  o.evict_budget = 8;
  expect("llama-tiny.gguf", o, status_code::invalid_argument, "h2o");
  o.memory = memory_kind::bounded;
  o.policy = evict_policy::none;
  expect("llama-tiny.gguf", o, status_code::invalid_argument, "policy");
  o = {};
  o.n_seq_max = 0;
  expect("llama-tiny.gguf", o, status_code::invalid_argument, "n_seq_max");
  o = {};
  auto missing = engine::open(fixture("no-such-model.gguf"), o);
  EXPECT_FALSE(missing.is_ok());

  EXPECT_EQ(parse_memory_kind("iswa-split").value_or(memory_kind::automatic),
            memory_kind::iswa_split);
  auto bad = parse_kv_type("q5_1");
  ASSERT_FALSE(bad.is_ok());
  EXPECT_NE(bad.error().message().find("q5_1"), std::string::npos);
}

TEST(Engine, SequenceOperationsAndStateForwardToTheMemory) {
  NEED_FIXTURES();
  engine_options o;
  o.n_seq_max = 3;
  o.n_ctx = 256;
  o.kv = kv_type::f32;
  o.n_threads = 2;
  engine e = open_or_fail("llama-tiny.gguf", o);
  const auto p = prompt(20, 5);
  ASSERT_TRUE(e.decode(seq_batch(p, 0, 0, false)));
  ASSERT_TRUE(e.seq_cp(0, 1, -1, -1));
  EXPECT_EQ(e.seq_pos_max(1), 19);
  std::vector<std::uint8_t> saved;
  ASSERT_TRUE(e.state_write(-1, saved));

  const auto next = prompt(1, 6);
  ASSERT_TRUE(e.decode(seq_batch(next, 1, 20, true)));
  const std::vector<float> first(e.logits_ith(-1).begin(), e.logits_ith(-1).end());

  // Continue differently, restore, decode the same token again: the same logits.
  ASSERT_TRUE(e.decode(seq_batch(prompt(3, 7), 1, 21, false)));
  ASSERT_TRUE(e.state_read(saved));
  EXPECT_EQ(e.seq_pos_max(1), 19);
  ASSERT_TRUE(e.decode(seq_batch(next, 1, 20, true)));
  const auto again = e.logits_ith(-1);
  ASSERT_EQ(again.size(), first.size());
  for (std::size_t i = 0; i < first.size(); ++i) ASSERT_EQ(again[i], first[i]) << "column " << i;

  ASSERT_TRUE(e.seq_rm(1, 10, -1));
  EXPECT_EQ(e.seq_pos_max(1), 9);
  ASSERT_TRUE(e.seq_keep(0));
  EXPECT_EQ(e.seq_pos_max(1), -1);
  ASSERT_TRUE(e.seq_add(0, 5, -1, 3));
  EXPECT_EQ(e.seq_pos_max(0), 22);
  EXPECT_EQ(e.seq_rm(7, -1, -1).code(), status_code::out_of_range);
  e.clear();
  EXPECT_EQ(e.seq_pos_max(0), -1);
}

TEST(Engine, RecurrentMemoryRefusesWhatItCannotDoWithAStatus) {
  NEED_FIXTURES();
  engine_options o;
  o.n_threads = 2;
  engine e = open_or_fail("mamba.gguf", o);
  ASSERT_TRUE(e.decode(seq_batch(prompt(5, 8), 0, 0, false)));
  // A recurrent state cannot forget a middle of its history (no checkpoint either).
  const status st = e.seq_rm(0, 1, 3);
  EXPECT_EQ(st.code(), status_code::unsupported) << st.to_string();
  EXPECT_NE(st.message().find("recurrent"), std::string::npos) << st.to_string();
  EXPECT_EQ(e.seq_pos_max(0), 4);
  EXPECT_TRUE(e.seq_rm(0, -1, -1));
  EXPECT_EQ(e.seq_pos_max(0), -1);
}

TEST(Engine, AbortLeavesTheMemoryAsBefore) {
  NEED_FIXTURES();
  struct countdown {
    int fire_at, calls = 0;
  } cd{3, 0};
  engine_options o;
  o.n_ubatch = 8;
  o.n_threads = 2;
  engine e = open_or_fail("llama-tiny.gguf", o);
  ASSERT_TRUE(e.decode(seq_batch(prompt(10, 9), 0, 0, false)));
  std::vector<std::uint8_t> before, after;
  ASSERT_TRUE(e.state_write(-1, before));
  context_hooks h;
  h.abort = {[](void* u) {
               auto* c = static_cast<countdown*>(u);
               return ++c->calls == c->fire_at;
             },
             &cd};
  e.set_hooks(h);
  EXPECT_EQ(e.decode(seq_batch(prompt(30, 10), 0, 10, false)).code(), status_code::aborted);
  ASSERT_TRUE(e.state_write(-1, after));
  EXPECT_EQ(after, before);
  EXPECT_TRUE(e.decode(seq_batch(prompt(30, 10), 0, 10, false)));
}

TEST(Engine, BoundedMemoryKeepsItsBudget) {
  NEED_FIXTURES();
  engine_options o;
  o.policy = evict_policy::h2o;
  o.evict_budget = 16;
  o.n_ubatch = 8;
  o.n_threads = 2;
  engine e = open_or_fail("llama-tiny.gguf", o);
  EXPECT_EQ(e.options().memory, memory_kind::bounded);
  const auto p = prompt(40, 11);
  for (std::size_t i = 0; i < p.size(); i += 8)
    ASSERT_TRUE(e.decode(seq_batch({p.begin() + i, p.begin() + i + 8}, 0, pos_t(i), false)));
  EXPECT_EQ(e.seq_pos_max(0), 39);
  // Lanes of budget + n_ubatch slots instead of n_ctx cells.
  engine_options full_o;
  full_o.n_threads = 2;
  engine full = open_or_fail("llama-tiny.gguf", full_o);
  EXPECT_LT(e.report().total_bytes * 10, full.report().total_bytes)
      << e.report().to_string() << full.report().to_string();
}

// Quest holds every token and reads each decode row's top pages: with evict_budget
// covering the context its logits are the full cache's (to float tolerance: the rows
// are attended per KV head); with one page (16 cells) they move.
TEST(Engine, QuestReadsTheTopPagesOfAWholeContext) {
  NEED_FIXTURES();
  engine_options fo;
  fo.n_ctx = 128;
  fo.n_ubatch = 8;
  fo.n_threads = 2;
  engine full = open_or_fail("llama-tiny.gguf", fo);
  engine_options qo = fo;
  qo.policy = evict_policy::quest;
  qo.evict_budget = 128;
  engine all = open_or_fail("llama-tiny.gguf", qo);
  EXPECT_EQ(all.options().memory, memory_kind::bounded);
  qo.evict_budget = 16;
  engine one_page = open_or_fail("llama-tiny.gguf", qo);
  const auto p = prompt(72, 12);
  float moved = 0.0f;
  for (std::size_t i = 0; i < p.size();) {
    const std::size_t n = i < 48 ? 8 : 1;  // a chunked prompt, then decode rows
    const batch b = seq_batch({p.begin() + static_cast<std::ptrdiff_t>(i),
                               p.begin() + static_cast<std::ptrdiff_t>(i + n)},
                              0, pos_t(i), false);
    ASSERT_TRUE(full.decode(b));
    ASSERT_TRUE(all.decode(b));
    ASSERT_TRUE(one_page.decode(b));
    const auto want = full.logits_ith(-1), got = all.logits_ith(-1), few = one_page.logits_ith(-1);
    for (std::size_t v = 0; v < want.size(); ++v) {
      ASSERT_NEAR(got[v], want[v], 1e-4f) << "position " << i + n - 1 << ", token " << v;
      if (n == 1) moved = std::max(moved, std::abs(few[v] - want[v]));
    }
    i += n;
  }
  EXPECT_EQ(all.seq_pos_max(0), 71);
  EXPECT_GT(moved, 1e-3f) << "reading one page of 16 cells must change the logits";

  // A saved session loads into a fresh handle whose pages (rebuilt from the loaded
  // keys) give the same logits, bit for bit, on the next tokens.
  std::vector<std::uint8_t> saved;
  ASSERT_TRUE(one_page.state_write(-1, saved));
  engine loaded = open_or_fail("llama-tiny.gguf", qo);
  ASSERT_TRUE(loaded.state_read(saved));
  const auto next = prompt(4, 13);
  for (std::size_t i = 0; i < next.size(); ++i) {
    const batch b = seq_batch({next[i]}, 0, pos_t(72 + i), false);
    ASSERT_TRUE(one_page.decode(b));
    ASSERT_TRUE(loaded.decode(b));
    const auto a = one_page.logits_ith(-1), l = loaded.logits_ith(-1);
    for (std::size_t v = 0; v < a.size(); ++v)
      ASSERT_EQ(l[v], a[v]) << "token " << i << " after loading, column " << v;
  }
}

TEST(Engine, TextRoundTripsThroughTheFileTokenizer) {
  NEED_FIXTURES();
  engine_options o;
  o.n_threads = 2;
  engine e = open_or_fail("llama-tiny.gguf", o);
  if (!e.has_tokenizer()) GTEST_SKIP() << "llama-tiny.gguf has no tokenizer";
  auto ids = e.tokenize("the cat", true, false);
  ASSERT_TRUE(ids.is_ok()) << ids.error().to_string();
  ASSERT_FALSE(ids->empty());
  EXPECT_EQ((*ids)[0], e.bos());
  auto text = e.detokenize(*ids);
  ASSERT_TRUE(text.is_ok()) << text.error().to_string();
  EXPECT_EQ(*text, "the cat");
  const token_id bad[] = {1 << 20};
  EXPECT_FALSE(e.detokenize(bad).is_ok());
}

}  // namespace
