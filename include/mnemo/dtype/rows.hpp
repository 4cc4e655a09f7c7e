// Row operations on stored K/V and weight rows, for any ISA and storage type:
//
//   encode_row<Isa>(src, dst, n)     [n] f32 -> row of E
//   decode_row<Isa>(src, dst, n)     row of E -> [n] f32
//   dot<Isa>(x, row, n)              x . decoded row
//   axpy<Isa>(a, row, y, n)          y += a * decoded row
//   dot_rows<Isa>(x, rows, stride, n_rows, n, out)   out[r] = x . row r
//   axpy_rows<Isa>(a, rows, stride, n_rows, n, y)    y += sum_r a[r] * row r
//
// n counts values (not blocks); for q8_0 / q4_0 it must be a multiple of 32. Pointers
// need no alignment beyond their type's (2 bytes for f16, bf16 and blocks). These are
// kernels: preconditions are debug asserts, not statuses (row_bytes() checks sizes at
// the API boundary). Results:
//   - encode gives bit-identical rows on every ISA for finite inputs;
//   - decode is exact and axpy one fused rounding per element (fma(a, value, y)), so
//     both are bit-identical across ISAs too; axpy_rows is axpy row after row;
//   - dot sums in an ISA-dependent order (see tests/dtype/tolerances.hpp for bounds).
//
// Each call is one non-inlined call into the ISA's target region. Code in a target
// region of the same ISA can call row_kernels<Isa>::... directly instead.
#pragma once

#include <cstddef>

#include "mnemo/base/assert.hpp"
#include "mnemo/dtype/concepts.hpp"
#include "mnemo/dtype/element_type.hpp"
#include "mnemo/dtype/row_kernels.hpp"
#include "mnemo/simd/isa.hpp"

namespace mnemo::dtype {

namespace detail {
template <class Isa>
constexpr bool compiled_isa_check() {
  static_assert(simd::is_compiled<Isa>,
                "dtype row operations: this ISA is not compiled for the target architecture "
                "(x86 ISAs on x86-64, neon on AArch64, scalar everywhere)");
  return true;
}
}  // namespace detail

/// dst = E(src): [n] f32 -> n / block_size_of<E> elements. @pre n % block_size_of<E> == 0
template <simd::isa_tag Isa, kv_element E>
void encode_row(const float* src, E* dst, std::size_t n) noexcept {
  static_assert(detail::compiled_isa_check<Isa>());
  MNEMO_DASSERT(n % block_size_of<E> == 0);
  MNEMO_DASSERT(n == 0 || (src != nullptr && dst != nullptr));
  row_kernels<Isa>::encode(src, dst, n);
}

/// dst = float(src): n / block_size_of<E> elements -> [n] f32. @pre n % block_size_of<E> == 0
template <simd::isa_tag Isa, kv_element E>
void decode_row(const E* src, float* dst, std::size_t n) noexcept {
  static_assert(detail::compiled_isa_check<Isa>());
  MNEMO_DASSERT(n % block_size_of<E> == 0);
  MNEMO_DASSERT(n == 0 || (src != nullptr && dst != nullptr));
  row_kernels<Isa>::decode(src, dst, n);
}

/// sum_i x[i] * row[i] over n values. [n] f32 . [n] E -> f32
template <simd::isa_tag Isa, kv_element E>
float dot(const float* x, const E* row, std::size_t n) noexcept {
  static_assert(detail::compiled_isa_check<Isa>());
  MNEMO_DASSERT(n % block_size_of<E> == 0);
  MNEMO_DASSERT(n == 0 || (x != nullptr && row != nullptr));
  return row_kernels<Isa>::dot(x, row, n);
}

/// y[i] += a * row[i] over n values. [n] E -> [n] f32 (accumulated)
template <simd::isa_tag Isa, kv_element E>
void axpy(float a, const E* row, float* y, std::size_t n) noexcept {
  static_assert(detail::compiled_isa_check<Isa>());
  MNEMO_DASSERT(n % block_size_of<E> == 0);
  MNEMO_DASSERT(n == 0 || (row != nullptr && y != nullptr));
  row_kernels<Isa>::axpy(a, row, y, n);
}

/// out[r] = x . row r, where row r starts r * row_stride_bytes bytes after `rows`
/// (a K cache segment: [n_rows] rows of [n] values). @pre row_stride_bytes keeps every
/// row aligned for E, and is at least row_bytes_of<E>(n) unless rows alias on purpose.
template <simd::isa_tag Isa, kv_element E>
void dot_rows(const float* x, const E* rows, std::size_t row_stride_bytes, std::size_t n_rows,
              std::size_t n, float* out) noexcept {
  static_assert(detail::compiled_isa_check<Isa>());
  MNEMO_DASSERT(n % block_size_of<E> == 0);
  MNEMO_DASSERT(row_stride_bytes % alignof(E) == 0);
  MNEMO_DASSERT(n_rows == 0 || (x != nullptr && rows != nullptr && out != nullptr));
  row_kernels<Isa>::dot_rows(x, rows, row_stride_bytes, n_rows, n, out);
}

/// y[i] += sum_r a[r] * row_r[i], row after row (bit-identical to n_rows axpy calls),
/// with row r at r * row_stride_bytes bytes after `rows` (a V cache segment).
/// [n_rows] f32 x [n_rows, n] E -> [n] f32 (accumulated)
template <simd::isa_tag Isa, kv_element E>
void axpy_rows(const float* a, const E* rows, std::size_t row_stride_bytes, std::size_t n_rows,
               std::size_t n, float* y) noexcept {
  static_assert(detail::compiled_isa_check<Isa>());
  MNEMO_DASSERT(n % block_size_of<E> == 0);
  MNEMO_DASSERT(row_stride_bytes % alignof(E) == 0);
  MNEMO_DASSERT(n_rows == 0 || (a != nullptr && rows != nullptr && y != nullptr));
  row_kernels<Isa>::axpy_rows(a, rows, row_stride_bytes, n_rows, n, y);
}

}  // namespace mnemo::dtype
