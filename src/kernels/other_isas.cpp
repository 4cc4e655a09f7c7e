// The weight products and attention kernels of every compiled ISA besides the native one
// (scalar and AVX2 in an AVX-512 build, ...), compiled once for the translation units
// built with MNEMO_EXTERN_OTHER_ISA_KERNELS: mnemo's own tests and benches compare every
// ISA the CPU has, and each of them would otherwise compile these again
// (docs/compile-time.md).
#include "mnemo/attention/attend.hpp"
#include "mnemo/model/matmul.hpp"

namespace mnemo::model {
MNEMO_FOREACH_OTHER_ISA(MNEMO_PRODUCTS_INSTANTIATE)
}  // namespace mnemo::model

namespace mnemo::attention {
MNEMO_FOREACH_OTHER_ISA(MNEMO_ATTEND_INSTANTIATE)
}  // namespace mnemo::attention
