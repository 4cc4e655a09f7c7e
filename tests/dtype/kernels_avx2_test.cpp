// dtype row kernels on avx2, against the independent references (kernel_suite.hpp).
#include "dtype/kernel_suite.hpp"

namespace mnemo_test {
INSTANTIATE_TYPED_TEST_SUITE_P(Avx2, DtypeKernels, all_types_for<simd::avx2>, combo_names);
}  // namespace mnemo_test
