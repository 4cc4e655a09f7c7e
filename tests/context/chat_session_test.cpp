// generate --chat's engine (examples/common/chat_session.hpp): a second turn decodes only
// the tokens past the cached prefix, the cache then holds exactly the tokens of the
// formatted conversation, and the logits that start the second reply equal those of a
// fresh context that decodes the whole conversation at once (the reference run). The
// stop-text filter is checked piece by piece.
#include <algorithm>
#include <cmath>
#include <string>
#include <string_view>
#include <vector>

#include "common/chat_session.hpp"
#include <gtest/gtest.h>

#include "mnemo/context.hpp"
#include "mnemo/memory/full/full_cache.hpp"
#include "mnemo/model/llama.hpp"
#include "mnemo/serve/stop_filter.hpp"
#include "mnemo/text/chat_template.hpp"
#include "mnemo/text/tokenizer.hpp"

namespace {

using namespace mnemo;
using mnemo::serve::stop_filter;
using cache_t = memory::full_cache<float>;
using ctx_t = context<model::llama_model, cache_t>;

ctx_t make_ctx(const model::llama_model& m, std::size_t cells) {
  auto cache = cache_t::make(m.full_cache_config(cells, 1));
  EXPECT_TRUE(cache.is_ok()) << cache.error().to_string();
  context_params p;
  p.n_seq_max = 1;
  p.n_threads = 1;
  auto c = ctx_t::make(m, std::move(cache).value(), p);
  EXPECT_TRUE(c.is_ok()) << c.error().to_string();
  return std::move(c).value();
}

TEST(ChatSession, SecondTurnDecodesOnlyTheNewTokens) {
  auto m = model::llama_model::open(std::string(MNEMO_FIXTURES_DIR) + "/llama-tiny.gguf");
  if (!m.is_ok()) GTEST_SKIP() << "fixture not found: " << m.error().to_string();
  auto tok = text::tokenizer::from_gguf(m->file());
  ASSERT_TRUE(tok.is_ok()) << tok.error().to_string();
  for (const std::string_view name : {"llama2-sys", "chatml"}) {
    SCOPED_TRACE(std::string(name));
    auto tmpl = text::chat_template::from_name(name);
    ASSERT_TRUE(tmpl.is_ok());
    ctx_t ctx = make_ctx(*m, 512);
    // n_batch 16: the prompts span several decode calls
    mnemo_examples::chat_session chat(ctx, *tok, *tmpl, {.n_batch = 16, .n_ctx = 512});
    chat.add_system("You are terse.");
    auto smp = sampler::make({.temperature = 0.0f});
    ASSERT_TRUE(smp.is_ok());

    mnemo_examples::chat_turn_report r1;
    ASSERT_TRUE(chat.prompt("Hello there", r1).is_ok());
    EXPECT_EQ(r1.n_reused, 0u);
    EXPECT_EQ(r1.n_decoded, r1.n_conversation);
    std::string shown;
    ASSERT_TRUE(chat.respond(
                        *smp, 8, [&](std::string_view s) { shown.append(s); }, r1)
                    .is_ok());
    EXPECT_EQ(shown, r1.reply);
    ASSERT_EQ(chat.messages().size(), 3u);
    EXPECT_EQ(chat.messages().back().content, r1.reply);
    const std::vector<text::token_id> after_reply = chat.cached();
    EXPECT_GE(after_reply.size(), r1.n_conversation);

    mnemo_examples::chat_turn_report r2;
    ASSERT_TRUE(chat.prompt("How are you?", r2).is_ok());
    auto text = tmpl->apply(chat.messages(), true);
    ASSERT_TRUE(text.is_ok());
    const std::vector<text::token_id> expected = tok->encode(*text, {.parse_special = true});
    EXPECT_EQ(chat.cached(), expected);
    const auto common = static_cast<std::size_t>(
        std::mismatch(after_reply.begin(), after_reply.end(), expected.begin(), expected.end())
            .first -
        after_reply.begin());
    EXPECT_EQ(r2.n_reused, common);
    EXPECT_GE(r2.n_reused, r1.n_conversation);  // the whole first prompt stayed
    EXPECT_EQ(r2.n_decoded, expected.size() - r2.n_reused);
    EXPECT_EQ(r2.n_conversation, expected.size());

    // The reference: the whole conversation in one fresh context.
    ctx_t fresh = make_ctx(*m, 512);
    batch b;
    for (std::size_t i = 0; i < expected.size(); ++i)
      b.add(expected[i], static_cast<pos_t>(i), {0}, i + 1 == expected.size());
    ASSERT_TRUE(fresh.decode(b).is_ok());
    const auto want = fresh.logits_ith(-1);
    const auto got = ctx.logits_ith(-1);
    ASSERT_EQ(want.size(), got.size());
    for (std::size_t i = 0; i < want.size(); ++i)
      ASSERT_NEAR(got[i], want[i], 1e-4f) << "first difference at logit " << i;
  }
}

TEST(ChatSession, ConversationLongerThanTheContextIsAnError) {
  auto m = model::llama_model::open(std::string(MNEMO_FIXTURES_DIR) + "/llama-tiny.gguf");
  if (!m.is_ok()) GTEST_SKIP() << "fixture not found: " << m.error().to_string();
  auto tok = text::tokenizer::from_gguf(m->file());
  ASSERT_TRUE(tok.is_ok());
  ctx_t ctx = make_ctx(*m, 64);
  mnemo_examples::chat_session chat(ctx, *tok, text::chat_template::from_name("chatml").value(),
                                    {.n_batch = 64, .n_ctx = 64});
  mnemo_examples::chat_turn_report r;
  const status st = chat.prompt(std::string(200, 'x'), r);
  ASSERT_FALSE(st.is_ok());
  EXPECT_EQ(st.code(), status_code::no_space);
  EXPECT_NE(st.message().find("the context holds 64"), std::string::npos) << st.message();
}

TEST(StopTextFilter, HoldsBackWhatMayStartTheStopText) {
  stop_filter f({"<|im_end|>"});
  EXPECT_EQ(f.push("Hel"), "Hel");
  EXPECT_EQ(f.push("lo<|im"), "lo");
  EXPECT_FALSE(f.stopped());
  EXPECT_EQ(f.push("_end|>more"), "");
  EXPECT_TRUE(f.stopped());
  EXPECT_EQ(f.text(), "Hello");
  EXPECT_EQ(f.push("ignored"), "");
  EXPECT_EQ(f.flush(), "");
}

TEST(StopTextFilter, ReleasesAFalseStart) {
  stop_filter f({"\n\n"});
  EXPECT_EQ(f.push("a\n"), "a");
  EXPECT_EQ(f.push("b\n"), "\nb");
  EXPECT_EQ(f.flush(), "\n");
  EXPECT_FALSE(f.stopped());
  EXPECT_EQ(f.text(), "a\nb\n");
}

TEST(StopTextFilter, StopTextInsideOnePiece) {
  stop_filter f({"</s>"});
  EXPECT_EQ(f.push("ok</s>tail"), "ok");
  EXPECT_TRUE(f.stopped());
  EXPECT_EQ(f.text(), "ok");
}

TEST(StopTextFilter, OverlappingStarts) {
  // "aab" after "xaa": both "a" and "aa" could start it; the longer is held back
  stop_filter f({"aab"});
  EXPECT_EQ(f.push("xaa"), "x");
  EXPECT_EQ(f.push("ab"), "a");
  EXPECT_TRUE(f.stopped());
  EXPECT_EQ(f.text(), "xa");
}

TEST(StopTextFilter, EmptyStopTextNeverStops) {
  stop_filter f({""});
  EXPECT_EQ(f.push("anything"), "anything");
  EXPECT_EQ(f.flush(), "");
  EXPECT_FALSE(f.stopped());
}

}  // namespace
