# AArch64 cross check of the NEON path on an x86 host. When aarch64-linux-gnu-g++ is
# found, one ctest compiles tests/cross/neon_selfcheck.cpp (ops<neon> against
# ops<scalar>, the dtype kernels and attention for neon) with our strict warnings, statically
# linked; when qemu-aarch64 (Debian qemu-user) is found too, a second ctest runs it
# and expects its pass line. Missing tools make the tests skip, not fail.
# On an AArch64 host the regular test binaries already cover NEON.
if(CMAKE_SYSTEM_PROCESSOR MATCHES "^(aarch64|arm64|ARM64)$")
  return()
endif()

find_program(MNEMO_AARCH64_CXX NAMES aarch64-linux-gnu-g++ aarch64-linux-gnu-g++-12)
find_program(MNEMO_QEMU_AARCH64 NAMES qemu-aarch64 qemu-aarch64-static)

set(_mnemo_cross_src ${CMAKE_CURRENT_LIST_DIR}/cross/neon_selfcheck.cpp)
set(_mnemo_cross_bin ${CMAKE_CURRENT_BINARY_DIR}/neon_selfcheck_aarch64)
set(_mnemo_cross_includes -I ${PROJECT_SOURCE_DIR}/include)

if(MNEMO_AARCH64_CXX)
  add_test(NAME cross.aarch64.compile
           COMMAND ${MNEMO_AARCH64_CXX} -std=c++20 -O2 -Wall -Wextra -Wpedantic -Werror
                   ${_mnemo_cross_includes} -static ${_mnemo_cross_src} -o ${_mnemo_cross_bin})
  set_tests_properties(cross.aarch64.compile PROPERTIES
    LABELS cross TIMEOUT 600 FIXTURES_SETUP mnemo_cross_aarch64)
else()
  message(STATUS "mnemo: aarch64-linux-gnu-g++ not found; the NEON cross check will be skipped")
  add_test(NAME cross.aarch64.compile
           COMMAND ${CMAKE_COMMAND} -E echo
                   "skipped: aarch64-linux-gnu-g++ not found (Debian: g++-aarch64-linux-gnu)")
  set_tests_properties(cross.aarch64.compile PROPERTIES LABELS cross SKIP_REGULAR_EXPRESSION "skipped:")
endif()

if(MNEMO_AARCH64_CXX AND MNEMO_QEMU_AARCH64)
  add_test(NAME cross.aarch64.run COMMAND ${MNEMO_QEMU_AARCH64} ${_mnemo_cross_bin})
  # The pass line is required and any FAIL line fails the test, whatever the exit code.
  set_tests_properties(cross.aarch64.run PROPERTIES
    LABELS cross TIMEOUT 600 FIXTURES_REQUIRED mnemo_cross_aarch64
    PASS_REGULAR_EXPRESSION "neon selfcheck: PASS" FAIL_REGULAR_EXPRESSION "FAIL")
else()
  add_test(NAME cross.aarch64.run
           COMMAND ${CMAKE_COMMAND} -E echo
                   "skipped: needs aarch64-linux-gnu-g++ and qemu-aarch64 (Debian: qemu-user)")
  set_tests_properties(cross.aarch64.run PROPERTIES LABELS cross SKIP_REGULAR_EXPRESSION "skipped:")
endif()
