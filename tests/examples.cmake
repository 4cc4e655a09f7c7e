# The examples run end to end so they cannot rot: the demo and custom_policy (their own
# self-checks set the exit code), and batched_bench and generate on a tiny model that make-llama
# writes first (a ctest fixture). Bad arguments must exit with code 2, library errors
# with 1. One thread each: the tests run beside others. Each takes under a second.
if(MNEMO_BUILD_EXAMPLES)
  set(mnemo_tiny_llama "${CMAKE_CURRENT_BINARY_DIR}/examples-tiny-llama.gguf")
  add_test(NAME examples.make-tiny-llama
           COMMAND make-llama "${mnemo_tiny_llama}" --n-vocab 512 --n-embd 128 --n-layer 2
                   --n-head 4 --n-head-kv 2 --n-ff 256 --seed 3)
  set_tests_properties(examples.make-tiny-llama PROPERTIES FIXTURES_SETUP mnemo_tiny_llama
                                                           LABELS examples)

  add_test(NAME examples.demo COMMAND demo --threads 1)
  set_tests_properties(examples.demo PROPERTIES LABELS examples PASS_REGULAR_EXPRESSION
                                                "self-check: .*: PASS")

  add_test(NAME examples.batched_bench.full
           COMMAND batched_bench "${mnemo_tiny_llama}" -npp 16,40 -ntg 4 -npl 1,3 --threads 1)
  add_test(NAME examples.batched_bench.split-q8_0
           COMMAND batched_bench "${mnemo_tiny_llama}" -npp 24 -ntg 4 -npl 1,4 --memory split
                   --kv q8_0 --batch 20 --ubatch 8 --threads 1 --output-format jsonl)
  set_tests_properties(examples.batched_bench.split-q8_0 PROPERTIES
                       PASS_REGULAR_EXPRESSION "\"pl\": 4, \"n_kv\": 112.*\"frac_tg\": 0\\.[0-9]")
  # The machine limits pinned, not probed: the probe would read 512 MiB beside other tests.
  set_tests_properties(examples.batched_bench.full examples.batched_bench.split-q8_0 PROPERTIES
                       ENVIRONMENT "MNEMO_READ_GBPS=20;MNEMO_FMA_GFLOPS=100")
  add_test(NAME examples.generate.text
           COMMAND generate "${mnemo_tiny_llama}" -p "Hello, world" -n 8 --threads 1)
  add_test(NAME examples.generate.tokens-split
           COMMAND generate "${mnemo_tiny_llama}" --tokens 1,40,41,42 -n 8 --temp 0
                   --memory split --kv bf16 --threads 1)
  # A library error exits 1: a token outside the vocabulary.
  add_test(NAME examples.generate.bad-token
           COMMAND sh -c "\"$<TARGET_FILE:generate>\" \"${mnemo_tiny_llama}\" --tokens 1,99999 -n 2; test $? -eq 1")
  # Eviction policies from the command line: the engine's bounded memory.
  add_test(NAME examples.batched_bench.quest
           COMMAND batched_bench "${mnemo_tiny_llama}" -npp 40 -ntg 4 -npl 1,2 --policy quest
                   --evict-budget 16 --ubatch 8 --threads 1 --output-format jsonl)
  set_tests_properties(examples.batched_bench.quest PROPERTIES
                       PASS_REGULAR_EXPRESSION "\"memory\": \"bounded\".*\"pl\": 2"
                       ENVIRONMENT "MNEMO_READ_GBPS=20;MNEMO_FMA_GFLOPS=100")
  add_test(NAME examples.generate.policy-h2o
           COMMAND generate "${mnemo_tiny_llama}" --tokens 1,40,41,42 -n 8 --temp 0
                   --policy h2o --evict-budget 6 --threads 1)
  add_test(NAME examples.generate.bad-policy
           COMMAND sh -c "out=$(\"$<TARGET_FILE:generate>\" \"${mnemo_tiny_llama}\" --policy lru 2>&1); test $? -eq 2 && echo \"$out\" | grep -q -- '--policy takes'")
  set_tests_properties(examples.batched_bench.full examples.batched_bench.split-q8_0
                       examples.batched_bench.quest
                       examples.generate.text examples.generate.tokens-split
                       examples.generate.bad-token examples.generate.policy-h2o
                       examples.generate.bad-policy
                       PROPERTIES FIXTURES_REQUIRED mnemo_tiny_llama LABELS examples)

  # A user-defined eviction policy through bounded<>, per layer and per KV head: its
  # self-check (every lane keeps exactly the budget, protected positions included) sets
  # the exit code.
  add_test(NAME examples.custom_policy.layer COMMAND custom_policy 64 16 layer)
  add_test(NAME examples.custom_policy.head COMMAND custom_policy 40 8 head)
  set_tests_properties(examples.custom_policy.layer examples.custom_policy.head PROPERTIES
                       LABELS examples PASS_REGULAR_EXPRESSION "self-check: PASS")

  # A user-defined memory strategy (a capped one-sequence cache) under context<>: its
  # self-check compares every logit row with full_cache's on a fixture model.
  if(EXISTS "${MNEMO_FIXTURES_DIR}/llama-tiny.gguf")
    add_test(NAME examples.custom_memory
             COMMAND custom_memory "${MNEMO_FIXTURES_DIR}/llama-tiny.gguf")
    set_tests_properties(examples.custom_memory PROPERTIES
                         LABELS examples PASS_REGULAR_EXPRESSION "self-check: PASS")
  endif()

  # --chat: two user turns on stdin; the second must decode only what the cache lacks
  # (the fixtures' vocabularies have no chat template: --chat-template names one).
  foreach(variant IN ITEMS "llama-tiny|llama2-sys|full" "llama-tiny|chatml|split"
                           "qwen2|chatml|full" "phi3|phi3|split" "gemma2-iswa|gemma|full")
    string(REPLACE "|" ";" parts "${variant}")
    list(GET parts 0 model)
    list(GET parts 1 tmpl)
    list(GET parts 2 mem)
    if(EXISTS "${MNEMO_FIXTURES_DIR}/${model}.gguf")
      set(name examples.generate.chat.${model}.${tmpl}.${mem})
      add_test(NAME ${name}
               COMMAND ${CMAKE_COMMAND} "-DGENERATE=$<TARGET_FILE:generate>"
                       "-DMODEL=${MNEMO_FIXTURES_DIR}/${model}.gguf" -DTEMPLATE=${tmpl}
                       -DMEMORY=${mem} "-DWORK_DIR=${CMAKE_CURRENT_BINARY_DIR}"
                       -P "${CMAKE_CURRENT_SOURCE_DIR}/examples/chat_reuse_check.cmake")
      set_tests_properties(${name} PROPERTIES LABELS examples)
    endif()
  endforeach()
  # --save-session / --load-session: a resumed run prints what one longer run prints; a
  # session loaded into another model is refused naming both.
  foreach(mem IN ITEMS full split)
    if(EXISTS "${MNEMO_FIXTURES_DIR}/llama-tiny.gguf" AND EXISTS "${MNEMO_FIXTURES_DIR}/qwen2.gguf")
      add_test(NAME examples.generate.session.${mem}
               COMMAND ${CMAKE_COMMAND} "-DGENERATE=$<TARGET_FILE:generate>"
                       "-DMODEL=${MNEMO_FIXTURES_DIR}/llama-tiny.gguf"
                       "-DOTHER_MODEL=${MNEMO_FIXTURES_DIR}/qwen2.gguf" -DMEMORY=${mem}
                       "-DWORK_DIR=${CMAKE_CURRENT_BINARY_DIR}"
                       -P "${CMAKE_CURRENT_SOURCE_DIR}/examples/session_resume_check.cmake")
      set_tests_properties(examples.generate.session.${mem} PROPERTIES LABELS examples)
    endif()
  endforeach()
  # A model without tokenizer.chat_template and no --chat-template: exit 1, naming the fix.
  add_test(NAME examples.generate.chat-no-template
           COMMAND sh -c "out=$(\"$<TARGET_FILE:generate>\" \"${mnemo_tiny_llama}\" --chat 2>&1 < /dev/null); test $? -eq 1 && echo \"$out\" | grep -q -- --chat-template")
  set_tests_properties(examples.generate.chat-no-template PROPERTIES
                       FIXTURES_REQUIRED mnemo_tiny_llama LABELS examples)

  # make-llama writes the weight-only quantised types and a llama-quantize mixture,
  # and generate runs them.
  foreach(type IN ITEMS q4_K q5_1 q4_K_M)
    set(model "${CMAKE_CURRENT_BINARY_DIR}/examples-tiny-llama-${type}.gguf")
    add_test(NAME examples.make-tiny-llama-${type}
             COMMAND make-llama "${model}" --n-vocab 512 --n-embd 256 --n-layer 1 --n-head 4
                     --n-head-kv 2 --n-ff 512 --seed 3 --type ${type})
    set_tests_properties(examples.make-tiny-llama-${type} PROPERTIES
                         FIXTURES_SETUP mnemo_tiny_llama_${type} LABELS examples)
    add_test(NAME examples.generate.${type}
             COMMAND generate "${model}" --tokens 1,40,41,42 -n 8 --temp 0 --threads 1)
    set_tests_properties(examples.generate.${type} PROPERTIES
                         FIXTURES_REQUIRED mnemo_tiny_llama_${type} LABELS examples)
  endforeach()

  # make-llama's other architecture shapes (the speed comparison's models of
  # docs/performance.md, here tiny) load as their architecture and decode through the
  # engine: gemma2 on its default memory, the windowed composite.
  foreach(variant IN ITEMS "llama3|full" "qwen2|full" "qwen3|full" "phi3|full" "gemma2|iswa")
    string(REPLACE "|" ";" parts "${variant}")
    list(GET parts 0 arch)
    list(GET parts 1 mem)
    set(model "${CMAKE_CURRENT_BINARY_DIR}/examples-tiny-${arch}.gguf")
    add_test(NAME examples.make-tiny-arch.${arch}
             COMMAND make-llama "${model}" --arch ${arch} --n-vocab 512 --n-embd 128
                     --n-layer 2 --n-head 4 --n-head-kv 2 --n-ff 256 --seed 3)
    set_tests_properties(examples.make-tiny-arch.${arch} PROPERTIES
                         FIXTURES_SETUP mnemo_tiny_${arch} LABELS examples)
    add_test(NAME examples.generate.arch.${arch}
             COMMAND generate "${model}" --tokens 1,40,41,42 -n 8 --temp 0 --threads 1)
    set_tests_properties(examples.generate.arch.${arch} PROPERTIES
                         FIXTURES_REQUIRED mnemo_tiny_${arch} LABELS examples
                         PASS_REGULAR_EXPRESSION "generated: 8 tokens.*memory ${mem},")
  endforeach()

  # The engine's split strategy against llama.cpp's logits (mnemo-replay).
  if(EXISTS "${MNEMO_FIXTURES_DIR}/llama-tiny.gguf")
    add_test(NAME examples.replay.llama-tiny.multi.split
             COMMAND mnemo-replay "${MNEMO_FIXTURES_DIR}/llama-tiny.gguf"
                     "${MNEMO_FIXTURES_DIR}/llama-tiny.multi.json"
                     "${CMAKE_CURRENT_BINARY_DIR}/examples.replay.split.bin" --memory split
                     --threads 1 --compare "${MNEMO_FIXTURES_DIR}/llama-tiny.multi.bin" 5e-4)
    set_tests_properties(examples.replay.llama-tiny.multi.split PROPERTIES LABELS examples)
    # A host's own llama-style decoder on mnemo's full cache and attention: its logits
    # against the built-in llama's (the example exits 1 beyond 1e-4).
    add_test(NAME examples.bring_your_own_model
             COMMAND bring_your_own_model "${MNEMO_FIXTURES_DIR}/llama-tiny.gguf" --threads 1)
    set_tests_properties(examples.bring_your_own_model PROPERTIES LABELS examples
                         PASS_REGULAR_EXPRESSION "max \\|diff\\| [^ ]+ \\(tolerance 0.0001\\): PASS")
  endif()

  # Speculative decoding with rollback (token snapshots on the recurrent models): the
  # example's self-check compares token ids and logits with plain greedy decoding.
  foreach(model IN ITEMS llama-tiny mamba jamba)
    if(EXISTS "${MNEMO_FIXTURES_DIR}/${model}.gguf")
      add_test(NAME examples.speculative.${model}
               COMMAND speculative "${MNEMO_FIXTURES_DIR}/${model}.gguf" --draft 4 -n 40
                       --threads 1)
      set_tests_properties(examples.speculative.${model} PROPERTIES LABELS examples
                           PASS_REGULAR_EXPRESSION "self-check: speculative == greedy: PASS")
    endif()
  endforeach()

  # Bad arguments: a usage message and exit code 2 ("PROGRAM|ARGUMENTS"; MODEL is the
  # tiny model's path).
  foreach(bad IN ITEMS "batched_bench|MODEL -npl 0" "batched_bench|MODEL --kv q5_1"
                       "batched_bench|" "generate|MODEL -n" "generate|MODEL --temp -1"
                       "generate|MODEL -p x --tokens 1" "generate|MODEL -p x --system y"
                       "generate|MODEL --chat --chat-template nope" "demo|--clients 0"
                       "demo|MODEL"
                       "custom_policy|0" "custom_policy|64 100" "custom_policy|64 16 row"
                       "custom_memory|a b" "speculative|" "speculative|MODEL --draft 0")
    string(REPLACE "|" ";" parts "${bad}")
    list(GET parts 0 prog)
    list(GET parts 1 args)
    string(REPLACE "MODEL" "" id "${args}")
    string(MAKE_C_IDENTIFIER "${id}" id)
    string(REPLACE "MODEL" "\"${mnemo_tiny_llama}\"" args "${args}")
    add_test(NAME examples.${prog}.usage${id}
             COMMAND sh -c "\"$<TARGET_FILE:${prog}>\" ${args}; test $? -eq 2")
    set_tests_properties(examples.${prog}.usage${id} PROPERTIES LABELS examples)
  endforeach()
endif()
