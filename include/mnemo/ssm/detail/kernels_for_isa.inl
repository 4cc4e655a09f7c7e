// One specialisation of kernels<Isa>, stamped out for every compiled ISA by
// mnemo/simd/foreach_target.hpp (included from mnemo/ssm/detail/kernels.hpp).
template <>
struct kernels<MNEMO_TARGET_ISA> {
  using isa = MNEMO_TARGET_ISA;
  using V = simd::ops<isa>;
  using vf = V::vf;
  static constexpr std::size_t lanes = V::lanes;
  // clang-format off
#include "mnemo/ssm/detail/math.inl"
#include "mnemo/ssm/detail/conv1d.inl"
#include "mnemo/ssm/detail/scan.inl"
  // clang-format on
};
