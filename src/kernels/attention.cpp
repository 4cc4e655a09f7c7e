// The attention kernels of the native ISA for the K/V types caches store, compiled once for
// every translation unit built with MNEMO_EXTERN_KERNELS (the mnemo::kernels library;
// docs/compile-time.md).
#include "mnemo/attention/attend.hpp"

namespace mnemo::attention {

MNEMO_ATTEND_INSTANTIATE(simd::native)

}  // namespace mnemo::attention
