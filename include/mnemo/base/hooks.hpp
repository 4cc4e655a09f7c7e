// Callbacks a caller hands to long-running calls: abort (checked between micro-batches
// and between layers), progress (model load, long prompts) and a log sink. Plain
// function pointers with a user pointer, so the C API passes them through unchanged
// and a disabled hook costs one null test.
#pragma once

#include <cstdarg>
#include <cstdio>

#include "mnemo/base/config.hpp"
#include "mnemo/base/status.hpp"

namespace mnemo {

/// Returns true to stop the call in progress: it then fails with status_code::aborted
/// and changes nothing (a decode rolls its memory back).
struct abort_callback {
  bool (*fn)(void* user) = nullptr;
  void* user = nullptr;

  bool requested() const { return fn != nullptr && fn(user); }
};

/// Called with a fraction in [0, 1] as a model loads or a long batch is decoded (after
/// each micro-batch); the last call of a finished task passes 1.
struct progress_callback {
  void (*fn)(float fraction, void* user) = nullptr;
  void* user = nullptr;

  void operator()(float fraction) const {
    if (fn != nullptr) fn(fraction, user);
  }
};

enum class log_level : int { debug = 0, info = 1, warn = 2, error = 3 };

/// Receives mnemo's messages (one line each, no trailing newline); none are printed
/// without a sink.
struct log_sink {
  void (*fn)(log_level level, const char* message, void* user) = nullptr;
  void* user = nullptr;

  bool enabled() const noexcept { return fn != nullptr; }

  MNEMO_PRINTF_FORMAT(3, 4)
  void operator()(log_level level, const char* fmt, ...) const {
    if (fn == nullptr) return;
    char line[512];
    va_list args;
    va_start(args, fmt);
    std::vsnprintf(line, sizeof line, fmt, args);
    va_end(args);
    fn(level, line, user);
  }
};

/// The hooks of one context (context_params::hooks).
struct context_hooks {
  abort_callback abort;
  progress_callback progress;
  log_sink log;
};

/// The status of a call stopped by its abort callback at `where`.
inline status aborted_status(const char* where) {
  return make_status(status_code::aborted, "stopped by the abort callback %s", where);
}

}  // namespace mnemo
