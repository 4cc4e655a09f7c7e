// The attention kernels of the native ISA for the K/V types caches store, compiled once for
// every translation unit built with MNEMO_EXTERN_KERNELS (the mnemo::kernels library;
// docs/compile-time.md).
#include "mnemo/attention/attend.hpp"

namespace mnemo::attention {

#define MNEMO_ATTEND_INSTANTIATE_(KE, VE, Sink)                                                    \
  template status attend<simd::native, KE, VE, Sink>(const shape&, const params&,                  \
                                                     const query_batch&, std::span<const kv_view>, \
                                                     float*, workspace&, const options&, Sink);
MNEMO_ATTEND_KERNEL_INSTANCES(MNEMO_ATTEND_INSTANTIATE_)
#undef MNEMO_ATTEND_INSTANTIATE_

}  // namespace mnemo::attention
