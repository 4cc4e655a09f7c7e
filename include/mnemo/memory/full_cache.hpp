// The unified ("full") KV strategy: one cell array for every sequence; a cell may
// belong to several sequences, so copying a prefix costs nothing (spec/memory.md
// §1.3, §2). Placement, sequence operations and K-shift follow llama.cpp, with the
// deviations marked LIB in the spec: errors are statuses, never aborts; a failed
// batch is rolled back entirely; shifting a shared cell copies it first (D-18);
// seq_div shifts with the right sign (D-1).
#pragma once

#include <algorithm>
#include <cstring>
#include <limits>
#include <span>
#include <vector>

#include "mnemo/attention/kv_view.hpp"
#include "mnemo/attention/rope.hpp"
#include "mnemo/batch/strategies.hpp"
#include "mnemo/dtype/dtype.hpp"
#include "mnemo/memory/cells.hpp"
#include "mnemo/memory/concepts.hpp"
#include "mnemo/memory/kv_storage.hpp"
#include "mnemo/memory/transaction.hpp"
#include "mnemo/memory/types.hpp"

namespace mnemo::memory {

struct full_cache_config {
  kv_shape shape;
  std::size_t size = 0;         // cells
  seq_id n_seq_max = 1;         // sequence ids live in [0, n_seq_max), at most 256
  attention::rope_config rope;  // how cached keys were rotated (for K-shift)
  bool shift_supported = true;  // false for M-RoPE-like models: seq_add/div are refused
};

template <dtype::kv_element KE, dtype::kv_element VE = KE>
class full_cache {
 public:
  using k_element = KE;
  using v_element = VE;

  static result<full_cache> make(const full_cache_config& cfg) {
    if (cfg.n_seq_max < 1 || cfg.n_seq_max > k_max_seq)
      return make_status(status_code::invalid_argument,
                         "full cache: n_seq_max %d is outside [1, %d]", cfg.n_seq_max, k_max_seq);
    MNEMO_RETURN_IF_ERROR(cfg.rope.validate(cfg.shape.d_k));
    full_cache c;
    c.cfg_ = cfg;
    MNEMO_ASSIGN_OR_RETURN(c.kv_, (kv_storage<KE, VE>::make(cfg.shape, cfg.size)));
    c.cells_ = cell_array(cfg.size);
    return c;
  }

  const full_cache_config& config() const noexcept { return cfg_; }
  std::size_t size() const noexcept { return cells_.size(); }
  std::size_t used() const noexcept { return cells_.used(); }
  const cell_array& cells() const noexcept { return cells_; }
  const kv_storage<KE, VE>& storage() const noexcept { return kv_; }
  kv_storage<KE, VE>& storage() noexcept { return kv_; }
  bool can_shift() const noexcept { return cfg_.shift_supported; }
  /// One cell array for every sequence: any split will do (spec §7.4).
  static simple_split split_strategy(std::uint32_t n_ubatch) noexcept { return {n_ubatch}; }
  bool has_pending_shift() const noexcept { return cells_.has_shift(); }

  pos_t seq_pos_min(seq_id s) const noexcept { return valid(s) ? cells_.seq_pos_min(s) : -1; }
  pos_t seq_pos_max(seq_id s) const noexcept { return valid(s) ? cells_.seq_pos_max(s) : -1; }

  // ---- sequence operations (spec §1.3) -------------------------------------------

  /// Removes s (every sequence when s == -1) from the cells holding positions in
  /// [p0, p1); cells left without owner become free.
  status seq_rm(seq_id s, pos_t p0, pos_t p1) {
    MNEMO_RETURN_IF_ERROR(check_seq(s, cfg_.n_seq_max, "seq_rm", true));
    MNEMO_RETURN_IF_ERROR(no_open_batch("seq_rm"));
    head_ = std::min(head_, cells_.remove_seq(s, pos_range::of(p0, p1)));
    return {};
  }

  /// dst holds exactly src's cells in [p0, p1) afterwards (its own cells in that
  /// range are dropped first; llama.cpp keeps them, T07), sharing them with src.
  status seq_cp(seq_id src, seq_id dst, pos_t p0, pos_t p1) {
    MNEMO_RETURN_IF_ERROR(check_seq(src, cfg_.n_seq_max, "seq_cp"));
    MNEMO_RETURN_IF_ERROR(check_seq(dst, cfg_.n_seq_max, "seq_cp"));
    MNEMO_RETURN_IF_ERROR(no_open_batch("seq_cp"));
    if (src == dst) return {};
    head_ = std::min(head_, cells_.copy_seq(src, dst, pos_range::of(p0, p1)));
    return {};
  }

  /// Only s remains: cells without s become free, cells with s keep only s.
  status seq_keep(seq_id s) {
    MNEMO_RETURN_IF_ERROR(check_seq(s, cfg_.n_seq_max, "seq_keep"));
    MNEMO_RETURN_IF_ERROR(no_open_batch("seq_keep"));
    head_ = std::min(head_, cells_.keep_seq(s));
    return {};
  }

  /// Adds delta to the positions of s in [p0, p1). Cells whose position becomes
  /// negative are freed. A cell s shares with other sequences is copied first, so
  /// the others keep their positions (D-18); no_space when there is no room for
  /// the copies (nothing changed). The keys are re-rotated by update().
  status seq_add(seq_id s, pos_t p0, pos_t p1, pos_t delta) {
    // Positions are int32: refuse a delta that would carry any held position past
    // the largest one (negative results are fine: those cells are freed).
    const pos_t top = seq_pos_max(s);
    if (delta > 0 && top >= 0 && top > std::numeric_limits<pos_t>::max() - delta &&
        pos_range::of(p0, p1).p0 <= top)
      return make_status(status_code::out_of_range,
                         "seq_add: position %d + %d overflows the position type", top, delta);
    return shift_positions(
        s, p0, p1, "seq_add", [delta](pos_t p) { return p + delta; }, delta == 0);
  }

  /// Divides the positions of s in [p0, p1) by d (integer division); the pending
  /// shift is new - old (D-1).
  status seq_div(seq_id s, pos_t p0, pos_t p1, int d) {
    if (d <= 0)
      return make_status(status_code::invalid_argument, "seq_div: divisor %d must be > 0", d);
    return shift_positions(
        s, p0, p1, "seq_div", [d](pos_t p) { return p / d; }, d == 1);
  }

  /// Frees every cell; with `data` the K/V bytes are zeroed too.
  void clear(bool data) {
    cells_.clear();
    head_ = 0;
    tx_.reset();
    plan_.clear();
    if (data) kv_.zero();
  }

  /// Applies pending position shifts to the cached keys (K-shift, spec §2.6):
  /// every shifted cell's K rows are rotated by their accumulated shift.
  status update() {
    if (tx_.open()) return no_open_batch("update");  // rollback() cannot undo a rotation
    if (!cells_.has_shift()) return {};
    if (cfg_.rope.layout != attention::rope_layout::none) rotate_shifted_keys();
    cells_.clear_shifts();
    return {};
  }

  // ---- planning and transactions -------------------------------------------------

  /// Finds cells for every micro-batch before anything changes (spec §2.2 slot
  /// search, run as a dry run over all of them). On failure nothing changed.
  status prepare(std::span<const ubatch_tokens> ubatches) {
    if (tx_.open()) return no_open_batch("prepare");  // an unapplied plan is replaced
    plan_.clear();
    // Cells taken by earlier micro-batches: only a multi-micro-batch plan needs the
    // map, and zeroing it costs O(size) (0.5 us of a 0.56 us 1-token plan at 64k cells).
    std::vector<std::uint8_t> taken(ubatches.size() > 1 ? cells_.size() : 0, 0);
    std::size_t head = head_, used = cells_.used();
    for (std::size_t u = 0; u < ubatches.size(); ++u) {
      const std::size_t n = ubatches[u].size();
      if (status st = check_tokens("prepare", u, ubatches[u]); !st) return fail_plan(std::move(st));
      if (n > cells_.size())
        return fail_plan(make_status(status_code::no_space,
                                     "micro-batch %zu has %zu tokens but the cache has %zu cells",
                                     u, n, cells_.size()));
      if (head > used + 2 * n) head = 0;  // enough holes before the head
      std::vector<std::uint32_t> slots;
      for (std::size_t k = 0; k < cells_.size() && slots.size() < n; ++k) {
        const std::size_t i = (head + k) % cells_.size();
        if (cells_.empty(i) && (taken.empty() || !taken[i]))
          slots.push_back(static_cast<std::uint32_t>(i));
      }
      if (slots.size() < n)
        return fail_plan(make_status(
            status_code::no_space, "no room for micro-batch %zu: %zu tokens, %zu free cells of %zu",
            u, n, slots.size(), cells_.size()));
      if (!taken.empty())
        for (auto i : slots) taken[i] = 1;
      used += n;
      if (n > 0) head = slots.back() + 1;
      plan_.push_back(std::move(slots));
    }
    return {};
  }

  /// The cells micro-batch u's tokens go to (valid after prepare()).
  std::span<const std::uint32_t> slots(std::size_t u) const noexcept { return plan_[u]; }

  /// Writes micro-batch u's cell metadata; the first apply opens a transaction
  /// that commit() closes and rollback() undoes.
  status apply(std::size_t u, const ubatch_tokens& ub) {
    if (u >= plan_.size() || plan_[u].size() != ub.size())
      return make_status(status_code::invalid_argument,
                         "apply: micro-batch %zu does not match the prepared plan", u);
    MNEMO_RETURN_IF_ERROR(check_tokens("apply", u, ub));
    for (std::uint32_t c : plan_[u])  // planned cells stay free until applied (seq ops are refused)
      if (!cells_.empty(c))
        return make_status(status_code::invalid_argument,
                           "apply: micro-batch %zu was applied already", u);
    if (!tx_.open()) tx_.begin(head_, cells_.has_shift());
    for (std::size_t j = 0; j < ub.size(); ++j) {
      const std::size_t c = plan_[u][j];
      tx_.save(c, cells_);
      cells_.occupy(c, ub.pos[j], ub.seqs[j]);
    }
    if (!plan_[u].empty()) head_ = plan_[u].back() + 1;
    return {};
  }

  /// Stores the K and V rows of the j-th token of micro-batch u for one layer.
  /// k: [n_head_kv, d_k] f32, v: [n_head_kv, d_v] f32.
  template <class Isa = simd::native>
  void write_kv(std::size_t layer, std::size_t u, std::size_t j, const float* k,
                const float* v) noexcept {
    const std::size_t c = plan_[u][j];
    const auto& sh = cfg_.shape;
    dtype::row_kernels<Isa>::encode(k, kv_.k(layer, c), sh.n_head_kv * sh.d_k);
    dtype::row_kernels<Isa>::encode(v, kv_.v(layer, c), sh.n_head_kv * sh.d_v);
  }

  void commit() {
    tx_.reset();
    plan_.clear();
  }

  /// Undoes every apply() since the last commit: cell metadata, head and pending
  /// shifts are exactly as before (rows written to free cells are unreachable).
  void rollback() {
    if (tx_.open()) head_ = tx_.undo(cells_);
    plan_.clear();
  }

  /// The attention view of one layer: cells [0, used_max_p1) with their positions
  /// and owners. Valid until the next mutation.
  attention::kv_segment segment(std::size_t layer) const noexcept {
    attention::kv_segment s;
    s.k = kv_.k(layer, 0);
    s.v = kv_.v(layer, 0);
    s.k_stride = kv_.k_row_bytes();
    s.v_stride = kv_.v_row_bytes();
    s.pos = cells_.pos_data();
    s.owners = cells_.owners_data();
    s.n_cells = cells_.used_max_p1();
    return s;
  }

  /// The attention views of one layer for micro-batch u (memory::kv_memory): every
  /// token reads the one unified stream, segment(layer). Added for the model, which is
  /// written against kv_memory rather than against this class.
  void views(std::size_t layer, std::size_t u, layer_views& out) const {
    (void)u;  // one stream for every micro-batch
    out.segments.assign(1, segment(layer));
    out.streams.assign(1, attention::kv_view{{out.segments.data(), 1}});
    out.token_stream.clear();
  }

  /// Moves every used cell to the front, in order, with its K/V rows: the attended
  /// prefix [0, used) becomes dense again.
  status defragment() {
    MNEMO_RETURN_IF_ERROR(no_open_batch("defragment"));
    std::size_t to = 0;
    for (std::size_t i = 0; i < cells_.size(); ++i) {
      if (cells_.empty(i)) continue;
      if (i != to) {
        kv_.copy_cell(i, to);
        cells_.relocate(i, to);
      }
      ++to;
    }
    head_ = to;
    return {};
  }

  memory_report report() const {
    memory_report r;
    const auto& sh = cfg_.shape;
    for (std::size_t l = 0; l < sh.n_layer; ++l) {
      r.layers.push_back({l, "kv", std::string(dtype::element_traits<KE>::name),
                          std::string(dtype::element_traits<VE>::name), kv_.k_row_bytes() * size(),
                          kv_.v_row_bytes() * size()});
      r.total_bytes += (kv_.k_row_bytes() + kv_.v_row_bytes()) * size();
    }
    r.cells = size();
    r.cells_used = used();
    for (seq_id s = 0; s < cfg_.n_seq_max; ++s)
      if (const std::size_t n = cells_.seq_cells(s)) r.cells_per_seq.push_back({s, n});
    return r;
  }

  /// Restores cells [0, n) densely from a parsed state (used by state_read).
  cell_array& mutable_cells() noexcept { return cells_; }
  void reset_head() noexcept { head_ = 0; }
  bool in_batch() const noexcept { return tx_.open() || !plan_.empty(); }

 private:
  bool valid(seq_id s) const noexcept { return s >= 0 && s < cfg_.n_seq_max; }

  // A prepared plan counts too: seq_add's copies and defragment would fill its slots.
  status no_open_batch(const char* op) const {
    if (!in_batch()) return {};
    return make_status(status_code::invalid_argument,
                       "%s: a batch is prepared or being applied; commit() or rollback() first",
                       op);
  }

  /// Every token needs a position >= 0 and one or more sequences below n_seq_max: a
  /// cell without owner, at a negative position or with an id the state format cannot
  /// restore (D-8) would corrupt the bookkeeping.
  status check_tokens(const char* op, std::size_t u, const ubatch_tokens& ub) const {
    if (ub.seqs.size() != ub.pos.size())
      return make_status(status_code::invalid_argument,
                         "%s: micro-batch %zu has %zu positions but %zu sequence sets", op, u,
                         ub.pos.size(), ub.seqs.size());
    seq_set allowed;
    for (seq_id s = 0; s < cfg_.n_seq_max; ++s) allowed.insert(s);
    for (std::size_t j = 0; j < ub.size(); ++j) {
      bool outside = false;
      for (int w = 0; w < k_max_seq / 64; ++w)
        outside |= (ub.seqs[j].words[w] & ~allowed.words[w]) != 0;
      if (ub.pos[j] < 0 || ub.seqs[j].empty() || outside)
        return make_status(status_code::invalid_argument,
                           "%s: token %zu of micro-batch %zu needs a position >= 0 (has %d) "
                           "and one or more sequences in [0, %d)",
                           op, j, u, ub.pos[j], cfg_.n_seq_max);
    }
    return {};
  }

  status fail_plan(status s) {
    plan_.clear();
    return s;
  }

  template <class NewPos>
  status shift_positions(seq_id s, pos_t p0, pos_t p1, const char* op, NewPos new_pos, bool noop) {
    MNEMO_RETURN_IF_ERROR(check_seq(s, cfg_.n_seq_max, op));
    MNEMO_RETURN_IF_ERROR(no_open_batch(op));
    if (!cfg_.shift_supported)
      return make_status(status_code::unsupported,
                         "%s: this model's positions cannot be shifted (no K-shift)", op);
    const pos_range r = pos_range::of(p0, p1);
    if (noop || r.empty()) return {};
    std::vector<std::size_t> mine, shared;
    for (std::size_t i = 0; i < cells_.size(); ++i) {
      if (cells_.empty(i) || !r.contains(cells_.pos(i)) || !cells_.owners(i).contains(s)) continue;
      (cells_.owners(i).count() > 1 ? shared : mine).push_back(i);
    }
    // Copy-on-write: a private copy of each shared cell moves instead.
    std::vector<std::size_t> free_cells;
    for (std::size_t i = 0; i < cells_.size() && free_cells.size() < shared.size(); ++i)
      if (cells_.empty(i)) free_cells.push_back(i);
    if (free_cells.size() < shared.size())
      return make_status(status_code::no_space,
                         "%s: sequence %d shares %zu cells with other sequences and needs as many "
                         "free cells to move them apart, but only %zu are free",
                         op, s, shared.size(), free_cells.size());
    for (std::size_t k = 0; k < shared.size(); ++k) {
      kv_.copy_cell(shared[k], free_cells[k]);
      cells_.split_owner(shared[k], free_cells[k], s);
      mine.push_back(free_cells[k]);
    }
    if (cells_.move_seq(s, r, mine, new_pos)) {
      head_ = 0;
      for (std::size_t i = 0; i < cells_.size(); ++i)
        if (cells_.empty(i)) {
          head_ = i;
          break;
        }
    }
    return {};
  }

  /// A context shift moves thousands of cells by the same delta, so the angle table
  /// is built once per distinct shift. Measured (bench_memory, 6k f16 cells of
  /// 8 x 128): ~10 us per cell with trigonometry per pair, 0.4 us with the table.
  void rotate_shifted_keys() {
    const auto& sh = cfg_.shape;
    std::vector<float> row(sh.n_head_kv * sh.d_k);
    pos_t table_shift = 0;
    attention::rope_table table(cfg_.rope, 0.0);
    for (std::size_t i = 0; i < cells_.size(); ++i) {
      if (cells_.empty(i) || cells_.shift(i) == 0) continue;
      if (cells_.shift(i) != table_shift) {
        table_shift = cells_.shift(i);
        table = attention::rope_table(cfg_.rope, table_shift);
      }
      for (std::size_t l = 0; l < sh.n_layer; ++l) {
        dtype::row_kernels<simd::native>::decode(kv_.k(l, i), row.data(), row.size());
        for (std::size_t h = 0; h < sh.n_head_kv; ++h)
          attention::rope_apply(cfg_.rope, table, row.data() + h * sh.d_k);
        dtype::row_kernels<simd::native>::encode(row.data(), kv_.k(l, i), row.size());
      }
    }
  }

  full_cache_config cfg_;
  kv_storage<KE, VE> kv_;
  cell_array cells_;
  std::size_t head_ = 0;
  transaction tx_;
  std::vector<std::vector<std::uint32_t>> plan_;
};

static_assert(kv_memory<full_cache<float>>);

}  // namespace mnemo::memory
