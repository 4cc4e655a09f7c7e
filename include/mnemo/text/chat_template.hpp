// Chat templates without a Jinja engine: a conversation (role, content messages) becomes
// the prompt text a chat model was trained on, for the template families llama.cpp
// formats itself (src/llama-chat.cpp), with the same output byte for byte. A family is
// chosen by llama.cpp's name for it, or detected from a GGUF's Jinja template
// (tokenizer.chat_template) with llama.cpp's substring tests, in its order.
//
//   MNEMO_ASSIGN_OR_RETURN(auto tmpl, text::chat_template::from_gguf(file));
//   std::vector<text::chat_message> chat = {{"system", "Be brief."}, {"user", "Hi"}};
//   MNEMO_ASSIGN_OR_RETURN(std::string prompt, tmpl.apply(chat));  // + generation prompt
//   tok.encode(prompt, {.parse_special = true});                   // markers -> their ids
#pragma once

#include <cstddef>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "mnemo/base/result.hpp"
#include "mnemo/base/status.hpp"
#include "mnemo/gguf/file.hpp"
#include "mnemo/text/chat_types.hpp"

#pragma push_macro("MNEMO_TEXT_DETAIL_OK_")
#undef MNEMO_TEXT_DETAIL_OK_
#define MNEMO_TEXT_DETAIL_OK_ 1
#include "mnemo/text/detail/chat_catalog.hpp"
#include "mnemo/text/detail/chat_detect.hpp"
#include "mnemo/text/detail/chat_format_stateful.hpp"
#include "mnemo/text/detail/chat_format_turns.hpp"
#pragma pop_macro("MNEMO_TEXT_DETAIL_OK_")

namespace mnemo::text {

class chat_template {
 public:
  /// The family llama.cpp's name stands for ("chatml", "llama3", "mistral-v7", ...; see
  /// names()). `unsupported` names the unknown name and lists the known ones.
  static result<chat_template> from_name(std::string_view name) {
    if (const auto id = detail::id_by_name(name)) return chat_template(*id);
    const std::string_view head = quoted_head(name);
    return make_status(status_code::unsupported, "chat template: unknown name '%.*s%s' (known: %s)",
                       static_cast<int>(head.size()), head.data(),
                       head.size() < name.size() ? "..." : "", known_names().c_str());
  }

  /// What llama.cpp makes of a template string: a name (as from_name), else the family
  /// whose markers a Jinja template contains. A string that is neither is `unsupported`;
  /// for a Jinja template the message says that no family matched and quotes its start.
  static result<chat_template> detect(std::string_view tmpl) {
    if (const auto id = detail::id_by_name(tmpl)) return chat_template(*id);
    if (const auto id = detail::detect_chat_family(tmpl)) return chat_template(*id);
    if (looks_like_jinja(tmpl)) {
      const std::string_view head = quoted_head(tmpl);
      return make_status(status_code::unsupported,
                         "chat template: the Jinja template '%.*s%s' (%zu bytes) matches none "
                         "of the built-in families, and mnemo has no Jinja engine; choose a "
                         "family by name (%s)",
                         static_cast<int>(head.size()), head.data(),
                         head.size() < tmpl.size() ? "..." : "", tmpl.size(),
                         known_names().c_str());
    }
    return from_name(tmpl);
  }

  /// Detects the family of the file's tokenizer.chat_template (or of
  /// tokenizer.chat_template.VARIANT, e.g. "tool_use"). `not_found` when the key is
  /// absent, `invalid_argument` when it is not a string, else as detect().
  static result<chat_template> from_gguf(const gguf::file& f, std::string_view variant = {}) {
    std::string key = "tokenizer.chat_template";
    if (!variant.empty()) key.append(".").append(variant);
    if (f.find(key) == nullptr)
      return make_status(status_code::not_found, "chat template: the file has no key %s",
                         key.c_str());
    MNEMO_ASSIGN_OR_RETURN(std::string_view tmpl, f.get_string(key));
    return detect(tmpl);
  }

  /// llama.cpp's names, in the order of chat_template_id (dots1 is detected only).
  static std::vector<std::string_view> names() {
    std::vector<std::string_view> out;
    for (const auto& t : detail::k_chat_templates)
      if (t.by_name) out.push_back(t.name);
    return out;
  }

  chat_template_id id() const noexcept { return id_; }
  std::string_view name() const noexcept { return info().name; }

  /// The prompt text of `messages`, followed by the text that opens the assistant's
  /// reply when `add_generation_prompt` (families whose llama.cpp code ignores add_ass
  /// end a user turn with it anyway). Control markers are plain text here: encode with
  /// parse_special so that they become their token ids. `invalid_argument` names a
  /// message with an empty role.
  result<std::string> apply(std::span<const chat_message> messages,
                            bool add_generation_prompt = true) const {
    std::string out;
    MNEMO_RETURN_IF_ERROR(apply_append(messages, add_generation_prompt, out));
    return out;
  }

  /// apply(), appending to `out` (which keeps its content on error).
  status apply_append(std::span<const chat_message> messages, bool add_generation_prompt,
                      std::string& out) const {
    for (std::size_t i = 0; i < messages.size(); ++i)
      if (messages[i].role.empty())
        return make_status(status_code::invalid_argument,
                           "chat template: message %zu has an empty role", i);
    if (!detail::write_stateful(id_, messages, out)) {
      detail::write_opening(id_, messages, out);
      for (const chat_message& m : messages) detail::write_turn(id_, m, out);
    }
    if (add_generation_prompt) out.append(info().generation_prompt);
    return {};
  }

  /// The text this family writes right after an assistant reply: a model trained on it
  /// ends its turn there, so generation stops at it (besides the vocabulary's
  /// end-of-generation token). Empty where the family writes only white space that also
  /// occurs inside replies (falcon3) or nothing (deepseek-ocr).
  std::string_view stop_text() const noexcept { return info().stop_text; }

  /// The text apply() appends for add_generation_prompt (empty for families that have
  /// none).
  std::string_view generation_prompt() const noexcept { return info().generation_prompt; }

 private:
  explicit chat_template(chat_template_id id) noexcept : id_(id) {}

  const detail::chat_template_info& info() const noexcept { return detail::info_of(id_); }

  static bool looks_like_jinja(std::string_view s) noexcept {
    return s.find("{%") != std::string_view::npos || s.find("{{") != std::string_view::npos;
  }

  /// The first 60 bytes of `s` for a message, not cutting a UTF-8 character.
  static std::string_view quoted_head(std::string_view s) noexcept {
    constexpr std::size_t k_quote = 60;
    if (s.size() <= k_quote) return s;
    std::size_t n = k_quote;
    while (n > 0 && (static_cast<unsigned char>(s[n]) & 0xC0) == 0x80) --n;
    return s.substr(0, n);
  }

  static std::string known_names() {
    std::string s;
    for (const std::string_view n : names()) s.append(s.empty() ? "" : ", ").append(n);
    return s;
  }

  chat_template_id id_;
};

}  // namespace mnemo::text
