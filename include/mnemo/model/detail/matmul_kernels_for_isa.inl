// One specialisation of matmul_kernels<Isa>, stamped out for every compiled ISA by
// mnemo/simd/foreach_target.hpp (included from mnemo/model/detail/matmul_kernels.hpp).
template <>
struct matmul_kernels<MNEMO_TARGET_ISA> {
  using isa = MNEMO_TARGET_ISA;
  using V = simd::ops<isa>;
  using vf = V::vf;
  using RK = dtype::row_kernels<isa>;
  using C = dtype::detail::block_codes<isa>;
  static constexpr std::size_t L = V::lanes;
  // clang-format off
#include "mnemo/simd/detail/transpose_matrix.inl"
#include "mnemo/model/detail/matmul_gemv.inl"
#include "mnemo/model/detail/matmul_small_m.inl"
#include "mnemo/model/detail/matmul_gemm.inl"
#include "mnemo/model/detail/matmul_lanes.inl"
  // clang-format on
};
