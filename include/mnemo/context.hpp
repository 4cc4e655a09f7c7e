// mnemo::context<Model, Memory>: decodes batches of many sequences through a model
// and a memory strategy and keeps the logits of the tokens that asked for them
// (docs/architecture.md, "Data flow of one decode call").
//
//   auto ctx = context<model::llama_model, memory::full_cache<dtype::f16>>::make(
//       model, std::move(cache), {.n_ubatch = 512, .n_seq_max = 4});
//   MNEMO_RETURN_IF_ERROR(ctx->decode(b));
//   std::span<const float> row = ctx->logits_ith(-1);  // the last output
//
// Failure guarantee: decode() validates the batch and plans room for every
// micro-batch before changing anything; a failure after that (a model or kernel
// error) rolls the memory back. Either way the memory holds exactly what it held
// before the call (pending K-shifts may have been applied: same positions, same
// state bytes), and the context holds no logits. An abort callback that asks to stop
// (context_params::hooks, checked before each micro-batch and between layers) fails
// the call with status_code::aborted under the same guarantee.
#pragma once

#include <algorithm>
#include <concepts>
#include <cstdint>
#include <cstring>
#include <span>
#include <vector>

#include "mnemo/base/hooks.hpp"
#include "mnemo/base/parallel.hpp"
#include "mnemo/base/result.hpp"
#include "mnemo/base/status.hpp"
#include "mnemo/batch/batch.hpp"
#include "mnemo/batch/validate.hpp"
#include "mnemo/memory/batch_plan.hpp"
#include "mnemo/memory/concepts.hpp"
#include "mnemo/memory/token_history.hpp"
#include "mnemo/simd/isa.hpp"

namespace mnemo {

/// What a decoder offers the context: its sizes, activation buffers sized for a
/// micro-batch, and the forward pass of one applied micro-batch, leaving the logits
/// of its output tokens (micro-batch order) in the workspace.
template <class M, class Memory>
concept decoder_model = requires(const M cm, Memory& mem, const ubatch& ub,
                                 typename M::workspace& ws, std::uint32_t n, int threads) {
  { cm.n_vocab() } -> std::convertible_to<std::uint32_t>;
  { cm.n_embd() } -> std::convertible_to<std::uint32_t>;
  { cm.make_workspace(n) } -> std::same_as<result<typename M::workspace>>;
  { cm.forward(mem, std::size_t{0}, ub, ws, threads) } -> std::same_as<status>;
  { ws.logits() } -> std::convertible_to<const float*>;
};

namespace context_detail {
// Unqualified calls: each strategy's state functions are found by ADL where the
// context is instantiated (a member of the same name would hide them).
template <class M>
status write_state(M& m, seq_id s, std::vector<std::uint8_t>& out) {
  return state_write(m, s, out);
}
template <class M>
status read_state(M& m, std::span<const std::uint8_t> data, seq_id dest) {
  return state_read(m, data, dest);
}
}  // namespace context_detail

struct context_params {
  std::uint32_t n_ubatch = 512;  // most tokens per micro-batch (activation buffer size)
  std::uint32_t n_batch = 0;     // most tokens per decode call; 0 = unlimited
  seq_id n_seq_max = 1;          // sequence ids in [0, n_seq_max)
  /// Threads of single-token micro-batches (generation) and of multi-token ones (prompts),
  /// as llama.cpp's n_threads / n_threads_batch. 0: default_thread_count() (the physical
  /// cores available) for n_threads, n_threads' value for n_threads_batch.
  int n_threads = 0;
  int n_threads_batch = 0;
  context_hooks hooks{};  // abort, progress and log (base/hooks.hpp)
  /// Keep each sequence's (token, position) history and, when a seq_rm / seq_cp needs
  /// positions a window memory forgot, decode them again (docs/context.md "Lost
  /// context"). Needs the memory's state functions (its *_state.hpp) for the undo.
  bool recompute = false;
};

/// Memory is any sequence memory (memory::check_memory names a missing member); the
/// model states what it needs of it through its forward()'s constraint (llama:
/// memory::kv_memory; mamba: recurrent state; jamba: both), which decoder_model<Model,
/// Memory> checks.
template <class Model, class Memory, simd::isa_tag Isa = simd::native>
class context {
  static_assert(memory::check_memory<Memory>::value);
  static_assert(decoder_model<Model, Memory>,
                "mnemo::context: the model's forward() does not take this memory: an "
                "attention model needs a memory::kv_memory (memory::check_kv_memory names what "
                "is missing), a recurrent one memory::recurrent's groups() / layer_state()");

 public:
  using workspace = typename Model::workspace;

  /// The model must outlive the context; the memory moves in.
  static result<context> make(const Model& model, Memory memory, const context_params& p) {
    if (p.n_ubatch == 0 || p.n_seq_max < 1 || p.n_seq_max > k_max_seq)
      return make_status(status_code::invalid_argument,
                         "context: n_ubatch (%u) must be > 0 and n_seq_max (%d) in [1, %d]",
                         p.n_ubatch, p.n_seq_max, k_max_seq);
    if (p.n_seq_max > memory.n_seq_max())
      return make_status(status_code::invalid_argument,
                         "context: n_seq_max %d is more than the memory was built for (%d); make "
                         "the memory with n_seq_max >= %d",
                         p.n_seq_max, memory.n_seq_max(), p.n_seq_max);
    if (p.recompute && !memory::state_memory<Memory>)
      return make_status(status_code::invalid_argument,
                         "context: recompute needs the memory's state_write / state_read "
                         "(include the strategy's *_state.hpp)");
    MNEMO_ASSIGN_OR_RETURN(workspace ws, model.make_workspace(p.n_ubatch));
    context c(model, std::move(memory), p, std::move(ws));
    c.set_threads(p.n_threads, p.n_threads_batch);
    c.set_hooks(p.hooks);
    if (p.recompute) c.hist_.reset(p.n_seq_max);
    return c;
  }

  /// Thread counts as in context_params (0: the defaults); params() shows them resolved.
  void set_threads(int n_threads, int n_threads_batch) noexcept {
    p_.n_threads = n_threads > 0 ? n_threads : default_thread_count();
    p_.n_threads_batch = n_threads_batch > 0 ? n_threads_batch : p_.n_threads;
  }
  /// Replaces the hooks; a model whose workspace carries them (model::forward_hooks)
  /// also checks the abort callback between layers.
  void set_hooks(const context_hooks& h) noexcept {
    p_.hooks = h;
    if constexpr (requires { ws_.abort = h.abort; }) ws_.abort = h.abort;
  }

  /// Decodes one batch. On success, logits_ith / output_row give the rows of the
  /// tokens that asked for output; on failure the memory is as before (see the top
  /// of this file) and there are no logits.
  status decode(const batch& b) {
    n_outputs_ = 0;
    row_of_token_.clear();
    batch_limits lim;
    lim.n_vocab = model_->n_vocab();
    lim.n_embd = model_->n_embd();
    lim.n_seq_max = static_cast<std::uint32_t>(p_.n_seq_max);
    lim.n_batch_max = p_.n_batch;
    MNEMO_ASSIGN_OR_RETURN(validated_batch vb,
                           validate(b, lim, memory::positions_of<Memory>{mem_}));
    MNEMO_RETURN_IF_ERROR(mem_.update());  // pending K-shifts, as llama_decode does
    MNEMO_ASSIGN_OR_RETURN(memory::planned_batch pb, memory::plan_batch(mem_, vb, p_.n_ubatch));

    const std::size_t nv = model_->n_vocab();
    rows_.assign(vb.n_tokens(), -1);
    std::int32_t n_out = 0;
    for (std::uint32_t i = 0; i < vb.n_tokens(); ++i)
      if (vb.output(i)) rows_[i] = n_out++;
    logits_.resize(static_cast<std::size_t>(n_out) * nv);

    const std::size_t n_ub = pb.ubatches.size();
    for (std::size_t u = 0; u < n_ub; ++u) {
      const ubatch& ub = pb.ubatches[u];
      const int threads = ub.n_tokens() == 1 ? p_.n_threads : p_.n_threads_batch;
      status st = p_.hooks.abort.requested() ? aborted_at(u) : mem_.apply(u, pb.tokens[u]);
      if (st) st = model_->template forward<Isa>(mem_, u, ub, ws_, threads);
      if (!st) {
        mem_.rollback();
        p_.hooks.log(st.code() == status_code::aborted ? log_level::info : log_level::warn,
                     "decode: %s; the memory is as before", st.to_string().c_str());
        return st;
      }
      if (n_ub > 1) p_.hooks.progress(static_cast<float>(u + 1) / static_cast<float>(n_ub));
      const float* src = ws_.logits();
      for (std::uint32_t j = 0; j < ub.n_tokens(); ++j) {
        if (!ub.output[j]) continue;
        std::memcpy(logits_.data() + static_cast<std::size_t>(rows_[ub.idx[j]]) * nv, src,
                    nv * sizeof(float));
        src += nv;
      }
    }
    mem_.commit();
    if (p_.recompute) record(vb);
    n_outputs_ = static_cast<std::uint32_t>(n_out);
    row_of_token_.swap(rows_);
    return {};
  }

  // ---- logits of the last successful decode --------------------------------------

  std::uint32_t n_vocab() const noexcept { return model_->n_vocab(); }
  std::uint32_t n_outputs() const noexcept { return n_outputs_; }
  /// [n_outputs, n_vocab]: the output tokens in batch order.
  std::span<const float> logits() const noexcept {
    return {logits_.data(), std::size_t{n_outputs_} * n_vocab()};
  }
  /// Output row r (batch order of the tokens that asked for output); empty when r is
  /// out of range.
  std::span<const float> output_row(std::uint32_t r) const noexcept {
    if (r >= n_outputs_) return {};
    return {logits_.data() + std::size_t{r} * n_vocab(), n_vocab()};
  }
  /// The row of batch token i, like llama_get_logits_ith: i < 0 counts outputs from
  /// the end (-1 = the last output). Empty when token i asked for no output.
  std::span<const float> logits_ith(std::int32_t i) const noexcept {
    if (i < 0) {
      const std::int64_t r = static_cast<std::int64_t>(n_outputs_) + i;
      return r < 0 ? std::span<const float>{} : output_row(static_cast<std::uint32_t>(r));
    }
    if (static_cast<std::size_t>(i) >= row_of_token_.size() || row_of_token_[i] < 0) return {};
    return output_row(static_cast<std::uint32_t>(row_of_token_[i]));
  }

  // ---- the memory ----------------------------------------------------------------

  Memory& memory() noexcept { return mem_; }
  const Memory& memory() const noexcept { return mem_; }
  const context_params& params() const noexcept { return p_; }

  /// A window memory refuses, with `unsupported` naming the sequence and its earliest
  /// restorable position, a removal or copy that would continue a sequence where its
  /// window was forgotten. In recompute mode such a suffix removal (or a branch copying
  /// a prefix) decodes the kept prefix again instead (docs/context.md "Lost context").
  status seq_rm(seq_id s, pos_t p0, pos_t p1) {
    status st = mem_.seq_rm(s, p0, p1);
    if (p_.recompute && st) hist_.seq_rm(s, p0, p1);
    if (p_.recompute && st.code() == status_code::unsupported && hist_.valid(s) &&
        hist_.complete(s) && hist_.is_suffix(s, p0, p1))
      return recompute(s, hist_.prefix(s, p0), st);
    return st;
  }
  status seq_cp(seq_id src, seq_id dst, pos_t p0, pos_t p1) {
    status st = mem_.seq_cp(src, dst, p0, p1);
    if (p_.recompute && st) hist_.seq_cp(src, dst, p0, p1);
    if (p_.recompute && st.code() == status_code::unsupported && src != dst && hist_.valid(src) &&
        hist_.valid(dst) && hist_.complete(src) && hist_.is_branch(src, dst, p0, p1))
      return recompute(dst, hist_.prefix(src, memory::pos_range::of(p0, p1).p1), st);
    return st;
  }
  status seq_keep(seq_id s) {
    status st = mem_.seq_keep(s);
    if (p_.recompute && st) hist_.seq_keep(s);
    return st;
  }
  status seq_add(seq_id s, pos_t p0, pos_t p1, pos_t delta) {
    status st = mem_.seq_add(s, p0, p1, delta);
    if (p_.recompute && st) hist_.shift(s, p0, p1, [delta](pos_t p) { return p + delta; });
    return st;
  }
  status seq_div(seq_id s, pos_t p0, pos_t p1, int d) {
    status st = mem_.seq_div(s, p0, p1, d);
    if (p_.recompute && st) hist_.shift(s, p0, p1, [d](pos_t p) { return p / d; });
    return st;
  }
  pos_t seq_pos_min(seq_id s) const { return mem_.seq_pos_min(s); }
  pos_t seq_pos_max(seq_id s) const { return mem_.seq_pos_max(s); }
  void clear(bool data = false) {
    mem_.clear(data);
    hist_.clear();
    n_outputs_ = 0;
  }

  // ---- lost context (docs/context.md) ------------------------------------------------

  /// The smallest p from which s can continue (seq_rm(s, p, -1), then decode p): 0 for
  /// memories that forget nothing. In recompute mode every p is reachable through
  /// seq_rm when s's history is complete; this still reports what the memory holds.
  pos_t earliest_restorable_pos(seq_id s) const {
    if constexpr (requires { mem_.earliest_restorable_pos(s); })
      return mem_.earliest_restorable_pos(s);
    else
      return 0;
  }
  /// Whether s can continue at p without decoding anything again: p <= pos_max + 1 and
  /// the memory holds what p attends.
  bool can_resume(seq_id s, pos_t p) const {
    if constexpr (requires { mem_.can_resume(s, p); })
      return mem_.can_resume(s, p);
    else
      return p >= 0 && p <= mem_.seq_pos_max(s) + 1;
  }
  /// In recompute mode: the (token, position) pairs s's cells come from, and whether
  /// that list is complete (no embedding input, no state_read since s was last empty).
  const memory::token_history& history() const noexcept { return hist_; }

  /// The memory's state (s == -1: all of it) through the strategy's state_write.
  status state_write(seq_id s, std::vector<std::uint8_t>& out) {
    static_assert(memory::check_saves_state<Memory>::value);
    return context_detail::write_state(mem_, s, out);
  }
  /// Loads a state written by state_write (dest == -1: the whole memory).
  status state_read(std::span<const std::uint8_t> data, seq_id dest = -1) {
    static_assert(memory::check_loads_state<Memory>::value);
    n_outputs_ = 0;
    status st = context_detail::read_state(mem_, data, dest);
    if (p_.recompute && st) {  // the loaded cells come without their tokens
      if (dest < 0)
        hist_.mark_all_incomplete();
      else
        hist_.mark_incomplete(dest);
    }
    return st;
  }

 private:
  context(const Model& m, Memory mem, const context_params& p, workspace ws)
      : model_(&m), mem_(std::move(mem)), p_(p), ws_(std::move(ws)) {}

  static status aborted_at(std::size_t u) {
    return make_status(status_code::aborted,
                       "decode: stopped by the abort callback before micro-batch %zu", u);
  }

  /// Recompute mode: what the committed batch added to each sequence.
  void record(const validated_batch& vb) {
    for (std::uint32_t i = 0; i < vb.n_tokens(); ++i)
      for (seq_id s : vb.seqs(i)) {
        if (vb.has_embeddings())
          hist_.mark_incomplete(s);
        else if (hist_.valid(s))
          hist_.record(s, vb.token(i), vb.pos(i));
      }
  }

  /// Makes s hold exactly `entries` by removing s and decoding them again from
  /// position 0, one micro-batch per call: a local layer's keys at p depend on its
  /// window, and through the layers below (and any global layer) on every earlier
  /// position, so no shorter re-decode is exact. The whole memory is saved first (the
  /// re-decode may reuse window cells of other sequences): on failure it is restored
  /// byte for byte and `why` (the memory's refusal) comes back with the reason.
  status recompute(seq_id s, const std::vector<memory::token_history::entry>& entries,
                   const status& why) {
    if constexpr (memory::state_memory<Memory>) {
      std::vector<std::uint8_t> saved;
      MNEMO_RETURN_IF_ERROR(context_detail::write_state(mem_, -1, saved).with_context("recompute"));
      memory::token_history::snapshot old = hist_.save(s);
      status st = mem_.seq_rm(s, -1, -1);
      if (st) hist_.seq_rm(s, -1, -1);
      batch b;
      const std::size_t chunk = p_.n_batch != 0 ? std::min(p_.n_batch, p_.n_ubatch) : p_.n_ubatch;
      for (std::size_t i = 0; i < entries.size() && st; i += chunk) {
        b.clear();
        for (std::size_t j = i; j < std::min(entries.size(), i + chunk); ++j)
          b.add(entries[j].token, entries[j].pos, {s}, false);
        st = decode(b);
      }
      if (st) return {};
      status back = context_detail::read_state(mem_, saved, -1);
      hist_.restore(s, std::move(old));
      return make_status(why.code(), "%s; recomputing failed (%s)%s", why.to_string().c_str(),
                         st.to_string().c_str(),
                         back ? "" : "; and the memory could not be restored");
    } else {
      (void)s, (void)entries;
      return why;
    }
  }

  const Model* model_;
  Memory mem_;
  context_params p_;
  workspace ws_;
  std::vector<float> logits_;               // [n_outputs, n_vocab], capacity kept
  std::vector<std::int32_t> row_of_token_;  // [n_tokens] output row or -1
  std::vector<std::int32_t> rows_;          // the same, being built
  std::uint32_t n_outputs_ = 0;
  memory::token_history hist_;  // recompute mode only
};

}  // namespace mnemo
