// A request as the scheduler serves it: prompt token ids, how to generate, and a sink
// that receives the reply. Parsing (serve/openai_json.hpp) and the HTTP layer build
// these; the scheduler never sees JSON or sockets.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "mnemo/base/status.hpp"
#include "mnemo/batch/batch.hpp"
#include "mnemo/sampling.hpp"

namespace mnemo::serve {

/// OpenAI's sampling and stopping fields, validated (serve/openai_json.hpp).
struct generation_params {
  std::uint32_t max_tokens = 16;  // tokens to generate at most
  float temperature = 1.0f;       // 0: greedy
  float top_p = 1.0f;
  std::uint32_t top_k = 0;            // 0: all
  std::optional<std::uint64_t> seed;  // none: the scheduler picks one per request
  std::vector<std::string> stop;      // generation ends before the first of these texts
  bool ignore_eos = false;            // keep generating past the end-of-sequence token

  sampler_params sampling(std::uint64_t fallback_seed) const noexcept {
    return {.temperature = temperature,
            .top_k = top_k,
            .top_p = top_p,
            .seed = seed.value_or(fallback_seed)};
  }
};

enum class finish_reason : std::uint8_t {
  stop,       // end-of-sequence token or a stop text
  length,     // max_tokens, or the slot's context is full
  cancelled,  // the client went away
  error,      // the request failed (the status says why); others are unaffected
};

inline std::string_view to_string(finish_reason r) noexcept {
  switch (r) {
    case finish_reason::stop: return "stop";
    case finish_reason::length: return "length";
    case finish_reason::cancelled: return "cancelled";
    case finish_reason::error: return "error";
  }
  return "error";
}

struct usage {
  std::size_t prompt_tokens = 0;
  std::size_t completion_tokens = 0;
  std::size_t cached_tokens = 0;  // prompt tokens taken from the prefix cache
};

/// Receives one request's reply, always on the scheduler's thread: text pieces (stop
/// texts already cut, each piece whole UTF-8 characters), then exactly one on_done.
class request_sink {
 public:
  virtual ~request_sink() = default;
  virtual void on_text(std::string_view piece) = 0;
  /// The row each generated token was sampled from [n_vocab]; for logprobs and tests.
  virtual void on_logits(std::span<const float> /*row*/) {}
  virtual void on_done(finish_reason why, const usage& u, const status& error) = 0;
};

struct request {
  std::vector<token_id> prompt;  // at least one token
  generation_params params;
  std::shared_ptr<request_sink> sink;
  /// Set by anyone (the client went away); the scheduler frees the slot at its next step.
  std::shared_ptr<std::atomic<bool>> cancelled = std::make_shared<std::atomic<bool>>(false);
};

}  // namespace mnemo::serve
