// The families whose messages are written one by one, each independently of the others
// (at most a fixed opening before the first): what llama.cpp's llm_chat_apply_template
// writes for each, byte for byte. A role a family does not name goes where llama.cpp's
// if/else chain sends it (often nowhere).
#pragma once

#if !defined(MNEMO_TEXT_DETAIL_OK_)
#error "mnemo/text/detail/* headers are internal: include mnemo/text/chat_template.hpp"
#endif

#include <span>
#include <string>
#include <string_view>

#include "mnemo/text/chat_types.hpp"
#include "mnemo/text/detail/chat_text.hpp"

namespace mnemo::text::detail {

template <class... Parts>
void put(std::string& out, const Parts&... parts) {
  (out.append(std::string_view(parts)), ...);
}

/// What a turn-by-turn family writes before its first message.
inline void write_opening(chat_template_id id, std::span<const chat_message> messages,
                          std::string& out) {
  using enum chat_template_id;
  switch (id) {
    case chatglm3: put(out, "[gMASK]sop"); break;
    case chatglm4: put(out, "[gMASK]<sop>"); break;
    case smolvlm: put(out, "<|im_start|>"); break;  // its BOS, not a chatml turn
    case bailing2:
      if (messages.empty() || messages.front().role != "system")
        put(out, "<role>SYSTEM</role>detailed thinking off<|role_end|>");
      break;
    default: break;
  }
}

/// Writes one message of a turn-by-turn family. @pre write_stateful(id, ...) is false.
inline void write_turn(chat_template_id id, const chat_message& m, std::string& out) {
  using enum chat_template_id;
  const std::string_view role = m.role;
  const std::string_view c = m.content;
  const bool sys = role == "system", user = role == "user", assistant = role == "assistant";
  switch (id) {
    case chatml: put(out, "<|im_start|>", role, "\n", c, "<|im_end|>\n"); return;
    case mistral_v7:
    case mistral_v7_tekken: {
      const std::string_view sp = id == mistral_v7 ? " " : "";
      if (sys)
        put(out, "[SYSTEM_PROMPT]", sp, c, "[/SYSTEM_PROMPT]");
      else if (user)
        put(out, "[INST]", sp, c, "[/INST]");
      else
        put(out, sp, c, "</s>");
      return;
    }
    case phi3: put(out, "<|", role, "|>\n", c, "<|end|>\n"); return;
    case phi4: put(out, "<|im_start|>", role, "<|im_sep|>", c, "<|im_end|>"); return;
    case falcon3: put(out, "<|", role, "|>\n", c, "\n"); return;
    case zephyr: put(out, "<|", role, "|>\n", c, "<|endoftext|>\n"); return;
    case openchat:
      if (sys) {
        put(out, c, "<|end_of_turn|>");
      } else {
        std::string titled(role);
        if (!titled.empty()) titled[0] = to_upper_ascii(titled[0]);
        put(out, "GPT4 Correct ", titled, ": ", c, "<|end_of_turn|>");
      }
      return;
    case vicuna:
    case vicuna_orca:
      if (sys && id == vicuna_orca)
        put(out, "SYSTEM: ", c, "\n");
      else if (sys)
        put(out, c, "\n\n");
      else if (user)
        put(out, "USER: ", c, "\n");
      else if (assistant)
        put(out, "ASSISTANT: ", c, "</s>\n");
      return;
    case deepseek:
      if (sys)
        put(out, c);
      else if (user)
        put(out, "### Instruction:\n", c, "\n");
      else if (assistant)
        put(out, "### Response:\n", c, "\n<|EOT|>\n");
      return;
    case deepseek2:
      if (sys)
        put(out, c, "\n\n");
      else if (user)
        put(out, "User: ", c, "\n\n");
      else if (assistant)
        put(out, "Assistant: ", c, "<｜end▁of▁sentence｜>");
      return;
    case deepseek3:
      if (sys)
        put(out, c, "\n\n");
      else if (user)
        put(out, "<｜User｜>", c);
      else if (assistant)
        put(out, "<｜Assistant｜>", c, "<｜end▁of▁sentence｜>");
      return;
    case deepseek_ocr: put(out, media_markers_first(c)); return;
    case command_r: {
      const std::string_view who = sys         ? "<|SYSTEM_TOKEN|>"
                                   : user      ? "<|USER_TOKEN|>"
                                   : assistant ? "<|CHATBOT_TOKEN|>"
                                               : "";
      if (!who.empty()) put(out, "<|START_OF_TURN_TOKEN|>", who, trim(c), "<|END_OF_TURN_TOKEN|>");
      return;
    }
    case llama3:
      put(out, "<|start_header_id|>", role, "<|end_header_id|>\n\n", trim(c), "<|eot_id|>");
      return;
    case chatglm3: put(out, "<|", role, "|>\n ", c); return;
    case chatglm4:
    case glmedge: put(out, "<|", role, "|>\n", c); return;
    case minicpm:
      if (user)
        put(out, "<用户>", trim(c), "<AI>");
      else
        put(out, trim(c));
      return;
    case exaone3:
    case exaone4:
      if (sys)
        put(out, "[|system|]", trim(c), "[|endofturn|]\n");
      else if (user)
        put(out, "[|user|]", trim(c), "\n");
      else if (assistant)
        put(out, "[|assistant|]", trim(c), "[|endofturn|]\n");
      else if (role == "tool" && id == exaone4)
        put(out, "[|tool|]", trim(c), "[|endofturn|]\n");
      return;
    case exaone_moe:
      if (sys || user || assistant || role == "tool")
        put(out, "<|", role, "|>\n", trim(c), "<|endofturn|>\n");
      return;
    case granite:
      put(out, "<|start_of_role|>", role, "<|end_of_role|>");
      if (role == "assistant_tool_call") put(out, "<|tool_call|>");
      put(out, c, "<|end_of_text|>\n");
      return;
    case granite_4_0:
    case granite_4_1:
      if (role == "assistant_tool_call")
        put(out, "<|start_of_role|>assistant<|end_of_role|><|tool_call|>");
      else
        put(out, "<|start_of_role|>", role, "<|end_of_role|>");
      put(out, c, "<|end_of_text|>\n");
      return;
    case megrez: put(out, "<|role_start|>", role, "<|role_end|>", c, "<|turn_end|>"); return;
    case yandex:
      if (user)
        put(out, " Пользователь: ", c, "\n\n");
      else if (assistant)
        put(out, " Ассистент: ", c, "\n\n");
      return;
    case bailing:
    case bailing_think:
    case bailing2: {
      std::string upper = user ? std::string("HUMAN") : std::string(role);
      for (char& ch : upper) ch = to_upper_ascii(ch);
      put(out, "<role>", upper, "</role>", c);
      if (id == bailing2) put(out, "<|role_end|>");
      return;
    }
    case llama4:
      put(out, "<|header_start|>", role, "<|header_end|>\n\n", trim(c), "<|eot|>");
      return;
    case smolvlm:
      if (sys)
        put(out, c, "\n\n");
      else if (user)
        put(out, "User: ", c, "<end_of_utterance>\n");
      else
        put(out, "Assistant: ", c, "<end_of_utterance>\n");
      return;
    case dots1:
      if (sys)
        put(out, "<|system|>", c, "<|endofsystem|>");
      else if (user)
        put(out, "<|userprompt|>", c, "<|endofuserprompt|>");
      else
        put(out, "<|response|>", c, "<|endofresponse|>");
      return;
    case hunyuan_moe:
      if (sys)
        put(out, "<|startoftext|>", c, "<|extra_4|>");
      else if (assistant)
        put(out, c, "<|eos|>");
      else
        put(out, "<|startoftext|>", c, "<|extra_0|>");
      return;
    case gpt_oss:
      put(out, "<|start|>", role, "<|message|>", c, assistant ? "<|return|>" : "<|end|>");
      return;
    case kimi_k2:
      if (sys)
        put(out, "<|im_system|>system<|im_middle|>");
      else if (user)
        put(out, "<|im_user|>user<|im_middle|>");
      else if (assistant)
        put(out, "<|im_assistant|>assistant<|im_middle|>");
      else if (role == "tool")
        put(out, "<|im_system|>tool<|im_middle|>");
      put(out, c, "<|im_end|>");
      return;
    case seed_oss:
      put(out, "<seed:bos>", role, "\n", assistant ? trim(c) : c, "<seed:eos>");
      return;
    case grok2:
      if (sys)
        put(out, "System: ", trim(c), "<|separator|>\n\n");
      else if (user)
        put(out, "Human: ", trim(c), "<|separator|>\n\n");
      else if (assistant)
        put(out, "Assistant: ", c, "<|separator|>\n\n");
      return;
    case solar_open: put(out, "<|begin|>", role, "<|content|>", c, "<|end|>"); return;
    default: return;
  }
}

}  // namespace mnemo::text::detail
