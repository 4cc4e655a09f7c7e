// A pool of fixed-size blocks of K/V cells with reference counts: the unit of
// copy-on-write sharing between streams (split_stream.hpp). A block holds
// `block_cells` consecutive cells of every layer; streams hold lists of block ids,
// and a block referenced by several streams is read-only until one of them copies it.
//
// Free blocks are handed out lowest id first, so which blocks a sequence of
// operations uses depends only on the set of free blocks: a rollback that gives the
// same blocks back leaves the pool exactly as it was.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

#include "mnemo/base/assert.hpp"
#include "mnemo/base/result.hpp"
#include "mnemo/memory/kv_storage.hpp"

namespace mnemo::memory {

using block_id = std::int32_t;  // -1: no block

template <dtype::kv_element KE, dtype::kv_element VE>
class block_pool {
 public:
  block_pool() = default;

  static result<block_pool> make(const kv_shape& sh, std::size_t block_cells,
                                 std::size_t n_blocks) {
    if (block_cells == 0 || n_blocks == 0)
      return make_status(status_code::invalid_argument,
                         "block pool: cells per block (%zu) and blocks (%zu) must be > 0",
                         block_cells, n_blocks);
    if (n_blocks > static_cast<std::size_t>(INT32_MAX))
      return make_status(status_code::out_of_range, "block pool: %zu blocks is too many", n_blocks);
    block_pool p;
    p.block_cells_ = block_cells;
    MNEMO_ASSIGN_OR_RETURN(p.kv_, (kv_storage<KE, VE>::make(sh, block_cells * n_blocks)));
    p.refs_.assign(n_blocks, 0);
    p.n_free_ = n_blocks;
    return p;
  }

  std::size_t block_cells() const noexcept { return block_cells_; }
  std::size_t n_blocks() const noexcept { return refs_.size(); }
  std::size_t n_free() const noexcept { return n_free_; }
  std::uint32_t refs(block_id b) const noexcept { return refs_[static_cast<std::size_t>(b)]; }
  bool shared(block_id b) const noexcept { return refs(b) > 1; }

  /// A free block with one reference, or -1 when none is left. Lowest id first.
  block_id acquire() noexcept {
    if (n_free_ == 0) return -1;
    while (refs_[first_free_] != 0) ++first_free_;
    refs_[first_free_] = 1;
    --n_free_;
    return static_cast<block_id>(first_free_);
  }

  void retain(block_id b) noexcept {
    MNEMO_DASSERT(refs(b) > 0);
    ++refs_[static_cast<std::size_t>(b)];
  }

  /// Drops one reference; the block is free when none is left.
  void release(block_id b) noexcept {
    const auto i = static_cast<std::size_t>(b);
    MNEMO_DASSERT(refs_[i] > 0);
    if (--refs_[i] == 0) {
      ++n_free_;
      if (i < first_free_) first_free_ = i;
    }
  }

  /// Copies every layer's K and V rows of block `from` into block `to`.
  void copy_block(block_id from, block_id to) noexcept {
    const std::size_t n = block_cells_;
    for (std::size_t l = 0; l < kv_.shape().n_layer; ++l) {
      std::memcpy(kv_.k(l, cell(to, 0)), kv_.k(l, cell(from, 0)), n * kv_.k_row_bytes());
      std::memcpy(kv_.v(l, cell(to, 0)), kv_.v(l, cell(from, 0)), n * kv_.v_row_bytes());
    }
  }

  /// Every block free again (their bytes stay unless zero() is called).
  void reset() noexcept {
    std::fill(refs_.begin(), refs_.end(), 0u);
    n_free_ = refs_.size();
    first_free_ = 0;
  }

  /// The storage index of cell `offset` of block b: K/V rows live at kv().k(layer, cell).
  std::size_t cell(block_id b, std::size_t offset) const noexcept {
    return static_cast<std::size_t>(b) * block_cells_ + offset;
  }
  kv_storage<KE, VE>& kv() noexcept { return kv_; }
  const kv_storage<KE, VE>& kv() const noexcept { return kv_; }

 private:
  std::size_t block_cells_ = 0;
  kv_storage<KE, VE> kv_;
  std::vector<std::uint32_t> refs_;  // [n_blocks]
  std::size_t n_free_ = 0;
  std::size_t first_free_ = 0;  // no free block below it
};

}  // namespace mnemo::memory
