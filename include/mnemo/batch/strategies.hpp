// The split strategies as values (models of split_strategy), so a memory can name its
// split once — at compile time, or at run time through any_split — and hand it to
// batch_splitter::split_all. Which memory uses which split: docs/batch.md.
#pragma once

#include <cstdint>

#include "mnemo/base/result.hpp"
#include "mnemo/batch/concepts.hpp"
#include "mnemo/batch/split.hpp"

namespace mnemo {

/// split_simple: unified KV caches.
struct simple_split {
  std::uint32_t n_ubatch = 0;
  result<ubatch> next(batch_splitter& sp) const { return sp.split_simple(n_ubatch); }
};

/// split_equal: split streams (sequential), recurrent and hybrid memories (n_keep_tail).
struct equal_split {
  std::uint32_t n_ubatch = 0;
  bool sequential = false;
  std::uint32_t n_keep_tail = 0;
  result<ubatch> next(batch_splitter& sp) const {
    return sp.split_equal(n_ubatch, sequential, n_keep_tail);
  }
};

/// split_seq: recurrent and hybrid memories when every token outputs an embedding.
struct seq_split {
  std::uint32_t n_ubatch = 0;
  result<ubatch> next(batch_splitter& sp) const { return sp.split_seq(n_ubatch); }
};

enum class split_kind : std::uint8_t { simple, equal, seq };

/// One of the three, chosen at run time (a memory whose split depends on its options).
struct any_split {
  split_kind kind = split_kind::simple;
  std::uint32_t n_ubatch = 0;
  bool sequential = false;        // equal only
  std::uint32_t n_keep_tail = 0;  // equal only

  any_split() = default;
  any_split(simple_split s) : kind(split_kind::simple), n_ubatch(s.n_ubatch) {}  // NOLINT
  any_split(equal_split s)  // NOLINT: implicit by design
      : kind(split_kind::equal),
        n_ubatch(s.n_ubatch),
        sequential(s.sequential),
        n_keep_tail(s.n_keep_tail) {}
  any_split(seq_split s) : kind(split_kind::seq), n_ubatch(s.n_ubatch) {}  // NOLINT

  result<ubatch> next(batch_splitter& sp) const {
    switch (kind) {
      case split_kind::simple: return sp.split_simple(n_ubatch);
      case split_kind::equal: return sp.split_equal(n_ubatch, sequential, n_keep_tail);
      case split_kind::seq: return sp.split_seq(n_ubatch);
    }
    return make_status(status_code::invalid_argument, "any_split: unknown split kind");
  }
};

static_assert(split_strategy<simple_split>);
static_assert(split_strategy<equal_split>);
static_assert(split_strategy<seq_split>);
static_assert(split_strategy<any_split>);
static_assert(!split_strategy<int>);

}  // namespace mnemo
