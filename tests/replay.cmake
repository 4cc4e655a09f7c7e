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
  # Every architecture through the replay tool, and the split-stream strategy.
  foreach(case IN ITEMS "llama-tiny;branch;split" "llama-tiny;chunked;split" "mamba;chunked;full"
                       "jamba;multi;split")
    list(GET case 0 model)
    list(GET case 1 scenario)
    list(GET case 2 memory)
    add_test(NAME replay.${model}.${scenario}.${memory}
             COMMAND mnemo-replay "${MNEMO_FIXTURES_DIR}/${model}.gguf"
                     "${MNEMO_FIXTURES_DIR}/${model}.${scenario}.json"
                     "${CMAKE_CURRENT_BINARY_DIR}/replay.${model}.${scenario}.${memory}.bin"
                     --threads 2 --memory ${memory}
                     --compare "${MNEMO_FIXTURES_DIR}/${model}.${scenario}.bin" 5e-4)
    set_tests_properties(replay.${model}.${scenario}.${memory} PROPERTIES LABELS replay)
  endforeach()
  # gemma3 with its local layers on a sliding window small enough to forget.
  add_test(NAME replay.gemma3-iswa.chunked.iswa
           COMMAND mnemo-replay "${MNEMO_FIXTURES_DIR}/gemma3-iswa.gguf"
                   "${MNEMO_FIXTURES_DIR}/gemma3-iswa.chunked.json"
                   "${CMAKE_CURRENT_BINARY_DIR}/replay.gemma3-iswa.chunked.iswa.bin"
                   --threads 2 --memory iswa --ubatch 32
                   --compare "${MNEMO_FIXTURES_DIR}/gemma3-iswa.chunked.bin" 5e-3)
  set_tests_properties(replay.gemma3-iswa.chunked.iswa PROPERTIES LABELS replay)
  # gemma3 on split streams in every layer (per-stream windows that forget in chunked).
  foreach(scenario IN ITEMS single multi chunked branch)
    add_test(NAME replay.gemma3-iswa.${scenario}.iswa-split
             COMMAND mnemo-replay "${MNEMO_FIXTURES_DIR}/gemma3-iswa.gguf"
                     "${MNEMO_FIXTURES_DIR}/gemma3-iswa.${scenario}.json"
                     "${CMAKE_CURRENT_BINARY_DIR}/replay.gemma3-iswa.${scenario}.iswa-split.bin"
                     --threads 2 --memory iswa-split --ubatch 32
                     --compare "${MNEMO_FIXTURES_DIR}/gemma3-iswa.${scenario}.bin" 5e-3)
    set_tests_properties(replay.gemma3-iswa.${scenario}.iswa-split PROPERTIES LABELS replay)
  endforeach()
  # The second set of attention architectures: every scenario on one full cache and on
  # split streams; gemma2 also on its interleaved memories (window layers that forget in
  # chunked). f32 models within 1e-4; gemma2 within 5e-3 (llama.cpp's f16 GELU table).
  foreach(model IN ITEMS qwen2 qwen3 phi3 llama3-ropescale gemma2-iswa)
    set(memories full split)
    set(tol 1e-4)
    if(model STREQUAL "gemma2-iswa")
      list(APPEND memories iswa iswa-split)
      set(tol 5e-3)
    endif()
    if(NOT EXISTS "${MNEMO_FIXTURES_DIR}/${model}.gguf")
      continue()
    endif()
    foreach(scenario IN ITEMS single multi chunked branch)
      foreach(memory IN LISTS memories)
        set(name replay.${model}.${scenario}.${memory})
        add_test(NAME ${name}
                 COMMAND mnemo-replay "${MNEMO_FIXTURES_DIR}/${model}.gguf"
                         "${MNEMO_FIXTURES_DIR}/${model}.${scenario}.json"
                         "${CMAKE_CURRENT_BINARY_DIR}/${name}.bin"
                         --threads 2 --memory ${memory} --ubatch 32
                         --compare "${MNEMO_FIXTURES_DIR}/${model}.${scenario}.bin" ${tol})
        set_tests_properties(${name} PROPERTIES LABELS replay)
      endforeach()
    endforeach()
  endforeach()
  # The quantised llamas (k-quants and legacy types, mixed per tensor). llama.cpp rounds
  # activations to 8 bits before its integer products, as mnemo does; a row where one
  # activation sits on a rounding midpoint jumps by up to 1e-2 max|logit| (about 0.05
  # here). 0.15 is 4e-2 of the smallest max|logit| (3.9): a decoding mistake moves
  # these logits by 4 or more.
  foreach(model IN ITEMS llama-q4_k_m llama-q5_k_m llama-q6_k llama-q3_k_m llama-q2_k llama-q4_1
                         llama-q5_0 llama-q5_1)
    foreach(scenario IN ITEMS single chunked)
      add_test(NAME replay.${model}.${scenario}
               COMMAND mnemo-replay "${MNEMO_FIXTURES_DIR}/${model}.gguf"
                       "${MNEMO_FIXTURES_DIR}/${model}.${scenario}.json"
                       "${CMAKE_CURRENT_BINARY_DIR}/replay.${model}.${scenario}.bin"
                       --threads 2
                       --compare "${MNEMO_FIXTURES_DIR}/${model}.${scenario}.bin" 0.15)
      set_tests_properties(replay.${model}.${scenario} PROPERTIES LABELS replay)
    endforeach()
  endforeach()
  add_test(NAME replay.unknown-memory
           COMMAND mnemo-replay "${MNEMO_FIXTURES_DIR}/llama-tiny.gguf"
                   "${MNEMO_FIXTURES_DIR}/llama-tiny.single.json"
                   "${CMAKE_CURRENT_BINARY_DIR}/replay.unknown.bin" --memory no-such-memory)
  set_tests_properties(replay.unknown-memory PROPERTIES WILL_FAIL TRUE LABELS replay)
endif()
