// OpenAI response shapes (needs nlohmann-json): whole completions, server-sent-event
// chunks of a stream, usage and error bodies. Text that is not valid UTF-8 (a reply cut
// inside a character) is written with U+FFFD in its place, never an exception.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "mnemo/serve/api_error.hpp"
#include "mnemo/serve/request.hpp"

namespace mnemo::serve {

enum class api_kind : std::uint8_t { completion, chat };

inline std::string dump(const nlohmann::json& j) {
  return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

inline nlohmann::json usage_json(const usage& u) {
  return {{"prompt_tokens", u.prompt_tokens},
          {"completion_tokens", u.completion_tokens},
          {"total_tokens", u.prompt_tokens + u.completion_tokens},
          {"prompt_tokens_details", {{"cached_tokens", u.cached_tokens}}}};
}

inline nlohmann::json finish_json(finish_reason why) {
  if (why == finish_reason::stop || why == finish_reason::length)
    return std::string(to_string(why));
  return nullptr;
}

inline std::string error_body(const api_error& e) {
  nlohmann::json j = {{"error",
                       {{"message", e.message},
                        {"type", e.type},
                        {"param", e.param.empty() ? nlohmann::json() : nlohmann::json(e.param)},
                        {"code", e.code.empty() ? nlohmann::json() : nlohmann::json(e.code)}}}};
  return dump(j);
}

/// The whole answer of a request that was not streamed.
inline std::string response_body(api_kind kind, std::string_view id, std::string_view model,
                                 std::int64_t created, std::string_view text, finish_reason why,
                                 const usage& u) {
  nlohmann::json choice = {{"index", 0}, {"finish_reason", finish_json(why)}};
  if (kind == api_kind::chat) {
    choice["message"] = {{"role", "assistant"}, {"content", std::string(text)}};
  } else {
    choice["text"] = std::string(text);
    choice["logprobs"] = nullptr;
  }
  nlohmann::json j = {{"id", std::string(id)},
                      {"object", kind == api_kind::chat ? "chat.completion" : "text_completion"},
                      {"created", created},
                      {"model", std::string(model)},
                      {"choices", nlohmann::json::array({choice})},
                      {"usage", usage_json(u)}};
  return dump(j);
}

/// One server-sent event "data: {...}\n\n" of a stream: a text piece (why empty), the
/// last chunk (why set, no text), or the usage chunk (no choices).
inline std::string stream_event(api_kind kind, std::string_view id, std::string_view model,
                                std::int64_t created, std::string_view piece,
                                std::optional<finish_reason> why, const usage* u = nullptr,
                                bool first = false) {
  nlohmann::json j = {
      {"id", std::string(id)},
      {"object", kind == api_kind::chat ? "chat.completion.chunk" : "text_completion"},
      {"created", created},
      {"model", std::string(model)}};
  if (u != nullptr) {
    j["choices"] = nlohmann::json::array();
    j["usage"] = usage_json(*u);
  } else {
    nlohmann::json choice = {{"index", 0},
                             {"finish_reason", why ? finish_json(*why) : nlohmann::json()}};
    if (kind == api_kind::chat) {
      nlohmann::json delta = nlohmann::json::object();
      if (first) delta["role"] = "assistant";
      if (!why) delta["content"] = std::string(piece);
      choice["delta"] = delta;
    } else {
      choice["text"] = std::string(why ? std::string_view() : piece);
      choice["logprobs"] = nullptr;
    }
    j["choices"] = nlohmann::json::array({choice});
  }
  return "data: " + dump(j) + "\n\n";
}

inline std::string stream_error_event(const api_error& e) {
  return "data: " + error_body(e) + "\n\n";
}

}  // namespace mnemo::serve
