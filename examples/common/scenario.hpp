// The fixtures' scenario format (docs/examples.md, mnemo-replay): a JSON file listing
// decode calls (tokens, positions, one sequence id per token, every token asks for
// logits) with an optional sequence operation before each call, and a .bin of f32
// little-endian logits, one n_vocab row per token in call order.
//
// A small JSON reader of our own (objects, arrays, strings, numbers, true/false/null)
// that returns a status with the byte offset on malformed input, and the scenario
// built on it. Shared by mnemo-replay and the fixture tests.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "mnemo/base/result.hpp"
#include "mnemo/base/status.hpp"
#include "mnemo/batch/batch.hpp"
#include "mnemo/text/utf8.hpp"

namespace mnemo_examples {

// ---- JSON ------------------------------------------------------------------------

struct json_member;

struct json_value {
  enum class kind { null, boolean, number, string, array, object };
  kind k = kind::null;
  bool b = false;
  double num = 0.0;
  std::string str;
  std::vector<json_value> arr;
  std::vector<json_member> obj;  // a struct, not std::pair: pair needs a complete json_value

  /// The member `key` of an object, or nullptr.
  const json_value* get(std::string_view key) const noexcept;
};

struct json_member {
  std::string name;
  json_value value;
};

inline const json_value* json_value::get(std::string_view key) const noexcept {
  if (k != kind::object) return nullptr;
  for (const json_member& m : obj)
    if (m.name == key) return &m.value;
  return nullptr;
}

class json_parser {
 public:
  static mnemo::result<json_value> parse(std::string_view text) {
    json_parser p(text);
    json_value v;
    MNEMO_RETURN_IF_ERROR(p.value(v, 0));
    p.skip_ws();
    if (p.i_ != text.size()) return p.fail("unexpected text after the value");
    return v;
  }

 private:
  static constexpr int k_max_depth = 64;
  explicit json_parser(std::string_view s) : s_(s) {}

  mnemo::status fail(const char* what) const {
    return mnemo::make_status(mnemo::status_code::corrupt_data, "json: %s at byte %zu", what, i_);
  }
  void skip_ws() {
    while (i_ < s_.size() && (s_[i_] == ' ' || s_[i_] == '\n' || s_[i_] == '\r' || s_[i_] == '\t'))
      ++i_;
  }
  bool eat(char c) {
    skip_ws();
    if (i_ < s_.size() && s_[i_] == c) {
      ++i_;
      return true;
    }
    return false;
  }
  bool literal(std::string_view word) {
    if (s_.substr(i_, word.size()) != word) return false;
    i_ += word.size();
    return true;
  }

  mnemo::status value(json_value& v, int depth) {
    if (depth > k_max_depth) return fail("nesting too deep");
    skip_ws();
    if (i_ >= s_.size()) return fail("unexpected end of input");
    const char c = s_[i_];
    if (c == '{') return object(v, depth);
    if (c == '[') return array(v, depth);
    if (c == '"') {
      v.k = json_value::kind::string;
      return string(v.str);
    }
    if (literal("true") || literal("false")) {
      v.k = json_value::kind::boolean;
      v.b = c == 't';
      return {};
    }
    if (literal("null")) {
      v.k = json_value::kind::null;
      return {};
    }
    return number(v);
  }

  mnemo::status object(json_value& v, int depth) {
    ++i_;  // '{'
    v.k = json_value::kind::object;
    if (eat('}')) return {};
    do {
      skip_ws();
      std::string key;
      if (i_ >= s_.size() || s_[i_] != '"') return fail("expected a member name");
      MNEMO_RETURN_IF_ERROR(string(key));
      if (!eat(':')) return fail("expected ':'");
      v.obj.push_back({std::move(key), json_value{}});
      MNEMO_RETURN_IF_ERROR(value(v.obj.back().value, depth + 1));
    } while (eat(','));
    if (!eat('}')) return fail("expected ',' or '}'");
    return {};
  }

  mnemo::status array(json_value& v, int depth) {
    ++i_;  // '['
    v.k = json_value::kind::array;
    if (eat(']')) return {};
    do {
      v.arr.emplace_back();
      MNEMO_RETURN_IF_ERROR(value(v.arr.back(), depth + 1));
    } while (eat(','));
    if (!eat(']')) return fail("expected ',' or ']'");
    return {};
  }

  mnemo::status string(std::string& out) {
    ++i_;  // '"'
    while (i_ < s_.size() && s_[i_] != '"') {
      const char c = s_[i_++];
      if (static_cast<unsigned char>(c) < 0x20) return fail("control character in a string");
      if (c != '\\') {
        out.push_back(c);
        continue;
      }
      if (i_ >= s_.size()) break;
      const char e = s_[i_++];
      switch (e) {
        case '"': out.push_back('"'); break;
        case '\\': out.push_back('\\'); break;
        case '/': out.push_back('/'); break;
        case 'b': out.push_back('\b'); break;
        case 'f': out.push_back('\f'); break;
        case 'n': out.push_back('\n'); break;
        case 'r': out.push_back('\r'); break;
        case 't': out.push_back('\t'); break;
        case 'u': {
          std::uint32_t cp = 0;
          MNEMO_RETURN_IF_ERROR(hex4(cp));
          if (cp >= 0xD800 && cp < 0xDC00 && literal("\\u")) {  // a surrogate pair
            std::uint32_t lo = 0;
            MNEMO_RETURN_IF_ERROR(hex4(lo));
            if (lo < 0xDC00 || lo >= 0xE000) return fail("bad surrogate pair");
            cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
          }
          mnemo::text::append_utf8(out, cp);
          break;
        }
        default: return fail("bad escape");
      }
    }
    if (i_ >= s_.size()) return fail("unterminated string");
    ++i_;  // '"'
    return {};
  }

  mnemo::status hex4(std::uint32_t& cp) {
    if (i_ + 4 > s_.size()) return fail("truncated \\u escape");
    for (int n = 0; n < 4; ++n) {
      const char h = s_[i_++];
      const int d = h >= '0' && h <= '9'   ? h - '0'
                    : h >= 'a' && h <= 'f' ? h - 'a' + 10
                    : h >= 'A' && h <= 'F' ? h - 'A' + 10
                                           : -1;
      if (d < 0) return fail("bad hex digit");
      cp = cp * 16 + static_cast<std::uint32_t>(d);
    }
    return {};
  }

  mnemo::status number(json_value& v) {
    const std::size_t start = i_;
    auto digits = [&] {
      const std::size_t d0 = i_;
      while (i_ < s_.size() && s_[i_] >= '0' && s_[i_] <= '9') ++i_;
      return i_ > d0;
    };
    if (i_ < s_.size() && s_[i_] == '-') ++i_;
    if (!digits()) return fail("expected a value");
    if (i_ < s_.size() && s_[i_] == '.') {
      ++i_;
      if (!digits()) return fail("expected digits after '.'");
    }
    if (i_ < s_.size() && (s_[i_] == 'e' || s_[i_] == 'E')) {
      ++i_;
      if (i_ < s_.size() && (s_[i_] == '+' || s_[i_] == '-')) ++i_;
      if (!digits()) return fail("expected an exponent");
    }
    const std::string text(s_.substr(start, i_ - start));
    v.k = json_value::kind::number;
    v.num = std::strtod(text.c_str(), nullptr);
    return {};
  }

  std::string_view s_;
  std::size_t i_ = 0;
};

// ---- scenarios -------------------------------------------------------------------

/// A sequence operation written as in the fixtures: "seq_cp 0 1 0 32". Also
/// seq_rm S P0 P1, seq_keep S, seq_add S P0 P1 DELTA, seq_div S P0 P1 D.
struct scenario_op {
  std::string name;  // empty: none
  std::vector<std::int32_t> args;
};

struct scenario_call {
  scenario_op before;
  std::vector<mnemo::token_id> tokens;
  std::vector<mnemo::pos_t> pos;
  std::vector<mnemo::seq_id> seq;
};

struct scenario {
  std::string model, name, kv_type;
  std::uint32_t n_vocab = 0;
  std::vector<scenario_call> calls;

  /// Rows of logits the scenario produces (every token asks for logits).
  std::size_t n_rows() const noexcept {
    std::size_t n = 0;
    for (const auto& c : calls) n += c.tokens.size();
    return n;
  }
};

inline mnemo::result<scenario_op> parse_op(std::string_view text) {
  scenario_op op;
  std::size_t i = 0;
  auto word = [&] {
    while (i < text.size() && text[i] == ' ') ++i;
    const std::size_t b = i;
    while (i < text.size() && text[i] != ' ') ++i;
    return text.substr(b, i - b);
  };
  op.name = std::string(word());
  if (op.name.empty()) return op;
  for (std::string_view w = word(); !w.empty(); w = word()) {
    const std::string s(w);
    char* end = nullptr;
    const long v = std::strtol(s.c_str(), &end, 10);
    if (end != s.c_str() + s.size() || v < std::numeric_limits<std::int32_t>::min() ||
        v > std::numeric_limits<std::int32_t>::max())
      return mnemo::make_status(mnemo::status_code::corrupt_data,
                                "scenario: '%s' in operation '%.*s' is not an integer", s.c_str(),
                                static_cast<int>(text.size()), text.data());
    op.args.push_back(static_cast<std::int32_t>(v));
  }
  const std::size_t want = op.name == "seq_keep"                          ? 1
                           : op.name == "seq_rm"                          ? 3
                           : op.name == "seq_cp"                          ? 4
                           : op.name == "seq_add" || op.name == "seq_div" ? 4
                                                                          : 0;
  if (want == 0 || op.args.size() != want)
    return mnemo::make_status(mnemo::status_code::corrupt_data,
                              "scenario: unknown operation or wrong argument count: '%.*s'",
                              static_cast<int>(text.size()), text.data());
  return op;
}

/// Runs `op` on anything with the memory's sequence operations (a context or a memory).
template <class Target>
mnemo::status apply_op(Target& t, const scenario_op& op) {
  const auto& a = op.args;
  if (op.name.empty()) return {};
  if (op.name == "seq_cp") return t.seq_cp(a[0], a[1], a[2], a[3]);
  if (op.name == "seq_rm") return t.seq_rm(a[0], a[1], a[2]);
  if (op.name == "seq_keep") return t.seq_keep(a[0]);
  if (op.name == "seq_add") return t.seq_add(a[0], a[1], a[2], a[3]);
  if (op.name == "seq_div") return t.seq_div(a[0], a[1], a[2], a[3]);
  return mnemo::make_status(mnemo::status_code::invalid_argument,
                            "scenario: unknown operation '%s'", op.name.c_str());
}

namespace scenario_detail {

template <class T>
mnemo::status int_array(const json_value& call, const char* key, std::size_t index,
                        std::vector<T>& out) {
  const json_value* a = call.get(key);
  if (a == nullptr || a->k != json_value::kind::array)
    return mnemo::make_status(mnemo::status_code::corrupt_data,
                              "scenario: call %zu has no array '%s'", index, key);
  for (const json_value& v : a->arr) {
    if (v.k != json_value::kind::number || v.num != std::floor(v.num) ||
        v.num < static_cast<double>(std::numeric_limits<T>::min()) ||
        v.num > static_cast<double>(std::numeric_limits<T>::max()))
      return mnemo::make_status(mnemo::status_code::corrupt_data,
                                "scenario: call %zu: '%s' holds a value that is not a 32-bit "
                                "integer",
                                index, key);
    out.push_back(static_cast<T>(v.num));
  }
  return {};
}

inline std::string string_or(const json_value& v, const char* key) {
  const json_value* s = v.get(key);
  return s != nullptr && s->k == json_value::kind::string ? s->str : std::string();
}

}  // namespace scenario_detail

inline mnemo::result<scenario> parse_scenario(std::string_view text) {
  MNEMO_ASSIGN_OR_RETURN(json_value root, json_parser::parse(text));
  if (root.k != json_value::kind::object)
    return mnemo::make_status(mnemo::status_code::corrupt_data, "scenario: not a JSON object");
  scenario sc;
  sc.model = scenario_detail::string_or(root, "model");
  sc.name = scenario_detail::string_or(root, "scenario");
  sc.kv_type = scenario_detail::string_or(root, "kv_type");
  if (const json_value* nv = root.get("n_vocab")) {
    if (nv->k != json_value::kind::number || nv->num < 1 || nv->num > 1e9 ||
        nv->num != std::floor(nv->num))
      return mnemo::make_status(mnemo::status_code::corrupt_data,
                                "scenario: n_vocab is not a positive integer");
    sc.n_vocab = static_cast<std::uint32_t>(nv->num);
  }
  const json_value* calls = root.get("calls");
  if (calls == nullptr || calls->k != json_value::kind::array)
    return mnemo::make_status(mnemo::status_code::corrupt_data, "scenario: no array 'calls'");
  for (std::size_t i = 0; i < calls->arr.size(); ++i) {
    const json_value& c = calls->arr[i];
    if (c.k != json_value::kind::object)
      return mnemo::make_status(mnemo::status_code::corrupt_data,
                                "scenario: call %zu is not an object", i);
    scenario_call call;
    MNEMO_RETURN_IF_ERROR(scenario_detail::int_array(c, "tokens", i, call.tokens));
    MNEMO_RETURN_IF_ERROR(scenario_detail::int_array(c, "pos", i, call.pos));
    MNEMO_RETURN_IF_ERROR(scenario_detail::int_array(c, "seq", i, call.seq));
    if (call.pos.size() != call.tokens.size() || call.seq.size() != call.tokens.size())
      return mnemo::make_status(mnemo::status_code::corrupt_data,
                                "scenario: call %zu has %zu tokens, %zu positions and %zu "
                                "sequence ids",
                                i, call.tokens.size(), call.pos.size(), call.seq.size());
    MNEMO_ASSIGN_OR_RETURN(call.before, parse_op(scenario_detail::string_or(c, "before")));
    sc.calls.push_back(std::move(call));
  }
  return sc;
}

/// Runs every call of `sc` on a context (before-operation, then one decode with every
/// token asking for logits) and appends the logits rows to `out` in call order.
template <class Context>
mnemo::status run_scenario(Context& ctx, const scenario& sc, std::vector<float>& out) {
  mnemo::batch b;
  for (std::size_t i = 0; i < sc.calls.size(); ++i) {
    const scenario_call& c = sc.calls[i];
    MNEMO_RETURN_IF_ERROR(apply_op(ctx, c.before).with_context("call " + std::to_string(i)));
    b.clear();
    for (std::size_t j = 0; j < c.tokens.size(); ++j)
      b.add(c.tokens[j], c.pos[j], {c.seq[j]}, true);
    MNEMO_RETURN_IF_ERROR(ctx.decode(b).with_context("call " + std::to_string(i)));
    const auto rows = ctx.logits();
    out.insert(out.end(), rows.begin(), rows.end());
  }
  return {};
}

inline mnemo::result<std::string> read_text_file(const std::string& path) {
  std::FILE* f = std::fopen(path.c_str(), "rb");
  if (f == nullptr)
    return mnemo::make_status(mnemo::status_code::io_error, "cannot open '%s'", path.c_str());
  std::string text;
  char buf[65536];
  for (std::size_t n; (n = std::fread(buf, 1, sizeof buf, f)) > 0;) text.append(buf, n);
  const bool bad = std::ferror(f) != 0;
  std::fclose(f);
  if (bad)
    return mnemo::make_status(mnemo::status_code::io_error, "cannot read '%s'", path.c_str());
  return text;
}

inline mnemo::result<scenario> read_scenario(const std::string& path) {
  MNEMO_ASSIGN_OR_RETURN(std::string text, read_text_file(path));
  auto sc = parse_scenario(text);
  if (!sc.is_ok()) return mnemo::status(sc.error()).with_context(path);
  return sc;
}

/// Reads a logits file: f32 little-endian (this host's order: x86 and AArch64 are LE).
inline mnemo::result<std::vector<float>> read_logits(const std::string& path) {
  MNEMO_ASSIGN_OR_RETURN(std::string bytes, read_text_file(path));
  if (bytes.size() % sizeof(float) != 0)
    return mnemo::make_status(mnemo::status_code::corrupt_data,
                              "%s: %zu bytes is not a whole number of floats", path.c_str(),
                              bytes.size());
  std::vector<float> out(bytes.size() / sizeof(float));
  std::memcpy(out.data(), bytes.data(), bytes.size());
  return out;
}

inline mnemo::status write_logits(const std::string& path, std::span<const float> values) {
  std::FILE* f = std::fopen(path.c_str(), "wb");
  if (f == nullptr)
    return mnemo::make_status(mnemo::status_code::io_error, "cannot create '%s'", path.c_str());
  const std::size_t n = std::fwrite(values.data(), sizeof(float), values.size(), f);
  const bool ok = std::fclose(f) == 0 && n == values.size();
  if (!ok)
    return mnemo::make_status(mnemo::status_code::io_error, "cannot write '%s'", path.c_str());
  return {};
}

}  // namespace mnemo_examples
