# Packaging tests: mnemo is consumed by a host project (a) through find_package after
# `cmake --install` into a temporary prefix, (b) through add_subdirectory(). The
# consumers are configured with this build's generator and compiler.
#
#   packaging.clean  ->  packaging.install  ->  packaging.find_package
#                                               packaging.add_subdirectory (independent)
set(_mnemo_pkg_dir "${CMAKE_CURRENT_BINARY_DIR}/packaging")
set(_mnemo_pkg_prefix "${_mnemo_pkg_dir}/prefix")
set(_mnemo_consumers "${CMAKE_CURRENT_LIST_DIR}/consumers")
set(_mnemo_consumer_args
    "-DGENERATOR=${CMAKE_GENERATOR}"
    "-DMAKE_PROGRAM=${CMAKE_MAKE_PROGRAM}"
    "-DCXX_COMPILER=${CMAKE_CXX_COMPILER}"
    "-DCTEST=${CMAKE_CTEST_COMMAND}"
    "-DCONFIG=$<CONFIG>")

if(MNEMO_INSTALL)
  add_test(NAME packaging.clean
           COMMAND "${CMAKE_COMMAND}" -E rm -rf "${_mnemo_pkg_prefix}")
  add_test(NAME packaging.install
           COMMAND "${CMAKE_COMMAND}" --install "${mnemo_BINARY_DIR}"
                   --prefix "${_mnemo_pkg_prefix}")
  add_test(NAME packaging.find_package
           COMMAND "${CMAKE_COMMAND}" ${_mnemo_consumer_args}
                   "-DSOURCE=${_mnemo_consumers}/find_package"
                   "-DBINARY=${_mnemo_pkg_dir}/find_package"
                   "-DPREFIX_PATH=${_mnemo_pkg_prefix}"
                   "-DEXPECT_ENGINE=${MNEMO_BUILD_ENGINE}"
                   -P "${_mnemo_consumers}/run_consumer.cmake")
  set_tests_properties(packaging.clean PROPERTIES FIXTURES_SETUP mnemo_pkg_clean)
  set_tests_properties(packaging.install PROPERTIES
                       FIXTURES_REQUIRED mnemo_pkg_clean FIXTURES_SETUP mnemo_pkg_installed)
  set_tests_properties(packaging.find_package PROPERTIES
                       FIXTURES_REQUIRED mnemo_pkg_installed TIMEOUT 600)
  set_tests_properties(packaging.clean packaging.install packaging.find_package
                       PROPERTIES LABELS packaging)
else()
  message(STATUS "mnemo: MNEMO_INSTALL is OFF, so there is no find_package packaging test")
endif()

add_test(NAME packaging.add_subdirectory
         COMMAND "${CMAKE_COMMAND}" ${_mnemo_consumer_args}
                 "-DSOURCE=${_mnemo_consumers}/add_subdirectory"
                 "-DBINARY=${_mnemo_pkg_dir}/add_subdirectory"
                 "-DMNEMO_SOURCE=${mnemo_SOURCE_DIR}"
                 -P "${_mnemo_consumers}/run_consumer.cmake")
set_tests_properties(packaging.add_subdirectory PROPERTIES LABELS packaging TIMEOUT 600)

add_test(NAME packaging.readme_example
         COMMAND "${CMAKE_COMMAND}" "-DREADME=${mnemo_SOURCE_DIR}/README.md"
                 "-DEXAMPLE=${_mnemo_consumers}/common/readme_example.cpp"
                 -P "${_mnemo_consumers}/check_readme_example.cmake")
set_tests_properties(packaging.readme_example PROPERTIES LABELS packaging)
