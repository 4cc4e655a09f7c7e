// A chat on sequence 0 of a context (generate --chat). Each turn formats the whole
// conversation with the chat template and tokenizes it, then decodes only the tokens past
// the longest prefix the KV cache already holds: the earlier turns stay in the cache, and
// only the new user turn (plus whatever of the last reply tokenizes differently from the
// sampled tokens) is computed. The reply is sampled until the end-of-sequence token, the
// template's stop text or n_predict tokens.
//
//   chat_session chat(ctx, tok, tmpl, {.n_batch = 2048, .n_ctx = 4096});
//   chat.add_system("Be brief.");
//   MNEMO_RETURN_IF_ERROR(chat.prompt("Hi", report));        // decodes the new tokens
//   MNEMO_RETURN_IF_ERROR(chat.respond(smp, 64, print_piece, report));
#pragma once

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "mnemo/base/result.hpp"
#include "mnemo/base/status.hpp"
#include "mnemo/batch/batch.hpp"
#include "mnemo/sampling.hpp"
#include "mnemo/serve/stop_filter.hpp"
#include "mnemo/text/chat_template.hpp"
#include "mnemo/text/decoder.hpp"
#include "mnemo/text/tokenizer.hpp"

namespace mnemo_examples {

/// What one turn cost.
struct chat_turn_report {
  std::size_t n_conversation = 0;  // tokens of the formatted conversation (the prompt)
  std::size_t n_reused = 0;        // of them, already in the KV cache
  std::size_t n_decoded = 0;       // decoded for this turn: n_conversation - n_reused
  std::size_t n_generated = 0;     // reply tokens sampled
  double t_prompt = 0, t_generate = 0;
  std::string reply;  // as printed and as kept in the conversation
};

struct chat_limits {
  std::uint32_t n_batch = 2048;  // most tokens per decode call
  std::uint32_t n_ctx = 4096;    // cells the context has for the sequence
};

template <class Context>
class chat_session {
 public:
  /// Keeps references to `ctx` and `tok`. The context's sequence 0 must be empty.
  chat_session(Context& ctx, const mnemo::text::tokenizer& tok, mnemo::text::chat_template tmpl,
               chat_limits limits)
      : ctx_(&ctx), tok_(&tok), tmpl_(tmpl), limits_(limits) {}

  void add_system(std::string text) { messages_.push_back({"system", std::move(text)}); }

  const std::vector<mnemo::text::chat_message>& messages() const noexcept { return messages_; }
  /// The tokens the KV cache holds for sequence 0, position i at index i.
  const std::vector<mnemo::text::token_id>& cached() const noexcept { return cached_; }

  /// Adds a user message and decodes what the cache lacks of the formatted conversation
  /// (with the generation prompt); afterwards ctx.logits_ith(-1) predicts the reply.
  mnemo::status prompt(std::string user, chat_turn_report& r) {
    messages_.push_back({"user", std::move(user)});
    MNEMO_ASSIGN_OR_RETURN(std::string text, tmpl_.apply(messages_, true));
    const std::vector<mnemo::text::token_id> tokens = tok_->encode(text, {.parse_special = true});
    if (tokens.empty())
      return mnemo::make_status(mnemo::status_code::invalid_argument,
                                "chat: the conversation formats to no tokens");
    if (tokens.size() >= limits_.n_ctx)
      return mnemo::make_status(mnemo::status_code::no_space,
                                "chat: the conversation has %zu tokens; the context holds %u",
                                tokens.size(), limits_.n_ctx);
    // Keep the longest common prefix, but decode at least the last token: its logits
    // start the reply.
    std::size_t keep = static_cast<std::size_t>(
        std::mismatch(cached_.begin(), cached_.end(), tokens.begin(), tokens.end()).first -
        cached_.begin());
    keep = std::min(keep, tokens.size() - 1);
    const auto t0 = clock::now();
    if (keep < cached_.size()) {
      MNEMO_RETURN_IF_ERROR(ctx_->seq_rm(0, static_cast<mnemo::pos_t>(keep), -1));
      cached_.resize(keep);
    }
    MNEMO_RETURN_IF_ERROR(decode_tail(tokens, keep));
    r.t_prompt = seconds_since(t0);
    r.n_conversation = tokens.size();
    r.n_reused = keep;
    r.n_decoded = tokens.size() - keep;
    return {};
  }

  /// Samples the reply to the last prompt(), handing each printable piece to
  /// on_piece(std::string_view) as it comes, and adds it to the conversation. Stops at
  /// the end-of-sequence token, at the template's stop text (never shown:
  /// serve::stop_filter), after n_predict tokens, or when the context is full.
  template <class OnPiece>
  mnemo::status respond(mnemo::sampler& smp, std::uint32_t n_predict, OnPiece&& on_piece,
                        chat_turn_report& r) {
    const auto t0 = clock::now();
    // Control tokens are rendered so that a stop text made of them is seen.
    mnemo::text::stream_decoder dec(*tok_, {.render_special = true, .text_start = false});
    mnemo::serve::stop_filter filter({std::string(tmpl_.stop_text())});
    const auto show = [&](std::string_view s) {
      if (!s.empty()) on_piece(s);
    };
    for (std::uint32_t i = 0; i < n_predict; ++i) {
      const mnemo::text::token_id next = smp.sample(ctx_->logits_ith(-1));
      if (next < 0)
        return mnemo::make_status(mnemo::status_code::internal, "chat: no logits to sample");
      ++r.n_generated;
      if (next == tok_->eos()) break;
      MNEMO_ASSIGN_OR_RETURN(std::string_view piece, dec.push(next));
      show(filter.push(piece));
      // The token goes into the cache unless the reply ends with it.
      if (filter.stopped() || i + 1 == n_predict || cached_.size() + 1 >= limits_.n_ctx) break;
      MNEMO_RETURN_IF_ERROR(decode_tail(std::vector<mnemo::text::token_id>{next}, 0));
    }
    show(filter.push(dec.finish()));
    show(filter.flush());
    r.t_generate = seconds_since(t0);
    r.reply = filter.text();
    messages_.push_back({"assistant", filter.text()});
    return {};
  }

 private:
  using clock = std::chrono::steady_clock;

  static double seconds_since(clock::time_point t0) {
    return std::chrono::duration<double>(clock::now() - t0).count();
  }

  /// Decodes tokens[from..] at positions cached_.size().., in calls of at most n_batch
  /// tokens, with logits for the last one only.
  mnemo::status decode_tail(const std::vector<mnemo::text::token_id>& tokens, std::size_t from) {
    mnemo::batch b;
    for (std::size_t i = from; i < tokens.size(); ++i) {
      b.add(tokens[i], static_cast<mnemo::pos_t>(cached_.size()), {0}, i + 1 == tokens.size());
      cached_.push_back(tokens[i]);
      if (b.size() == limits_.n_batch || i + 1 == tokens.size()) {
        if (mnemo::status st = ctx_->decode(b); !st) {
          cached_.resize(cached_.size() - b.size());  // the failed call left nothing behind
          return st;
        }
        b.clear();
      }
    }
    return {};
  }

  Context* ctx_;
  const mnemo::text::tokenizer* tok_;
  mnemo::text::chat_template tmpl_;
  chat_limits limits_;
  std::vector<mnemo::text::chat_message> messages_;
  std::vector<mnemo::text::token_id> cached_;
};

}  // namespace mnemo_examples
