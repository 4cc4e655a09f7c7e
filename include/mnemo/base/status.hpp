// Tier 3 of the error model: a status (code + message) for anything a caller can get
// wrong at run time. No exceptions are involved, so mnemo works with -fno-exceptions.
#pragma once

#include <cstdarg>
#include <cstdio>
#include <string>
#include <string_view>
#include <utility>

#include "mnemo/base/config.hpp"

namespace mnemo {

enum class status_code : int {
  ok = 0,
  invalid_argument,  // a malformed call: bad sizes, bad ids, bad batch
  out_of_range,      // an index, position or size beyond what is allowed
  no_space,          // the memory has no room for the batch; nothing changed
  not_found,         // an unknown sequence, tensor or key
  unsupported,       // valid, but not supported by this strategy, ISA or type
  corrupt_data,      // a truncated, malformed or hostile file or state blob
  io_error,          // the operating system refused a read, write or map
  failed_compute,    // a kernel or a user callback reported failure
  internal,          // a broken invariant inside mnemo (a bug: please report)
  aborted,           // the caller's abort callback stopped the call; nothing changed
};

constexpr std::string_view to_string(status_code c) noexcept {
  switch (c) {
    case status_code::ok: return "ok";
    case status_code::invalid_argument: return "invalid argument";
    case status_code::out_of_range: return "out of range";
    case status_code::no_space: return "no space";
    case status_code::not_found: return "not found";
    case status_code::unsupported: return "unsupported";
    case status_code::corrupt_data: return "corrupt data";
    case status_code::io_error: return "i/o error";
    case status_code::failed_compute: return "failed compute";
    case status_code::internal: return "internal error";
    case status_code::aborted: return "aborted";
  }
  return "unknown";
}

/// The outcome of a fallible call. A default-constructed status is ok and
/// allocates nothing; an error carries a message meant for a human.
class [[nodiscard]] status {
 public:
  status() noexcept = default;
  status(status_code code, std::string message) : code_(code), message_(std::move(message)) {}

  static status ok() noexcept { return {}; }

  bool is_ok() const noexcept { return code_ == status_code::ok; }
  explicit operator bool() const noexcept { return is_ok(); }
  status_code code() const noexcept { return code_; }
  const std::string& message() const noexcept { return message_; }

  /// "no space: the cache has 0 free cells for a ubatch of 4 tokens"
  std::string to_string() const {
    if (is_ok()) return "ok";
    std::string s(mnemo::to_string(code_));
    if (!message_.empty()) s.append(": ").append(message_);
    return s;
  }

  /// Prefixes the message with the caller's context ("state_read: ...").
  status& with_context(std::string_view context) & {
    if (!is_ok()) message_.insert(0, std::string(context) + ": ");
    return *this;
  }
  status&& with_context(std::string_view context) && { return std::move(with_context(context)); }

  friend bool operator==(const status& a, const status& b) noexcept { return a.code_ == b.code_; }

 private:
  status_code code_ = status_code::ok;
  std::string message_;
};

/// printf-style construction of an error status.
MNEMO_PRINTF_FORMAT(2, 3)
inline status make_status(status_code code, const char* fmt, ...) {
  va_list args;
  va_start(args, fmt);
  va_list copy;
  va_copy(copy, args);
  const int n = std::vsnprintf(nullptr, 0, fmt, copy);
  va_end(copy);
  std::string msg(n > 0 ? static_cast<std::size_t>(n) : 0, '\0');
  if (n > 0) std::vsnprintf(msg.data(), msg.size() + 1, fmt, args);
  va_end(args);
  return status(code, std::move(msg));
}

}  // namespace mnemo

/// Returns the status of `expr` from the enclosing function when it is an error.
#define MNEMO_RETURN_IF_ERROR(expr)                   \
  do {                                                \
    ::mnemo::status mnemo_status_ = (expr);           \
    if (!mnemo_status_.is_ok()) return mnemo_status_; \
  } while (0)
