// The weight products of the native ISA, compiled once for every translation unit built
// with MNEMO_EXTERN_KERNELS (the mnemo::kernels library; docs/compile-time.md).
#include "mnemo/model/matmul.hpp"

namespace mnemo::model {

template void mul_mat<simd::native>(const weight&, const float*, std::size_t, std::size_t, float*,
                                    std::size_t, int, matmul_workspace&);
template void mul_mat_many<simd::native>(std::span<const product_out>, const float*, std::size_t,
                                         std::size_t, int, matmul_workspace&);

}  // namespace mnemo::model
