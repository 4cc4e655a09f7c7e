# Compile-fail test of the eviction policy concept: a type that is not a policy,
# given to memory::bounded, must fail to compile with the concept's sentence
# ("is not an eviction policy"), not only with an instantiation stack. The test
# passes when the compiler output contains that sentence (its exit code is ignored).
set(_mnemo_evict_inc -I ${PROJECT_SOURCE_DIR}/include)
add_test(NAME evict.compile_fail.bad_policy
         COMMAND ${CMAKE_CXX_COMPILER} -std=c++20 -fsyntax-only ${_mnemo_evict_inc}
                 ${CMAKE_CURRENT_LIST_DIR}/evict/compile_fail/bad_policy.cpp)
set_tests_properties(evict.compile_fail.bad_policy PROPERTIES
  LABELS evict PASS_REGULAR_EXPRESSION "is not an eviction policy")
