# mnemo must work with -fno-exceptions -fno-rtti (errors are statuses, never throws).
# One plain executable (no GoogleTest, which needs exceptions) built with both flags
# from tests/noexcept/noexcept_check.cpp, named so that the *_test.cpp glob skips it,
# and run as a ctest.
add_executable(mnemo_noexcept_check ${CMAKE_CURRENT_LIST_DIR}/noexcept/noexcept_check.cpp)
target_link_libraries(mnemo_noexcept_check PRIVATE mnemo::mnemo)
target_compile_options(mnemo_noexcept_check PRIVATE -fno-exceptions -fno-rtti)
mnemo_strict(mnemo_noexcept_check)
add_test(NAME noexcept.check COMMAND mnemo_noexcept_check)
set_tests_properties(noexcept.check PROPERTIES LABELS noexcept TIMEOUT 60)
