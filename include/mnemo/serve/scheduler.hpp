// Continuous batching over one mnemo::engine: n_slots requests run at once, each on a
// sequence of its own. Every step() is one decode: first one token for each generating
// slot (so replies keep their pace), then prompt tokens of the slots still reading
// their prompt, shared evenly under the step's token budget (chunked prefill). A slot
// that finishes is free for the next queued request at the following step.
//
// Prefix cache: a prefix_index over the running sequences and over finished prefixes
// kept in n_cached spare sequences (kept_prefixes.hpp). An admitted request copies the longest
// shared prefix with seq_cp (cells shared, copy-on-write under split streams) and decodes only its
// suffix. A request whose prompt shares more with a slot still reading its prompt waits for that
// slot to read the shared part and copies it then, so clients arriving together with one system
// prompt read it once. Kept prefixes hold at most cache_budget() tokens and are dropped least
// recently used first, also whenever a decode finds no room.
//
//   auto s = scheduler::make(eng, opts);          // eng opened with engine_options_for
//   (*s)->submit(std::move(req));                 // any thread
//   while (running) if (!(*s)->step()) (*s)->wait_for_work(50ms);   // one thread
#pragma once

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <utility>
#include <vector>

#include "mnemo/base/result.hpp"
#include "mnemo/base/status.hpp"
#include "mnemo/batch/batch.hpp"
#include "mnemo/engine/engine.hpp"
#include "mnemo/sampling.hpp"
#include "mnemo/serve/kept_prefixes.hpp"
#include "mnemo/serve/metrics.hpp"
#include "mnemo/serve/prefix_index.hpp"
#include "mnemo/serve/request.hpp"
#include "mnemo/serve/scheduler_options.hpp"
#include "mnemo/serve/stop_filter.hpp"
#include "mnemo/text/decoder.hpp"

namespace mnemo::serve {

class scheduler {
 public:
  /// `e` must outlive the scheduler, have a tokenizer and n_seq_max >= n_slots +
  /// n_cached (engine_options_for gives that).
  static result<std::unique_ptr<scheduler>> make(engine& e, const scheduler_options& o) {
    if (o.n_slots < 1 || o.n_cached < 0 || o.n_ctx_slot < 2 || o.block_tokens < 1)
      return make_status(status_code::invalid_argument,
                         "scheduler: need n_slots >= 1, n_cached >= 0, n_ctx_slot >= 2, "
                         "block_tokens >= 1");
    if (o.step_tokens < static_cast<std::uint32_t>(o.n_slots) + 1)
      return make_status(status_code::invalid_argument,
                         "scheduler: step_tokens (%u) must exceed n_slots (%d): every "
                         "generating slot takes one token per step",
                         o.step_tokens, static_cast<int>(o.n_slots));
    if (e.options().n_seq_max < o.n_slots + o.n_cached)
      return make_status(status_code::invalid_argument,
                         "scheduler: the engine has %d sequences; %d slots and %d cached "
                         "prefixes need %d (open it with engine_options_for)",
                         static_cast<int>(e.options().n_seq_max), static_cast<int>(o.n_slots),
                         static_cast<int>(o.n_cached), static_cast<int>(o.n_slots + o.n_cached));
    if (!e.has_tokenizer())
      return make_status(status_code::not_found, "scheduler: the model file has no tokenizer");
    return std::unique_ptr<scheduler>(new scheduler(e, o));
  }

  scheduler(const scheduler&) = delete;
  scheduler& operator=(const scheduler&) = delete;

  const scheduler_options& options() const noexcept { return o_; }
  const scheduler_metrics& metrics() const noexcept { return m_; }

  /// Queues a request (any thread). no_space: the queue is full (HTTP 503);
  /// out_of_range: the prompt leaves no room for a reply in a slot (HTTP 400);
  /// invalid_argument: no prompt, no sink, max_tokens 0 or sampling out of range.
  status submit(request r) {
    status st = check(r);
    if (!st.is_ok()) {
      m_.requests_rejected.fetch_add(1, std::memory_order_relaxed);
      return st;
    }
    {
      std::lock_guard lock(mu_);
      // Free slots count as room: a request waits until the next step takes it.
      if (queue_.size() >= o_.queue_max + free_slots_) {
        m_.requests_rejected.fetch_add(1, std::memory_order_relaxed);
        return make_status(status_code::no_space, "the queue is full (%zu requests waiting)",
                           queue_.size());
      }
      queue_.push_back(std::move(r));
      m_.queue_depth.store(queue_.size(), std::memory_order_relaxed);
    }
    m_.requests_total.fetch_add(1, std::memory_order_relaxed);
    cv_.notify_one();
    return {};
  }

  /// Blocks until a request is queued, wake() is called, or `timeout` passes.
  void wait_for_work(std::chrono::milliseconds timeout) {
    std::unique_lock lock(mu_);
    cv_.wait_for(lock, timeout, [&] { return !queue_.empty() || woken_; });
    woken_ = false;
  }
  void wake() {
    {
      std::lock_guard lock(mu_);
      woken_ = true;
    }
    cv_.notify_all();
  }

  struct step_report {
    std::uint32_t n_generating = 0;  // slots that decoded their next token
    std::uint32_t n_prompt = 0;      // prompt tokens decoded
  };

  /// Admits queued requests, frees cancelled slots and runs one decode. false when
  /// there was nothing to decode. Call from one thread only.
  bool step() {
    admit();
    for (slot& s : slots_)
      if (s.busy && s.req.cancelled->load(std::memory_order_relaxed))
        finish(s, finish_reason::cancelled, {});
    for (slot& s : slots_)
      if (s.busy && s.waiting() && leader_done(s)) {
        s.leader = -1;
        attach_prefix(s);
      }
    last_ = {};
    std::uint32_t n_tokens = 0;
    for (slot& s : slots_) {
      s.added.clear();
      s.wants_output = false;
      if (!s.busy || !s.generating()) continue;
      s.added.push_back(s.next);
      s.wants_output = true;
      ++n_tokens;
      ++last_.n_generating;
    }
    schedule_prompts(n_tokens);
    std::vector<slot*> group;
    for (slot& s : slots_)
      if (!s.added.empty()) group.push_back(&s);
    if (group.empty()) {
      publish();
      return false;
    }
    status st = decode(group);
    while (st.code() == status_code::no_space && kept_.drop_least_recent()) st = decode(group);
    if (st.code() == status_code::no_space && group.size() > 1) {
      // Shared blocks that several slots write in one batch each need a copy; one slot
      // at a time needs fewer. Only a slot that still finds no room fails.
      for (slot* s : group) {
        std::vector<slot*> one{s};
        if (status alone = decode(one); !alone.is_ok()) finish(*s, finish_reason::error, alone);
      }
    } else if (!st.is_ok()) {
      // The decode rolled back: the memory is as before. Fail the requests of the batch.
      for (slot* s : group) finish(*s, finish_reason::error, st);
    }
    publish();
    return true;
  }

  const step_report& last_step() const noexcept { return last_; }

  /// Fails every queued and running request with `why` (server shutdown).
  void cancel_all(const status& why) {
    std::deque<request> q;
    {
      std::lock_guard lock(mu_);
      q.swap(queue_);
    }
    for (request& r : q) r.sink->on_done(finish_reason::error, {r.prompt.size(), 0, 0}, why);
    for (slot& s : slots_)
      if (s.busy) finish(s, finish_reason::error, why);
    publish();
  }

 private:
  struct slot {
    seq_id id = 0;
    bool busy = false;
    request req;
    std::vector<token_id> tokens;  // in the memory at positions 0..size-1
    token_id next = -1;            // sampled, decoded at the next step
    std::optional<sampler> smp;
    std::optional<text::stream_decoder> dec;
    stop_filter stops;
    usage u;
    std::uint64_t admitted = 0;
    std::vector<token_id> added;  // this step's tokens
    // Waiting for slot `leader` (the request it admitted at `leader_admitted`) to read
    // the first `lead_length` prompt tokens, which this prompt shares.
    seq_id leader = -1;
    std::uint64_t leader_admitted = 0;
    std::size_t lead_length = 0;
    bool waiting() const noexcept { return leader >= 0; }
    bool wants_output = false;  // its last added token predicts the next
    std::int32_t out = -1;      // the output row of the last decode
    bool generating() const noexcept { return tokens.size() >= req.prompt.size(); }
  };

  scheduler(engine& e, const scheduler_options& o)
      : e_(&e),
        o_(o),
        index_(o.block_tokens),
        kept_(e, index_, o.n_slots, o.n_cached, o.cache_budget(), o.block_tokens) {
    slots_.resize(static_cast<std::size_t>(o.n_slots));
    for (seq_id i = 0; i < o.n_slots; ++i) slots_[static_cast<std::size_t>(i)].id = i;
    free_slots_ = slots_.size();
    m_.slots_total.store(static_cast<std::uint64_t>(o.n_slots), std::memory_order_relaxed);
    publish();
  }

  status check(const request& r) const {
    if (!r.sink || !r.cancelled)
      return make_status(status_code::invalid_argument, "request without a sink");
    if (r.prompt.empty()) return make_status(status_code::invalid_argument, "the prompt is empty");
    if (r.params.max_tokens == 0)
      return make_status(status_code::invalid_argument, "max_tokens must be at least 1");
    if (auto smp = sampler::make(r.params.sampling(0)); !smp.is_ok()) return smp.error();
    if (r.prompt.size() >= o_.n_ctx_slot)
      return make_status(status_code::out_of_range,
                         "the prompt has %zu tokens; a request may have at most %u (the "
                         "slot's context, less one for the reply)",
                         r.prompt.size(), o_.n_ctx_slot - 1);
    for (token_id t : r.prompt)
      if (t < 0 || static_cast<std::uint32_t>(t) >= e_->n_vocab())
        return make_status(status_code::out_of_range, "prompt token %d is not below %u",
                           static_cast<int>(t), e_->n_vocab());
    return {};
  }

  void admit() {
    for (slot& s : slots_) {
      if (s.busy) continue;
      std::optional<request> r;
      {
        std::lock_guard lock(mu_);
        while (!queue_.empty() && !r) {
          r = std::move(queue_.front());
          queue_.pop_front();
          --free_slots_;
          if (r->cancelled->load(std::memory_order_relaxed)) {
            ++free_slots_;
            r->sink->on_done(finish_reason::cancelled, {r->prompt.size(), 0, 0}, {});
            m_.requests_cancelled.fetch_add(1, std::memory_order_relaxed);
            r.reset();
          }
        }
        m_.queue_depth.store(queue_.size(), std::memory_order_relaxed);
      }
      if (!r) return;
      start(s, std::move(*r));
    }
  }

  void start(slot& s, request r) {
    s.busy = true;
    s.req = std::move(r);
    s.tokens.clear();
    s.u = {s.req.prompt.size(), 0, 0};
    s.admitted = ++clock_;
    s.smp.emplace(std::move(
        sampler::make(s.req.params.sampling(s.admitted * 0x9e3779b97f4a7c15ull)).value()));
    s.dec.emplace(*e_->tokenizer());
    s.stops = stop_filter(s.req.params.stop);
    s.leader = -1;
    s.lead_length = 0;
    (void)e_->seq_rm(s.id, -1, -1);
    index_.assign(s.id, {}, clock_);
    m_.prompt_tokens.fetch_add(s.req.prompt.size(), std::memory_order_relaxed);
    if (!follow_reader(s)) attach_prefix(s);
  }

  /// Keeps at least one prompt token to decode: its logits start the reply.
  prefix_index::match cached_match(const slot& s) const {
    return index_.longest(s.req.prompt, s.req.prompt.size() - 1,
                          [&](seq_id h) { return h != s.id; });
  }

  /// Waits for a slot still reading a prompt that shares at least a block more than the
  /// memory holds, rather than reading the same tokens beside it. false: no such slot.
  bool follow_reader(slot& s) {
    const std::size_t held = cached_match(s).length;
    const auto& p = s.req.prompt;
    for (const slot& o : slots_) {
      if (&o == &s || !o.busy || o.waiting() || o.generating()) continue;
      const std::size_t n = std::min(
          p.size() - 1,
          static_cast<std::size_t>(
              std::mismatch(p.begin(), p.end(), o.req.prompt.begin(), o.req.prompt.end()).first -
              p.begin()));
      if (n >= held + o_.block_tokens && n > s.lead_length) {
        s.leader = o.id;
        s.leader_admitted = o.admitted;
        s.lead_length = n;
      }
    }
    return s.waiting();
  }

  /// The leader has read the shared part, or has gone (finished, failed, cancelled):
  /// either way the index now knows what there is to copy.
  bool leader_done(const slot& s) const {
    const slot& l = slots_[static_cast<std::size_t>(s.leader)];
    return !l.busy || l.admitted != s.leader_admitted || l.tokens.size() >= s.lead_length;
  }

  /// Copies the longest prefix the memory holds into the slot.
  void attach_prefix(slot& s) {
    s.lead_length = 0;
    const prefix_index::match m = cached_match(s);
    if (m.length > 0 && e_->seq_cp(m.holder, s.id, 0, static_cast<pos_t>(m.length)).is_ok()) {
      s.tokens.assign(s.req.prompt.begin(),
                      s.req.prompt.begin() + static_cast<std::ptrdiff_t>(m.length));
      s.u.cached_tokens = m.length;
      index_.touch(m.holder, clock_);
      m_.prefix_hits.fetch_add(1, std::memory_order_relaxed);
      m_.cached_prompt_tokens.fetch_add(m.length, std::memory_order_relaxed);
    } else {
      (void)e_->seq_rm(s.id, -1, -1);
    }
    index_.assign(s.id, s.tokens, clock_);
  }

  /// Prompt tokens under the budget left after the generating slots: an even share
  /// per reading slot, the oldest first for what remains.
  void schedule_prompts(std::uint32_t used) {
    std::uint32_t budget = o_.step_tokens > used ? o_.step_tokens - used : 0;
    std::vector<slot*> reading;
    for (slot& s : slots_)
      if (s.busy && !s.generating() && !s.waiting()) reading.push_back(&s);
    std::sort(reading.begin(), reading.end(),
              [](const slot* a, const slot* c) { return a->admitted < c->admitted; });
    auto pending = [](const slot* s) {
      return s->req.prompt.size() - s->tokens.size() - s->added.size();
    };
    while (budget > 0) {
      std::size_t needing = 0;
      for (const slot* s : reading) needing += pending(s) > 0;
      if (needing == 0) break;
      const std::size_t share = std::max<std::size_t>(1, budget / needing);
      for (slot* s : reading) {
        const std::size_t take = std::min({pending(s), share, static_cast<std::size_t>(budget)});
        const std::size_t at = s->tokens.size() + s->added.size();
        s->added.insert(s->added.end(), s->req.prompt.begin() + static_cast<std::ptrdiff_t>(at),
                        s->req.prompt.begin() + static_cast<std::ptrdiff_t>(at + take));
        s->wants_output = s->tokens.size() + s->added.size() == s->req.prompt.size();
        budget -= static_cast<std::uint32_t>(take);
        last_.n_prompt += static_cast<std::uint32_t>(take);
      }
    }
  }

  /// One decode of the group's scheduled tokens; on success the tokens join their
  /// sequences and each output is sampled. On failure nothing changed.
  status decode(const std::vector<slot*>& group) {
    batch b;
    for (slot* s : group) {
      s->out = -1;
      for (std::size_t i = 0; i < s->added.size(); ++i) {
        const bool last = s->wants_output && i + 1 == s->added.size();
        if (last) s->out = static_cast<std::int32_t>(b.size());
        b.add(s->added[i], static_cast<pos_t>(s->tokens.size() + i), {s->id}, last);
      }
    }
    status st = e_->decode(b);
    m_.decode_steps.fetch_add(1, std::memory_order_relaxed);
    if (!st.is_ok()) return st;
    for (slot* s : group) {
      s->tokens.insert(s->tokens.end(), s->added.begin(), s->added.end());
      index_.append(s->id, s->added);
      if (s->out >= 0) on_output(*s, e_->logits_ith(s->out));
    }
    return st;
  }

  bool is_end(token_id t) const {
    if (t == e_->eos()) return true;
    return std::find(o_.end_tokens.begin(), o_.end_tokens.end(), t) != o_.end_tokens.end();
  }

  void on_output(slot& s, std::span<const float> row) {
    s.req.sink->on_logits(row);
    const token_id t = s.smp->sample(row);
    if (t < 0)
      return finish(s, finish_reason::error,
                    make_status(status_code::failed_compute, "no token to sample"));
    if (is_end(t) && !s.req.params.ignore_eos) return finish(s, finish_reason::stop, {});
    ++s.u.completion_tokens;
    m_.generated_tokens.fetch_add(1, std::memory_order_relaxed);
    if (result<std::string_view> piece = s.dec->push(t); piece.is_ok() && !piece->empty()) {
      const std::string_view shown = s.stops.push(*piece);
      if (!shown.empty()) s.req.sink->on_text(shown);
    }
    if (s.stops.stopped()) return finish(s, finish_reason::stop, {});
    if (s.u.completion_tokens >= s.req.params.max_tokens || s.tokens.size() >= o_.n_ctx_slot)
      return finish(s, finish_reason::length, {});
    s.next = t;
  }

  void finish(slot& s, finish_reason why, const status& st) {
    if (why == finish_reason::stop || why == finish_reason::length) {
      std::string rest = s.dec->finish();
      std::string tail(s.stops.push(rest));
      if (!s.stops.stopped()) tail.append(s.stops.flush());
      if (!tail.empty()) s.req.sink->on_text(tail);
    }
    if (why == finish_reason::error) m_.requests_failed.fetch_add(1, std::memory_order_relaxed);
    if (why == finish_reason::cancelled)
      m_.requests_cancelled.fetch_add(1, std::memory_order_relaxed);
    if (why != finish_reason::error) kept_.keep(s.id, s.tokens, ++clock_);
    (void)e_->seq_rm(s.id, -1, -1);
    index_.erase(s.id);
    s.busy = false;
    s.leader = -1;
    {
      std::lock_guard lock(mu_);
      ++free_slots_;
    }
    // The client hears "done" only once its slot is free, so a request it sends next
    // finds the room this one held.
    const auto sink = std::move(s.req.sink);
    s.req = {};
    s.tokens.clear();
    sink->on_done(why, s.u, st);
  }

  void publish() {
    std::uint64_t busy = 0;
    for (const slot& s : slots_) busy += s.busy;
    m_.slots_busy.store(busy, std::memory_order_relaxed);
    m_.cached_prefixes.store(kept_.count(), std::memory_order_relaxed);
    m_.cached_prefix_cells.store(kept_.tokens_held(), std::memory_order_relaxed);
    const memory::memory_report r = e_->report();
    m_.cells_used.store(r.cells_used, std::memory_order_relaxed);
    m_.cells_total.store(r.cells, std::memory_order_relaxed);
  }

  engine* e_;
  scheduler_options o_;
  prefix_index index_;
  kept_prefixes kept_;
  std::vector<slot> slots_;
  std::uint64_t clock_ = 0;
  step_report last_;
  scheduler_metrics m_;

  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<request> queue_;
  std::size_t free_slots_ = 0;  // slots without a request, under mu_
  bool woken_ = false;
};

}  // namespace mnemo::serve
