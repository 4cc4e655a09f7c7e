// One specialisation of row_kernels<Isa>, stamped out for every compiled ISA by
// mnemo/simd/foreach_target.hpp (included from mnemo/dtype/row_kernels.hpp).
template <>
struct row_kernels<MNEMO_TARGET_ISA> {
  using isa = MNEMO_TARGET_ISA;
  using V = simd::ops<isa>;
  using vf = V::vf;
  using C = detail::block_codes<isa>;
  static constexpr std::size_t lanes = V::lanes;
  // clang-format off
#include "mnemo/dtype/detail/float_rows.inl"
#include "mnemo/dtype/detail/q8_0_rows.inl"
#include "mnemo/dtype/detail/q4_0_rows.inl"
#include "mnemo/dtype/detail/dot_rows.inl"
  // clang-format on
};
