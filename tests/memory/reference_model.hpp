// A brute-force model of the unified ("full") KV cache, written from docs/memory.md
// and the deviations from llama.cpp documented in full_cache.hpp, without any of the
// library's bookkeeping (no cells.hpp, no transaction.hpp): a list of occupied cells
// {pos, owner set, pending shift, K/V bytes per layer}, linear scans and std::set.
//
// Cell indices are deliberately not modelled. Every observable the model-based test
// compares (positions per sequence, the multiset of cells with their owners, shifts
// and bytes, statuses) is independent of placement, and in a cache without SWA whether
// a batch, a copy-on-write or a per-sequence restore fits depends only on how many
// cells are free.
#pragma once

#include <algorithm>
#include <climits>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <map>
#include <set>
#include <vector>

#include "mnemo/base/seq_set.hpp"
#include "mnemo/base/status.hpp"

namespace mnemo_test {

using mnemo::pos_t;
using mnemo::seq_id;
using mnemo::status_code;

/// RoPE as the model applies it, written out here so that the expected keys after a
/// K-shift do not come from attention/rope.hpp: pair i of the first n_rot dims turns
/// by p * freq_scale * freq_base^(-2i / n_rot); pairs are (2i, 2i + 1) ("normal") or
/// (i, i + n_rot / 2) ("neox").
struct ref_rope {
  enum class layout { none, normal, neox } kind = layout::none;
  std::size_t n_rot = 0;
  double freq_base = 10000.0;
  double freq_scale = 1.0;

  /// Rotates every head of x [n_head, d] by position p, in double precision.
  void rotate(std::vector<float>& x, std::size_t d, double p) const {
    if (kind == layout::none || p == 0.0) return;
    const std::size_t half = n_rot / 2;
    for (std::size_t h = 0; h * d < x.size(); ++h) {
      float* row = x.data() + h * d;
      for (std::size_t i = 0; i < half; ++i) {
        const double theta = p * freq_scale * std::pow(freq_base, -2.0 * double(i) / double(n_rot));
        const std::size_t a = kind == layout::normal ? 2 * i : i;
        const std::size_t b = kind == layout::normal ? 2 * i + 1 : i + half;
        const double x0 = row[a], x1 = row[b];
        row[a] = static_cast<float>(x0 * std::cos(theta) - x1 * std::sin(theta));
        row[b] = static_cast<float>(x0 * std::sin(theta) + x1 * std::cos(theta));
      }
    }
  }
};

/// What one token writes: its K and V rows per layer, encoded by an independent
/// encoder, and its raw K values (to predict the keys after a rotation).
struct ref_rows {
  std::vector<std::vector<std::uint8_t>> k, v;  // [n_layer][row bytes]
  std::vector<std::vector<float>> k_raw;        // [n_layer][n_head_kv * d_k]
};

struct ref_cell {
  pos_t pos = -1;
  std::set<seq_id> seqs;
  pos_t pending = 0;         // position delta the keys have not been rotated by yet
  long long rotated_by = 0;  // total rotation update() applied to the keys
  bool rotated = false;      // the K bytes are no longer the written bytes
  ref_rows rows;
};

struct ref_token {
  pos_t pos;
  std::set<seq_id> seqs;
  ref_rows rows;
};

/// A state blob as the model sees it: the cells it carries.
struct ref_blob {
  seq_id seq = -1;  // -1: whole cache
  std::vector<ref_cell> cells;
};

/// llama.cpp behaviours mnemo deliberately does not have; a model built with one must
/// disagree with the cache (the test's self-check that it can fail).
enum class ref_mutation {
  none,
  seq_cp_keeps_dst,    // T07: dst's cells stay, so positions can repeat
  shift_moves_shared,  // D-18: seq_add/seq_div move every sequence sharing a cell
};

class reference_cache {
 public:
  struct config {
    std::size_t size = 0;
    seq_id n_seq_max = 1;
    bool shift_supported = true;
    bool rotates = false;  // update() rotates keys (RoPE layout other than none)
    ref_mutation mutation = ref_mutation::none;
  };

  explicit reference_cache(const config& c) : cfg_(c) {}

  const config& cfg() const { return cfg_; }
  const std::vector<ref_cell>& cells() const { return cells_; }
  std::size_t used() const { return cells_.size(); }
  std::size_t free_cells() const { return cfg_.size - cells_.size(); }
  bool has_shift() const { return has_shift_; }
  bool open() const { return open_; }

  pos_t seq_pos_min(seq_id s) const {
    pos_t m = -1;
    for (const auto& c : cells_)
      if (c.seqs.count(s) && (m < 0 || c.pos < m)) m = c.pos;
    return m;
  }
  pos_t seq_pos_max(seq_id s) const {
    pos_t m = -1;
    for (const auto& c : cells_)
      if (c.seqs.count(s)) m = std::max(m, c.pos);
    return m;
  }
  /// Position -> number of cells of s at that position.
  std::map<pos_t, int> positions(seq_id s) const {
    std::map<pos_t, int> m;
    for (const auto& c : cells_)
      if (c.seqs.count(s)) ++m[c.pos];
    return m;
  }

  // ---- sequence operations ----------------------------------------------------

  status_code seq_rm(seq_id s, pos_t p0, pos_t p1) {
    if (!valid(s) && s != -1) return status_code::out_of_range;
    if (busy()) return status_code::invalid_argument;
    for (auto& c : cells_)
      if (in_range(c.pos, p0, p1)) {
        if (s == -1)
          c.seqs.clear();
        else
          c.seqs.erase(s);
      }
    drop_empty();
    return status_code::ok;
  }

  /// LIB: dst's own cells in the range are dropped first (no duplicate positions).
  status_code seq_cp(seq_id src, seq_id dst, pos_t p0, pos_t p1) {
    if (!valid(src) || !valid(dst)) return status_code::out_of_range;
    if (busy()) return status_code::invalid_argument;
    if (src == dst) return status_code::ok;
    for (auto& c : cells_)
      if (in_range(c.pos, p0, p1) && cfg_.mutation != ref_mutation::seq_cp_keeps_dst)
        c.seqs.erase(dst);
    drop_empty();
    for (auto& c : cells_)
      if (in_range(c.pos, p0, p1) && c.seqs.count(src)) c.seqs.insert(dst);
    return status_code::ok;
  }

  status_code seq_keep(seq_id s) {
    if (!valid(s)) return status_code::out_of_range;
    if (busy()) return status_code::invalid_argument;
    for (auto& c : cells_) {
      if (c.seqs.count(s))
        c.seqs = {s};
      else
        c.seqs.clear();
    }
    drop_empty();
    return status_code::ok;
  }

  status_code seq_add(seq_id s, pos_t p0, pos_t p1, pos_t delta) {
    return shift(s, p0, p1, delta == 0, [delta](pos_t p) { return p + delta; });
  }

  status_code seq_div(seq_id s, pos_t p0, pos_t p1, int d) {
    if (d <= 0) return status_code::invalid_argument;
    return shift(s, p0, p1, d == 1, [d](pos_t p) { return p / d; });
  }

  /// K-shift: keys take their pending rotation; shifts are cleared. Refused inside
  /// an applied batch (a rotation cannot be rolled back).
  status_code update() {
    if (open_) return status_code::invalid_argument;
    for (auto& c : cells_) {
      if (cfg_.rotates && c.pending != 0) {
        c.rotated_by += c.pending;
        c.rotated = true;
      }
      c.pending = 0;
    }
    has_shift_ = false;
    return status_code::ok;
  }

  status_code defragment() const {
    return busy() ? status_code::invalid_argument : status_code::ok;
  }

  void clear() {
    cells_.clear();
    has_shift_ = false;
    open_ = planned_ = false;
    before_.clear();
  }

  // ---- batches ------------------------------------------------------------------

  /// Every micro-batch fits or nothing happens (no SWA: only free cells are usable).
  /// Micro-batches are checked in order: their tokens, then room for them.
  status_code prepare(const std::vector<std::vector<ref_token>>& ubatches) {
    if (open_) return status_code::invalid_argument;  // a plan alone is replaced
    planned_ = false;
    std::size_t total = 0;
    for (const auto& ub : ubatches) {
      if (!valid_tokens(ub)) return status_code::invalid_argument;
      total += ub.size();
      if (ub.size() > cfg_.size || total > free_cells()) return status_code::no_space;
    }
    plan_.clear();
    for (const auto& ub : ubatches) plan_.push_back(ub.size());
    applied_.assign(ubatches.size(), false);
    planned_ = true;
    return status_code::ok;
  }

  status_code apply(std::size_t u, const std::vector<ref_token>& tokens) {
    if (!planned_ || u >= plan_.size() || plan_[u] != tokens.size() || !valid_tokens(tokens))
      return status_code::invalid_argument;
    if (applied_[u] && !tokens.empty()) return status_code::invalid_argument;  // applied already
    applied_[u] = true;
    if (!open_) {
      before_ = cells_;
      before_has_shift_ = has_shift_;
      open_ = true;
    }
    for (const auto& t : tokens) {
      ref_cell c;
      c.pos = t.pos;
      c.seqs = t.seqs;
      c.rows = t.rows;
      cells_.push_back(std::move(c));
    }
    return status_code::ok;
  }

  void commit() {
    open_ = planned_ = false;
    before_.clear();
  }

  /// LIB: the whole batch is undone, not only the failed micro-batch.
  void rollback() {
    if (open_) {
      cells_ = std::move(before_);
      has_shift_ = before_has_shift_;
    }
    open_ = planned_ = false;
    before_.clear();
  }

  // ---- state ----------------------------------------------------------------------

  /// Pending shifts are applied before writing; a per-sequence blob holds the
  /// sequence's cells with itself as the only owner.
  status_code state_write(seq_id s, ref_blob& out) {
    if (!valid(s) && s != -1) return status_code::out_of_range;
    if (busy()) return status_code::invalid_argument;
    update();
    out.seq = s;
    out.cells.clear();
    for (const auto& c : cells_) {
      if (s >= 0 && !c.seqs.count(s)) continue;
      out.cells.push_back(c);
      if (s >= 0) out.cells.back().seqs = {s};
    }
    return status_code::ok;
  }

  /// Whole: the cache becomes the blob's cells. Per sequence (into dest): dest's
  /// cells are replaced, also by nothing (D-2 fixed); the cells go to free cells or
  /// to cells dest held alone, and no_space when there are too few of those.
  status_code state_read(const ref_blob& b, seq_id dest) {
    if (!valid(dest) && dest != -1) return status_code::out_of_range;
    if (busy()) return status_code::invalid_argument;
    if ((dest < 0) != (b.seq < 0)) return status_code::invalid_argument;
    if (dest < 0) {
      clear();
      cells_ = b.cells;
      return status_code::ok;
    }
    std::size_t avail = free_cells();
    for (const auto& c : cells_)
      if (c.seqs == std::set<seq_id>{dest}) ++avail;
    if (avail < b.cells.size()) return status_code::no_space;
    for (auto& c : cells_) c.seqs.erase(dest);
    drop_empty();
    for (const auto& bc : b.cells) {
      cells_.push_back(bc);
      cells_.back().seqs = {dest};
      cells_.back().pending = 0;
    }
    return status_code::ok;
  }

 private:
  bool valid(seq_id s) const { return s >= 0 && s < cfg_.n_seq_max; }
  /// A token needs a position >= 0 and one or more sequences, all below n_seq_max.
  bool valid_tokens(const std::vector<ref_token>& ub) const {
    for (const auto& t : ub) {
      if (t.pos < 0 || t.seqs.empty()) return false;
      for (seq_id s : t.seqs)
        if (!valid(s)) return false;
    }
    return true;
  }
  /// A prepared or applied batch blocks every sequence operation until commit or rollback.
  bool busy() const { return open_ || planned_; }

  static bool in_range(pos_t p, pos_t p0, pos_t p1) {
    const long long lo = p0 < 0 ? 0 : p0;
    const long long hi = p1 < 0 ? static_cast<long long>(INT32_MAX) : p1;
    return p >= lo && p < hi;
  }

  void drop_empty() {
    cells_.erase(std::remove_if(cells_.begin(), cells_.end(),
                                [](const ref_cell& c) { return c.seqs.empty(); }),
                 cells_.end());
  }

  /// seq_add / seq_div: cells s shares are copied first so the other owners keep
  /// their positions (copy-on-write, T91); cells moved below 0 are freed.
  template <class NewPos>
  status_code shift(seq_id s, pos_t p0, pos_t p1, bool noop, NewPos new_pos) {
    if (!valid(s)) return status_code::out_of_range;
    if (busy()) return status_code::invalid_argument;
    if (!cfg_.shift_supported) return status_code::unsupported;
    const long long lo = p0 < 0 ? 0 : p0;
    const long long hi = p1 < 0 ? static_cast<long long>(INT32_MAX) : p1;
    if (noop || lo >= hi) return status_code::ok;
    std::vector<std::size_t> mine, shared;
    for (std::size_t i = 0; i < cells_.size(); ++i)
      if (in_range(cells_[i].pos, p0, p1) && cells_[i].seqs.count(s))
        (cells_[i].seqs.size() > 1 && cfg_.mutation != ref_mutation::shift_moves_shared ? shared
                                                                                        : mine)
            .push_back(i);
    if (shared.size() > free_cells()) return status_code::no_space;
    for (std::size_t i : shared) {
      ref_cell copy = cells_[i];
      copy.seqs = {s};
      cells_[i].seqs.erase(s);
      mine.push_back(cells_.size());
      cells_.push_back(std::move(copy));
    }
    for (std::size_t i : mine) {
      ref_cell& c = cells_[i];
      const pos_t p = new_pos(c.pos);
      if (p < 0) {
        c.seqs.clear();
        continue;
      }
      c.pending += p - c.pos;
      c.pos = p;
      has_shift_ = true;
    }
    drop_empty();
    return status_code::ok;
  }

  config cfg_;
  std::vector<ref_cell> cells_;
  bool has_shift_ = false;
  bool open_ = false, planned_ = false;
  std::vector<std::size_t> plan_;
  std::vector<bool> applied_;
  std::vector<ref_cell> before_;
  bool before_has_shift_ = false;
};

}  // namespace mnemo_test
