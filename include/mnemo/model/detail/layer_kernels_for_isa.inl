// One specialisation of layer_kernels<Isa>, stamped out for every compiled ISA by
// mnemo/simd/foreach_target.hpp (included from mnemo/model/layers.hpp).
template <>
struct layer_kernels<MNEMO_TARGET_ISA> {
  using isa = MNEMO_TARGET_ISA;
  using V = simd::ops<isa>;
  using vf = V::vf;
  static constexpr std::size_t lanes = V::lanes;
#include "mnemo/model/detail/layer_kernels.inl"
};
