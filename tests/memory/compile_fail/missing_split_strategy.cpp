// Must NOT compile (tests/memory.cmake): a custom memory strategy without
// split_strategy() reaches context<>'s check, whose static_assert names the member.
#include <cstdint>
#include <span>

#include "mnemo/context.hpp"

using namespace mnemo;

struct no_split_memory {  // every member but split_strategy(n_ubatch)
  status seq_rm(seq_id, pos_t, pos_t) { return {}; }
  status seq_cp(seq_id, seq_id, pos_t, pos_t) { return {}; }
  status seq_keep(seq_id) { return {}; }
  status seq_add(seq_id, pos_t, pos_t, pos_t) { return {}; }
  status seq_div(seq_id, pos_t, pos_t, int) { return {}; }
  void clear(bool) {}
  pos_t seq_pos_min(seq_id) const { return -1; }
  pos_t seq_pos_max(seq_id) const { return -1; }
  seq_id n_seq_max() const { return 1; }
  std::size_t n_layer() const { return 1; }
  bool can_shift() const { return false; }
  memory::memory_report report() const { return {}; }
  status update() { return {}; }
  status prepare(std::span<const memory::ubatch_tokens>) { return {}; }
  status apply(std::size_t, const memory::ubatch_tokens&) { return {}; }
  void commit() {}
  void rollback() {}
};

struct any_memory_model {  // a decoder that takes any memory
  struct workspace {
    const float* logits() const { return nullptr; }
  };
  std::uint32_t n_vocab() const { return 1; }
  std::uint32_t n_embd() const { return 1; }
  result<workspace> make_workspace(std::uint32_t) const { return workspace{}; }
  template <class Isa = simd::native, class Memory>
  status forward(Memory&, std::size_t, const ubatch&, workspace&, int) const {
    return {};
  }
};

int main() {
  any_memory_model m;
  auto c = context<any_memory_model, no_split_memory>::make(m, no_split_memory{}, {});
  return c.is_ok() ? 0 : 1;
}
