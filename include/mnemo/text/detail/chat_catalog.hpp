// One row per chat template family: llama.cpp's name for it, whether llama.cpp lets a
// caller choose it by that name, the text that asks the model for its reply (what
// llama.cpp writes when add_ass is set) and the text the family writes right after an
// assistant reply (where generation should stop).
#pragma once

#if !defined(MNEMO_TEXT_DETAIL_OK_)
#error "mnemo/text/detail/* headers are internal: include mnemo/text/chat_template.hpp"
#endif

#include <array>
#include <cstddef>
#include <optional>
#include <string_view>

#include "mnemo/text/chat_types.hpp"

namespace mnemo::text::detail {

struct chat_template_info {
  chat_template_id id;
  std::string_view name;
  /// In llama.cpp's LLM_CHAT_TEMPLATES: dots1 is reached by detection only.
  bool by_name;
  /// Appended after the conversation when the caller asks for a generation prompt; empty
  /// for the families whose llama.cpp code ignores add_ass.
  std::string_view generation_prompt;
  /// What follows an assistant reply in the formatted text (the turn marker, or the next
  /// turn's opening when the family has none); empty when only the vocabulary's
  /// end-of-generation token ends a reply.
  std::string_view stop_text;
};

// clang-format off
inline constexpr std::array<chat_template_info, k_chat_template_count> k_chat_templates = [] {
  using enum chat_template_id;
  return std::array<chat_template_info, k_chat_template_count>{{
  {chatml,            "chatml",            true,  "<|im_start|>assistant\n", "<|im_end|>"},
  {llama2,            "llama2",            true,  "", "</s>"},
  {llama2_sys,        "llama2-sys",        true,  "", "</s>"},
  {llama2_sys_bos,    "llama2-sys-bos",    true,  "", "</s>"},
  {llama2_sys_strip,  "llama2-sys-strip",  true,  "", "</s>"},
  {mistral_v1,        "mistral-v1",        true,  "", "</s>"},
  {mistral_v3,        "mistral-v3",        true,  "", "</s>"},
  {mistral_v3_tekken, "mistral-v3-tekken", true,  "", "</s>"},
  {mistral_v7,        "mistral-v7",        true,  "", "</s>"},
  {mistral_v7_tekken, "mistral-v7-tekken", true,  "", "</s>"},
  {phi3,              "phi3",              true,  "<|assistant|>\n", "<|end|>"},
  {phi4,              "phi4",              true,  "<|im_start|>assistant<|im_sep|>", "<|im_end|>"},
  {falcon3,           "falcon3",           true,  "<|assistant|>\n", ""},
  {zephyr,            "zephyr",            true,  "<|assistant|>\n", "<|endoftext|>"},
  {monarch,           "monarch",           true,  "<s>assistant\n", "</s>"},
  {gemma,             "gemma",             true,  "<start_of_turn>model\n", "<end_of_turn>"},
  {orion,             "orion",             true,  "", "</s>"},
  {openchat,          "openchat",          true,  "GPT4 Correct Assistant:", "<|end_of_turn|>"},
  {vicuna,            "vicuna",            true,  "ASSISTANT:", "</s>"},
  {vicuna_orca,       "vicuna-orca",       true,  "ASSISTANT:", "</s>"},
  {deepseek,          "deepseek",          true,  "### Response:\n", "<|EOT|>"},
  {deepseek2,         "deepseek2",         true,  "Assistant:", "<｜end▁of▁sentence｜>"},
  {deepseek3,         "deepseek3",         true,  "<｜Assistant｜>", "<｜end▁of▁sentence｜>"},
  {deepseek_ocr,      "deepseek-ocr",      true,  "", ""},
  {command_r,         "command-r",         true,  "<|START_OF_TURN_TOKEN|><|CHATBOT_TOKEN|>", "<|END_OF_TURN_TOKEN|>"},
  {llama3,            "llama3",            true,  "<|start_header_id|>assistant<|end_header_id|>\n\n", "<|eot_id|>"},
  {chatglm3,          "chatglm3",          true,  "<|assistant|>", "<|user|>"},
  {chatglm4,          "chatglm4",          true,  "<|assistant|>\n", "<|user|>"},
  {glmedge,           "glmedge",           true,  "<|assistant|>", "<|user|>"},
  {minicpm,           "minicpm",           true,  "", "<用户>"},
  {exaone3,           "exaone3",           true,  "[|assistant|]", "[|endofturn|]"},
  {exaone4,           "exaone4",           true,  "[|assistant|]", "[|endofturn|]"},
  {exaone_moe,        "exaone-moe",        true,  "<|assistant|>\n", "<|endofturn|>"},
  {rwkv_world,        "rwkv-world",        true,  "", "\n\n"},
  {granite,           "granite",           true,  "<|start_of_role|>assistant<|end_of_role|>", "<|end_of_text|>"},
  {granite_4_0,       "granite-4.0",       true,  "<|start_of_role|>assistant<|end_of_role|>", "<|end_of_text|>"},
  {granite_4_1,       "granite-4.1",       true,  "<|start_of_role|>assistant<|end_of_role|>", "<|end_of_text|>"},
  {gigachat,          "gigachat",          true,  "assistant<|role_sep|>", "<|message_sep|>"},
  {megrez,            "megrez",            true,  "<|role_start|>assistant<|role_end|>", "<|turn_end|>"},
  {yandex,            "yandex",            true,  " Ассистент:[SEP]", "\n\n"},
  {bailing,           "bailing",           true,  "<role>ASSISTANT</role>", "<role>"},
  {bailing_think,     "bailing-think",     true,  "<role>ASSISTANT</role><think>", "<role>"},
  {bailing2,          "bailing2",          true,  "<role>ASSISTANT</role>", "<|role_end|>"},
  {llama4,            "llama4",            true,  "<|header_start|>assistant<|header_end|>\n\n", "<|eot|>"},
  {smolvlm,           "smolvlm",           true,  "Assistant:", "<end_of_utterance>"},
  {dots1,             "dots1",             false, "<|response|>", "<|endofresponse|>"},
  {hunyuan_moe,       "hunyuan-moe",       true,  "", "<|eos|>"},
  {gpt_oss,           "gpt-oss",           true,  "<|start|>assistant", "<|return|>"},
  {hunyuan_dense,     "hunyuan-dense",     true,  "", "<｜hy_place▁holder▁no▁2｜>"},
  {hunyuan_vl,        "hunyuan-vl",        true,  "", "<｜hy_Assistant｜>"},
  {kimi_k2,           "kimi-k2",           true,  "<|im_assistant|>assistant<|im_middle|>", "<|im_end|>"},
  {seed_oss,          "seed_oss",          true,  "<seed:bos>assistant\n", "<seed:eos>"},
  {grok2,             "grok-2",            true,  "Assistant:", "<|separator|>"},
  {pangu_embedded,    "pangu-embedded",    true,  "[unused9]助手：", "[unused10]"},
  {solar_open,        "solar-open",        true,  "<|begin|>assistant", "<|end|>"},
  }};
}();
// clang-format on

consteval bool rows_follow_ids() {
  for (std::size_t i = 0; i < k_chat_templates.size(); ++i)
    if (static_cast<std::size_t>(k_chat_templates[i].id) != i) return false;
  return true;
}
static_assert(rows_follow_ids(), "k_chat_templates: row i must describe chat_template_id i");

constexpr const chat_template_info& info_of(chat_template_id id) noexcept {
  return k_chat_templates[static_cast<std::size_t>(id)];
}

/// The family llama.cpp chooses for a name (only the names it accepts).
constexpr std::optional<chat_template_id> id_by_name(std::string_view name) noexcept {
  for (const chat_template_info& t : k_chat_templates)
    if (t.by_name && t.name == name) return t.id;
  return std::nullopt;
}

}  // namespace mnemo::text::detail
