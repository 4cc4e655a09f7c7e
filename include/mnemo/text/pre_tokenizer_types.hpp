// Every BPE pre-tokenizer llama.cpp implements, as data: for each type the
// `tokenizer.ggml.pre` names that select it, its ordered split rules (regexes, each with
// the flavour llama.cpp runs it in, see detail/code_point_props.hpp) and the flags that
// change ids. Types that share rules and flags give the same ids.
//
// Where llama.cpp splits with hand-written code instead of a regex, the rule here is a
// regex with the same effect (unicode flavour):
//   Kimi-K2 (`\p{Han}+` in llama.cpp): Han runs, words of non-Han letters with an
//     optional contraction in either case, numbers in threes from the left, and the
//     usual punctuation / newline / white-space alternatives;
//   digit groups (AFMoE's `\p{AFMoE_digits}`, Tiny Aya's `\d{1,3}(?=(?:\d{3})*\b)`): every
//     run of \p{N} cut into threes counted from its end; llama.cpp cuts only after each
//     group, so the text before a run stays with the run's first group ("x  1" is one
//     piece for the later rules).
#pragma once

#include <cstdint>
#include <span>
#include <string_view>

#pragma push_macro("MNEMO_TEXT_DETAIL_OK_")
#undef MNEMO_TEXT_DETAIL_OK_
#define MNEMO_TEXT_DETAIL_OK_ 1
#include "mnemo/text/detail/code_point_props.hpp"
#pragma pop_macro("MNEMO_TEXT_DETAIL_OK_")

namespace mnemo::text {

using detail::regex_flavour;

/// One split rule: every piece so far is cut at this regex's matches.
struct split_rule {
  std::string_view pattern;
  regex_flavour flavour;
};

/// Flags of a pre-tokenizer type that change the ids.
struct pre_flag {
  static constexpr std::uint16_t none = 0;
  static constexpr std::uint16_t ignore_merges =
      1u << 0;  // a piece that is a whole token is emitted as that token
  static constexpr std::uint16_t add_bos =
      1u << 1;  // add_bos defaults to true (the GGUF key still overrides)
  static constexpr std::uint16_t force_bos = 1u << 2;  // add_bos is true whatever the GGUF says
  static constexpr std::uint16_t raw_text =
      1u << 3;  // no GPT-2 byte mapping: symbols are UTF-8 characters
  static constexpr std::uint16_t escape_spaces = 1u << 4;  // ' ' becomes U+2581 before splitting
  static constexpr std::uint16_t whole_newlines =
      1u << 5;  // a piece of only '\n' that is a token is emitted whole
  static constexpr std::uint16_t lowercase_key =
      1u << 6;  // lowercase when tokenizer.ggml.normalizer.lowercase is true
  static constexpr std::uint16_t no_default_bos =
      1u << 7;  // llama.cpp clears the default BOS id (the key sets it again)
  static constexpr std::uint16_t merges_optional = 1u << 8;  // tokenizer.ggml.merges may be absent
};

struct pre_tokenizer_type {
  std::string_view type;   // llama.cpp's name for it
  std::string_view names;  // comma-separated tokenizer.ggml.pre strings
  std::span<const split_rule> rules;
  std::uint16_t flags;
};

namespace pre_rules_data {

inline constexpr split_rule k_rules_1[] = {
    {R"re([\p{P}\$\+<=>\^~\|]+)re", regex_flavour::collapsed},
    {R"re('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S))re",
     regex_flavour::unicode},
    {R"re(\p{N}+)re", regex_flavour::collapsed},
    {R"re([0-9][0-9][0-9])re", regex_flavour::wide},
};
inline constexpr split_rule k_rules_2[] = {
    {R"re(\p{N}{1,3})re", regex_flavour::collapsed},
    {R"re((?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}+| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)re",
     regex_flavour::collapsed},
};
inline constexpr split_rule k_rules_3[] = {
    {R"re((?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)re",
     regex_flavour::unicode},
};
inline constexpr split_rule k_rules_4[] = {
    {R"re([\r\n])re", regex_flavour::wide},
    {R"re(\s?[A-Za-zµÀ-ÖØ-öø-ƺƼ-ƿǄ-ʓʕ-ʯͰ-ͳͶͷͻ-ͽͿΆΈ-ΊΌΎ-ΡΣ-ϵϷ-ҁҊ-ԯԱ-ՖႠ-ჅᎠ-Ᏽᏸ-ᏽᲐ-ᲺᲽ-Ჿᴀ-ᴫᵫ-ᵷᵹ-ᶚḀ-ἕἘ-Ἕἠ-ὅὈ-Ὅὐ-ὗὙὛὝὟ-ώᾀ-ᾴᾶ-ᾼιῂ-ῄῆ-ῌῐ-ΐῖ-Ίῠ-Ῥῲ-ῴῶ-ῼℂℇℊ-ℓℕℙ-ℝℤΩℨK-ℭℯ-ℴℹℼ-ℿⅅ-ⅉⅎↃↄⰀ-ⱻⱾ-ⳤⳫ-ⳮⳲⳳꙀ-ꙭꚀ-ꚛꜢ-ꝯꝱ-ꞇꞋ-ꞎꭰ-ꮿﬀ-ﬆﬓ-ﬗＡ-Ｚａ-ｚ𐐀-𐑏𐒰-𐓓𐓘-𐓻𐲀-𐲲𐳀-𐳲𑢠-𑣟𞤀-𞥃]+)re",
     regex_flavour::wide},
    {R"re(\s?[!-/:-~！-／：-～‘-‟　-。]+)re", regex_flavour::wide},
    {R"re(\s+$)re", regex_flavour::wide},
    {R"re([一-龥ࠀ-一가-퟿]+)re", regex_flavour::wide},
    {R"re(\p{N}+)re", regex_flavour::collapsed},
};
inline constexpr split_rule k_rules_5[] = {
    {R"re([\r\n])re", regex_flavour::wide},
    {R"re(\s?\p{L}+)re", regex_flavour::collapsed},
    {R"re(\s?\p{P}+)re", regex_flavour::collapsed},
    {R"re([一-龥ࠀ-一가-퟿]+)re", regex_flavour::wide},
    {R"re(\p{N})re", regex_flavour::collapsed},
};
inline constexpr split_rule k_rules_6[] = {
    {R"re(\p{N}{1,3})re", regex_flavour::collapsed},
    {R"re([一-龥぀-ゟ゠-ヿ]+)re", regex_flavour::wide},
    {R"re([!"#$%&'()*+,\-./:;<=>?@\[\\\]^_`{|}~][A-Za-z]+|[^\r\n\p{L}\p{P}\p{S}]?[\p{L}\p{M}]+| ?[\p{P}\p{S}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)re",
     regex_flavour::collapsed},
};
inline constexpr split_rule k_rules_7[] = {
    {R"re([가-힣ㄱ-ㆎ]+|[！…“”‘’—：；，、-〿︰-﹏]+|[ㄅ-ㄯ]+|[一-龥぀-ゟ゠-ヿ]+)re",
     regex_flavour::wide},
    {R"re([^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])?|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])?|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+)re",
     regex_flavour::collapsed},
};
inline constexpr split_rule k_rules_8[] = {
    {R"re([\p{P}\$\+<=>\^~\|`]+)re", regex_flavour::collapsed},
    {R"re('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S))re",
     regex_flavour::unicode},
    {R"re([0-9][0-9][0-9])re", regex_flavour::wide},
};
inline constexpr split_rule k_rules_9[] = {
    {R"re('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S))re",
     regex_flavour::unicode},
};
inline constexpr split_rule k_rules_10[] = {
    {R"re(\p{N})re", regex_flavour::collapsed},
    {R"re('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S))re",
     regex_flavour::unicode},
};
inline constexpr split_rule k_rules_11[] = {
    {R"re((?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s{512}(?!\S)|\s{256}(?!\S)|\s{128}(?!\S)|\s{64}(?!\S)|\s{32}(?!\S)|\s{16}(?!\S)|\s{8}(?!\S)|\s{4}(?!\S)|\s{1,2}(?!\S)|\s{1})re",
     regex_flavour::collapsed},
};
inline constexpr split_rule k_rules_12[] = {
    {R"re([^\n]+|[\n]+)re", regex_flavour::unicode},
};
inline constexpr split_rule k_rules_13[] = {
    {R"re(\S+)re", regex_flavour::wide},
};
inline constexpr split_rule k_rules_14[] = {
    {R"re((?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)re",
     regex_flavour::unicode},
};
inline constexpr split_rule k_rules_15[] = {
    {R"re((?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\r\n\p{L}\p{N}]?[\p{L}\p{M}]+|\p{N}| ?[^\s\p{L}\p{M}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)re",
     regex_flavour::unicode},
};
inline constexpr split_rule k_rules_16[] = {
    {R"re( ?[^(\s|.,!?…。，、।۔،)]+)re", regex_flavour::wide},
};
inline constexpr split_rule k_rules_17[] = {
    {R"re( ?[^(\s|.,!?…。，、।۔،)]+)re", regex_flavour::wide},
    {R"re(\p{N})re", regex_flavour::collapsed},
};
inline constexpr split_rule k_rules_18[] = {
    {R"re([^\r\n\p{L}\p{N}]?((?=[\p{L}])([^a-z]))*((?=[\p{L}])([^A-Z]))+|[^\r\n\p{L}\p{N}]?((?=[\p{L}])([^a-z]))+((?=[\p{L}])([^A-Z]))*|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+)re",
     regex_flavour::collapsed},
};
inline constexpr split_rule k_rules_19[] = {
    {R"re((?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\r\n\p{L}\p{N}]?(?:\p{L}\p{M}*(?: \p{L}\p{M}*)*)+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n/]?|\s*[\r\n]|\s+(?!\S)|\s+)re",
     regex_flavour::collapsed},
};
inline constexpr split_rule k_rules_20[] = {
    {R"re(<sentinel:[0-9]+>)re", regex_flavour::wide},
    {R"re((IMGIMG)((A|B|C|D|E|F|G|H|I){1,4})Z)re", regex_flavour::wide},
    {R"re(([\t\n]|    |  ))re", regex_flavour::wide},
    {R"re(\p{N})re", regex_flavour::collapsed},
    {R"re([\p{P}!-/:-@\[-`{-~])re", regex_flavour::collapsed},
    {R"re('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S))re",
     regex_flavour::unicode},
};
inline constexpr split_rule k_rules_21[] = {
    {R"re([^\r\n\p{L}\p{N}]?((?=[\p{L}])([^a-z]))*((?=[\p{L}])([^A-Z]))+(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])?|[^\r\n\p{L}\p{N}]?((?=[\p{L}])([^a-z]))+((?=[\p{L}])([^A-Z]))*(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])?|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+)re",
     regex_flavour::collapsed},
};
inline constexpr split_rule k_rules_22[] = {
    {R"re([^\r\n\p{L}\p{N}]?((?=[\p{L}\p{M}])([^a-z]))*((?=[\p{L}\p{M}])([^A-Z]))+(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])?|[^\r\n\p{L}\p{N}]?((?=[\p{L}\p{M}])([^a-z]))+((?=[\p{L}\p{M}])([^A-Z]))*(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])?|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+)re",
     regex_flavour::collapsed},
};
inline constexpr split_rule k_rules_23[] = {
    {R"re(\P{N}*\p{N}{1,3}(?=(?:\p{N}{3})*(?!\p{N})))re", regex_flavour::unicode},
    {R"re([^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])?|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])?|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+)re",
     regex_flavour::collapsed},
};
inline constexpr split_rule k_rules_24[] = {
    {R"re(\p{N}+)re", regex_flavour::collapsed},
    {R"re((?=(\d{3})+(?!\d)))re", regex_flavour::wide},
};
inline constexpr split_rule k_rules_25[] = {
    {R"re('(?:[sSdDmMtT]|[lL][lL]|[vV][eE]|[rR][eE])|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]|\s+(?!\S)|\s+)re",
     regex_flavour::collapsed},
};
inline constexpr split_rule k_rules_26[] = {
    {R"re((?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1}| ?[^\s\p{L}\p{N}\r\n]+|\s*[\r\n]+|\s+(?!\S)|\s+)re",
     regex_flavour::collapsed},
};
inline constexpr split_rule k_rules_27[] = {
    {R"re(\p{Han}+|[^\r\n\p{L}\p{N}]?(?:(?!\p{Han})\p{L})+(?i:'s|'t|'re|'ve|'m|'ll|'d)?|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+|[\s\S])re",
     regex_flavour::unicode},
};
inline constexpr split_rule k_rules_28[] = {
    {R"re(\P{N}*\p{N}{1,3}(?=(?:\p{N}{3})*(?!\p{N})))re", regex_flavour::unicode},
    {R"re([一-鿿㐀-䶿豈-﫿぀-ゟ゠-ヿ･-ﾟ⼀-⿟เ-๿຀-໿ក-៿က-႟ꩠ-ꩿꧠ-꧿가-힯ᄀ-ᇿ]+)re",
     regex_flavour::wide},
    {R"re([!"#$%&'()*+,\-./:;<=>?@\[\\\]^_`{|}~][A-Za-z]+|[^\r\n\p{L}\p{P}\p{S}]?[\p{L}\p{M}]+| ?[\p{P}\p{S}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)re",
     regex_flavour::collapsed},
};
inline constexpr split_rule k_rules_29[] = {
    {R"re([^\n]+|[\n]+)re", regex_flavour::unicode},
    {R"re((?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)re",
     regex_flavour::unicode},
};

}  // namespace pre_rules_data

/// The table, in llama.cpp's order. A missing tokenizer.ggml.pre selects "default".
inline constexpr pre_tokenizer_type k_pre_tokenizer_types[] = {
    {"DEFAULT", "default", pre_rules_data::k_rules_1, pre_flag::none},
    {"MINICPM5", "minicpm5", pre_rules_data::k_rules_2, pre_flag::ignore_merges},
    {"LLAMA3", "llama3,llama-v3,llama-bpe,falcon3,falcon-h1,pixtral,midm-2.0,lfm2,jina-v5-nano",
     pre_rules_data::k_rules_3, pre_flag::ignore_merges | pre_flag::add_bos},
    {"DEEPSEEK_LLM", "deepseek-llm", pre_rules_data::k_rules_4, pre_flag::none},
    {"DEEPSEEK_CODER", "deepseek-coder", pre_rules_data::k_rules_5, pre_flag::none},
    {"DEEPSEEK3_LLM", "deepseek-v3", pre_rules_data::k_rules_6, pre_flag::none},
    {"YOUTU", "youtu", pre_rules_data::k_rules_7, pre_flag::ignore_merges},
    {"FALCON", "falcon", pre_rules_data::k_rules_8, pre_flag::none},
    {"MPT", "mpt", pre_rules_data::k_rules_9, pre_flag::none},
    {"STARCODER", "starcoder", pre_rules_data::k_rules_10, pre_flag::none},
    {"GPT2",
     "gpt-2,phi-2,jina-es,jina-de,gigachat,jina-v2-es,jina-v2-de,a.x-4.0,mellum,modern-bert",
     pre_rules_data::k_rules_9, pre_flag::none},
    {"GPT2", "jina-v1-en,jina-v2-code,roberta-bpe", pre_rules_data::k_rules_9, pre_flag::none},
    {"GPT2", "exaone4", pre_rules_data::k_rules_9, pre_flag::none},
    {"JAIS2", "jais-2", pre_rules_data::k_rules_11, pre_flag::none},
    {"GEMMA4", "gemma4,granite-embed-multi-311m", pre_rules_data::k_rules_12,
     pre_flag::force_bos | pre_flag::raw_text | pre_flag::escape_spaces | pre_flag::whole_newlines},
    {"SARVAM_MOE", "sarvam-moe", pre_rules_data::k_rules_12,
     pre_flag::raw_text | pre_flag::escape_spaces},
    {"WHITESPACE", "whitespace", pre_rules_data::k_rules_13,
     pre_flag::raw_text | pre_flag::lowercase_key},
    {"REFACT", "refact", pre_rules_data::k_rules_10, pre_flag::none},
    {"COMMAND_R", "command-r", pre_rules_data::k_rules_10, pre_flag::none},
    {"QWEN2", "qwen2,deepseek-r1-qwen,kormo,f2llmv2", pre_rules_data::k_rules_14, pre_flag::none},
    {"QWEN2", "megrez", pre_rules_data::k_rules_14, pre_flag::none},
    {"QWEN35", "qwen35", pre_rules_data::k_rules_15, pre_flag::none},
    {"STABLELM2", "stablelm2", pre_rules_data::k_rules_14, pre_flag::none},
    {"OLMO", "olmo", pre_rules_data::k_rules_9, pre_flag::none},
    {"DBRX", "dbrx", pre_rules_data::k_rules_3, pre_flag::none},
    {"SMAUG", "smaug-bpe", pre_rules_data::k_rules_3, pre_flag::none},
    {"PORO", "poro-chat", pre_rules_data::k_rules_16, pre_flag::none},
    {"CHATGLM4", "glm4,chatglm-bpe", pre_rules_data::k_rules_3, pre_flag::no_default_bos},
    {"VIKING", "viking", pre_rules_data::k_rules_17, pre_flag::none},
    {"JAIS", "jais", pre_rules_data::k_rules_9, pre_flag::none},
    {"TEKKEN", "tekken", pre_rules_data::k_rules_18, pre_flag::ignore_merges | pre_flag::add_bos},
    {"SMOLLM", "smollm", pre_rules_data::k_rules_10, pre_flag::none},
    {"CODESHELL", "codeshell", pre_rules_data::k_rules_10, pre_flag::none},
    {"BLOOM", "bloom", pre_rules_data::k_rules_16, pre_flag::none},
    {"GPT3_FINNISH", "gpt3-finnish", pre_rules_data::k_rules_16, pre_flag::none},
    {"EXAONE", "exaone", pre_rules_data::k_rules_10, pre_flag::none},
    {"EXAONE_MOE", "exaone-moe", pre_rules_data::k_rules_19, pre_flag::none},
    {"CHAMELEON", "chameleon", pre_rules_data::k_rules_20, pre_flag::add_bos},
    {"MINERVA", "minerva-7b", pre_rules_data::k_rules_10, pre_flag::none},
    {"GPT4O", "gpt-4o,llama4,kanana2,talkie", pre_rules_data::k_rules_21, pre_flag::none},
    {"GRANITE_EMB_MULTI", "granite-embed-multi-97m", pre_rules_data::k_rules_22,
     pre_flag::ignore_merges},
    {"TINY_AYA", "tiny_aya,cohere2moe", pre_rules_data::k_rules_23, pre_flag::none},
    {"SUPERBPE", "superbpe", pre_rules_data::k_rules_24, pre_flag::none},
    {"TRILLION", "trillion", pre_rules_data::k_rules_9, pre_flag::none},
    {"GRANITE_DOCLING", "granite-docling", pre_rules_data::k_rules_9, pre_flag::none},
    {"BAILINGMOE", "bailingmoe,bailingmoe2,llada-moe", pre_rules_data::k_rules_25, pre_flag::none},
    {"SEED_CODER", "seed-coder", pre_rules_data::k_rules_26, pre_flag::none},
    {"HUNYUAN", "hunyuan", pre_rules_data::k_rules_14, pre_flag::none},
    {"HUNYUAN_DENSE", "hunyuan-dense", pre_rules_data::k_rules_6, pre_flag::none},
    {"JOYAI_LLM", "joyai-llm", pre_rules_data::k_rules_6, pre_flag::none},
    {"KIMI_K2", "kimi-k2", pre_rules_data::k_rules_27, pre_flag::merges_optional},
    {"GROK_2", "grok-2", pre_rules_data::k_rules_14, pre_flag::none},
    {"AFMOE", "afmoe", pre_rules_data::k_rules_28, pre_flag::none},
    {"LAGUNA", "laguna", pre_rules_data::k_rules_29, pre_flag::none},
    {"MINIMAX_M2", "minimax-m2", pre_rules_data::k_rules_21, pre_flag::none},
    {"SOLAR_OPEN", "solar-open", pre_rules_data::k_rules_14, pre_flag::none},
    {"MELLUM2", "mellum2", pre_rules_data::k_rules_10, pre_flag::none},
};

/// The type whose names include `name`, or nullptr.
constexpr const pre_tokenizer_type* find_pre_tokenizer_type(std::string_view name) noexcept {
  for (const pre_tokenizer_type& t : k_pre_tokenizer_types) {
    std::string_view rest = t.names;
    while (!rest.empty()) {
      const std::size_t comma = rest.find(',');
      if (rest.substr(0, comma) == name) return &t;
      if (comma == std::string_view::npos) break;
      rest.remove_prefix(comma + 1);
    }
  }
  return nullptr;
}

}  // namespace mnemo::text
