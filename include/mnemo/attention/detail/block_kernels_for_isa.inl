// One specialisation of block_kernels<Isa>, stamped out for every compiled ISA by
// mnemo/simd/foreach_target.hpp (included from mnemo/attention/detail/block_kernels.hpp).
template <>
struct block_kernels<MNEMO_TARGET_ISA> {
  using isa = MNEMO_TARGET_ISA;
  using V = simd::ops<isa>;
  using rows = dtype::row_kernels<isa>;
// In this order: later bodies use earlier types.
// clang-format off
#include "mnemo/simd/detail/transpose_matrix.inl"
#include "mnemo/attention/detail/tile_math.inl"
#include "mnemo/attention/detail/block_steps.inl"
#include "mnemo/attention/detail/decode_steps.inl"
  // clang-format on
};
