// pre_tokenizer: a BPE pre-tokenizer compiled from data (pre_tokenizer_types.hpp). The
// text starts as one piece; each split rule in turn cuts every piece at its matches (the
// text between matches stays a piece), and each regex sees only its piece. Patterns are
// compiled once, when the vocabulary is loaded.
//
//   MNEMO_ASSIGN_OR_RETURN(text::pre_tokenizer p, text::pre_tokenizer::for_name("llama-bpe"));
//   p.split("Hello world", ends, scratch);   // ends = {5, 11}
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "mnemo/base/result.hpp"
#include "mnemo/base/status.hpp"
#include "mnemo/text/pre_tokenizer_types.hpp"
#include "mnemo/text/pretokenize.hpp"

#pragma push_macro("MNEMO_TEXT_DETAIL_OK_")
#undef MNEMO_TEXT_DETAIL_OK_
#define MNEMO_TEXT_DETAIL_OK_ 1
#include "mnemo/text/detail/code_point_props.hpp"
#include "mnemo/text/detail/regex_compile.hpp"
#include "mnemo/text/detail/regex_match.hpp"
#pragma pop_macro("MNEMO_TEXT_DETAIL_OK_")

namespace mnemo::text {

class pre_tokenizer {
 public:
  /// Compiles a list of rules. invalid_argument / unsupported name the rule and the
  /// problem when a pattern is malformed or outside the engine's subset.
  static result<pre_tokenizer> from_rules(std::span<const split_rule> rules,
                                          std::uint16_t flags = pre_flag::none) {
    pre_tokenizer p;
    p.flags_ = flags;
    for (std::size_t i = 0; i < rules.size(); ++i) {
      auto prog = detail::regex_compiler::compile(rules[i].pattern, rules[i].flavour);
      if (!prog.is_ok())
        return make_status(prog.error().code(), "pre-tokenizer rule %zu: %s", i + 1,
                           prog.error().message().c_str());
      p.programs_.push_back(std::move(prog).value());
    }
    if (rules.data() == std::data(pre_rules_data::k_rules_9)) p.fast_ = pre_rules::gpt2;
    if (rules.data() == std::data(pre_rules_data::k_rules_10)) p.fast_ = pre_rules::starcoder;
    if (rules.data() == std::data(pre_rules_data::k_rules_3)) p.fast_ = pre_rules::llama3;
    if (rules.data() == std::data(pre_rules_data::k_rules_14)) p.fast_ = pre_rules::qwen2;
    if (rules.data() == std::data(pre_rules_data::k_rules_15)) p.fast_ = pre_rules::qwen35;
    return p;
  }

  static result<pre_tokenizer> from_type(const pre_tokenizer_type& t) {
    MNEMO_ASSIGN_OR_RETURN(pre_tokenizer p, from_rules(t.rules, t.flags));
    p.type_ = &t;
    return p;
  }

  /// The type a `tokenizer.ggml.pre` string selects; unsupported for an unknown name.
  static result<pre_tokenizer> for_name(std::string_view name) {
    const pre_tokenizer_type* t = find_pre_tokenizer_type(name);
    if (t == nullptr)
      return make_status(status_code::unsupported,
                         "pre-tokenizer '%.*s' is not supported (docs/tokenizer.md lists the "
                         "%zu names)",
                         static_cast<int>(name.size()), name.data(), names_count());
    return from_type(*t);
  }

  /// The type this was made from (nullptr for from_rules).
  const pre_tokenizer_type* type() const noexcept { return type_; }
  std::uint16_t flags() const noexcept { return flags_; }
  bool has(std::uint16_t flag) const noexcept { return (flags_ & flag) != 0; }
  /// Whether split() takes a hand-written scanner (GPT-2, StarCoder, Llama 3, Qwen 2,
  /// Qwen 3.5 rules: the same result, several times faster).
  bool uses_fast_path() const noexcept { return fast_ != pre_rules::none; }

  /// `ends` receives the byte offset where each non-empty piece of `text` ends.
  void split(std::string_view text, std::vector<std::size_t>& ends, pre_tokenize_scratch& s) const {
    if (fast_ != pre_rules::none) {
      pre_tokenize(fast_, text, ends, s);
      return;
    }
    split_general(text, ends, s);
  }

  /// split() through the regex engine even where a fast path exists (tests compare both).
  void split_general(std::string_view text, std::vector<std::size_t>& ends,
                     pre_tokenize_scratch& s) const {
    ends.clear();
    if (text.empty()) return;
    detail::decode_code_points(text, s, /*classes=*/false);
    const auto n = static_cast<std::uint32_t>(s.cps.size());
    s.cuts.assign({0, n});
    for (const detail::regex_program& prog : programs_) {
      const std::vector<detail::match_unit>& units = units_for(prog.flavour, s);
      s.next_cuts.clear();
      s.next_cuts.push_back(0);
      for (std::size_t i = 0; i + 1 < s.cuts.size(); ++i) {
        const std::uint32_t b = s.cuts[i], e = s.cuts[i + 1];
        s.matcher.split(prog, units, b, e, s.next_cuts);
        s.next_cuts.push_back(e);
      }
      // matches come in order: drop repeats (empty pieces)
      std::size_t w = 1;
      for (std::size_t r = 1; r < s.next_cuts.size(); ++r)
        if (s.next_cuts[r] != s.next_cuts[w - 1]) s.next_cuts[w++] = s.next_cuts[r];
      s.next_cuts.resize(w);
      std::swap(s.cuts, s.next_cuts);
    }
    for (std::size_t i = 1; i < s.cuts.size(); ++i) ends.push_back(s.offsets[s.cuts[i]]);
  }

 private:
  pre_tokenizer() = default;

  static std::size_t names_count() noexcept {
    std::size_t n = 0;
    for (const auto& t : k_pre_tokenizer_types)
      for (char c : t.names) n += c == ',';
    return n + std::size(k_pre_tokenizer_types);
  }

  static const std::vector<detail::match_unit>& units_for(regex_flavour f,
                                                          pre_tokenize_scratch& s) {
    const auto i = static_cast<std::size_t>(f);
    if (!s.units_built[i]) {
      // ASCII units never change: one table per flavour, built once
      static const auto ascii = [] {
        std::array<std::array<detail::match_unit, 128>, 3> t{};
        for (std::size_t fl = 0; fl < 3; ++fl)
          for (std::uint32_t c = 0; c < 128; ++c)
            t[fl][c] = detail::make_unit(c, static_cast<regex_flavour>(fl));
        return t;
      }();
      std::vector<detail::match_unit>& units = s.units[i];
      units.resize(s.cps.size());
      for (std::size_t k = 0; k < s.cps.size(); ++k) {
        const std::uint32_t cp = s.cps[k];
        units[k] = cp < 0x80 ? ascii[i][cp] : detail::make_unit(cp, f);
      }
      s.units_built[i] = true;
    }
    return s.units[i];
  }

  std::vector<detail::regex_program> programs_;
  const pre_tokenizer_type* type_ = nullptr;
  std::uint16_t flags_ = pre_flag::none;
  pre_rules fast_ = pre_rules::none;
};

}  // namespace mnemo::text
