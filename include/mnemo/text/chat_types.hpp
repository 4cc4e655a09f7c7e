// The data a chat template works on: the template families mnemo formats (the ones
// llama.cpp formats without a Jinja engine, src/llama-chat.cpp) and a conversation
// message.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace mnemo::text {

/// One template family each; chat_template::name() gives llama.cpp's name for it.
enum class chat_template_id : std::uint8_t {
  chatml,
  llama2,
  llama2_sys,
  llama2_sys_bos,
  llama2_sys_strip,
  mistral_v1,
  mistral_v3,
  mistral_v3_tekken,
  mistral_v7,
  mistral_v7_tekken,
  phi3,
  phi4,
  falcon3,
  zephyr,
  monarch,
  gemma,
  orion,
  openchat,
  vicuna,
  vicuna_orca,
  deepseek,
  deepseek2,
  deepseek3,
  deepseek_ocr,
  command_r,
  llama3,
  chatglm3,
  chatglm4,
  glmedge,
  minicpm,
  exaone3,
  exaone4,
  exaone_moe,
  rwkv_world,
  granite,
  granite_4_0,
  granite_4_1,
  gigachat,
  megrez,
  yandex,
  bailing,
  bailing_think,
  bailing2,
  llama4,
  smolvlm,
  dots1,
  hunyuan_moe,
  gpt_oss,
  hunyuan_dense,
  hunyuan_vl,
  kimi_k2,
  seed_oss,
  grok2,
  pangu_embedded,
  solar_open,
};

inline constexpr std::size_t k_chat_template_count =
    static_cast<std::size_t>(chat_template_id::solar_open) + 1;

/// One turn of a conversation. The role is free text, as in llama.cpp: "system", "user"
/// and "assistant" everywhere, plus what a family knows ("tool", "assistant_tool_call",
/// ...). A template writes a role it does not know the way its code falls through.
struct chat_message {
  std::string role;
  std::string content;
};

}  // namespace mnemo::text
