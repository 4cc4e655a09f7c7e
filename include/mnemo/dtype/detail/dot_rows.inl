// Body of dtype::row_kernels<isa>: the row-batched forms, for every element type (the
// K side and V side of decode attention). Included only by row_kernels.hpp after the
// per-type bodies (it calls their dot and axpy).
#if !defined(MNEMO_DTYPE_ROW_KERNEL_BODY_)
#error "mnemo/dtype/detail/*.inl are kernel bodies: include mnemo/dtype/row_kernels.hpp"
#endif

/// How far ahead the batched forms prefetch (into L1), in bytes of rows: whole rows, at
/// least one. Measured on Zen 4 streaming 256 MiB of d = 128 rows on one thread: no
/// prefetch 27-30 GB/s (f16, bf16, q8_0), 4-8 KiB ahead 31-34 GB/s, of a 40 GB/s read
/// probe; 512 B - 2 KiB ahead gained nothing, prefetcht1 (L2) less than prefetcht0.
/// Always L1, whatever simd::current_prefetch_target() says: on the Zen 4 VM that wants
/// L2 for the products and attention, L2 cost these loops a third (bench_dtype, f16
/// dot_rows / axpy_rows over 256 MiB: 30 GB/s with L1, 21 with L2).
static constexpr std::size_t k_prefetch_bytes_ = 4096;

template <class E>
static constexpr std::size_t rows_ahead_(std::size_t row_bytes) noexcept {
  return row_bytes == 0 || row_bytes >= k_prefetch_bytes_ ? 1 : k_prefetch_bytes_ / row_bytes;
}

/// Prefetches the row_bytes at p + distance. Prefetches past the last row are harmless:
/// they never fault, and the address is formed as an integer (no out-of-range pointer).
static MNEMO_INLINE void prefetch_row_(const unsigned char* p, std::size_t distance,
                                       std::size_t row_bytes) noexcept {
  const std::uintptr_t at = reinterpret_cast<std::uintptr_t>(p) + distance;
  for (std::size_t off = 0; off < row_bytes; off += 64)
    __builtin_prefetch(reinterpret_cast<const void*>(at + off), 0, 3);
}

/// out[r] = x . row r for r < n_rows, row r starting r * row_stride_bytes bytes after
/// `rows`. [n] f32 x [n_rows, n] E -> [n_rows] f32
template <class E>
static void dot_rows(const float* MNEMO_RESTRICT x, const E* rows, std::size_t row_stride_bytes,
                     std::size_t n_rows, std::size_t n, float* MNEMO_RESTRICT out) noexcept {
  const auto* base = reinterpret_cast<const unsigned char*>(rows);
  const std::size_t row_bytes = n / element_traits<E>::block_size * sizeof(E);
  const std::size_t distance = rows_ahead_<E>(row_bytes) * row_stride_bytes;
  for (std::size_t r = 0; r < n_rows; ++r) {
    const unsigned char* p = base + r * row_stride_bytes;
    prefetch_row_(p, distance, row_bytes);
    const E* row = reinterpret_cast<const E*>(p);
    if constexpr (std::is_same_v<E, block_q8_0>) {
      out[r] = dot_q8_(x, row, n);
    } else if constexpr (std::is_same_v<E, block_q4_0>) {
      out[r] = dot_q4_(x, row, n);
    } else {
      out[r] = dot_one_(x, row, n);
    }
  }
}

/// y += sum_r a[r] * row r, applied row after row (so bit-identical to n_rows calls of
/// axpy, on every ISA). [n_rows] f32 x [n_rows, n] E -> [n] f32 (accumulated)
template <class E>
static void axpy_rows(const float* MNEMO_RESTRICT a, const E* rows, std::size_t row_stride_bytes,
                      std::size_t n_rows, std::size_t n, float* MNEMO_RESTRICT y) noexcept {
  const auto* base = reinterpret_cast<const unsigned char*>(rows);
  const std::size_t row_bytes = n / element_traits<E>::block_size * sizeof(E);
  const std::size_t distance = rows_ahead_<E>(row_bytes) * row_stride_bytes;
  for (std::size_t r = 0; r < n_rows; ++r) {
    const unsigned char* p = base + r * row_stride_bytes;
    prefetch_row_(p, distance, row_bytes);
    const E* row = reinterpret_cast<const E*>(p);
    if constexpr (std::is_same_v<E, block_q8_0>) {
      axpy_q8_(a[r], row, y, n);
    } else if constexpr (std::is_same_v<E, block_q4_0>) {
      axpy_q4_(a[r], row, y, n);
    } else {
      axpy_one_(a[r], row, y, n);
    }
  }
}
