# generate --chat end to end: two user turns on stdin, greedy replies, and the per-turn
# reports on stderr must show that the second turn reused the whole first prompt from
# the KV cache and decoded only the rest of the conversation.
#
#   cmake -DGENERATE=path -DMODEL=path -DTEMPLATE=name -DMEMORY=full|split
#         -DWORK_DIR=dir -P chat_reuse_check.cmake
get_filename_component(model_name "${MODEL}" NAME_WE)
set(input "${WORK_DIR}/chat-${model_name}-${TEMPLATE}-${MEMORY}.txt")
file(WRITE "${input}" "Hello there\nHow are you?\n")
execute_process(
  COMMAND "${GENERATE}" "${MODEL}" --chat --chat-template "${TEMPLATE}" --system "You are terse."
          -n 8 --temp 0 --threads 1 --memory "${MEMORY}" --ctx 512 --batch 16
  INPUT_FILE "${input}" OUTPUT_VARIABLE out ERROR_VARIABLE err RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "generate --chat exited with ${rc}:\n${err}")
endif()

set(turn_re "\\[turn ([0-9]+): ([0-9]+) prompt tokens, ([0-9]+) reused from the cache, ([0-9]+) decoded; ([0-9]+) generated\\]")
string(REGEX MATCHALL "${turn_re}" turns "${err}")
list(LENGTH turns n_turns)
if(NOT n_turns EQUAL 2)
  message(FATAL_ERROR "expected 2 turn reports, found ${n_turns}:\n${err}")
endif()
foreach(i 0 1)
  list(GET turns ${i} line)
  string(REGEX MATCH "${turn_re}" _ "${line}")
  set(total${i} ${CMAKE_MATCH_2})
  set(reused${i} ${CMAKE_MATCH_3})
  set(decoded${i} ${CMAKE_MATCH_4})
  math(EXPR sum "${reused${i}} + ${decoded${i}}")
  if(NOT sum EQUAL total${i})
    message(FATAL_ERROR "turn ${i}: reused + decoded != prompt tokens: ${line}")
  endif()
endforeach()
if(NOT reused0 EQUAL 0)
  message(FATAL_ERROR "the first turn reused tokens from an empty cache:\n${err}")
endif()
if(reused1 LESS total0 OR decoded1 EQUAL 0 OR NOT total1 GREATER total0)
  message(FATAL_ERROR "the second turn did not reuse the first prompt "
                      "(first: ${total0} tokens; second: ${total1}, reused ${reused1}):\n${err}")
endif()
math(EXPR decoded_all "${decoded0} + ${decoded1}")
if(NOT err MATCHES "prompt: ${decoded_all} tokens in [0-9.]+ s \\([0-9.]+ tokens/s\\); generated: [0-9]+ tokens")
  message(FATAL_ERROR "no speed line counting ${decoded_all} prompt tokens:\n${err}")
endif()
message(STATUS "turn 1: ${total0} tokens decoded; turn 2: ${total1} tokens, ${reused1} reused, "
               "${decoded1} decoded")
