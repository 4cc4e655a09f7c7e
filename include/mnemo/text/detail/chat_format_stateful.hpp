// The families whose output for a message depends on the messages around it: a turn
// opened by a user message and closed by the reply (llama 2, mistral v1/v3), a system
// message folded into the next user turn (gemma, orion), or a first or last message
// written differently (monarch, rwkv-world, gigachat, hunyuan, pangu). Each is what
// llama.cpp's llm_chat_apply_template writes, byte for byte.
#pragma once

#if !defined(MNEMO_TEXT_DETAIL_OK_)
#error "mnemo/text/detail/* headers are internal: include mnemo/text/chat_template.hpp"
#endif

#include <cstddef>
#include <span>
#include <string>
#include <string_view>

#include "mnemo/text/chat_types.hpp"
#include "mnemo/text/detail/chat_format_turns.hpp"  // put()
#include "mnemo/text/detail/chat_text.hpp"

namespace mnemo::text::detail {

/// llama 2: "[INST] " opens a turn (the very first without BOS: the tokenizer adds it),
/// a reply closes it. Without <<SYS>> support the system text goes into the first turn.
inline void write_llama2(chat_template_id id, std::span<const chat_message> messages,
                         std::string& out) {
  const bool system_block = id != chat_template_id::llama2;
  const bool bos_inside_history = id == chat_template_id::llama2_sys_bos;
  const bool strip = id == chat_template_id::llama2_sys_strip;
  bool inside_turn = true;
  put(out, "[INST] ");
  for (const chat_message& m : messages) {
    const std::string_view c = strip ? trim(m.content) : std::string_view(m.content);
    if (!inside_turn) {
      inside_turn = true;
      put(out, bos_inside_history ? "<s>[INST] " : "[INST] ");
    }
    if (m.role == "system") {
      if (system_block)
        put(out, "<<SYS>>\n", c, "\n<</SYS>>\n\n");
      else
        put(out, c, "\n");
    } else if (m.role == "user") {
      put(out, c, " [/INST]");
    } else {
      put(out, c, "</s>");
      inside_turn = false;
    }
  }
}

/// Mistral's official v1, v3 and v3-tekken templates: they differ in the spaces around
/// [INST] and in v3 trimming replies.
inline void write_mistral(chat_template_id id, std::span<const chat_message> messages,
                          std::string& out) {
  const std::string_view lead = id == chat_template_id::mistral_v1 ? " " : "";
  const std::string_view trail = id == chat_template_id::mistral_v3_tekken ? "" : " ";
  const bool trim_reply = id == chat_template_id::mistral_v3;
  bool inside_turn = false;
  for (const chat_message& m : messages) {
    if (!inside_turn) {
      put(out, lead, "[INST]", trail);
      inside_turn = true;
    }
    if (m.role == "system") {
      put(out, m.content, "\n\n");
    } else if (m.role == "user") {
      put(out, m.content, lead, "[/INST]");
    } else {
      put(out, trail, trim_reply ? trim(m.content) : std::string_view(m.content), "</s>");
      inside_turn = false;
    }
  }
}

/// Gemma has no system role: system texts (trimmed, concatenated) open the next user
/// turn. Replies are the "model" role.
inline void write_gemma(std::span<const chat_message> messages, std::string& out) {
  std::string system;
  for (const chat_message& m : messages) {
    if (m.role == "system") {
      system.append(trim(m.content));
      continue;
    }
    const std::string_view role = m.role == "assistant" ? "model" : std::string_view(m.role);
    put(out, "<start_of_turn>", role, "\n");
    if (!system.empty() && role != "model") {
      put(out, system, "\n\n");
      system.clear();
    }
    put(out, trim(m.content), "<end_of_turn>\n");
  }
}

/// Orion (OrionStarAI/Orion-14B-Chat) has no system role either: the system texts open
/// the next user message.
inline void write_orion(std::span<const chat_message> messages, std::string& out) {
  std::string system;
  for (const chat_message& m : messages) {
    if (m.role == "system") {
      system.append(m.content);
    } else if (m.role == "user") {
      put(out, "Human: ");
      if (!system.empty()) {
        put(out, system, "\n\n");
        system.clear();
      }
      put(out, m.content, "\n\nAssistant: </s>");
    } else {
      put(out, m.content, "</s>");
    }
  }
}

/// Writes the messages of a family whose output depends on a message's neighbours or
/// index; false (nothing written) for a turn-by-turn family.
inline bool write_stateful(chat_template_id id, std::span<const chat_message> messages,
                           std::string& out) {
  using enum chat_template_id;
  const std::size_t n = messages.size();
  switch (id) {
    case llama2:
    case llama2_sys:
    case llama2_sys_bos:
    case llama2_sys_strip: write_llama2(id, messages, out); return true;
    case mistral_v1:
    case mistral_v3:
    case mistral_v3_tekken: write_mistral(id, messages, out); return true;
    case gemma: write_gemma(messages, out); return true;
    case orion: write_orion(messages, out); return true;
    case monarch:  // BOS before every message but the first (the tokenizer adds that one)
      for (std::size_t i = 0; i < n; ++i)
        put(out, i == 0 ? "" : "<s>", messages[i].role, "\n", messages[i].content, "</s>\n");
      return true;
    case rwkv_world:  // needs "\n\n" as its end-of-turn token
      for (std::size_t i = 0; i < n; ++i) {
        const chat_message& m = messages[i];
        if (m.role == "system") {
          put(out, "System: ", trim(m.content), "\n\n");
        } else if (m.role == "user") {
          put(out, "User: ", trim(m.content), "\n\n");
          if (i + 1 == n) put(out, "Assistant:");
        } else if (m.role == "assistant") {
          put(out, "Assistant: ", trim(m.content), "\n\n");
        }
      }
      return true;
    case gigachat: {
      const bool has_system = n > 0 && messages[0].role == "system";
      put(out, "<s>");
      if (has_system) put(out, messages[0].content, "<|message_sep|>");
      for (std::size_t i = has_system ? 1 : 0; i < n; ++i) {
        const chat_message& m = messages[i];
        if (m.role == "user")
          put(out, "user<|role_sep|>", m.content,
              "<|message_sep|>available functions<|role_sep|>[]<|message_sep|>");
        else if (m.role == "assistant")
          put(out, "assistant<|role_sep|>", m.content, "<|message_sep|>");
      }
      return true;
    }
    case hunyuan_dense:
      for (std::size_t i = 0; i < n; ++i) {
        const chat_message& m = messages[i];
        if (i == 0 && m.role == "system") put(out, m.content, "<｜hy_place▁holder▁no▁3｜>");
        if (m.role == "assistant")
          put(out, "<｜hy_Assistant｜>", m.content, "<｜hy_place▁holder▁no▁2｜>");
        else if (m.role == "user")
          put(out, "<｜hy_User｜>", m.content, "<｜hy_Assistant｜>");
      }
      return true;
    case hunyuan_vl:
      put(out, "<｜hy_begin▁of▁sentence｜>");
      for (std::size_t i = 0; i < n; ++i) {
        const chat_message& m = messages[i];
        if (i == 0 && m.role == "system")
          put(out, m.content, "<｜hy_place▁holder▁no▁3｜>");
        else if (m.role == "user")
          put(out, m.content, "<｜hy_User｜>");
        else if (m.role == "assistant")
          put(out, m.content, "<｜hy_Assistant｜>");
      }
      return true;
    case pangu_embedded:
      for (std::size_t i = 0; i < n; ++i) {
        const chat_message& m = messages[i];
        if (i == 0 && m.role != "system") put(out, "[unused9]系统：[unused10]");
        const std::string_view who = m.role == "system"      ? "系统："
                                     : m.role == "user"      ? "用户："
                                     : m.role == "assistant" ? "助手："
                                     : m.role == "tool"      ? "工具："
                                     : m.role == "function"  ? "方法："
                                                             : "";
        if (!who.empty()) put(out, "[unused9]", who, m.content, "[unused10]");
      }
      return true;
    default: return false;
  }
}

}  // namespace mnemo::text::detail
