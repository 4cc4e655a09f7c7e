# mnemo-replay end to end: replay a fixture scenario and compare the logits with
# llama.cpp's .bin (--compare REF TOL exits 1 beyond TOL). Needs the examples and
# the fixtures; skipped silently when either is absent.
if(MNEMO_BUILD_EXAMPLES AND EXISTS "${MNEMO_FIXTURES_DIR}/llama-tiny.gguf")
  foreach(scenario IN ITEMS chunked branch)
    add_test(NAME replay.llama-tiny.${scenario}
             COMMAND mnemo-replay "${MNEMO_FIXTURES_DIR}/llama-tiny.gguf"
                     "${MNEMO_FIXTURES_DIR}/llama-tiny.${scenario}.json"
                     "${CMAKE_CURRENT_BINARY_DIR}/replay.llama-tiny.${scenario}.bin"
                     --threads 2
                     --compare "${MNEMO_FIXTURES_DIR}/llama-tiny.${scenario}.bin" 5e-4)
    set_tests_properties(replay.llama-tiny.${scenario} PROPERTIES LABELS replay)
  endforeach()
  add_test(NAME replay.llama-gqa4-f16.multi
           COMMAND mnemo-replay "${MNEMO_FIXTURES_DIR}/llama-gqa4-f16.gguf"
                   "${MNEMO_FIXTURES_DIR}/llama-gqa4-f16.multi.json"
                   "${CMAKE_CURRENT_BINARY_DIR}/replay.llama-gqa4-f16.multi.bin"
                   --threads 2 --kv f16
                   --compare "${MNEMO_FIXTURES_DIR}/llama-gqa4-f16.multi.bin" 6e-3)
  set_tests_properties(replay.llama-gqa4-f16.multi PROPERTIES LABELS replay)
  add_test(NAME replay.unknown-memory
           COMMAND mnemo-replay "${MNEMO_FIXTURES_DIR}/llama-tiny.gguf"
                   "${MNEMO_FIXTURES_DIR}/llama-tiny.single.json"
                   "${CMAKE_CURRENT_BINARY_DIR}/replay.unknown.bin" --memory split_stream)
  set_tests_properties(replay.unknown-memory PROPERTIES WILL_FAIL TRUE LABELS replay)
endif()
