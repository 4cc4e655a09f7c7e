// The type-erased interface behind mnemo::engine: one virtual call per operation, so a
// decode dispatches once and then runs the compile-time context<Model, Memory>
// (engine/backend_for.hpp implements it). Users hold an engine, not this.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "mnemo/base/hooks.hpp"
#include "mnemo/base/result.hpp"
#include "mnemo/base/status.hpp"
#include "mnemo/batch/batch.hpp"
#include "mnemo/memory/types.hpp"

namespace mnemo {
namespace text {
class tokenizer;
}

class engine_backend {
 public:
  virtual ~engine_backend() = default;

  virtual std::string_view architecture() const noexcept = 0;
  virtual std::uint32_t n_vocab() const noexcept = 0;
  virtual std::uint32_t n_embd() const noexcept = 0;

  // text (the model file's tokenizer)
  virtual const text::tokenizer* tokenizer() const noexcept = 0;
  virtual result<std::vector<token_id>> tokenize(std::string_view text, bool add_special,
                                                 bool parse_special) const = 0;
  virtual result<std::string> detokenize(std::span<const token_id> ids, bool render_special,
                                         bool text_start) const = 0;
  virtual token_id bos() const noexcept = 0;
  virtual token_id eos() const noexcept = 0;

  // decoding
  virtual status decode(const batch& b) = 0;
  virtual std::uint32_t n_outputs() const noexcept = 0;
  virtual std::span<const float> logits() const noexcept = 0;
  virtual std::span<const float> logits_ith(std::int32_t i) const noexcept = 0;

  // sequences
  virtual status seq_rm(seq_id s, pos_t p0, pos_t p1) = 0;
  virtual status seq_cp(seq_id src, seq_id dst, pos_t p0, pos_t p1) = 0;
  virtual status seq_keep(seq_id s) = 0;
  virtual status seq_add(seq_id s, pos_t p0, pos_t p1, pos_t delta) = 0;
  virtual status seq_div(seq_id s, pos_t p0, pos_t p1, int d) = 0;
  virtual pos_t seq_pos_min(seq_id s) const = 0;
  virtual pos_t seq_pos_max(seq_id s) const = 0;
  virtual void clear(bool data) = 0;

  // state
  virtual status state_write(seq_id s, std::vector<std::uint8_t>& out) = 0;
  virtual status state_read(std::span<const std::uint8_t> data, seq_id dest) = 0;

  // the memory, threads and hooks
  virtual memory::memory_report report() const = 0;
  virtual void set_threads(int n_threads, int n_threads_batch) = 0;
  virtual int n_threads() const noexcept = 0;
  virtual int n_threads_batch() const noexcept = 0;
  virtual void set_hooks(const context_hooks& h) = 0;
};

}  // namespace mnemo
