// Recognising a template family from a Jinja chat template without running it:
// llama.cpp's substring tests (llm_chat_detect_template in src/llama-chat.cpp), in its
// order. The order matters: several families share markers (<|assistant|> appears in
// phi3, chatglm4, exaone-moe, falcon3 and glmedge templates), and the first test that
// matches wins.
#pragma once

#if !defined(MNEMO_TEXT_DETAIL_OK_)
#error "mnemo/text/detail/* headers are internal: include mnemo/text/chat_template.hpp"
#endif

#include <optional>
#include <string_view>

#include "mnemo/text/chat_types.hpp"

namespace mnemo::text::detail {

/// The family whose markers `tmpl` contains, or nullopt. Does not look at names.
inline std::optional<chat_template_id> detect_chat_family(std::string_view tmpl) noexcept {
  using enum chat_template_id;
  const auto has = [tmpl](std::string_view s) { return tmpl.find(s) != std::string_view::npos; };

  if (has("<|im_start|>")) {
    if (has("<|im_sep|>")) return phi4;
    return has("<end_of_utterance>") ? smolvlm : chatml;  // SmolVLM's BOS is <|im_start|>
  }
  if (tmpl.starts_with("mistral") || has("[INST]")) {
    if (has("[SYSTEM_PROMPT]")) return mistral_v7;
    // The official v1 template adds the system message inside its first [INST]; v3 and
    // v3-tekken list tools.
    if (has("' [INST] ' + system_message") || has("[AVAILABLE_TOOLS]")) {
      if (has(" [INST]")) return mistral_v1;
      if (has("\"[INST]\"")) return mistral_v3_tekken;
      return mistral_v3;
    }
    if (has("content.strip()")) return llama2_sys_strip;
    if (has("bos_token + '[INST]")) return llama2_sys_bos;
    if (has("<<SYS>>")) return llama2_sys;
    return llama2;
  }
  if (has("<|assistant|>") && has("<|end|>")) return phi3;
  if (has("[gMASK]<sop>")) return chatglm4;
  if (has("<|assistant|>") && has("<|user|>")) {
    if (has("<|tool_declare|>")) return exaone_moe;
    return has("</s>") ? falcon3 : glmedge;
  }
  if (has("<|{{ item['role'] }}|>") && has("<|begin_of_image|>")) return glmedge;
  if (has("<|user|>") && has("<|endoftext|>")) return zephyr;
  if (has("bos_token + message['role']")) return monarch;
  if (has("<start_of_turn>")) return gemma;
  if (has("'\\n\\nAssistant: ' + eos_token")) return orion;  // OrionStarAI/Orion-14B-Chat
  if (has("GPT4 Correct ")) return openchat;
  if (has("USER: ") && has("ASSISTANT: ")) return has("SYSTEM: ") ? vicuna_orca : vicuna;
  if (has("### Instruction:") && has("<|EOT|>")) return deepseek;  // deepseek-coder
  if (has("<|START_OF_TURN_TOKEN|>") && has("<|USER_TOKEN|>")) return command_r;
  if (has("<|start_header_id|>") && has("<|end_header_id|>")) return llama3;
  if (has("[gMASK]sop")) return chatglm3;
  if (has("<用户>")) return minicpm;
  if (has("'Assistant: ' + message['content'] + eos_token")) return deepseek2;
  if (has("<｜Assistant｜>") && has("<｜User｜>") && has("<｜end▁of▁sentence｜>")) return deepseek3;
  if (has("[|system|]") && has("[|assistant|]") && has("[|endofturn|]"))
    return has("[|tool|]") ? exaone4 : exaone3;
  if (has("rwkv-world") || has("{{- 'User: ' + message['content']|trim + '\\n\\n' -}}"))
    return rwkv_world;
  if (has("<|start_of_role|>")) {
    if (has("<tool_call>") || has("<tools>"))
      return has("g4_default_system_message") ? granite_4_0 : granite_4_1;
    return granite;
  }
  if (has("message['role'] + additional_special_tokens[0] + message['content'] + "
          "additional_special_tokens[1]"))
    return gigachat;
  if (has("<|role_start|>")) return megrez;
  if (has(" Ассистент:")) return yandex;
  if (has("<role>ASSISTANT</role>") && has("'HUMAN'")) return bailing;
  if (has("<role>ASSISTANT</role>") && has("\"HUMAN\"") && has("<think>")) return bailing_think;
  if (has("<role>ASSISTANT</role>") && has("<role>HUMAN</role>") && has("<|role_end|>"))
    return bailing2;
  if (has("<|header_start|>") && has("<|header_end|>")) return llama4;
  if (has("<|endofuserprompt|>")) return dots1;
  if (has("<|extra_0|>") && has("<|extra_4|>")) return hunyuan_moe;
  if (has("<|start|>") && has("<|channel|>")) return gpt_oss;
  if (has("<｜hy_Assistant｜>") && has("<｜hy_begin▁of▁sentence｜>")) return hunyuan_vl;
  if (has("<｜hy_Assistant｜>") && has("<｜hy_place▁holder▁no▁3｜>")) return hunyuan_dense;
  if (has("<|im_assistant|>assistant<|im_middle|>")) return kimi_k2;
  if (has("<seed:bos>")) return seed_oss;
  if (has("'Assistant: '  + message['content'] + '<|separator|>")) return grok2;
  if (has("[unused9]系统：[unused10]")) return pangu_embedded;
  if (has("<|begin|>") && has("<|end|>") && has("<|content|>")) return solar_open;
  return std::nullopt;
}

}  // namespace mnemo::text::detail
