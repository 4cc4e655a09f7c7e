// Products of a weight matrix with f32 activations, for every storage type and ISA:
//
//   mul_mat<Isa>(w, x, x_stride, n_tok, y, y_stride, n_threads, ws)
//       y[t] = W x[t] for t < n_tok:  [n_tok, n_in] f32 x W [n_out, n_in] -> [n_tok, n_out] f32
//   get_row<Isa>(w, r, out)           out = float(row r of W)   (embedding lookup) [n_in]
//
// Rows of x and y are x_stride / y_stride floats apart. n_tok == 1 is decode (a
// matrix-vector product, bound by the weight bytes); larger n_tok is prefill.
// Preconditions are debug asserts: the model checks shapes when it loads.
#pragma once

#include <algorithm>
#include <cstddef>

#include "mnemo/base/assert.hpp"
#include "mnemo/base/parallel.hpp"
#include "mnemo/dtype/rows.hpp"
#include "mnemo/dtype/visit.hpp"
#include "mnemo/model/weight.hpp"
#include "mnemo/simd/isa.hpp"

namespace mnemo::model {

/// Scratch the products reuse between calls (no allocation per call once warm).
struct matmul_workspace {};

template <simd::isa_tag Isa = simd::native>
void mul_mat(const weight& w, const float* x, std::size_t x_stride, std::size_t n_tok, float* y,
             std::size_t y_stride, int n_threads, matmul_workspace& ws) {
  (void)ws;
  MNEMO_DASSERT(x_stride >= w.n_in && y_stride >= w.n_out);
  if (n_tok == 0 || w.n_out == 0) return;
  constexpr std::size_t k_rows_per_item = 64;
  const std::size_t n_items = (w.n_out + k_rows_per_item - 1) / k_rows_per_item;
  dtype::visit(w.type, [&]<class E>(dtype::type_tag<E>) {
    parallel_for(n_items, n_threads, [&](std::size_t item, int) {
      const std::size_t r0 = item * k_rows_per_item;
      const std::size_t nr = std::min(k_rows_per_item, w.n_out - r0);
      const E* rows = reinterpret_cast<const E*>(w.row(r0));
      for (std::size_t t = 0; t < n_tok; ++t)
        dtype::dot_rows<Isa>(x + t * x_stride, rows, w.row_bytes, nr, w.n_in, y + t * y_stride + r0);
    });
  });
}

template <simd::isa_tag Isa = simd::native>
void get_row(const weight& w, std::size_t r, float* out) noexcept {
  MNEMO_DASSERT(r < w.n_out);
  dtype::visit(w.type, [&]<class E>(dtype::type_tag<E>) {
    dtype::decode_row<Isa>(reinterpret_cast<const E*>(w.row(r)), out, w.n_in);
  });
}

}  // namespace mnemo::model
