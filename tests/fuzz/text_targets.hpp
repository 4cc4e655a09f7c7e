// Fuzz targets for the readers of host input: the tokenizer (arbitrary bytes, invalid
// UTF-8, huge inputs; SentencePiece, several BPE pre-tokenizers and WordPiece), the
// chat-template formatter (built-in families and template detection over arbitrary
// messages) and batch validation (arbitrary tokens, positions, sequence sets, output
// flags and embedding rows against arbitrary limits and memory positions).
//
// What must hold: encode() returns ids inside the vocabulary and decoding them (whole
// and streamed) succeeds or refuses with a message; a refusal is never `internal` and
// always has a message; an accepted batch names only valid ids and positions.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "fuzz/fuzz_support.hpp"

#include "mnemo/batch/batch.hpp"
#include "mnemo/batch/validate.hpp"
#include "mnemo/gguf/file.hpp"
#include "mnemo/gguf/writer.hpp"
#include "mnemo/text/chat_template.hpp"
#include "mnemo/text/decoder.hpp"
#include "mnemo/text/tokenizer.hpp"

#ifndef MNEMO_FIXTURES_DIR
#define MNEMO_FIXTURES_DIR ""
#endif

namespace mnemo::fuzz {

namespace text_detail {

inline std::string refusal_problem(const status& st) {
  if (st.message().empty()) return "refused without a message";
  if (st.code() == status_code::internal) return "internal error: " + st.to_string();
  return {};
}

/// A WordPiece vocabulary (no fixture has one): specials, word starts and pieces.
inline std::optional<text::tokenizer> wordpiece() {
  const std::string ws = "\xE2\x96\x81";
  const std::vector<std::string> tokens = {
      "[PAD]", "[UNK]",  "[CLS]",  "[SEP]",  ws + "hello",       ws + "world",        ws + "un",
      "aff",   "able",   ws + "!", ws + ",", ws + "caf\xC3\xA9", ws + "\xE6\x88\x91", ws + "x",
      "y",     ws + "a", "a"};
  std::vector<std::int32_t> types(tokens.size(), 1);
  types[0] = types[2] = types[3] = 3;
  types[1] = 2;
  gguf::writer w;
  w.add_string("tokenizer.ggml.model", "bert")
      .add_array("tokenizer.ggml.tokens", tokens)
      .add_array<std::int32_t>("tokenizer.ggml.token_type", types)
      .add("tokenizer.ggml.unknown_token_id", std::uint32_t{1})
      .add("tokenizer.ggml.bos_token_id", std::uint32_t{2})
      .add("tokenizer.ggml.seperator_token_id", std::uint32_t{3})
      .add("tokenizer.ggml.padding_token_id", std::uint32_t{0});
  auto bytes = w.to_bytes();
  if (!bytes) return std::nullopt;
  auto f = gguf::file::from_owned_bytes(std::move(bytes).value());
  if (!f) return std::nullopt;
  auto t = text::tokenizer::from_gguf(*f);
  if (!t) return std::nullopt;
  return std::move(t).value();
}

/// The vocabularies under test, loaded once; those whose fixture is missing are absent.
inline const std::vector<text::tokenizer>& tokenizers() {
  static const std::vector<text::tokenizer> all = [] {
    std::vector<text::tokenizer> v;
    for (const char* name : {"llama-spm", "gpt-2", "gpt2-pre-llama-bpe", "gpt2-pre-qwen35",
                             "gpt2raw-pre-gemma4", "phi-3"}) {
      auto t = text::tokenizer::open(std::string(MNEMO_FIXTURES_DIR) + "/tokenizer/ggml-vocab-" +
                                     name + ".gguf");
      if (t) v.push_back(std::move(t).value());
    }
    if (auto t = wordpiece()) v.push_back(std::move(*t));
    return v;
  }();
  return all;
}

}  // namespace text_detail

/// Input: u8 vocabulary, u8 options (bit 0 add_special, bit 1 parse_special, bit 2
/// render_special), then the text.
inline std::string tokenizer_target(const std::uint8_t* data, std::size_t size) {
  const auto& toks = text_detail::tokenizers();
  if (toks.empty()) return {};
  input_cursor in(data, size);
  const text::tokenizer& tok = toks[in.u8() % toks.size()];
  const std::uint8_t opt = in.u8();
  const auto rest = in.rest();
  const std::string_view txt(reinterpret_cast<const char*>(rest.data()), rest.size());
  const std::vector<token_id> ids =
      tok.encode(txt, {.add_special = (opt & 1) != 0, .parse_special = (opt & 2) != 0});
  for (token_id id : ids)
    if (id < 0 || static_cast<std::size_t>(id) >= tok.size())
      return "encode produced id " + std::to_string(id) + " outside the vocabulary";
  const text::decode_options d{.render_special = (opt & 4) != 0};
  auto whole = tok.decode(ids, d);
  if (!whole) {
    ++outcomes().refused;
    return text_detail::refusal_problem(whole.error());
  }
  text::stream_decoder stream(tok, d);
  std::string streamed;
  for (token_id id : ids) {
    auto piece = stream.push(id);
    if (!piece)
      return "the stream decoder refused an id decode() accepted: " + piece.error().to_string();
    streamed += *piece;
  }
  streamed += stream.finish();
  ++outcomes().accepted;
  return {};
}

/// Input: u8 mode (bit 7: detect a template from the first segment, else built-in family
/// mode % count; bit 6: add_generation_prompt), then 0-separated role / content segments.
inline std::string chat_template_target(const std::uint8_t* data, std::size_t size) {
  input_cursor in(data, size);
  const std::uint8_t mode = in.u8();
  const auto rest = in.rest();
  std::vector<std::string> seg(1);
  for (std::uint8_t c : rest) {
    if (c == 0)
      seg.emplace_back();
    else
      seg.back() += static_cast<char>(c);
  }
  std::size_t at = 0;
  result<text::chat_template> tmpl = make_status(status_code::internal, "unset");
  if (mode & 0x80) {
    tmpl = text::chat_template::detect(seg[at++]);
  } else {
    const auto names = text::chat_template::names();
    if (names.empty()) return "no built-in chat templates";
    tmpl = text::chat_template::from_name(names[mode % names.size()]);
    if (!tmpl) return "a built-in name is refused: " + tmpl.error().to_string();
  }
  if (!tmpl) {
    ++outcomes().refused;
    return text_detail::refusal_problem(tmpl.error());
  }
  std::vector<text::chat_message> msgs;
  for (; at + 1 < seg.size(); at += 2) msgs.push_back({seg[at], seg[at + 1]});
  auto out = tmpl->apply(msgs, (mode & 0x40) != 0);
  ++(out ? outcomes().accepted : outcomes().refused);
  return out ? std::string{} : text_detail::refusal_problem(out.error());
}

namespace text_detail {
/// Positions a memory holds per sequence, from the input.
struct fuzz_positions {
  std::array<pos_t, 8> min{}, max{};
  pos_t pos_min(seq_id s) const { return s >= 0 && s < 8 ? min[s] : -1; }
  pos_t pos_max(seq_id s) const { return s >= 0 && s < 8 ? max[s] : -1; }
};
}  // namespace text_detail

/// Input: limits (n_vocab, n_embd, n_seq_max, n_batch_max, embeddings_all), memory
/// positions for sequences 0..7, then tokens: u8 flags (bits 0-1 seq count, 2-3 output
/// none/no/yes, 4 auto position, 5 embedding row), u32 token, u32 position, seq ids as
/// u8 - 4 (negative ids too), an embedding row of n_embd or n_embd ^ (flag bit 6) floats.
inline std::string batch_target(const std::uint8_t* data, std::size_t size) {
  input_cursor in(data, size);
  batch_limits lim;
  lim.n_vocab = in.u8();
  lim.n_embd = in.u8() % 8;
  lim.n_seq_max = in.u8() % 10;
  lim.n_batch_max = in.u8() % 64;
  lim.embeddings_all = (in.u8() & 1) != 0;
  text_detail::fuzz_positions mem;
  for (int s = 0; s < 8; ++s) {
    const std::uint8_t a = in.u8(), b = in.u8();
    mem.min[s] = a == 0 ? -1 : a - 1;
    mem.max[s] = a == 0 ? -1 : mem.min[s] + b;
  }
  batch b;
  std::vector<float> row;
  for (int n = 0; !in.done() && n < 256; ++n) {
    const std::uint8_t f = in.u8();
    const auto token = static_cast<token_id>(in.u32() % 300u) - 20;
    const pos_t pos = (f & 16) ? batch::k_auto_pos : static_cast<pos_t>(in.u32() % 400u) - 10;
    std::vector<seq_id> seqs;
    for (int k = 0; k < (f & 3); ++k) seqs.push_back(static_cast<seq_id>(in.u8() % 16) - 4);
    const int out = (f >> 2) & 3;
    if (f & 32) {
      row.assign(lim.n_embd ^ ((f & 64) ? 1u : 0u), 0.5f);
      if (out == 0)
        b.add_embd(row, seqs);
      else
        b.add_embd(row, pos, seqs, out == 2);
    } else if (pos == batch::k_auto_pos) {
      if (out == 0)
        b.add(token, seqs);
      else
        b.add(token, seqs, out == 2);
    } else {
      b.add(token, pos, seqs, out != 1);
    }
  }
  auto vb = validate(b, lim, mem);
  if (!vb) {
    ++outcomes().refused;
    return text_detail::refusal_problem(vb.error());
  }
  ++outcomes().accepted;
  for (std::uint32_t i = 0; i < vb->n_tokens(); ++i) {
    if (!vb->has_embeddings() && lim.n_vocab != 0 &&
        (vb->token(i) < 0 || static_cast<std::uint32_t>(vb->token(i)) >= lim.n_vocab))
      return "accepted token " + std::to_string(vb->token(i)) + " outside the vocabulary";
    if (vb->pos(i) < 0) return "accepted a negative position";
    const seq_id s = vb->primary(i);
    if (s < 0 || static_cast<std::uint32_t>(s) >= std::max<std::uint32_t>(lim.n_seq_max, 1))
      return "accepted sequence id " + std::to_string(s);
  }
  return {};
}

inline std::vector<std::vector<std::uint8_t>> tokenizer_seeds() {
  std::vector<std::vector<std::uint8_t>> out;
  const std::vector<std::string> texts = {
      "Hello world",
      " Hello  World!\n\tnew line",
      "\xC3\x84pfel 4 \xC2\xBD months 12345",
      "<s>[INST] <<SYS>> x <</SYS>> y [/INST]</s> <|endoftext|> <|im_start|>",
      "\xE6\x88\x91\xE4\xBB\xAC caf\xC3\xA9 \xF0\x9F\x98\x80 \xE2\x96\x81",
      "\xFF\xFE\xC3 broken \xE2\x82 utf8 \xF0\x9F",
      "hello, world! unaffable xy a"};
  const std::size_t n = std::max<std::size_t>(text_detail::tokenizers().size(), 1);
  for (std::size_t v = 0; v < n; ++v)
    for (std::size_t i = 0; i < texts.size(); ++i) {
      std::vector<std::uint8_t> in{static_cast<std::uint8_t>(v), static_cast<std::uint8_t>(i & 7)};
      in.insert(in.end(), texts[i].begin(), texts[i].end());
      out.push_back(std::move(in));
    }
  return out;
}

inline std::vector<std::vector<std::uint8_t>> chat_template_seeds() {
  std::vector<std::vector<std::uint8_t>> out;
  auto add = [&](std::uint8_t mode, const std::vector<std::string>& segs) {
    std::vector<std::uint8_t> in{mode};
    for (std::size_t i = 0; i < segs.size(); ++i) {
      if (i > 0) in.push_back(0);
      in.insert(in.end(), segs[i].begin(), segs[i].end());
    }
    out.push_back(std::move(in));
  };
  const std::vector<std::string> conv = {"system",    "Be terse.", "user", "Hi \xC3\xA9",
                                         "assistant", "Hello!",    "user", "Again"};
  for (std::uint8_t m = 0; m < 40; ++m)
    add(static_cast<std::uint8_t>(m | (m & 1 ? 0x40 : 0)), conv);
  for (const char* t :
       {"{% for message in messages %}<|im_start|>{{ message['role'] }}\n{{ message['content'] "
        "}}<|im_end|>\n{% endfor %}",
        "{{ bos_token }}{% for message in messages %}[INST] {{ message['content'] }} [/INST]{% "
        "endfor %}",
        "<start_of_turn>user\n{{ content }}<end_of_turn>", "chatml", "llama3", "gemma"}) {
    std::vector<std::string> segs{t};
    segs.insert(segs.end(), conv.begin(), conv.end());
    add(0xC0, segs);
  }
  return out;
}

inline std::vector<std::vector<std::uint8_t>> batch_seeds() {
  std::vector<std::vector<std::uint8_t>> out;
  // limits: n_vocab 200, n_embd 4, n_seq_max 4, n_batch_max 0 (unlimited), no embeddings_all
  const std::vector<std::uint8_t> head = {200, 4, 4, 0, 0};
  auto tokens = [&](int n, int seq, bool embd, bool auto_pos) {
    std::vector<std::uint8_t> in = head;
    for (int s = 0; s < 8; ++s) in.insert(in.end(), {static_cast<std::uint8_t>(s == 1), 2});
    for (int i = 0; i < n; ++i) {
      const std::uint8_t f = static_cast<std::uint8_t>(1 | (i + 1 == n ? 8 : 4) |
                                                       (auto_pos ? 16 : 0) | (embd ? 32 : 0));
      in.push_back(f);
      for (int k = 0; k < 4; ++k) in.push_back(k == 0 ? static_cast<std::uint8_t>(20 + i) : 0);
      if (!auto_pos)
        for (int k = 0; k < 4; ++k)
          in.push_back(k == 0 ? static_cast<std::uint8_t>(10 + i + (seq == 1 ? 3 : 0)) : 0);
      in.push_back(static_cast<std::uint8_t>(seq + 4));
    }
    out.push_back(std::move(in));
  };
  tokens(6, 0, false, false);
  tokens(5, 1, false, false);
  tokens(4, 2, false, true);
  tokens(3, 0, true, false);
  tokens(4, 3, true, true);
  return out;
}

/// Huge inputs for the tokenizer: now and then an input repeated to 16-48 KiB.
inline void grow_sometimes(std::vector<std::uint8_t>& v, splitmix64& g) {
  if (v.size() < 3 || g.next() % 200 != 0) return;
  const std::size_t target = (16u << 10) + g.next() % (32u << 10);
  const std::vector<std::uint8_t> body(v.begin() + 2, v.end());
  while (v.size() < target) v.insert(v.end(), body.begin(), body.end());
}

inline std::vector<target_info> text_targets() {
  return {{"tokenizer", &tokenizer_target, &tokenizer_seeds},
          {"chat_template", &chat_template_target, &chat_template_seeds},
          {"batch", &batch_target, &batch_seeds}};
}

}  // namespace mnemo::fuzz
