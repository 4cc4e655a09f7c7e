# Configures, builds and runs one consumer project from scratch (cmake -P script, used
# by tests/packaging.cmake). Every step must succeed; the consumer's own ctest runs it.
#
#   cmake -DSOURCE=<consumer dir> -DBINARY=<build dir> -DGENERATOR=<name>
#         [-DMAKE_PROGRAM=<path>] [-DCXX_COMPILER=<path>] [-DCONFIG=<config>]
#         [-DCTEST=<ctest>] [-DPREFIX_PATH=<installed mnemo>] [-DMNEMO_SOURCE=<mnemo src>]
#         [-DEXPECT_ENGINE=ON]
#         -P run_consumer.cmake
cmake_minimum_required(VERSION 3.21)

foreach(_var SOURCE BINARY GENERATOR)
  if(NOT ${_var})
    message(FATAL_ERROR "run_consumer.cmake: ${_var} is not set")
  endif()
endforeach()
if(NOT CONFIG)
  set(CONFIG Release)
endif()
if(NOT CTEST)
  set(CTEST ctest)
endif()

set(_configure "${CMAKE_COMMAND}" -S "${SOURCE}" -B "${BINARY}" -G "${GENERATOR}"
    "-DCMAKE_BUILD_TYPE=${CONFIG}" -DCMAKE_FIND_USE_PACKAGE_REGISTRY=OFF)
if(MAKE_PROGRAM)
  list(APPEND _configure "-DCMAKE_MAKE_PROGRAM=${MAKE_PROGRAM}")
endif()
if(CXX_COMPILER)
  list(APPEND _configure "-DCMAKE_CXX_COMPILER=${CXX_COMPILER}")
endif()
if(PREFIX_PATH)  # find_package consumer: only this prefix may provide mnemo
  list(APPEND _configure "-DCMAKE_PREFIX_PATH=${PREFIX_PATH}"
       "-DMNEMO_EXPECTED_PREFIX=${PREFIX_PATH}")
endif()
if(EXPECT_ENGINE)  # find_package consumer: the package must export mnemo::engine
  list(APPEND _configure "-DMNEMO_EXPECT_ENGINE=ON")
endif()
if(MNEMO_SOURCE)  # add_subdirectory consumer
  list(APPEND _configure "-DMNEMO_SOURCE_DIR=${MNEMO_SOURCE}")
endif()

function(run_step name)
  string(REPLACE ";" " " _shown "${ARGN}")
  message(STATUS "[${name}] ${_shown}")
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE _rc)
  if(NOT _rc EQUAL 0)
    message(FATAL_ERROR "[${name}] failed (${_rc}): ${_shown}")
  endif()
endfunction()

file(REMOVE_RECURSE "${BINARY}")  # a fresh cache every time: no stale package paths
run_step(configure ${_configure})
run_step(build "${CMAKE_COMMAND}" --build "${BINARY}" --config "${CONFIG}")
run_step(run "${CTEST}" --test-dir "${BINARY}" -C "${CONFIG}" --output-on-failure
         --no-tests=error)
