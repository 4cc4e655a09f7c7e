// The recurrent strategy: one state slot per sequence, holding per layer the conv
// state [d_inner, d_conv - 1] and the SSM state [d_inner, d_state] of a Mamba-style
// layer, f32 (docs/recurrent.md). Deviations from llama.cpp:
//  - seq_cp copies the bytes: no shared cells, so no copy-on-write;
//  - a removal that cannot be represented (a prefix or middle of the history, a
//    suffix with no checkpoint at its start) is an error status, never a silent
//    no-op; a rollback restores a saved state, so rolling back
//    twice or a whole decode reads the right bytes;
//  - a failed batch is undone byte for byte: apply() saves each sequence's
//    state before the micro-batch can change it.
// Checkpoints: each apply() records the state a sequence had before the micro-batch
// (its position = the last absorbed token); commit() moves them into a bounded ring
// per sequence (count and total byte budget); checkpoint(s) records one on demand.
// seq_rm(s, p, -1) restores the checkpoint at position p - 1.
#pragma once

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <deque>
#include <limits>
#include <span>
#include <string>
#include <vector>

#include "mnemo/base/aligned_buffer.hpp"
#include "mnemo/batch/strategies.hpp"
#include "mnemo/memory/concepts.hpp"
#include "mnemo/memory/seq_guards.hpp"
#include "mnemo/memory/types.hpp"

namespace mnemo::memory {

struct recurrent_config {
  std::size_t n_layer = 0;           // recurrent layers
  std::size_t conv_floats = 0;       // per layer and slot: (d_conv - 1) * d_inner (n_embd_r)
  std::size_t ssm_floats = 0;        // per layer and slot: d_state * d_inner (n_embd_s)
  seq_id n_seq_max = 1;              // one slot per sequence id in [0, n_seq_max)
  std::size_t n_checkpoints = 0;     // per sequence; 0: suffix removal is refused
  std::size_t checkpoint_bytes = 0;  // budget over every sequence; 0: unlimited
};

/// One layer's state of one sequence: conv [d_inner, d_conv - 1], ssm [d_inner, d_state].
struct recurrent_layer_state {
  float* conv;
  float* ssm;
};

class recurrent {
 public:
  /// The tokens of one sequence inside a micro-batch: ubatch tokens [first, first + n).
  struct group {
    seq_id seq;
    std::uint32_t first, n;
  };

  static result<recurrent> make(const recurrent_config& cfg) {
    MNEMO_RETURN_IF_ERROR(check_n_seq_max("recurrent", cfg.n_seq_max));
    if (cfg.n_layer == 0 || cfg.conv_floats + cfg.ssm_floats == 0)
      return make_status(status_code::invalid_argument,
                         "recurrent: %zu layers of %zu conv + %zu ssm floats hold nothing",
                         cfg.n_layer, cfg.conv_floats, cfg.ssm_floats);
    recurrent r;
    r.cfg_ = cfg;
    r.slot_floats_ = cfg.n_layer * (cfg.conv_floats + cfg.ssm_floats);
    MNEMO_ASSIGN_OR_RETURN(r.data_, aligned_buffer<float>::make(r.slot_floats_ * cfg.n_seq_max));
    r.pos_.assign(static_cast<std::size_t>(cfg.n_seq_max), -1);
    r.rings_.resize(static_cast<std::size_t>(cfg.n_seq_max));
    return r;
  }

  const recurrent_config& config() const noexcept { return cfg_; }
  seq_id n_seq_max() const noexcept { return cfg_.n_seq_max; }
  std::size_t n_layer() const noexcept { return cfg_.n_layer; }
  /// Bytes of one sequence's whole state (every layer, conv and ssm).
  std::size_t state_bytes() const noexcept { return slot_floats_ * sizeof(float); }
  bool can_shift() const noexcept { return true; }  // positions only, no data to rotate
  /// Equal splits, sequential: every micro-batch has the same number of tokens per
  /// sequence and one sequence set per group, because each group advances one state.
  static equal_split split_strategy(std::uint32_t n_ubatch) noexcept { return {n_ubatch, true, 0}; }

  pos_t seq_pos_min(seq_id s) const noexcept { return valid(s) ? pos_[idx(s)] : -1; }
  pos_t seq_pos_max(seq_id s) const noexcept { return seq_pos_min(s); }

  /// The whole state of sequence s (every layer): [n_layer][conv_floats + ssm_floats].
  std::span<const float> slot(seq_id s) const noexcept {
    return {data_.data() + idx(s) * slot_floats_, slot_floats_};
  }
  /// Layer l's state of sequence s, for the model.  @pre valid s, l < n_layer
  recurrent_layer_state layer_state(std::size_t l, seq_id s) noexcept {
    float* p = data_.data() + idx(s) * slot_floats_ + l * (cfg_.conv_floats + cfg_.ssm_floats);
    return {p, p + cfg_.conv_floats};
  }
  /// The sequences of micro-batch u, in ubatch order (valid after prepare()).
  std::span<const group> groups(std::size_t u) const noexcept { return plan_[u]; }
  /// Layer l's state of the k-th group of micro-batch u (what the model reads and writes
  /// for those tokens after apply(u)).
  recurrent_layer_state layer_state(std::size_t l, std::size_t u, std::size_t k) noexcept {
    return layer_state(l, plan_[u][k].seq);
  }

  /// Positions at which seq_rm(s, p + 1, -1) can restore s, oldest first.
  std::vector<pos_t> checkpoints(seq_id s) const {
    std::vector<pos_t> out;
    if (valid(s))
      for (const auto& c : rings_[idx(s)]) out.push_back(c.pos);
    return out;
  }

  // ---- checks: the status the operation would return, nothing changed -----------
  // A recurrent state holds its whole history in one slot: what it cannot represent
  // (forgetting a prefix or middle, a suffix without a checkpoint at its start) is
  // refused (recurrent_impl.hpp).

  status check_seq_rm(seq_id s, pos_t p0, pos_t p1) const;
  status check_seq_cp(seq_id src, seq_id dst, pos_t p0, pos_t p1) const;
  status check_seq_keep(seq_id s) const;
  status check_seq_add(seq_id s, pos_t p0, pos_t p1, pos_t delta) const;
  status check_seq_div(seq_id s, pos_t p0, pos_t p1, int d) const;

  // ---- sequence operations (checked first; recurrent_impl.hpp) ---------------------

  /// Forgets s's positions in [p0, p1): the whole history, or a suffix by restoring
  /// the checkpoint taken after token p0 - 1.
  status seq_rm(seq_id s, pos_t p0, pos_t p1);
  /// dst gets src's state as it was after position min(P_src, p1 - 1): the current
  /// state, or a checkpoint. An empty src empties dst. The range must start at 0.
  status seq_cp(seq_id src, seq_id dst, pos_t p0, pos_t p1);
  status seq_keep(seq_id s);
  /// Moves s's position (and its checkpoints' positions) in [p0, p1) by delta. The
  /// state data does not depend on positions (no RoPE in a recurrent layer).
  status seq_add(seq_id s, pos_t p0, pos_t p1, pos_t delta);
  status seq_div(seq_id s, pos_t p0, pos_t p1, int d);

  void clear(bool data) {
    std::fill(pos_.begin(), pos_.end(), -1);
    for (seq_id s = 0; s < cfg_.n_seq_max; ++s)
      while (!rings_[idx(s)].empty()) release(rings_[idx(s)], 0);
    plan_.clear();
    pending_.clear();
    if (data) std::fill(data_.begin(), data_.end(), 0.0f);
  }

  status update() { return {}; }

  // ---- planning and transactions ---------------------------------------------------

  /// Checks every micro-batch before anything changes: one sequence per token, ids
  /// below n_seq_max, each sequence's tokens contiguous in a micro-batch and its
  /// positions continuing its state one by one (a state absorbs tokens in order).
  status prepare(std::span<const ubatch_tokens> ubatches) {
    if (!pending_.empty())
      return check_not_in_batch(true, "prepare");  // an unapplied plan is replaced
    std::vector<pos_t> next(pos_);
    std::vector<std::vector<group>> plan;
    for (std::size_t u = 0; u < ubatches.size(); ++u) {
      const ubatch_tokens& ub = ubatches[u];
      if (ub.seqs.size() != ub.pos.size())
        return make_status(status_code::invalid_argument,
                           "prepare: micro-batch %zu has %zu positions but %zu sequence sets", u,
                           ub.pos.size(), ub.seqs.size());
      std::vector<group> gs;
      for (std::uint32_t j = 0; j < ub.size(); ++j) {
        const seq_set& set = ub.seqs[j];
        seq_id s = -1;
        for (seq_id o = 0; o < k_max_seq && s < 0; ++o)
          if (set.contains(o)) s = o;
        if (set.count() != 1)
          return make_status(status_code::invalid_argument,
                             "prepare: token %u of micro-batch %zu belongs to %d sequences; a "
                             "recurrent memory needs exactly one (decode a shared prefix once "
                             "and seq_cp it)",
                             j, u, set.count());
        MNEMO_RETURN_IF_ERROR(check_seq(s, cfg_.n_seq_max, "prepare"));
        if (gs.empty() || gs.back().seq != s) {
          for (const group& g : gs)
            if (g.seq == s)
              return make_status(status_code::invalid_argument,
                                 "prepare: micro-batch %zu interleaves sequence %d with others", u,
                                 s);
          gs.push_back({s, j, 0});
        }
        ++gs.back().n;
        pos_t& p = next[idx(s)];
        if (ub.pos[j] != p + 1)
          return make_status(status_code::invalid_argument,
                             "prepare: sequence %d continues at position %d, token %u of "
                             "micro-batch %zu is at %d",
                             s, p + 1, j, u, ub.pos[j]);
        p = ub.pos[j];
      }
      plan.push_back(std::move(gs));
    }
    plan_ = std::move(plan);
    applied_.assign(plan_.size(), 0);
    return {};
  }

  /// Saves the state of micro-batch u's sequences (for rollback and as checkpoints),
  /// zeroes the slot of a sequence that starts, and advances their positions.
  status apply(std::size_t u, const ubatch_tokens& ub) {
    if (u >= plan_.size() || applied_[u])
      return make_status(status_code::invalid_argument,
                         "apply: micro-batch %zu was not prepared or was applied already", u);
    std::uint32_t n = 0;
    for (const group& g : plan_[u]) n += g.n;
    if (n != ub.size())
      return make_status(status_code::invalid_argument,
                         "apply: micro-batch %zu does not match the prepared plan", u);
    for (const group& g : plan_[u]) {
      pending_.push_back({g.seq, pos_[idx(g.seq)], take_buffer()});
      std::memcpy(pending_.back().data.data(), slot_ptr(g.seq), state_bytes());
      if (pos_[idx(g.seq)] < 0) std::fill_n(slot_ptr(g.seq), slot_floats_, 0.0f);
      pos_[idx(g.seq)] = ub.pos[g.first + g.n - 1];
    }
    applied_[u] = 1;
    return {};
  }

  /// Keeps the batch: the saved states become checkpoints (bounded by the ring size
  /// and the byte budget, oldest dropped first).
  void commit() {
    for (auto& c : pending_)
      if (c.pos >= 0 && cfg_.n_checkpoints > 0)
        push_checkpoint(c.seq, c.pos, std::move(c.data));
      else
        free_.push_back(std::move(c.data));
    pending_.clear();
    plan_.clear();
  }

  /// Undoes every apply() since prepare(): states (byte for byte) and positions.
  void rollback() {
    for (auto it = pending_.rbegin(); it != pending_.rend(); ++it) {
      std::memcpy(slot_ptr(it->seq), it->data.data(), state_bytes());
      pos_[idx(it->seq)] = it->pos;
      free_.push_back(std::move(it->data));
    }
    pending_.clear();
    plan_.clear();
  }

  /// Records s's current state as a checkpoint (e.g. after a prompt, before drafting).
  status checkpoint(seq_id s) {
    MNEMO_RETURN_IF_ERROR(check_seq(s, cfg_.n_seq_max, "checkpoint"));
    MNEMO_RETURN_IF_ERROR(check_not_in_batch(in_batch(), "checkpoint"));
    if (pos_[idx(s)] < 0)
      return make_status(status_code::not_found, "checkpoint: sequence %d is empty", s);
    if (cfg_.n_checkpoints == 0)
      return make_status(status_code::unsupported, "checkpoint: n_checkpoints is 0");
    for (const auto& c : rings_[idx(s)])
      if (c.pos == pos_[idx(s)]) return {};
    push_checkpoint(s, pos_[idx(s)], slot_ptr(s));
    return {};
  }

  memory_report report() const {
    memory_report r;
    const std::size_t n = static_cast<std::size_t>(cfg_.n_seq_max);
    for (std::size_t l = 0; l < cfg_.n_layer; ++l)
      r.layers.push_back(
          {l, "recurrent", "f32", "f32", cfg_.conv_floats * 4 * n, cfg_.ssm_floats * 4 * n});
    r.total_bytes = state_bytes() * n + checkpoint_bytes_;
    r.cells = n;
    for (seq_id s = 0; s < cfg_.n_seq_max; ++s)
      if (pos_[idx(s)] >= 0) {
        ++r.cells_used;
        r.cells_per_seq.push_back({s, 1});
      }
    return r;
  }

  bool in_batch() const noexcept { return !plan_.empty() || !pending_.empty(); }
  /// Bytes the checkpoints hold now.
  std::size_t checkpoint_bytes() const noexcept { return checkpoint_bytes_; }

  /// For state_read: every check done by the caller; sets s's state and position.
  void restore(seq_id s, pos_t pos, const void* bytes) {
    drop(s);
    std::memcpy(slot_ptr(s), bytes, state_bytes());
    pos_[idx(s)] = pos;
  }

 private:
  struct saved {
    seq_id seq;
    pos_t pos;
    std::vector<float> data;
  };
  struct ckpt {
    pos_t pos;
    std::uint64_t stamp;
    std::vector<float> data;
  };

  static std::size_t idx(seq_id s) noexcept { return static_cast<std::size_t>(s); }
  bool valid(seq_id s) const noexcept { return s >= 0 && s < cfg_.n_seq_max; }
  float* slot_ptr(seq_id s) noexcept { return data_.data() + idx(s) * slot_floats_; }

  std::vector<float> take_buffer() {
    if (free_.empty()) return std::vector<float>(slot_floats_);
    std::vector<float> b = std::move(free_.back());
    free_.pop_back();
    return b;
  }

  void release(std::deque<ckpt>& ring, std::size_t i) {
    checkpoint_bytes_ -= state_bytes();
    free_.push_back(std::move(ring[i].data));
    ring.erase(ring.begin() + static_cast<std::ptrdiff_t>(i));
  }

  /// Empties s: position -1, no checkpoints (its bytes are zeroed when it restarts).
  void drop(seq_id s) {
    pos_[idx(s)] = -1;
    while (!rings_[idx(s)].empty()) release(rings_[idx(s)], 0);
  }

  void push_checkpoint(seq_id s, pos_t pos, const float* src) {
    std::vector<float> b = take_buffer();
    std::memcpy(b.data(), src, state_bytes());
    push_checkpoint(s, pos, std::move(b));
  }
  void push_checkpoint(seq_id s, pos_t pos, std::vector<float>&& b) {
    const std::size_t budget = cfg_.checkpoint_bytes;
    if (cfg_.n_checkpoints == 0 || (budget != 0 && state_bytes() > budget)) {
      free_.push_back(std::move(b));
      return;
    }
    auto& ring = rings_[idx(s)];
    while (!ring.empty() && ring.back().pos >= pos) release(ring, ring.size() - 1);  // stale
    while (ring.size() >= cfg_.n_checkpoints) release(ring, 0);
    while (budget != 0 && checkpoint_bytes_ + state_bytes() > budget) {
      // The budget is shared: drop the oldest checkpoint of any sequence.
      std::deque<ckpt>* oldest = nullptr;
      for (auto& r : rings_)
        if (!r.empty() && (oldest == nullptr || r.front().stamp < oldest->front().stamp))
          oldest = &r;
      release(*oldest, 0);
    }
    ring.push_back({pos, ++stamp_, std::move(b)});
    checkpoint_bytes_ += state_bytes();
  }

  static std::string restorable(const std::deque<ckpt>& ring, const char* what) {
    std::string s = what;
    if (ring.empty()) return s + " none";
    char b[96];
    std::snprintf(b, sizeof b, " positions %d (oldest) .. %d; removable from %d", ring.front().pos,
                  ring.back().pos, ring.front().pos + 1);
    return s + b;
  }

  /// The checkpoint of s at position p, or null.
  const ckpt* checkpoint_at(seq_id s, pos_t p) const noexcept {
    for (const auto& c : rings_[idx(s)])
      if (c.pos == p) return &c;
    return nullptr;
  }
  template <class NewPos>
  status check_shift(seq_id s, pos_t p0, pos_t p1, const char* op, NewPos new_pos) const;
  template <class NewPos>
  void shift(seq_id s, pos_t p0, pos_t p1, NewPos new_pos);

  recurrent_config cfg_;
  std::size_t slot_floats_ = 0;
  aligned_buffer<float> data_;  // [n_seq_max][n_layer][conv_floats + ssm_floats]
  std::vector<pos_t> pos_;      // [n_seq_max] last absorbed position, -1: empty
  std::vector<std::deque<ckpt>> rings_;
  std::size_t checkpoint_bytes_ = 0;
  std::uint64_t stamp_ = 0;
  std::vector<std::vector<group>> plan_;
  std::vector<std::uint8_t> applied_;
  std::vector<saved> pending_;
  std::vector<std::vector<float>> free_;  // reusable state buffers
};

}  // namespace mnemo::memory

#include "mnemo/memory/recurrent/recurrent_impl.hpp"

namespace mnemo::memory {
static_assert(sequence_memory<recurrent>);
}  // namespace mnemo::memory
