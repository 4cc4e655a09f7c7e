# Compile-fail test of the memory concept: a custom strategy without split_strategy(),
# given to context<>, must fail to compile with check_memory's sentence naming the
# member, not only with an instantiation stack. The test passes when the compiler
# output contains that sentence (its exit code is ignored).
add_test(NAME memory.compile_fail.missing_split_strategy
         COMMAND ${CMAKE_CXX_COMPILER} -std=c++20 -fsyntax-only -I ${PROJECT_SOURCE_DIR}/include
                 ${CMAKE_CURRENT_LIST_DIR}/memory/compile_fail/missing_split_strategy.cpp)
set_tests_properties(memory.compile_fail.missing_split_strategy PROPERTIES
  LABELS memory PASS_REGULAR_EXPRESSION "a memory strategy needs `split_strategy")
