# mnemo::serve (include/mnemo/serve/) and the HTTP server (examples/server.cpp):
#   test_serve_prefix_index    the prefix index alone (no model)
#   test_serve_openai_json     request parsing and validation, with a fuzz loop
#   test_serve_scheduler       the scheduler on the llama-tiny fixture (links mnemo::engine)
#   test_serve_http            mnemo-server started on a loopback port, an httplib client
#   serve.python_client        the same server, a Python standard-library client
add_executable(test_serve_prefix_index ${CMAKE_CURRENT_LIST_DIR}/serve/prefix_index_test.cpp)
target_link_libraries(test_serve_prefix_index PRIVATE mnemo::mnemo GTest::gtest GTest::gtest_main)
mnemo_strict(test_serve_prefix_index)
gtest_discover_tests(test_serve_prefix_index DISCOVERY_TIMEOUT 60 PROPERTIES LABELS serve)

if(TARGET mnemo_engine)
  add_executable(test_serve_scheduler ${CMAKE_CURRENT_LIST_DIR}/serve/scheduler_test.cpp)
  target_link_libraries(test_serve_scheduler PRIVATE mnemo::engine GTest::gtest GTest::gtest_main)
  target_compile_definitions(test_serve_scheduler
                             PRIVATE MNEMO_FIXTURES_DIR="${MNEMO_FIXTURES_DIR}")
  mnemo_strict(test_serve_scheduler)
  gtest_discover_tests(test_serve_scheduler DISCOVERY_TIMEOUT 60 PROPERTIES LABELS serve)
endif()

include(${PROJECT_SOURCE_DIR}/cmake/mnemo_serve_deps.cmake)
if(NOT MNEMO_HAVE_SERVE_DEPS)
  return()
endif()

add_executable(test_serve_openai_json ${CMAKE_CURRENT_LIST_DIR}/serve/openai_json_test.cpp)
target_link_libraries(test_serve_openai_json PRIVATE mnemo::mnemo nlohmann_json::nlohmann_json
                                                     GTest::gtest GTest::gtest_main)
mnemo_strict(test_serve_openai_json)
gtest_discover_tests(test_serve_openai_json DISCOVERY_TIMEOUT 60 PROPERTIES LABELS serve)

if(MNEMO_BUILD_EXAMPLES)  # mnemo-server is defined in examples/, later
  add_executable(test_serve_http ${CMAKE_CURRENT_LIST_DIR}/serve/http_test.cpp)
  target_link_libraries(test_serve_http PRIVATE mnemo_httplib nlohmann_json::nlohmann_json
                                                GTest::gtest GTest::gtest_main Threads::Threads)
  target_compile_definitions(test_serve_http PRIVATE MNEMO_FIXTURES_DIR="${MNEMO_FIXTURES_DIR}"
                                                     MNEMO_SERVER_BIN="$<TARGET_FILE:mnemo-server>")
  add_dependencies(test_serve_http mnemo-server)
  mnemo_strict(test_serve_http)
  # One process: the suite shares one server.
  add_test(NAME serve.http COMMAND test_serve_http)
  set_tests_properties(serve.http PROPERTIES LABELS serve TIMEOUT 120)
endif()

find_package(Python3 COMPONENTS Interpreter)
if(MNEMO_BUILD_EXAMPLES AND Python3_Interpreter_FOUND
   AND EXISTS "${MNEMO_FIXTURES_DIR}/llama-tiny.gguf")
  add_test(NAME serve.python_client
           COMMAND Python3::Interpreter "${CMAKE_CURRENT_LIST_DIR}/serve/http_client.py"
                   "$<TARGET_FILE:mnemo-server>" "${MNEMO_FIXTURES_DIR}/llama-tiny.gguf")
  set_tests_properties(serve.python_client PROPERTIES LABELS serve TIMEOUT 120)
endif()
