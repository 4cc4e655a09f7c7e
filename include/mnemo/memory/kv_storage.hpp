// K/V rows of every layer of one cell array: K [size, n_head_kv, d_k] of KE and
// V [size, n_head_kv, d_v] of VE per layer, in the library's huge-page buffers.
#pragma once

#include <cstddef>
#include <cstring>
#include <vector>

#include "mnemo/base/aligned_buffer.hpp"
#include "mnemo/base/result.hpp"
#include "mnemo/dtype/dtype.hpp"

namespace mnemo::memory {

/// The geometry every KV strategy is built from.
struct kv_shape {
  std::size_t n_layer = 0;
  std::size_t n_head_kv = 0;
  std::size_t d_k = 0;
  std::size_t d_v = 0;
};

template <dtype::kv_element KE, dtype::kv_element VE>
class kv_storage {
 public:
  kv_storage() = default;

  static result<kv_storage> make(const kv_shape& sh, std::size_t size) {
    if (sh.n_layer == 0 || sh.n_head_kv == 0 || sh.d_k == 0 || sh.d_v == 0 || size == 0)
      return make_status(status_code::invalid_argument,
                         "kv storage: layers, heads, head sizes and cells must be > 0");
    if (sh.d_k % dtype::block_size_of<KE> != 0 || sh.d_v % dtype::block_size_of<VE> != 0)
      return make_status(status_code::invalid_argument,
                         "kv storage: head sizes (%zu, %zu) must be multiples of the %s / %s block "
                         "size",
                         sh.d_k, sh.d_v, dtype::element_traits<KE>::name.data(),
                         dtype::element_traits<VE>::name.data());
    kv_storage s;
    s.shape_ = sh;
    s.size_ = size;
    s.k_row_ = dtype::blocks_in_row<KE>(sh.d_k) * sh.n_head_kv;
    s.v_row_ = dtype::blocks_in_row<VE>(sh.d_v) * sh.n_head_kv;
    for (std::size_t l = 0; l < sh.n_layer; ++l) {
      MNEMO_ASSIGN_OR_RETURN(auto k, aligned_buffer<KE>::make(size * s.k_row_));
      MNEMO_ASSIGN_OR_RETURN(auto v, aligned_buffer<VE>::make(size * s.v_row_));
      s.k_.push_back(std::move(k));
      s.v_.push_back(std::move(v));
    }
    return s;
  }

  const kv_shape& shape() const noexcept { return shape_; }
  std::size_t size() const noexcept { return size_; }
  /// Bytes of one cell's K (V) row over all heads.
  std::size_t k_row_bytes() const noexcept { return k_row_ * sizeof(KE); }
  std::size_t v_row_bytes() const noexcept { return v_row_ * sizeof(VE); }
  std::size_t bytes() const noexcept {
    return shape_.n_layer * size_ * (k_row_bytes() + v_row_bytes());
  }

  KE* k(std::size_t layer, std::size_t cell) noexcept { return k_[layer].data() + cell * k_row_; }
  VE* v(std::size_t layer, std::size_t cell) noexcept { return v_[layer].data() + cell * v_row_; }
  const KE* k(std::size_t layer, std::size_t cell) const noexcept {
    return k_[layer].data() + cell * k_row_;
  }
  const VE* v(std::size_t layer, std::size_t cell) const noexcept {
    return v_[layer].data() + cell * v_row_;
  }

  /// Copies every layer's K and V row of cell `from` to cell `to`.
  void copy_cell(std::size_t from, std::size_t to) noexcept {
    for (std::size_t l = 0; l < shape_.n_layer; ++l) {
      std::memmove(k(l, to), k(l, from), k_row_bytes());
      std::memmove(v(l, to), v(l, from), v_row_bytes());
    }
  }

  void zero() noexcept {
    for (auto& b : k_) b.fill_zero();
    for (auto& b : v_) b.fill_zero();
  }

 private:
  kv_shape shape_;
  std::size_t size_ = 0, k_row_ = 0, v_row_ = 0;
  std::vector<aligned_buffer<KE>> k_;
  std::vector<aligned_buffer<VE>> v_;
};

}  // namespace mnemo::memory
