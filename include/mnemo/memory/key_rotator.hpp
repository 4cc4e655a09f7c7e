// K-shift: a cached key was rotated by RoPE at its old position, so moving the token by
// `shift` rotates the key once more by `shift` (R(a) R(b) = R(a + b), attention/rope.hpp).
// Every strategy re-rotates rows this way: decode the row, rotate each KV head, encode
// it back (quantised rows included). A context shift moves thousands of cells by the
// same delta, so the angle table is built once per distinct shift instead of the
// trigonometry per pair (docs/memory.md, "K-shift").
#pragma once

#include <cstddef>
#include <vector>

#include "mnemo/attention/rope.hpp"
#include "mnemo/dtype/dtype.hpp"
#include "mnemo/memory/types.hpp"

namespace mnemo::memory {

template <dtype::kv_element KE>
class key_rotator {
 public:
  key_rotator() = default;
  /// Rows of n_head heads of d_k values each, rotated as `rope` says.
  key_rotator(const attention::rope_config& rope, std::size_t n_head, std::size_t d_k)
      : rope_(rope), n_head_(n_head), d_k_(d_k), row_(n_head * d_k), table_(rope, 0.0) {}

  /// Rotates the key row k ([n_head, d_k] of KE) by `shift` positions.
  template <class Isa = simd::native>
  void rotate(KE* k, pos_t shift) {
    if (shift != table_shift_) {
      table_shift_ = shift;
      table_.fill(rope_, static_cast<double>(shift));
    }
    dtype::row_kernels<Isa>::decode(k, row_.data(), row_.size());
    for (std::size_t h = 0; h < n_head_; ++h)
      attention::rope_apply(rope_, table_, row_.data() + h * d_k_);
    dtype::row_kernels<Isa>::encode(row_.data(), k, row_.size());
  }

 private:
  attention::rope_config rope_{};
  std::size_t n_head_ = 0, d_k_ = 0;
  std::vector<float> row_;  // [n_head, d_k] f32
  pos_t table_shift_ = 0;
  attention::rope_table table_{rope_, 0.0};
};

}  // namespace mnemo::memory
