# The engine and its C API (they link mnemo::engine or mnemo::c, so they are not in the
# tests/*/ glob):
#   test_engine_engine  GoogleTest: the handle against the compile-time context
#   engine.header_hygiene  engine.hpp reads no model and no memory strategy
#   test_engine_c_api   a C program (compiled as C) over include/mnemo/c/mnemo.h
#   engine.python.*     examples/python/mnemo_ctypes.py through ctypes: text generation,
#                       and a fixture scenario whose logits must equal mnemo-replay's
#                       (the C++ engine) exactly
if(NOT TARGET mnemo_engine)
  return()
endif()

add_executable(test_engine_engine ${CMAKE_CURRENT_LIST_DIR}/engine/engine_test.cpp)
target_link_libraries(test_engine_engine PRIVATE mnemo::engine GTest::gtest GTest::gtest_main)
target_compile_definitions(test_engine_engine PRIVATE MNEMO_FIXTURES_DIR="${MNEMO_FIXTURES_DIR}")
mnemo_strict(test_engine_engine)
gtest_discover_tests(test_engine_engine DISCOVERY_TIMEOUT 60 PROPERTIES LABELS engine)

add_test(NAME engine.header_hygiene
         COMMAND "${CMAKE_COMMAND}" "-DCXX=${CMAKE_CXX_COMPILER}"
                 "-DINCLUDE=${PROJECT_SOURCE_DIR}/include" "-DWORK=${CMAKE_CURRENT_BINARY_DIR}"
                 -P "${CMAKE_CURRENT_LIST_DIR}/engine/header_hygiene.cmake")
set_tests_properties(engine.header_hygiene PROPERTIES LABELS engine)

if(NOT TARGET mnemo_c)
  return()
endif()

include(CheckLanguage)
check_language(C)
if(CMAKE_C_COMPILER)
  enable_language(C)
  add_executable(test_engine_c_api ${CMAKE_CURRENT_LIST_DIR}/engine/c_api_test.c)
  set_target_properties(test_engine_c_api PROPERTIES C_STANDARD 99 C_STANDARD_REQUIRED ON
                                                     C_EXTENSIONS OFF)
  target_compile_options(test_engine_c_api PRIVATE -Wall -Wextra -Wpedantic -Werror)
  target_link_libraries(test_engine_c_api PRIVATE mnemo::c m)
  if(EXISTS "${MNEMO_FIXTURES_DIR}/llama-tiny.gguf")
    add_test(NAME engine.c_api COMMAND test_engine_c_api "${MNEMO_FIXTURES_DIR}/llama-tiny.gguf")
    set_tests_properties(engine.c_api PROPERTIES LABELS engine)
  endif()
endif()

# Not under sanitizers: an uninstrumented python3 cannot load an ASan-built library.
find_package(Python3 COMPONENTS Interpreter)
if(Python3_Interpreter_FOUND AND MNEMO_BUILD_EXAMPLES
   AND EXISTS "${MNEMO_FIXTURES_DIR}/llama-tiny.gguf"
   AND NOT CMAKE_CXX_FLAGS MATCHES "-fsanitize")
  set(_py "${PROJECT_SOURCE_DIR}/examples/python/mnemo_ctypes.py")
  set(_tiny "${MNEMO_FIXTURES_DIR}/llama-tiny.gguf")
  add_test(NAME engine.python.generate
           COMMAND Python3::Interpreter "${_py}" --lib "$<TARGET_FILE:mnemo_c>" "${_tiny}"
                   -p "the cat" -n 8 --threads 1)
  set_tests_properties(engine.python.generate PROPERTIES LABELS engine
                       PASS_REGULAR_EXPRESSION "^the cat")
  add_test(NAME engine.python.generate-quest
           COMMAND Python3::Interpreter "${_py}" --lib "$<TARGET_FILE:mnemo_c>" "${_tiny}"
                   -p "the cat" -n 8 --threads 1 --policy quest --evict-budget 16)
  set_tests_properties(engine.python.generate-quest PROPERTIES LABELS engine
                       PASS_REGULAR_EXPRESSION "memory bounded")
  # The C++ path first (mnemo-replay through mnemo::engine, full_cache<float>), then the
  # same scenario through Python -> C -> engine: identical logits.
  foreach(scenario IN ITEMS multi branch)
    set(_bin "${CMAKE_CURRENT_BINARY_DIR}/engine.python.${scenario}.cpp.bin")
    add_test(NAME engine.python.${scenario}.cpp-path
             COMMAND mnemo-replay "${_tiny}" "${MNEMO_FIXTURES_DIR}/llama-tiny.${scenario}.json"
                     "${_bin}" --threads 1 --kv f32)
    add_test(NAME engine.python.${scenario}
             COMMAND Python3::Interpreter "${_py}" --lib "$<TARGET_FILE:mnemo_c>" "${_tiny}"
                     --threads 1 --kv f32
                     --replay "${MNEMO_FIXTURES_DIR}/llama-tiny.${scenario}.json" "${_bin}" 0)
    set_tests_properties(engine.python.${scenario}.cpp-path PROPERTIES
                         FIXTURES_SETUP engine_py_${scenario} LABELS engine)
    set_tests_properties(engine.python.${scenario} PROPERTIES
                         FIXTURES_REQUIRED engine_py_${scenario} LABELS engine)
  endforeach()
endif()
