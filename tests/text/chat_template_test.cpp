// Every chat template family formats llama.cpp's test conversation (system, user,
// assistant, user, assistant with padded spaces, user) exactly as llama.cpp does. The
// expected strings with a generation prompt are llama.cpp's own (tests/
// test-chat-template.cpp, expected_output) where it has a case for the family; for the
// others they are worked out by hand from llm_chat_apply_template (src/llama-chat.cpp).
// Without a generation prompt the expected string loses the case's generation suffix,
// which is also worked out from llama.cpp's add_ass branches.
#include <algorithm>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include <gtest/gtest.h>

#include "mnemo/text/chat_template.hpp"

namespace {

using mnemo::text::chat_message;
using mnemo::text::chat_template;
using mnemo::text::chat_template_id;
using enum chat_template_id;

const std::vector<chat_message> k_conversation = {
    {"system", "You are a helpful assistant"},
    {"user", "Hello"},
    {"assistant", "Hi there"},
    {"user", "Who are you"},
    {"assistant", "   I am an assistant   "},
    {"user", "Another question"},
};

struct format_case {
  chat_template_id id;
  std::string_view expected;           // with the generation prompt
  std::string_view generation_suffix;  // what add_generation_prompt = false leaves out
};

// clang-format off
const format_case k_cases[] = {
    // llama.cpp's cases (the model whose template it is in the comment)
    {chatml,  // teknium/OpenHermes-2.5-Mistral-7B
     "<|im_start|>system\nYou are a helpful assistant<|im_end|>\n<|im_start|>user\nHello<|im_end|>\n<|im_start|>assistant\nHi there<|im_end|>\n<|im_start|>user\nWho are you<|im_end|>\n<|im_start|>assistant\n   I am an assistant   <|im_end|>\n<|im_start|>user\nAnother question<|im_end|>\n<|im_start|>assistant\n",
     "<|im_start|>assistant\n"},
    {llama2,  // mistralai/Mistral-7B-Instruct-v0.2
     "[INST] You are a helpful assistant\nHello [/INST]Hi there</s>[INST] Who are you [/INST]   I am an assistant   </s>[INST] Another question [/INST]",
     ""},
    {llama2_sys_bos,  // TheBloke/FusionNet_34Bx2_MoE-AWQ
     "[INST] <<SYS>>\nYou are a helpful assistant\n<</SYS>>\n\nHello [/INST]Hi there</s><s>[INST] Who are you [/INST]   I am an assistant   </s><s>[INST] Another question [/INST]",
     ""},
    {llama2_sys_strip,  // bofenghuang/vigogne-2-70b-chat
     "[INST] <<SYS>>\nYou are a helpful assistant\n<</SYS>>\n\nHello [/INST]Hi there</s>[INST] Who are you [/INST]I am an assistant</s>[INST] Another question [/INST]",
     ""},
    {monarch,  // mlabonne/AlphaMonarch-7B
     "system\nYou are a helpful assistant</s>\n<s>user\nHello</s>\n<s>assistant\nHi there</s>\n<s>user\nWho are you</s>\n<s>assistant\n   I am an assistant   </s>\n<s>user\nAnother question</s>\n<s>assistant\n",
     "<s>assistant\n"},
    {gemma,  // google/gemma-7b-it
     "<start_of_turn>user\nYou are a helpful assistant\n\nHello<end_of_turn>\n<start_of_turn>model\nHi there<end_of_turn>\n<start_of_turn>user\nWho are you<end_of_turn>\n<start_of_turn>model\nI am an assistant<end_of_turn>\n<start_of_turn>user\nAnother question<end_of_turn>\n<start_of_turn>model\n",
     "<start_of_turn>model\n"},
    {orion,  // OrionStarAI/Orion-14B-Chat
     "Human: You are a helpful assistant\n\nHello\n\nAssistant: </s>Hi there</s>Human: Who are you\n\nAssistant: </s>   I am an assistant   </s>Human: Another question\n\nAssistant: </s>",
     ""},
    {openchat,  // openchat/openchat-3.5-0106
     "You are a helpful assistant<|end_of_turn|>GPT4 Correct User: Hello<|end_of_turn|>GPT4 Correct Assistant: Hi there<|end_of_turn|>GPT4 Correct User: Who are you<|end_of_turn|>GPT4 Correct Assistant:    I am an assistant   <|end_of_turn|>GPT4 Correct User: Another question<|end_of_turn|>GPT4 Correct Assistant:",
     "GPT4 Correct Assistant:"},
    {deepseek,  // deepseek-ai/deepseek-coder-33b-instruct
     "You are a helpful assistant### Instruction:\nHello\n### Response:\nHi there\n<|EOT|>\n### Instruction:\nWho are you\n### Response:\n   I am an assistant   \n<|EOT|>\n### Instruction:\nAnother question\n### Response:\n",
     "### Response:\n"},
    {vicuna,  // eachadea/vicuna-13b-1.1
     "You are a helpful assistant\n\nUSER: Hello\nASSISTANT: Hi there</s>\nUSER: Who are you\nASSISTANT:    I am an assistant   </s>\nUSER: Another question\nASSISTANT:",
     "ASSISTANT:"},
    {vicuna_orca,  // Orca-Vicuna
     "SYSTEM: You are a helpful assistant\nUSER: Hello\nASSISTANT: Hi there</s>\nUSER: Who are you\nASSISTANT:    I am an assistant   </s>\nUSER: Another question\nASSISTANT:",
     "ASSISTANT:"},
    {command_r,  // CohereForAI/c4ai-command-r-plus
     "<|START_OF_TURN_TOKEN|><|SYSTEM_TOKEN|>You are a helpful assistant<|END_OF_TURN_TOKEN|><|START_OF_TURN_TOKEN|><|USER_TOKEN|>Hello<|END_OF_TURN_TOKEN|><|START_OF_TURN_TOKEN|><|CHATBOT_TOKEN|>Hi there<|END_OF_TURN_TOKEN|><|START_OF_TURN_TOKEN|><|USER_TOKEN|>Who are you<|END_OF_TURN_TOKEN|><|START_OF_TURN_TOKEN|><|CHATBOT_TOKEN|>I am an assistant<|END_OF_TURN_TOKEN|><|START_OF_TURN_TOKEN|><|USER_TOKEN|>Another question<|END_OF_TURN_TOKEN|><|START_OF_TURN_TOKEN|><|CHATBOT_TOKEN|>",
     "<|START_OF_TURN_TOKEN|><|CHATBOT_TOKEN|>"},
    {llama3,  // Llama-3
     "<|start_header_id|>system<|end_header_id|>\n\nYou are a helpful assistant<|eot_id|><|start_header_id|>user<|end_header_id|>\n\nHello<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\nHi there<|eot_id|><|start_header_id|>user<|end_header_id|>\n\nWho are you<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\nI am an assistant<|eot_id|><|start_header_id|>user<|end_header_id|>\n\nAnother question<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\n",
     "<|start_header_id|>assistant<|end_header_id|>\n\n"},
    {phi3,  // Phi-3-mini, -small, -medium, -vision
     "<|system|>\nYou are a helpful assistant<|end|>\n<|user|>\nHello<|end|>\n<|assistant|>\nHi there<|end|>\n<|user|>\nWho are you<|end|>\n<|assistant|>\n   I am an assistant   <|end|>\n<|user|>\nAnother question<|end|>\n<|assistant|>\n",
     "<|assistant|>\n"},
    {chatglm3,  // ChatGLM3
     "[gMASK]sop<|system|>\n You are a helpful assistant<|user|>\n Hello<|assistant|>\n Hi there<|user|>\n Who are you<|assistant|>\n    I am an assistant   <|user|>\n Another question<|assistant|>",
     "<|assistant|>"},
    {chatglm4,  // ChatGLM4
     "[gMASK]<sop><|system|>\nYou are a helpful assistant<|user|>\nHello<|assistant|>\nHi there<|user|>\nWho are you<|assistant|>\n   I am an assistant   <|user|>\nAnother question<|assistant|>\n",
     "<|assistant|>\n"},
    {glmedge,  // GLMEdge
     "<|system|>\nYou are a helpful assistant<|user|>\nHello<|assistant|>\nHi there<|user|>\nWho are you<|assistant|>\n   I am an assistant   <|user|>\nAnother question<|assistant|>",
     "<|assistant|>"},
    {minicpm,  // MiniCPM-3B-OpenHermes-2.5-v2-GGUF
     "You are a helpful assistant<用户>Hello<AI>Hi there<用户>Who are you<AI>I am an assistant<用户>Another question<AI>",
     ""},
    {deepseek2,  // DeepSeek-V2
     "You are a helpful assistant\n\nUser: Hello\n\nAssistant: Hi there<｜end▁of▁sentence｜>User: Who are you\n\nAssistant:    I am an assistant   <｜end▁of▁sentence｜>User: Another question\n\nAssistant:",
     "Assistant:"},
    {granite,  // ibm-granite/granite-3.0-8b-instruct
     "<|start_of_role|>system<|end_of_role|>You are a helpful assistant<|end_of_text|>\n<|start_of_role|>user<|end_of_role|>Hello<|end_of_text|>\n<|start_of_role|>assistant<|end_of_role|>Hi there<|end_of_text|>\n<|start_of_role|>user<|end_of_role|>Who are you<|end_of_text|>\n<|start_of_role|>assistant<|end_of_role|>   I am an assistant   <|end_of_text|>\n<|start_of_role|>user<|end_of_role|>Another question<|end_of_text|>\n<|start_of_role|>assistant<|end_of_role|>",
     "<|start_of_role|>assistant<|end_of_role|>"},
    {mistral_v1,  // mistralai/Mistral-7B-Instruct-v0.2 with the official v1 template
     " [INST] You are a helpful assistant\n\nHello [/INST] Hi there</s> [INST] Who are you [/INST]    I am an assistant   </s> [INST] Another question [/INST]",
     ""},
    {mistral_v3,  // Mistral-Large-Instruct-2407
     "[INST] You are a helpful assistant\n\nHello[/INST] Hi there</s>[INST] Who are you[/INST] I am an assistant</s>[INST] Another question[/INST]",
     ""},
    {mistral_v3_tekken,  // Mistral-Nemo-Instruct-2407
     "[INST]You are a helpful assistant\n\nHello[/INST]Hi there</s>[INST]Who are you[/INST]   I am an assistant   </s>[INST]Another question[/INST]",
     ""},
    {mistral_v7,  // mistralai/Mistral-Large-Instruct-2411
     "[SYSTEM_PROMPT] You are a helpful assistant[/SYSTEM_PROMPT][INST] Hello[/INST] Hi there</s>[INST] Who are you[/INST]    I am an assistant   </s>[INST] Another question[/INST]",
     ""},
    {gigachat,  // ai-sage/GigaChat-20B-A3B-instruct
     "<s>You are a helpful assistant<|message_sep|>user<|role_sep|>Hello<|message_sep|>available functions<|role_sep|>[]<|message_sep|>assistant<|role_sep|>Hi there<|message_sep|>user<|role_sep|>Who are you<|message_sep|>available functions<|role_sep|>[]<|message_sep|>assistant<|role_sep|>   I am an assistant   <|message_sep|>user<|role_sep|>Another question<|message_sep|>available functions<|role_sep|>[]<|message_sep|>assistant<|role_sep|>",
     "assistant<|role_sep|>"},
    {megrez,  // Infinigence/Megrez-3B-Instruct
     "<|role_start|>system<|role_end|>You are a helpful assistant<|turn_end|><|role_start|>user<|role_end|>Hello<|turn_end|><|role_start|>assistant<|role_end|>Hi there<|turn_end|><|role_start|>user<|role_end|>Who are you<|turn_end|><|role_start|>assistant<|role_end|>   I am an assistant   <|turn_end|><|role_start|>user<|role_end|>Another question<|turn_end|><|role_start|>assistant<|role_end|>",
     "<|role_start|>assistant<|role_end|>"},
    {phi4,  // phi-4
     "<|im_start|>system<|im_sep|>You are a helpful assistant<|im_end|><|im_start|>user<|im_sep|>Hello<|im_end|><|im_start|>assistant<|im_sep|>Hi there<|im_end|><|im_start|>user<|im_sep|>Who are you<|im_end|><|im_start|>assistant<|im_sep|>   I am an assistant   <|im_end|><|im_start|>user<|im_sep|>Another question<|im_end|><|im_start|>assistant<|im_sep|>",
     "<|im_start|>assistant<|im_sep|>"},
    {yandex,  // yandex/YandexGPT-5-Lite-8B-instruct
     " Пользователь: Hello\n\n Ассистент: Hi there\n\n Пользователь: Who are you\n\n Ассистент:    I am an assistant   \n\n Пользователь: Another question\n\n Ассистент:[SEP]",
     " Ассистент:[SEP]"},
    {bailing,  // inclusionAI/Ling-lite
     "<role>SYSTEM</role>You are a helpful assistant<role>HUMAN</role>Hello<role>ASSISTANT</role>Hi there<role>HUMAN</role>Who are you<role>ASSISTANT</role>   I am an assistant   <role>HUMAN</role>Another question<role>ASSISTANT</role>",
     "<role>ASSISTANT</role>"},
    {seed_oss,  // ByteDance-Seed/Seed-OSS-36B-Instruct
     "<seed:bos>system\nYou are a helpful assistant<seed:eos><seed:bos>user\nHello<seed:eos><seed:bos>assistant\nHi there<seed:eos><seed:bos>user\nWho are you<seed:eos><seed:bos>assistant\nI am an assistant<seed:eos><seed:bos>user\nAnother question<seed:eos><seed:bos>assistant\n",
     "<seed:bos>assistant\n"},

    // worked out from llm_chat_apply_template (llama.cpp has no case for these)
    {llama2_sys,
     "[INST] <<SYS>>\nYou are a helpful assistant\n<</SYS>>\n\nHello [/INST]Hi there</s>[INST] Who are you [/INST]   I am an assistant   </s>[INST] Another question [/INST]",
     ""},
    {mistral_v7_tekken,
     "[SYSTEM_PROMPT]You are a helpful assistant[/SYSTEM_PROMPT][INST]Hello[/INST]Hi there</s>[INST]Who are you[/INST]   I am an assistant   </s>[INST]Another question[/INST]",
     ""},
    {falcon3,
     "<|system|>\nYou are a helpful assistant\n<|user|>\nHello\n<|assistant|>\nHi there\n<|user|>\nWho are you\n<|assistant|>\n   I am an assistant   \n<|user|>\nAnother question\n<|assistant|>\n",
     "<|assistant|>\n"},
    {zephyr,
     "<|system|>\nYou are a helpful assistant<|endoftext|>\n<|user|>\nHello<|endoftext|>\n<|assistant|>\nHi there<|endoftext|>\n<|user|>\nWho are you<|endoftext|>\n<|assistant|>\n   I am an assistant   <|endoftext|>\n<|user|>\nAnother question<|endoftext|>\n<|assistant|>\n",
     "<|assistant|>\n"},
    {deepseek3,
     "You are a helpful assistant\n\n<｜User｜>Hello<｜Assistant｜>Hi there<｜end▁of▁sentence｜><｜User｜>Who are you<｜Assistant｜>   I am an assistant   <｜end▁of▁sentence｜><｜User｜>Another question<｜Assistant｜>",
     "<｜Assistant｜>"},
    {deepseek_ocr,
     "You are a helpful assistantHelloHi thereWho are you   I am an assistant   Another question",
     ""},
    {exaone3,
     "[|system|]You are a helpful assistant[|endofturn|]\n[|user|]Hello\n[|assistant|]Hi there[|endofturn|]\n[|user|]Who are you\n[|assistant|]I am an assistant[|endofturn|]\n[|user|]Another question\n[|assistant|]",
     "[|assistant|]"},
    {exaone4,
     "[|system|]You are a helpful assistant[|endofturn|]\n[|user|]Hello\n[|assistant|]Hi there[|endofturn|]\n[|user|]Who are you\n[|assistant|]I am an assistant[|endofturn|]\n[|user|]Another question\n[|assistant|]",
     "[|assistant|]"},
    {exaone_moe,
     "<|system|>\nYou are a helpful assistant<|endofturn|>\n<|user|>\nHello<|endofturn|>\n<|assistant|>\nHi there<|endofturn|>\n<|user|>\nWho are you<|endofturn|>\n<|assistant|>\nI am an assistant<|endofturn|>\n<|user|>\nAnother question<|endofturn|>\n<|assistant|>\n",
     "<|assistant|>\n"},
    {rwkv_world,
     "System: You are a helpful assistant\n\nUser: Hello\n\nAssistant: Hi there\n\nUser: Who are you\n\nAssistant: I am an assistant\n\nUser: Another question\n\nAssistant:",
     ""},
    {granite_4_0,
     "<|start_of_role|>system<|end_of_role|>You are a helpful assistant<|end_of_text|>\n<|start_of_role|>user<|end_of_role|>Hello<|end_of_text|>\n<|start_of_role|>assistant<|end_of_role|>Hi there<|end_of_text|>\n<|start_of_role|>user<|end_of_role|>Who are you<|end_of_text|>\n<|start_of_role|>assistant<|end_of_role|>   I am an assistant   <|end_of_text|>\n<|start_of_role|>user<|end_of_role|>Another question<|end_of_text|>\n<|start_of_role|>assistant<|end_of_role|>",
     "<|start_of_role|>assistant<|end_of_role|>"},
    {granite_4_1,
     "<|start_of_role|>system<|end_of_role|>You are a helpful assistant<|end_of_text|>\n<|start_of_role|>user<|end_of_role|>Hello<|end_of_text|>\n<|start_of_role|>assistant<|end_of_role|>Hi there<|end_of_text|>\n<|start_of_role|>user<|end_of_role|>Who are you<|end_of_text|>\n<|start_of_role|>assistant<|end_of_role|>   I am an assistant   <|end_of_text|>\n<|start_of_role|>user<|end_of_role|>Another question<|end_of_text|>\n<|start_of_role|>assistant<|end_of_role|>",
     "<|start_of_role|>assistant<|end_of_role|>"},
    {bailing_think,
     "<role>SYSTEM</role>You are a helpful assistant<role>HUMAN</role>Hello<role>ASSISTANT</role>Hi there<role>HUMAN</role>Who are you<role>ASSISTANT</role>   I am an assistant   <role>HUMAN</role>Another question<role>ASSISTANT</role><think>",
     "<role>ASSISTANT</role><think>"},
    {bailing2,
     "<role>SYSTEM</role>You are a helpful assistant<|role_end|><role>HUMAN</role>Hello<|role_end|><role>ASSISTANT</role>Hi there<|role_end|><role>HUMAN</role>Who are you<|role_end|><role>ASSISTANT</role>   I am an assistant   <|role_end|><role>HUMAN</role>Another question<|role_end|><role>ASSISTANT</role>",
     "<role>ASSISTANT</role>"},
    {llama4,
     "<|header_start|>system<|header_end|>\n\nYou are a helpful assistant<|eot|><|header_start|>user<|header_end|>\n\nHello<|eot|><|header_start|>assistant<|header_end|>\n\nHi there<|eot|><|header_start|>user<|header_end|>\n\nWho are you<|eot|><|header_start|>assistant<|header_end|>\n\nI am an assistant<|eot|><|header_start|>user<|header_end|>\n\nAnother question<|eot|><|header_start|>assistant<|header_end|>\n\n",
     "<|header_start|>assistant<|header_end|>\n\n"},
    {smolvlm,
     "<|im_start|>You are a helpful assistant\n\nUser: Hello<end_of_utterance>\nAssistant: Hi there<end_of_utterance>\nUser: Who are you<end_of_utterance>\nAssistant:    I am an assistant   <end_of_utterance>\nUser: Another question<end_of_utterance>\nAssistant:",
     "Assistant:"},
    {dots1,
     "<|system|>You are a helpful assistant<|endofsystem|><|userprompt|>Hello<|endofuserprompt|><|response|>Hi there<|endofresponse|><|userprompt|>Who are you<|endofuserprompt|><|response|>   I am an assistant   <|endofresponse|><|userprompt|>Another question<|endofuserprompt|><|response|>",
     "<|response|>"},
    {hunyuan_moe,
     "<|startoftext|>You are a helpful assistant<|extra_4|><|startoftext|>Hello<|extra_0|>Hi there<|eos|><|startoftext|>Who are you<|extra_0|>   I am an assistant   <|eos|><|startoftext|>Another question<|extra_0|>",
     ""},
    {gpt_oss,
     "<|start|>system<|message|>You are a helpful assistant<|end|><|start|>user<|message|>Hello<|end|><|start|>assistant<|message|>Hi there<|return|><|start|>user<|message|>Who are you<|end|><|start|>assistant<|message|>   I am an assistant   <|return|><|start|>user<|message|>Another question<|end|><|start|>assistant",
     "<|start|>assistant"},
    {hunyuan_dense,
     "You are a helpful assistant<｜hy_place▁holder▁no▁3｜><｜hy_User｜>Hello<｜hy_Assistant｜><｜hy_Assistant｜>Hi there<｜hy_place▁holder▁no▁2｜><｜hy_User｜>Who are you<｜hy_Assistant｜><｜hy_Assistant｜>   I am an assistant   <｜hy_place▁holder▁no▁2｜><｜hy_User｜>Another question<｜hy_Assistant｜>",
     ""},
    {hunyuan_vl,
     "<｜hy_begin▁of▁sentence｜>You are a helpful assistant<｜hy_place▁holder▁no▁3｜>Hello<｜hy_User｜>Hi there<｜hy_Assistant｜>Who are you<｜hy_User｜>   I am an assistant   <｜hy_Assistant｜>Another question<｜hy_User｜>",
     ""},
    {kimi_k2,
     "<|im_system|>system<|im_middle|>You are a helpful assistant<|im_end|><|im_user|>user<|im_middle|>Hello<|im_end|><|im_assistant|>assistant<|im_middle|>Hi there<|im_end|><|im_user|>user<|im_middle|>Who are you<|im_end|><|im_assistant|>assistant<|im_middle|>   I am an assistant   <|im_end|><|im_user|>user<|im_middle|>Another question<|im_end|><|im_assistant|>assistant<|im_middle|>",
     "<|im_assistant|>assistant<|im_middle|>"},
    {grok2,
     "System: You are a helpful assistant<|separator|>\n\nHuman: Hello<|separator|>\n\nAssistant: Hi there<|separator|>\n\nHuman: Who are you<|separator|>\n\nAssistant:    I am an assistant   <|separator|>\n\nHuman: Another question<|separator|>\n\nAssistant:",
     "Assistant:"},
    {pangu_embedded,
     "[unused9]系统：You are a helpful assistant[unused10][unused9]用户：Hello[unused10][unused9]助手：Hi there[unused10][unused9]用户：Who are you[unused10][unused9]助手：   I am an assistant   [unused10][unused9]用户：Another question[unused10][unused9]助手：",
     "[unused9]助手："},
    {solar_open,
     "<|begin|>system<|content|>You are a helpful assistant<|end|><|begin|>user<|content|>Hello<|end|><|begin|>assistant<|content|>Hi there<|end|><|begin|>user<|content|>Who are you<|end|><|begin|>assistant<|content|>   I am an assistant   <|end|><|begin|>user<|content|>Another question<|end|><|begin|>assistant",
     "<|begin|>assistant"},
};
// clang-format on

chat_template by_id(chat_template_id id) {
  for (const std::string_view name : chat_template::names()) {
    auto t = chat_template::from_name(name);
    if (t.is_ok() && t->id() == id) return t.value();
  }
  // dots1 has no name llama.cpp accepts; its markers select it
  return chat_template::detect("<|userprompt|>{{ content }}<|endofuserprompt|>").value();
}

std::string format(chat_template_id id, const std::vector<chat_message>& chat, bool add) {
  auto s = by_id(id).apply(chat, add);
  EXPECT_TRUE(s.is_ok()) << s.error().to_string();
  return s.is_ok() ? s.value() : std::string();
}

TEST(ChatTemplateFormat, EveryFamilyHasACase) {
  std::set<chat_template_id> seen;
  for (const format_case& c : k_cases) EXPECT_TRUE(seen.insert(c.id).second) << by_id(c.id).name();
  EXPECT_EQ(seen.size(), mnemo::text::k_chat_template_count);
}

TEST(ChatTemplateFormat, WithGenerationPrompt) {
  for (const format_case& c : k_cases) {
    EXPECT_EQ(format(c.id, k_conversation, true), c.expected) << by_id(c.id).name();
  }
}

TEST(ChatTemplateFormat, WithoutGenerationPrompt) {
  for (const format_case& c : k_cases) {
    ASSERT_TRUE(c.expected.ends_with(c.generation_suffix)) << by_id(c.id).name();
    const std::string_view expected =
        c.expected.substr(0, c.expected.size() - c.generation_suffix.size());
    EXPECT_EQ(format(c.id, k_conversation, false), expected) << by_id(c.id).name();
    EXPECT_EQ(by_id(c.id).generation_prompt(), c.generation_suffix) << by_id(c.id).name();
  }
}

// llama.cpp's granite cases append a tool call and its result to the conversation.
TEST(ChatTemplateFormat, GraniteToolCalls) {
  std::vector<chat_message> chat = k_conversation;
  chat.push_back({"user", "What is the weather?"});
  chat.push_back(
      {"assistant_tool_call", R"([{"name": "get_weather", "arguments": {"location": "NYC"}}])"});
  chat.push_back({"tool_response", R"({"temperature": 72})"});
  const std::string prefix =
      "<|start_of_role|>system<|end_of_role|>You are a helpful "
      "assistant<|end_of_text|>\n<|start_of_role|>user<|end_of_role|>Hello<|end_of_text|>\n<|"
      "start_of_role|>assistant<|end_of_role|>Hi "
      "there<|end_of_text|>\n<|start_of_role|>user<|end_of_role|>Who are "
      "you<|end_of_text|>\n<|start_of_role|>assistant<|end_of_role|>   I am an assistant   "
      "<|end_of_text|>\n<|start_of_role|>user<|end_of_role|>Another "
      "question<|end_of_text|>\n<|start_of_role|>user<|end_of_role|>What is the "
      "weather?<|end_of_text|>\n";
  EXPECT_EQ(format(granite, chat, true),
            prefix +
                "<|start_of_role|>assistant_tool_call<|end_of_role|><|tool_call|>[{\"name\": "
                "\"get_weather\", \"arguments\": {\"location\": \"NYC\"}}]<|end_of_text|>\n<|start_"
                "of_role|>tool_response<|end_of_role|>{\"temperature\": "
                "72}<|end_of_text|>\n<|start_of_role|>assistant<|end_of_role|>");

  chat[chat.size() - 2].content =
      "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"location\": \"NYC\"}}\n"
      "</tool_call>";
  const std::string granite4 =
      prefix +
      "<|start_of_role|>assistant<|end_of_role|><|tool_call|><tool_call>\n{\"name\": "
      "\"get_weather\", \"arguments\": {\"location\": "
      "\"NYC\"}}\n</tool_call><|end_of_text|>\n<|start_of_role|>tool_response<|end_of_role|>{"
      "\"temperature\": 72}<|end_of_text|>\n<|start_of_role|>assistant<|end_of_role|>";
  EXPECT_EQ(format(granite_4_0, chat, true), granite4);
  EXPECT_EQ(format(granite_4_1, chat, true), granite4);
}

// What an empty conversation formats to: the generation prompt, after the fixed opening
// of the families that write one (worked out from llama.cpp's code).
TEST(ChatTemplateFormat, EmptyConversation) {
  const std::vector<chat_message> none;
  for (const format_case& c : k_cases) {
    std::string expected(c.generation_suffix);
    switch (c.id) {
      case llama2:
      case llama2_sys:
      case llama2_sys_bos:
      case llama2_sys_strip: expected = "[INST] "; break;
      case chatglm3: expected = "[gMASK]sop<|assistant|>"; break;
      case chatglm4: expected = "[gMASK]<sop><|assistant|>\n"; break;
      case smolvlm: expected = "<|im_start|>Assistant:"; break;
      case gigachat: expected = "<s>assistant<|role_sep|>"; break;
      case hunyuan_vl: expected = "<｜hy_begin▁of▁sentence｜>"; break;
      case bailing2:
        expected = "<role>SYSTEM</role>detailed thinking off<|role_end|><role>ASSISTANT</role>";
        break;
      default: break;
    }
    EXPECT_EQ(format(c.id, none, true), expected) << by_id(c.id).name();
  }
}

// Folding system text into the next user turn: gemma trims and concatenates, orion
// concatenates as is; a system message after the first user turn waits for the next one.
TEST(ChatTemplateFormat, SystemFolding) {
  const std::vector<chat_message> chat = {
      {"system", " A "},   {"system", "B\n"}, {"user", "u1"},
      {"assistant", "a1"}, {"system", "C"},   {"user", "u2"},
  };
  EXPECT_EQ(format(gemma, chat, false),
            "<start_of_turn>user\nAB\n\nu1<end_of_turn>\n<start_of_turn>model\na1<end_of_turn>\n"
            "<start_of_turn>user\nC\n\nu2<end_of_turn>\n");
  EXPECT_EQ(format(orion, chat, false),
            "Human:  A B\n\n\nu1\n\nAssistant: </s>a1</s>Human: C\n\nu2\n\nAssistant: </s>");
}

TEST(ChatTemplateFormat, DeepseekOcrMovesMediaFirst) {
  const auto one = [](std::string content) {
    return format(deepseek_ocr, {{"user", std::move(content)}}, true);
  };
  EXPECT_EQ(one("Describe this.\n<__media__>\n"), "<__media__>\nDescribe this.");
  EXPECT_EQ(one("\n\nA<__media_ab12__>B<__media__>"), "<__media_ab12__>\n<__media__>\nAB");
  EXPECT_EQ(one("<__media__>\n"), "<__media__>\n");
  EXPECT_EQ(one("x <__media no end"), "x <__media no end");
}

TEST(ChatTemplateFormat, EmptyRoleIsAnError) {
  const std::vector<chat_message> chat = {{"user", "hi"}, {"", "who?"}};
  for (const format_case& c : k_cases) {
    auto s = by_id(c.id).apply(chat);
    ASSERT_FALSE(s.is_ok()) << by_id(c.id).name();
    EXPECT_EQ(s.error().code(), mnemo::status_code::invalid_argument);
    EXPECT_NE(s.error().message().find("message 1"), std::string::npos) << s.error().message();
  }
}

// The stop text is what each family writes after a reply (after any white space).
TEST(ChatTemplateFormat, StopTextFollowsTheReply) {
  const std::vector<chat_message> chat = {{"user", "Q1"}, {"assistant", "R1"}, {"user", "Q2"}};
  for (const format_case& c : k_cases) {
    const chat_template t = by_id(c.id);
    if (t.stop_text().empty()) continue;
    const std::string s = format(c.id, chat, false);
    const std::size_t at = s.find("R1");
    ASSERT_NE(at, std::string::npos) << t.name() << ": " << s;
    std::string_view rest = std::string_view(s).substr(at + 2);
    if (t.stop_text().find_first_not_of(" \n") != std::string_view::npos)
      rest.remove_prefix(std::min(rest.find_first_not_of(" \n"), rest.size()));
    EXPECT_TRUE(rest.starts_with(t.stop_text())) << t.name() << ": " << s;
  }
}

}  // namespace
