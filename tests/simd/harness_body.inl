// Body of harness<Isa> (harness.hpp): no include guard, no includes; `isa` is
// defined by the including specialisation. Array lengths are multiples of `lanes`
// unless a function says otherwise.
using V = simd::ops<isa>;
static constexpr std::size_t lanes = V::lanes;

static void zero(float* out) { V::store(out, V::zero()); }
static void set1(float x, float* out) { V::store(out, V::set1(x)); }
static void copy(const float* in, float* out) { V::store(out, V::load(in)); }
static void load_partial(const float* p, std::size_t n, float* out) {
  V::store(out, V::load_partial(p, n));
}
static void store_partial(const float* in, float* p, std::size_t n) {
  V::store_partial(p, V::load(in), n);
}

/// y[i] += a * x[i] for any n: full vectors, then one partial vector for the tail.
static void axpy(float a, const float* x, float* y, std::size_t n) {
  const typename V::vf va = V::set1(a);
  std::size_t i = 0;
  for (; i + lanes <= n; i += lanes) V::store(y + i, V::fma(va, V::load(x + i), V::load(y + i)));
  if (i < n) {
    const std::size_t r = n - i;
    V::store_partial(y + i, V::fma(va, V::load_partial(x + i, r), V::load_partial(y + i, r)), r);
  }
}

static void binary(binary_op op, const float* a, const float* b, float* out, std::size_t n) {
  for (std::size_t i = 0; i < n; i += lanes) {
    const typename V::vf x = V::load(a + i), y = V::load(b + i);
    typename V::vf r = x;
    switch (op) {
      case binary_op::add: r = V::add(x, y); break;
      case binary_op::sub: r = V::sub(x, y); break;
      case binary_op::mul: r = V::mul(x, y); break;
      case binary_op::max: r = V::max(x, y); break;
      case binary_op::min: r = V::min(x, y); break;
    }
    V::store(out + i, r);
  }
}

static void fma(const float* a, const float* b, const float* c, float* out, std::size_t n) {
  for (std::size_t i = 0; i < n; i += lanes)
    V::store(out + i, V::fma(V::load(a + i), V::load(b + i), V::load(c + i)));
}

/// Horizontal reductions of one vector, x[lanes].
static float reduce_add(const float* x) { return V::reduce_add(V::load(x)); }
static float reduce_max(const float* x) { return V::reduce_max(V::load(x)); }

// transpose_matrix(src, rows, cols, lds, dst, ldd), the kernel body itself.
#include "mnemo/simd/detail/transpose_matrix.inl"

/// m[lanes * lanes] (row-major) transposed in place through V::transpose.
static void transpose(float* m) {
  typename V::vf r[lanes];
  for (std::size_t i = 0; i < lanes; ++i) r[i] = V::load(m + i * lanes);
  V::transpose(r);
  for (std::size_t i = 0; i < lanes; ++i) V::store(m + i * lanes, r[i]);
}

static void exp(const float* x, float* out, std::size_t n) {
  for (std::size_t i = 0; i < n; i += lanes) V::store(out + i, V::exp(V::load(x + i)));
}

static void load_f16(const std::uint16_t* h, float* out, std::size_t n) {
  for (std::size_t i = 0; i < n; i += lanes) V::store(out + i, V::load_f16(h + i));
}
static void store_f16(const float* x, std::uint16_t* h, std::size_t n) {
  for (std::size_t i = 0; i < n; i += lanes) V::store_f16(h + i, V::load(x + i));
}
static void load_bf16(const std::uint16_t* h, float* out, std::size_t n) {
  for (std::size_t i = 0; i < n; i += lanes) V::store(out + i, V::load_bf16(h + i));
}
static void store_bf16(const float* x, std::uint16_t* h, std::size_t n) {
  for (std::size_t i = 0; i < n; i += lanes) V::store_bf16(h + i, V::load(x + i));
}
static void load_bf16_pairs(const std::uint32_t* w, float* lo, float* hi, std::size_t n) {
  for (std::size_t i = 0; i < n; i += lanes) {
    typename V::vf l, h;
    V::load_bf16_pairs(w + i, l, h);
    V::store(lo + i, l);
    V::store(hi + i, h);
  }
}
