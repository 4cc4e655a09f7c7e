# Optional libFuzzer target for the GGUF reader (clang only, OFF by default):
#   cmake -B build-fuzz -G Ninja -DCMAKE_CXX_COMPILER=clang++ -DMNEMO_BUILD_FUZZERS=ON
#   ninja -C build-fuzz mnemo_fuzz_gguf mnemo_fuzz_gguf_seeds
#   mkdir corpus && build-fuzz/tests/mnemo_fuzz_gguf_seeds corpus
#   build-fuzz/tests/mnemo_fuzz_gguf corpus -max_total_time=30
# With the option on, ctest also runs a short deterministic session (fuzz.gguf.smoke).
# The deterministic mutation test (tests/gguf/mutation_test.cpp) runs everywhere.
#
# mnemo_fuzz_readers: every other reader (the state reader of each memory strategy and
# composite, the tokenizer, the chat-template formatter, batch validation) in one
# binary; MNEMO_FUZZ_TARGET picks the target (docs/fuzzing.md):
#   ninja -C build-fuzz mnemo_fuzz_readers && mkdir corpus
#   MNEMO_FUZZ_TARGET=state_full MNEMO_FUZZ_WRITE_SEEDS=corpus build-fuzz/tests/mnemo_fuzz_readers
#   MNEMO_FUZZ_TARGET=state_full build-fuzz/tests/mnemo_fuzz_readers corpus -max_total_time=60
# Their deterministic sessions (tests/fuzz/*_readers_test.cpp) run everywhere, under
# ASan/UBSan in the debug-asan preset.
option(MNEMO_BUILD_FUZZERS "Build libFuzzer targets (needs clang)" OFF)

if(MNEMO_BUILD_FUZZERS)
  if(NOT CMAKE_CXX_COMPILER_ID MATCHES "Clang")
    message(WARNING "MNEMO_BUILD_FUZZERS needs clang (libFuzzer); "
                    "${CMAKE_CXX_COMPILER_ID} found, the fuzzers are not built")
  else()
    set(_mnemo_fuzz_flags -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined
                          -fno-omit-frame-pointer -g)
    add_executable(mnemo_fuzz_gguf ${CMAKE_CURRENT_LIST_DIR}/fuzz/gguf_fuzzer.cpp)
    target_link_libraries(mnemo_fuzz_gguf PRIVATE mnemo::mnemo)
    target_include_directories(mnemo_fuzz_gguf PRIVATE ${CMAKE_CURRENT_LIST_DIR})
    target_compile_options(mnemo_fuzz_gguf PRIVATE ${_mnemo_fuzz_flags})
    target_link_options(mnemo_fuzz_gguf PRIVATE ${_mnemo_fuzz_flags})
    mnemo_strict(mnemo_fuzz_gguf)

    add_executable(mnemo_fuzz_gguf_seeds ${CMAKE_CURRENT_LIST_DIR}/fuzz/gguf_seeds.cpp)
    target_link_libraries(mnemo_fuzz_gguf_seeds PRIVATE mnemo::mnemo)
    target_include_directories(mnemo_fuzz_gguf_seeds PRIVATE ${CMAKE_CURRENT_LIST_DIR})
    mnemo_strict(mnemo_fuzz_gguf_seeds)

    set(_mnemo_fuzz_corpus "${CMAKE_CURRENT_BINARY_DIR}/fuzz_gguf_corpus")
    add_test(NAME fuzz.gguf.seeds
             COMMAND ${CMAKE_COMMAND} -E make_directory ${_mnemo_fuzz_corpus})
    add_test(NAME fuzz.gguf.write_seeds COMMAND mnemo_fuzz_gguf_seeds ${_mnemo_fuzz_corpus})
    add_test(NAME fuzz.gguf.smoke
             COMMAND mnemo_fuzz_gguf -seed=1 -runs=20000 -max_len=4096 ${_mnemo_fuzz_corpus})
    set_tests_properties(fuzz.gguf.seeds PROPERTIES FIXTURES_SETUP mnemo_fuzz_dir)
    set_tests_properties(fuzz.gguf.write_seeds PROPERTIES FIXTURES_REQUIRED mnemo_fuzz_dir
                                                          FIXTURES_SETUP mnemo_fuzz_corpus)
    set_tests_properties(fuzz.gguf.smoke PROPERTIES FIXTURES_REQUIRED mnemo_fuzz_corpus
                                                    LABELS fuzz TIMEOUT 300)

    add_executable(mnemo_fuzz_readers ${CMAKE_CURRENT_LIST_DIR}/fuzz/readers_fuzzer.cpp)
    target_link_libraries(mnemo_fuzz_readers PRIVATE mnemo::mnemo)
    target_include_directories(mnemo_fuzz_readers PRIVATE ${CMAKE_CURRENT_LIST_DIR})
    target_compile_definitions(mnemo_fuzz_readers PRIVATE
                               MNEMO_FIXTURES_DIR="${MNEMO_FIXTURES_DIR}")
    target_compile_options(mnemo_fuzz_readers PRIVATE ${_mnemo_fuzz_flags})
    target_link_options(mnemo_fuzz_readers PRIVATE ${_mnemo_fuzz_flags})
    mnemo_strict(mnemo_fuzz_readers)
  endif()
endif()
