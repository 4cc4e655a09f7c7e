# The programs and tests every consumer project builds against mnemo::mnemo.
add_executable(consumer ${CMAKE_CURRENT_LIST_DIR}/main.cpp)
target_link_libraries(consumer PRIVATE mnemo::mnemo)
target_compile_options(consumer PRIVATE -Wall -Wextra -Wpedantic -Werror)

enable_testing()
add_test(NAME consumer COMMAND consumer)
set_tests_properties(consumer PROPERTIES PASS_REGULAR_EXPRESSION "consumer: sum 1000")

# The usage example of README.md (tests/packaging.cmake checks that they match), built
# without ISA flags: its AVX2/AVX-512 code comes from mnemo's target regions and runs
# through run-time dispatch. -Werror also catches GCC 12's false -Wmaybe-uninitialized
# from AVX-512 intrinsics inlined into target regions (GCC PR 105593) if a kernel
# header forgets to silence it.
add_executable(readme_example ${CMAKE_CURRENT_LIST_DIR}/readme_example.cpp)
target_link_libraries(readme_example PRIVATE mnemo::mnemo)
target_compile_options(readme_example PRIVATE -Wall -Wextra -Wpedantic -Werror)
add_test(NAME readme_example COMMAND readme_example)
set(_expected "q\\.k = 3\\.0[89][0-9] on [a-z0-9]+\ninvalid argument: d=48")
set_tests_properties(readme_example PROPERTIES PASS_REGULAR_EXPRESSION "${_expected}")
