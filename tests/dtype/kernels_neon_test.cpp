// dtype row kernels on neon, against the independent references (kernel_suite.hpp).
#include "dtype/kernel_suite.hpp"

namespace mnemo_test {
INSTANTIATE_TYPED_TEST_SUITE_P(Neon, DtypeKernels, all_types_for<simd::neon>, combo_names);
}  // namespace mnemo_test
