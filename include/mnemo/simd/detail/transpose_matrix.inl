// A kernel body (docs/simd.md, "the kernel pattern"): the f32 matrix transpose through
// V::transpose, included into each ISA's specialisation of the kernel structs that
// need it (attention's block_kernels, model's matmul_kernels). Needs
// V = simd::ops<isa> in scope.

/// dst[c * ldd + r] = src[r * lds + c] for r < rows, c < cols: lanes x lanes blocks
/// in registers (a scalar loop was 5-8% of a prefill product's time), the ragged
/// edges element by element.
static void transpose_matrix(const float* src, std::size_t rows, std::size_t cols, std::size_t lds,
                             float* dst, std::size_t ldd) noexcept {
  constexpr std::size_t n = V::lanes;
  const std::size_t rows_n = rows / n * n, cols_n = cols / n * n;
  for (std::size_t r0 = 0; r0 < rows_n; r0 += n)
    for (std::size_t c0 = 0; c0 < cols_n; c0 += n) {
      typename V::vf x[n];
#pragma GCC unroll 16
      for (std::size_t i = 0; i < n; ++i) x[i] = V::load(src + (r0 + i) * lds + c0);
      V::transpose(x);
#pragma GCC unroll 16
      for (std::size_t i = 0; i < n; ++i) V::store(dst + (c0 + i) * ldd + r0, x[i]);
    }
  for (std::size_t r = 0; r < rows; ++r)
    for (std::size_t c = r < rows_n ? cols_n : 0; c < cols; ++c)
      dst[c * ldd + r] = src[r * lds + c];
}
