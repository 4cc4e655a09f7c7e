// Random KV streams for the attention tests: K/V rows encoded in any element type,
// cells padded and misaligned, split into segments, with positions and owners.
#pragma once

#include <cstddef>
#include <cstring>
#include <random>
#include <vector>

#include "mnemo/attention/kv_view.hpp"
#include "mnemo/dtype/dtype.hpp"
#include "mnemo/simd/simd.hpp"

namespace mnemo_test {

using namespace mnemo;

/// Rows [n_cells, n_head_kv, d] of E: `pad` spare bytes after each cell and the
/// first cell `misalign` elements past an aligned address.
template <class E>
struct encoded_rows {
  std::vector<std::byte> storage;
  std::byte* base = nullptr;
  std::size_t stride = 0;

  void build(const std::vector<float>& values, std::size_t n_cells, std::size_t n_head_kv,
             std::size_t d, std::size_t pad, std::size_t misalign) {
    const std::size_t head_bytes = dtype::blocks_in_row<E>(d) * sizeof(E);
    stride = head_bytes * n_head_kv + pad * alignof(E);
    storage.assign(stride * n_cells + 64 + misalign * alignof(E) + 64, std::byte{0x7f});
    auto addr = reinterpret_cast<std::uintptr_t>(storage.data());
    base = storage.data() + ((64 - addr % 64) % 64) + misalign * alignof(E);
    for (std::size_t c = 0; c < n_cells; ++c)
      for (std::size_t h = 0; h < n_head_kv; ++h)
        dtype::row_kernels<simd::scalar>::encode(
            values.data() + (c * n_head_kv + h) * d,
            reinterpret_cast<E*>(base + c * stride + h * head_bytes), d);
  }
};

struct stream_spec {
  std::size_t n_cells = 0;
  std::size_t n_segments = 1;
  std::size_t pad = 0;
  std::size_t misalign = 0;
  bool with_owners = false;
};

/// One stream: positions, owners, K and V, and its segments.
template <class KE, class VE>
struct kv_stream {
  std::vector<pos_t> pos;
  std::vector<seq_set> owners;
  encoded_rows<KE> k;
  encoded_rows<VE> v;
  std::vector<attention::kv_segment> segments;

  attention::kv_view view() const { return {segments}; }

  /// Fills cells with random K/V in [-1, 1]; cell positions come from `pos_of`.
  template <class PosFn, class OwnerFn>
  void build(const stream_spec& s, const attention::shape& sh, std::mt19937& rng, PosFn pos_of,
             OwnerFn owners_of) {
    std::uniform_real_distribution<float> u(-1.0f, 1.0f);
    std::vector<float> kv(s.n_cells * sh.n_head_kv * sh.d_k), vv(s.n_cells * sh.n_head_kv * sh.d_v);
    for (auto& x : kv) x = u(rng);
    for (auto& x : vv) x = u(rng);
    k.build(kv, s.n_cells, sh.n_head_kv, sh.d_k, s.pad, s.misalign);
    v.build(vv, s.n_cells, sh.n_head_kv, sh.d_v, s.pad + 3, s.misalign);
    pos.resize(s.n_cells);
    owners.resize(s.n_cells);
    for (std::size_t c = 0; c < s.n_cells; ++c) {
      pos[c] = pos_of(c);
      owners[c] = owners_of(c);
    }
    // Split into n_segments runs of (nearly) equal size.
    segments.clear();
    const std::size_t n_seg = s.n_cells == 0 ? 1 : std::min(s.n_segments, s.n_cells);
    std::size_t start = 0;
    for (std::size_t i = 0; i < n_seg; ++i) {
      const std::size_t end = s.n_cells * (i + 1) / n_seg;
      attention::kv_segment seg;
      seg.k = k.base + start * k.stride;
      seg.v = v.base + start * v.stride;
      seg.k_stride = k.stride;
      seg.v_stride = v.stride;
      seg.pos = pos.data() + start;
      seg.owners = s.with_owners ? owners.data() + start : nullptr;
      seg.n_cells = end - start;
      segments.push_back(seg);
      start = end;
    }
  }
};

}  // namespace mnemo_test
