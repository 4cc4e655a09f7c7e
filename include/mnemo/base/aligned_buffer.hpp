// An owning, aligned, move-only buffer of trivially copyable elements.
#pragma once

#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <new>
#include <span>
#include <type_traits>
#include <utility>

#include "mnemo/base/assert.hpp"
#include "mnemo/base/config.hpp"
#include "mnemo/base/result.hpp"

#if defined(__linux__)
#include <sys/mman.h>
#endif

namespace mnemo {

/// Storage for K/V rows, activations and scratch: 64-byte aligned, zero-filled on
/// creation (masked, padded regions must never hold NaNs) unless made for overwrite,
/// never throws.
template <class T>
class aligned_buffer {
  static_assert(std::is_trivially_copyable_v<T>, "aligned_buffer holds trivially copyable types");

 public:
  aligned_buffer() noexcept = default;

  /// Allocates `n` zeroed elements, or returns a no_space status.
  static result<aligned_buffer> make(std::size_t n) { return allocate(n, true); }

  /// The same without the zero fill, for a buffer whose elements are written before
  /// any is read: its pages are touched only as they are written, so a generous size
  /// costs address space, not memory.
  static result<aligned_buffer> make_for_overwrite(std::size_t n) { return allocate(n, false); }

  aligned_buffer(aligned_buffer&& o) noexcept
      : data_(std::exchange(o.data_, nullptr)), size_(std::exchange(o.size_, 0)) {}
  aligned_buffer& operator=(aligned_buffer&& o) noexcept {
    if (this != &o) {
      std::free(data_);
      data_ = std::exchange(o.data_, nullptr);
      size_ = std::exchange(o.size_, 0);
    }
    return *this;
  }
  aligned_buffer(const aligned_buffer&) = delete;
  aligned_buffer& operator=(const aligned_buffer&) = delete;
  ~aligned_buffer() { std::free(data_); }

  /// A deep copy, or a no_space status.
  result<aligned_buffer> clone() const {
    auto r = make(size_);
    if (r.is_ok() && size_ != 0) std::memcpy(r->data_, data_, size_ * sizeof(T));
    return r;
  }

  T* data() noexcept { return data_; }
  const T* data() const noexcept { return data_; }
  std::size_t size() const noexcept { return size_; }
  std::size_t size_bytes() const noexcept { return size_ * sizeof(T); }
  bool empty() const noexcept { return size_ == 0; }
  T& operator[](std::size_t i) noexcept {
    MNEMO_DASSERT(i < size_);
    return data_[i];
  }
  const T& operator[](std::size_t i) const noexcept {
    MNEMO_DASSERT(i < size_);
    return data_[i];
  }
  T* begin() noexcept { return data_; }
  T* end() noexcept { return data_ + size_; }
  const T* begin() const noexcept { return data_; }
  const T* end() const noexcept { return data_ + size_; }
  std::span<T> span() noexcept { return {data_, size_}; }
  std::span<const T> span() const noexcept { return {data_, size_}; }

  void fill_zero() noexcept {
    if (size_ != 0) std::memset(data_, 0, size_ * sizeof(T));
  }

 private:
  static result<aligned_buffer> allocate(std::size_t n, bool zero) {
    aligned_buffer b;
    if (n == 0) return b;
    if (n > (std::numeric_limits<std::size_t>::max() - k_huge_page) / sizeof(T))
      return make_status(status_code::no_space, "buffer of %zu elements overflows size_t", n);
    // Large buffers (K/V caches, weights) are streamed at full memory bandwidth: on
    // 4 KiB pages the TLB misses cost about half of it (measured: attention decode
    // over 128 MiB read 13 GB/s per thread on 4 KiB pages), so ask for huge pages.
    const bool huge = n * sizeof(T) >= k_huge_page_threshold;
    const std::size_t align = huge ? k_huge_page : k_buffer_alignment;
    const std::size_t bytes = (n * sizeof(T) + align - 1) / align * align;
    void* p = std::aligned_alloc(align, bytes);
    if (p == nullptr) return make_status(status_code::no_space, "cannot allocate %zu bytes", bytes);
#if defined(__linux__) && defined(MADV_HUGEPAGE)
    if (huge) madvise(p, bytes, MADV_HUGEPAGE);  // advice only: failure is harmless
#endif
    if (zero) std::memset(p, 0, bytes);
    b.data_ = static_cast<T*>(p);
    b.size_ = n;
    return b;
  }

  static constexpr std::size_t k_huge_page = std::size_t{2} << 20;
  static constexpr std::size_t k_huge_page_threshold = std::size_t{4} << 20;

  T* data_ = nullptr;
  std::size_t size_ = 0;
};

}  // namespace mnemo
