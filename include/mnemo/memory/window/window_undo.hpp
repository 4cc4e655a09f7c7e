// The undo log of a sliding-window batch (sliding_window.hpp). A window cache reuses
// cells whose tokens left every owner's window, inside the batch that needs them, so
// unlike transaction.hpp it also saves the K/V rows of every live cell a micro-batch
// overwrites, and the per-sequence horizons: rollback() then restores the memory
// exactly, forgotten tokens included (they are forgotten only when the batch commits).
// Planning uses the same log without rows: prepare() places every micro-batch for
// real and undoes it (a dry run that, unlike llama.cpp's, purges nothing for good).
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

#include "mnemo/memory/cells.hpp"
#include "mnemo/memory/kv_storage.hpp"

namespace mnemo::memory {

class window_undo {
 public:
  bool open() const noexcept { return open_; }

  void begin(std::size_t n_cells, std::size_t head, bool has_shift,
             const std::vector<pos_t>& horizon) {
    open_ = true;
    head_ = head;
    has_shift_ = has_shift;
    horizon_ = horizon;
    log_.clear();
    rows_.clear();
    row_cells_.clear();
    if (first_.size() != n_cells) first_.assign(n_cells, k_none);
  }

  /// Records cell i's metadata as it is now.
  void save(std::size_t i, const cell_array& cells) {
    if (first_[i] == k_none) first_[i] = static_cast<std::uint32_t>(log_.size());
    log_.push_back({static_cast<std::uint32_t>(i), cells.pos(i), cells.owners(i), cells.shift(i)});
  }

  /// Saves cell i's K/V rows (every layer) once per batch, when the cell held a token
  /// when the batch began. Call before the rows are overwritten. @pre save(i) was called
  template <class KE, class VE>
  void save_rows(std::size_t i, const kv_storage<KE, VE>& kv) {
    const std::uint32_t f = first_[i];
    if (f == k_none || log_[f].pos < 0 || log_[f].rows_saved) return;
    log_[f].rows_saved = true;
    const std::size_t kb = kv.k_row_bytes(), vb = kv.v_row_bytes();
    for (std::size_t l = 0; l < kv.shape().n_layer; ++l) {
      append(kv.k(l, i), kb);
      append(kv.v(l, i), vb);
    }
    row_cells_.push_back(static_cast<std::uint32_t>(i));
  }

  /// Restores metadata (reverse order), rows, pending-shift flag and horizons;
  /// returns the saved head.
  template <class KE, class VE>
  std::size_t undo(cell_array& cells, kv_storage<KE, VE>& kv, std::vector<pos_t>& horizon) {
    for (auto it = log_.rbegin(); it != log_.rend(); ++it)
      cells.restore(it->cell, it->pos, it->owners, it->shift);
    const std::size_t kb = kv.k_row_bytes(), vb = kv.v_row_bytes();
    const std::uint8_t* p = rows_.data();
    for (std::uint32_t i : row_cells_)
      for (std::size_t l = 0; l < kv.shape().n_layer; ++l) {
        std::memcpy(kv.k(l, i), p, kb);
        p += kb;
        std::memcpy(kv.v(l, i), p, vb);
        p += vb;
      }
    cells.set_has_shift(has_shift_);
    horizon = horizon_;
    const std::size_t head = head_;
    reset();
    return head;
  }

  void reset() noexcept {
    for (const entry& e : log_) first_[e.cell] = k_none;
    open_ = false;
    log_.clear();
    rows_.clear();
    row_cells_.clear();
  }

  /// Bytes of rows saved by the open batch (what exact rollback costs).
  std::size_t row_bytes() const noexcept { return rows_.size(); }

 private:
  static constexpr std::uint32_t k_none = 0xffffffffu;
  struct entry {
    std::uint32_t cell;
    pos_t pos;
    seq_set owners;
    pos_t shift;
    bool rows_saved = false;
  };
  void append(const void* p, std::size_t n) {
    const auto* b = static_cast<const std::uint8_t*>(p);
    rows_.insert(rows_.end(), b, b + n);
  }

  bool open_ = false;
  std::size_t head_ = 0;
  bool has_shift_ = false;
  std::vector<pos_t> horizon_;
  std::vector<entry> log_;
  std::vector<std::uint32_t> first_;  // [n_cells] first log entry of a cell, or k_none
  std::vector<std::uint8_t> rows_;
  std::vector<std::uint32_t> row_cells_;
};

}  // namespace mnemo::memory
