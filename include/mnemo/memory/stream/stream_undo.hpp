// The undo log of a batch over several streams (split_stream.hpp): cell metadata
// saved before each change, and every change of a stream's block table (a block
// taken for an empty slot, or a private copy of a shared block), so that rollback()
// restores cells, heads, pending-shift flags, block tables and reference counts
// exactly. The counterpart of transaction.hpp for one cell array.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "mnemo/memory/cells.hpp"
#include "mnemo/memory/stream/block_pool.hpp"

namespace mnemo::memory {

class stream_undo {
 public:
  bool open() const noexcept { return open_; }

  /// Opens the log; `heads` and `has_shift` are the per-stream values to restore.
  void begin(std::vector<std::size_t> heads, std::vector<std::uint8_t> has_shift) {
    open_ = true;
    heads_ = std::move(heads);
    has_shift_ = std::move(has_shift);
    log_.clear();
  }

  /// Records cell i of stream s as it is now.
  void save_cell(std::size_t s, std::size_t i, const cell_array& cells) {
    log_.push_back({entry::cell, static_cast<std::uint32_t>(s), static_cast<std::uint32_t>(i),
                    cells.pos(i), cells.owners(i), cells.shift(i), -1, -1});
  }

  /// Records that block-table slot t of stream s changed from `old_block` (-1: none)
  /// to `new_block` (acquired for this stream). The stream's reference to old_block
  /// passes to the log until commit(): a block shared when the batch began stays
  /// shared for all of it, so every holder that writes into it copies it, and none
  /// writes in place into rows that rollback() would hand back to another stream.
  void save_block(std::size_t s, std::size_t t, block_id old_block, block_id new_block) {
    log_.push_back({entry::block,
                    static_cast<std::uint32_t>(s),
                    static_cast<std::uint32_t>(t),
                    -1,
                    {},
                    0,
                    old_block,
                    new_block});
  }

  /// Undoes every change in reverse order. Stream s is (cells, block table) by
  /// `stream(s)`; returns the saved heads and flags through the same accessor.
  template <class KE, class VE, class Streams>
  void undo(Streams& streams, block_pool<KE, VE>& pool) {
    for (auto it = log_.rbegin(); it != log_.rend(); ++it) {
      auto& st = streams[it->stream];
      if (it->kind == entry::cell) {
        st.cells.restore(it->index, it->pos, it->owners, it->shift);
      } else {
        st.blocks[it->index] = it->old_block;  // the log's reference goes back
        pool.release(it->new_block);
      }
    }
    for (std::size_t s = 0; s < streams.size(); ++s) {
      streams[s].head = heads_[s];
      streams[s].cells.set_has_shift(has_shift_[s] != 0);
    }
    reset();
  }

  /// Keeps every change: drops the references the log held.
  template <class KE, class VE>
  void commit(block_pool<KE, VE>& pool) {
    for (const entry& e : log_)
      if (e.kind == entry::block && e.old_block >= 0) pool.release(e.old_block);
    reset();
  }

  /// Forgets the log (the memory was emptied; nothing it holds is referenced).
  void reset() noexcept {
    open_ = false;
    log_.clear();
  }

 private:
  struct entry {
    enum kind_t : std::uint8_t { cell, block } kind;
    std::uint32_t stream;
    std::uint32_t index;  // cell, or block-table slot
    pos_t pos;
    seq_set owners;
    pos_t shift;
    block_id old_block, new_block;
  };
  bool open_ = false;
  std::vector<std::size_t> heads_;
  std::vector<std::uint8_t> has_shift_;
  std::vector<entry> log_;
};

}  // namespace mnemo::memory
