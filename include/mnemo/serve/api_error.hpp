// An OpenAI-style error: the HTTP status and the body
// {"error": {"message", "type", "param", "code"}} that clients of the OpenAI API parse.
#pragma once

#include <string>

#include "mnemo/base/status.hpp"

namespace mnemo::serve {

struct api_error {
  int http_status = 400;
  std::string type = "invalid_request_error";
  std::string message;
  std::string param;  // the offending field, empty when none
  std::string code;   // a machine-readable reason, empty when none

  static api_error invalid(std::string message, std::string param = {}, std::string code = {}) {
    return {400, "invalid_request_error", std::move(message), std::move(param), std::move(code)};
  }
};

/// The HTTP answer to a status from the scheduler: a full queue is 503 (retry later),
/// a prompt too long 400, anything else a server error.
inline api_error to_api_error(const status& st) {
  switch (st.code()) {
    case status_code::no_space: return {503, "server_busy", st.message(), "", "queue_full"};
    case status_code::out_of_range:
      return {400, "invalid_request_error", st.message(), "prompt", "context_length_exceeded"};
    case status_code::invalid_argument: return {400, "invalid_request_error", st.message(), "", ""};
    default: return {500, "server_error", st.to_string(), "", ""};
  }
}

}  // namespace mnemo::serve
