// Non-owning views with shapes, for the bracketed shapes of kernel comments
// ([n_tokens, n_head, d]). The last extent is contiguous unless strides say otherwise.
#pragma once

#include <array>
#include <cstddef>
#include <span>
#include <type_traits>

#include "mnemo/base/assert.hpp"

namespace mnemo {

/// A rank-N view of T with element strides. Rank-1 slices of the innermost
/// extent are contiguous when stride[N-1] == 1 (the default layout).
template <class T, std::size_t Rank>
class tensor_view {
  static_assert(Rank >= 1, "a tensor_view has at least one dimension");

 public:
  using extents_type = std::array<std::size_t, Rank>;

  tensor_view() noexcept {
    extents_.fill(0);
    strides_.fill(0);
  }

  /// Row-major (C order) view over `data` with the given extents.
  tensor_view(T* data, const extents_type& extents) noexcept : data_(data), extents_(extents) {
    std::size_t s = 1;
    for (std::size_t i = Rank; i-- > 0;) {
      strides_[i] = s;
      s *= extents_[i];
    }
  }
  tensor_view(T* data, const extents_type& extents, const extents_type& strides) noexcept
      : data_(data), extents_(extents), strides_(strides) {}

  /// A view of const T from a view of T.
  template <class U, class = std::enable_if_t<std::is_same_v<const U, T> && !std::is_same_v<U, T>>>
  tensor_view(const tensor_view<U, Rank>& o) noexcept  // NOLINT: implicit by design
      : data_(o.data()), extents_(o.extents()), strides_(o.strides()) {}

  T* data() const noexcept { return data_; }
  const extents_type& extents() const noexcept { return extents_; }
  const extents_type& strides() const noexcept { return strides_; }
  std::size_t extent(std::size_t i) const noexcept { return extents_[i]; }
  std::size_t stride(std::size_t i) const noexcept { return strides_[i]; }
  std::size_t size() const noexcept {
    std::size_t n = 1;
    for (auto e : extents_) n *= e;
    return n;
  }
  bool empty() const noexcept { return size() == 0; }
  bool is_contiguous() const noexcept {
    std::size_t s = 1;
    for (std::size_t i = Rank; i-- > 0;) {
      if (extents_[i] != 1 && strides_[i] != s) return false;
      s *= extents_[i];
    }
    return true;
  }

  template <class... I>
  T& operator()(I... idx) const noexcept {
    static_assert(sizeof...(I) == Rank, "index count must equal the rank");
    const std::array<std::size_t, Rank> ix{static_cast<std::size_t>(idx)...};
    std::size_t off = 0;
    for (std::size_t i = 0; i < Rank; ++i) {
      MNEMO_DASSERT(ix[i] < extents_[i]);
      off += ix[i] * strides_[i];
    }
    return data_[off];
  }

  /// The sub-view at index `i` of the outermost dimension.
  decltype(auto) operator[](std::size_t i) const noexcept {
    MNEMO_DASSERT(i < extents_[0]);
    if constexpr (Rank == 1) {
      return (data_[i * strides_[0]]);  // T&: v[i] = x writes through
    } else {
      std::array<std::size_t, Rank - 1> e{}, s{};
      for (std::size_t k = 1; k < Rank; ++k) {
        e[k - 1] = extents_[k];
        s[k - 1] = strides_[k];
      }
      return tensor_view<T, Rank - 1>(data_ + i * strides_[0], e, s);
    }
  }

  /// The innermost extent at the given outer indices, as a contiguous span.
  /// @pre stride(Rank-1) == 1
  template <class... I>
  std::span<T> row(I... outer) const noexcept {
    static_assert(sizeof...(I) == Rank - 1, "row() takes Rank-1 indices");
    MNEMO_DASSERT(strides_[Rank - 1] == 1);
    const std::array<std::size_t, Rank - 1> ix{static_cast<std::size_t>(outer)...};
    std::size_t off = 0;
    for (std::size_t i = 0; i + 1 < Rank; ++i) {
      MNEMO_DASSERT(ix[i] < extents_[i]);
      off += ix[i] * strides_[i];
    }
    return {data_ + off, extents_[Rank - 1]};
  }

 private:
  T* data_ = nullptr;
  extents_type extents_;
  extents_type strides_;
};

template <class T>
using vector_view = tensor_view<T, 1>;
template <class T>
using matrix_view = tensor_view<T, 2>;

}  // namespace mnemo
