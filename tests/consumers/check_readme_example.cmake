# Checks that the usage example in README.md is exactly tests/consumers/common/
# readme_example.cpp, which the consumer projects compile and run (cmake -P script).
#
#   cmake -DREADME=<README.md> -DEXAMPLE=<readme_example.cpp> -P check_readme_example.cmake
cmake_minimum_required(VERSION 3.21)

set(_marker "<!-- example: tests/consumers/common/readme_example.cpp -->")
file(READ "${README}" _readme)
string(FIND "${_readme}" "${_marker}" _at)
if(_at EQUAL -1)
  message(FATAL_ERROR "${README} lacks the marker line ${_marker}")
endif()
string(SUBSTRING "${_readme}" ${_at} -1 _rest)
string(FIND "${_rest}" "```cpp\n" _open)
if(_open EQUAL -1)
  message(FATAL_ERROR "no ```cpp block after ${_marker} in ${README}")
endif()
math(EXPR _open "${_open} + 7")
string(SUBSTRING "${_rest}" ${_open} -1 _rest)
string(FIND "${_rest}" "```" _close)
string(SUBSTRING "${_rest}" 0 ${_close} _block)

file(READ "${EXAMPLE}" _example)
if(NOT _block STREQUAL _example)
  file(WRITE "${CMAKE_CURRENT_BINARY_DIR}/readme_example_from_readme.cpp" "${_block}")
  message(FATAL_ERROR "the example in ${README} differs from ${EXAMPLE}; the README's copy "
                      "is in ${CMAKE_CURRENT_BINARY_DIR}/readme_example_from_readme.cpp")
endif()
message(STATUS "README example matches ${EXAMPLE}")
