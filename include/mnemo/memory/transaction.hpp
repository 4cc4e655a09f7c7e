// The undo log of a batch: the metadata of every cell a micro-batch touches, saved
// before the first change, so that rollback() restores the memory exactly (llama.cpp
// only removes the failed micro-batch; docs/memory.md, "Planning and transactions").
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "mnemo/memory/cells.hpp"

namespace mnemo::memory {

class transaction {
 public:
  bool open() const noexcept { return open_; }

  void begin(std::size_t head, bool has_shift) {
    open_ = true;
    head_ = head;
    has_shift_ = has_shift;
    log_.clear();
  }

  /// Records cell i's metadata as it is now.
  void save(std::size_t i, const cell_array& cells) {
    log_.push_back({static_cast<std::uint32_t>(i), cells.pos(i), cells.owners(i), cells.shift(i)});
  }

  /// Restores every saved cell in reverse order; returns the saved head.
  std::size_t undo(cell_array& cells) {
    for (auto it = log_.rbegin(); it != log_.rend(); ++it)
      cells.restore(it->cell, it->pos, it->owners, it->shift);
    cells.set_has_shift(has_shift_);
    const std::size_t head = head_;
    reset();
    return head;
  }

  void reset() noexcept {
    open_ = false;
    log_.clear();
  }

 private:
  struct entry {
    std::uint32_t cell;
    pos_t pos;
    seq_set owners;
    pos_t shift;
  };
  bool open_ = false;
  std::size_t head_ = 0;
  bool has_shift_ = false;
  std::vector<entry> log_;
};

}  // namespace mnemo::memory
