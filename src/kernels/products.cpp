// The weight products of the native ISA, compiled once for every translation unit built
// with MNEMO_EXTERN_KERNELS (the mnemo::kernels library; docs/compile-time.md).
#include "mnemo/model/matmul.hpp"

namespace mnemo::model {

MNEMO_PRODUCTS_INSTANTIATE(simd::native)

}  // namespace mnemo::model
