// dtype row kernels on scalar, against the independent references (kernel_suite.hpp).
#include "dtype/kernel_suite.hpp"

namespace mnemo_test {
INSTANTIATE_TYPED_TEST_SUITE_P(Scalar, DtypeKernels, all_types_for<simd::scalar>, combo_names);
}  // namespace mnemo_test
