// Parsing and validating OpenAI request bodies into typed requests (needs nlohmann-json).
// Every failure is an api_error naming the field; nothing throws, whatever the bytes:
// malformed or deeply nested JSON, invalid UTF-8, wrong types, unknown fields,
// out-of-range numbers.
//
//   auto p = parse_completion(body, limits);
//   if (!p.ok()) return reply(p.error);           // 400 with {"error": {...}}
//   use(p.value->prompt, p.value->params);
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include <nlohmann/json.hpp>

#include "mnemo/batch/batch.hpp"
#include "mnemo/serve/api_error.hpp"
#include "mnemo/serve/request.hpp"
#include "mnemo/text/chat_types.hpp"
#include "mnemo/text/utf8.hpp"

namespace mnemo::serve {

using json = nlohmann::json;

struct parse_limits {
  std::uint32_t max_tokens_max = 4096;  // larger max_tokens is refused, not clipped
  std::uint32_t default_max_tokens = 256;
  std::uint32_t n_vocab = 0;     // token ids in prompts must be below it (0: unchecked)
  std::size_t max_nesting = 32;  // deeper JSON is refused before it is parsed
  std::size_t max_stop = 4;      // OpenAI allows up to 4 stop texts
  std::size_t max_stop_bytes = 256;
};

template <class T>
struct parsed {
  std::optional<T> value;
  api_error error;
  bool ok() const noexcept { return value.has_value(); }
};

struct completion_body {
  std::string model;
  std::variant<std::string, std::vector<token_id>> prompt;
  generation_params params;
  bool stream = false;
  bool include_usage = false;  // stream_options.include_usage
};

struct chat_body {
  std::string model;
  std::vector<text::chat_message> messages;
  generation_params params;
  bool stream = false;
  bool include_usage = false;
};

namespace detail {

/// Depth of [ and { outside strings, stopping early past `limit`.
inline std::size_t json_depth(std::string_view s, std::size_t limit) {
  std::size_t depth = 0, most = 0;
  bool in_string = false;
  for (std::size_t i = 0; i < s.size() && most <= limit; ++i) {
    const char c = s[i];
    if (in_string) {
      if (c == '\\')
        ++i;
      else if (c == '"')
        in_string = false;
    } else if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      most = std::max(most, ++depth);
    } else if ((c == ']' || c == '}') && depth > 0) {
      --depth;
    }
  }
  return most;
}

/// The body as a JSON object, or the error to answer.
inline std::optional<api_error> parse_object(std::string_view body, const parse_limits& lim,
                                             json& out) {
  std::size_t bad = 0;
  if (!text::is_valid_utf8(body, &bad))
    return api_error::invalid("the request body is not valid UTF-8 (first bad byte at offset " +
                                  std::to_string(bad) + ")",
                              "", "invalid_utf8");
  if (json_depth(body, lim.max_nesting) > lim.max_nesting)
    return api_error::invalid("the JSON body nests deeper than " + std::to_string(lim.max_nesting) +
                              " levels");
  out = json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (out.is_discarded())
    return api_error::invalid("the request body is not valid JSON", "", "invalid_json");
  if (!out.is_object()) return api_error::invalid("the request body must be a JSON object");
  return std::nullopt;
}

inline std::optional<api_error> only_known(const json& o,
                                           std::initializer_list<std::string_view> known) {
  for (auto it = o.begin(); it != o.end(); ++it) {
    bool found = false;
    for (std::string_view k : known) found = found || it.key() == k;
    if (!found)
      return api_error::invalid("Unrecognized request argument supplied: " + it.key(), it.key(),
                                "unknown_parameter");
  }
  return std::nullopt;
}

inline api_error wrong_type(const std::string& field, const char* want) {
  return api_error::invalid("'" + field + "' must be " + want, field, "invalid_type");
}

/// A number field in [lo, hi]; absent or null keeps `out`.
inline std::optional<api_error> number(const json& o, const std::string& f, double lo, double hi,
                                       float& out) {
  auto it = o.find(f);
  if (it == o.end() || it->is_null()) return std::nullopt;
  if (!it->is_number()) return wrong_type(f, "a number");
  const double v = it->get<double>();
  if (!(v >= lo && v <= hi))
    return api_error::invalid(
        "'" + f + "' must be between " + std::to_string(lo) + " and " + std::to_string(hi), f,
        "invalid_value");
  out = static_cast<float>(v);
  return std::nullopt;
}

/// An integer field in [lo, hi]; absent or null keeps `out`.
template <class T>
std::optional<api_error> integer(const json& o, const std::string& f, std::int64_t lo,
                                 std::int64_t hi, T& out) {
  auto it = o.find(f);
  if (it == o.end() || it->is_null()) return std::nullopt;
  if (!it->is_number_integer()) return wrong_type(f, "an integer");
  if (it->is_number_unsigned() ? it->get<std::uint64_t>() > static_cast<std::uint64_t>(hi)
                               : (it->get<std::int64_t>() < lo || it->get<std::int64_t>() > hi))
    return api_error::invalid(
        "'" + f + "' must be between " + std::to_string(lo) + " and " + std::to_string(hi), f,
        "invalid_value");
  out =
      static_cast<T>(it->is_number_unsigned() ? static_cast<std::int64_t>(it->get<std::uint64_t>())
                                              : it->get<std::int64_t>());
  return std::nullopt;
}

inline std::optional<api_error> boolean(const json& o, const std::string& f, bool& out) {
  auto it = o.find(f);
  if (it == o.end() || it->is_null()) return std::nullopt;
  if (!it->is_boolean()) return wrong_type(f, "a boolean");
  out = it->get<bool>();
  return std::nullopt;
}

/// The fields completions and chat completions share.
inline std::optional<api_error> common_fields(const json& o, const parse_limits& lim,
                                              std::string& model, generation_params& p,
                                              bool& stream, bool& include_usage) {
  if (auto it = o.find("model"); it != o.end() && !it->is_null()) {
    if (!it->is_string()) return wrong_type("model", "a string");
    model = it->get<std::string>();
  }
  p.max_tokens = lim.default_max_tokens;
  for (const char* f : {"max_tokens", "max_completion_tokens"}) {
    std::int64_t v = -1;
    auto it = o.find(f);
    if (it == o.end() || it->is_null()) continue;
    if (!it->is_number_integer()) return wrong_type(f, "an integer");
    if (it->is_number_unsigned() && it->get<std::uint64_t>() > lim.max_tokens_max)
      v = std::numeric_limits<std::int64_t>::max();
    else
      v = it->get<std::int64_t>();
    if (v < 1)
      return api_error::invalid(std::string("'") + f + "' must be at least 1", f, "invalid_value");
    if (v > lim.max_tokens_max)
      return api_error::invalid(std::string("'") + f + "' must be at most " +
                                    std::to_string(lim.max_tokens_max) + " (the slot's context)",
                                f, "invalid_value");
    p.max_tokens = static_cast<std::uint32_t>(v);
  }
  if (auto e = number(o, "temperature", 0.0, 2.0, p.temperature)) return e;
  if (auto e = number(o, "top_p", 0.0, 1.0, p.top_p)) return e;
  if (p.top_p <= 0.0f)
    return api_error::invalid("'top_p' must be above 0", "top_p", "invalid_value");
  if (auto e = integer(o, "top_k", 0, 1 << 24, p.top_k)) return e;
  std::int64_t seed = 0;
  if (auto it = o.find("seed"); it != o.end() && !it->is_null()) {
    if (auto e = integer(o, "seed", std::numeric_limits<std::int64_t>::min(),
                         std::numeric_limits<std::int64_t>::max(), seed))
      return e;
    p.seed = static_cast<std::uint64_t>(seed);
  }
  if (auto it = o.find("stop"); it != o.end() && !it->is_null()) {
    std::vector<std::string> stops;
    if (it->is_string()) {
      stops.push_back(it->get<std::string>());
    } else if (it->is_array()) {
      for (const json& s : *it) {
        if (!s.is_string()) return wrong_type("stop", "a string or an array of strings");
        stops.push_back(s.get<std::string>());
      }
    } else {
      return wrong_type("stop", "a string or an array of strings");
    }
    if (stops.size() > lim.max_stop)
      return api_error::invalid(
          "'stop' may hold at most " + std::to_string(lim.max_stop) + " texts", "stop",
          "invalid_value");
    for (const std::string& s : stops)
      if (s.size() > lim.max_stop_bytes)
        return api_error::invalid(
            "a 'stop' text is longer than " + std::to_string(lim.max_stop_bytes) + " bytes", "stop",
            "invalid_value");
    p.stop = std::move(stops);
  }
  if (auto e = boolean(o, "stream", stream)) return e;
  if (auto it = o.find("stream_options"); it != o.end() && !it->is_null()) {
    if (!it->is_object()) return wrong_type("stream_options", "an object");
    if (auto e = only_known(*it, {"include_usage"})) return e;
    if (auto e = boolean(*it, "include_usage", include_usage)) return e;
  }
  std::int64_t n = 1;
  if (auto e = integer(o, "n", 1, 1, n)) return e;
  // Accepted for compatibility; only their neutral values are implemented.
  for (const char* f : {"presence_penalty", "frequency_penalty"}) {
    float v = 0.0f;
    if (auto e = number(o, f, 0.0, 0.0, v)) return e;
  }
  if (auto e = boolean(o, "ignore_eos", p.ignore_eos)) return e;  // llama-server's extension
  if (auto it = o.find("user"); it != o.end() && !it->is_null() && !it->is_string())
    return wrong_type("user", "a string");
  return std::nullopt;
}

}  // namespace detail

inline parsed<completion_body> parse_completion(std::string_view body, const parse_limits& lim) {
  json o;
  if (auto e = detail::parse_object(body, lim, o)) return {std::nullopt, *e};
  if (auto e = detail::only_known(
          o, {"model", "prompt", "max_tokens", "max_completion_tokens", "temperature", "top_p",
              "top_k", "seed", "stop", "stream", "stream_options", "n", "presence_penalty",
              "frequency_penalty", "user", "ignore_eos"}))
    return {std::nullopt, *e};
  completion_body c;
  if (auto e = detail::common_fields(o, lim, c.model, c.params, c.stream, c.include_usage))
    return {std::nullopt, *e};
  auto it = o.find("prompt");
  if (it == o.end() || it->is_null())
    return {std::nullopt, api_error::invalid("'prompt' is required", "prompt", "missing")};
  const char* shape = "a string, an array of one string, or an array of token ids";
  if (it->is_string()) {
    c.prompt = it->get<std::string>();
  } else if (it->is_array() && it->size() == 1 && (*it)[0].is_string()) {
    c.prompt = (*it)[0].get<std::string>();
  } else if (it->is_array()) {
    std::vector<token_id> ids;
    for (const json& t : *it) {
      if (!t.is_number_integer()) return {std::nullopt, detail::wrong_type("prompt", shape)};
      const bool neg = !t.is_number_unsigned() && t.get<std::int64_t>() < 0;
      const std::uint64_t v = neg ? 0 : t.get<std::uint64_t>();
      if (neg || (lim.n_vocab > 0 && v >= lim.n_vocab) || v > 0x7fffffffu)
        return {std::nullopt, api_error::invalid("'prompt' holds a token id outside the "
                                                 "vocabulary",
                                                 "prompt", "invalid_value")};
      ids.push_back(static_cast<token_id>(v));
    }
    c.prompt = std::move(ids);
  } else {
    return {std::nullopt, detail::wrong_type("prompt", shape)};
  }
  return {std::move(c), {}};
}

inline parsed<chat_body> parse_chat(std::string_view body, const parse_limits& lim) {
  json o;
  if (auto e = detail::parse_object(body, lim, o)) return {std::nullopt, *e};
  if (auto e = detail::only_known(
          o, {"model", "messages", "max_tokens", "max_completion_tokens", "temperature", "top_p",
              "top_k", "seed", "stop", "stream", "stream_options", "n", "presence_penalty",
              "frequency_penalty", "user", "ignore_eos"}))
    return {std::nullopt, *e};
  chat_body c;
  if (auto e = detail::common_fields(o, lim, c.model, c.params, c.stream, c.include_usage))
    return {std::nullopt, *e};
  auto it = o.find("messages");
  if (it == o.end() || !it->is_array() || it->empty())
    return {std::nullopt, api_error::invalid("'messages' must be a non-empty array", "messages",
                                             it == o.end() ? "missing" : "invalid_type")};
  for (const json& m : *it) {
    if (!m.is_object())
      return {std::nullopt, detail::wrong_type("messages", "an array of objects")};
    if (auto e = detail::only_known(m, {"role", "content", "name"})) return {std::nullopt, *e};
    auto role = m.find("role");
    if (role == m.end() || !role->is_string())
      return {std::nullopt, detail::wrong_type("messages.role", "a string")};
    text::chat_message msg{role->get<std::string>(), ""};
    auto content = m.find("content");
    if (content == m.end() || content->is_null()) {
    } else if (content->is_string()) {
      msg.content = content->get<std::string>();
    } else if (content->is_array()) {  // [{"type": "text", "text": "..."}]
      for (const json& part : *content) {
        if (!part.is_object() || part.value("type", json()) != "text" || !part.contains("text") ||
            !part["text"].is_string())
          return {std::nullopt, api_error::invalid("only text content parts are supported",
                                                   "messages.content", "invalid_value")};
        msg.content += part["text"].get<std::string>();
      }
    } else {
      return {std::nullopt, detail::wrong_type("messages.content", "a string or an array")};
    }
    if (auto name = m.find("name"); name != m.end() && !name->is_string())
      return {std::nullopt, detail::wrong_type("messages.name", "a string")};
    c.messages.push_back(std::move(msg));
  }
  return {std::move(c), {}};
}

/// POST /tokenize {"content": "...", "add_special": bool}: llama-server's shape.
struct tokenize_body {
  std::string content;
  bool add_special = false;
};
inline parsed<tokenize_body> parse_tokenize(std::string_view body, const parse_limits& lim) {
  json o;
  if (auto e = detail::parse_object(body, lim, o)) return {std::nullopt, *e};
  if (auto e = detail::only_known(o, {"content", "add_special", "with_pieces"}))
    return {std::nullopt, *e};
  tokenize_body t;
  auto it = o.find("content");
  if (it == o.end() || !it->is_string())
    return {std::nullopt, detail::wrong_type("content", "a string")};
  t.content = it->get<std::string>();
  if (auto e = detail::boolean(o, "add_special", t.add_special)) return {std::nullopt, *e};
  return {std::move(t), {}};
}

/// POST /detokenize {"tokens": [ids]}.
inline parsed<std::vector<token_id>> parse_detokenize(std::string_view body,
                                                      const parse_limits& lim) {
  json o;
  if (auto e = detail::parse_object(body, lim, o)) return {std::nullopt, *e};
  if (auto e = detail::only_known(o, {"tokens"})) return {std::nullopt, *e};
  auto it = o.find("tokens");
  if (it == o.end() || !it->is_array())
    return {std::nullopt, detail::wrong_type("tokens", "an array of token ids")};
  std::vector<token_id> ids;
  for (const json& t : *it) {
    if (!t.is_number_integer() || (!t.is_number_unsigned() && t.get<std::int64_t>() < 0) ||
        (lim.n_vocab > 0 && t.get<std::uint64_t>() >= lim.n_vocab) ||
        t.get<std::uint64_t>() > 0x7fffffffu)
      return {std::nullopt, api_error::invalid("'tokens' must hold token ids of the vocabulary",
                                               "tokens", "invalid_value")};
    ids.push_back(static_cast<token_id>(t.get<std::uint64_t>()));
  }
  return {std::move(ids), {}};
}

}  // namespace mnemo::serve
