// dtype row kernels on avx512, against the independent references (kernel_suite.hpp).
#include "dtype/kernel_suite.hpp"

namespace mnemo_test {
INSTANTIATE_TYPED_TEST_SUITE_P(Avx512, DtypeKernels, all_types_for<simd::avx512>, combo_names);
}  // namespace mnemo_test
