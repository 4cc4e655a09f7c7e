# generate --save-session / --load-session end to end: N greedy tokens in one run must
# equal K tokens in a run that saves the session and N - K more in a run that loads it
# (stdout byte for byte: the second run echoes the session's text, then continues);
# and the session loaded into another model fails with a message naming both.
#
#   cmake -DGENERATE=path -DMODEL=path -DOTHER_MODEL=path -DMEMORY=full|split
#         -DWORK_DIR=dir -P session_resume_check.cmake
get_filename_component(model_name "${MODEL}" NAME_WE)
set(session "${WORK_DIR}/session-${model_name}-${MEMORY}.bin")
file(REMOVE "${session}")
set(common --temp 0 --threads 1 --ctx 256 --memory "${MEMORY}")

execute_process(COMMAND "${GENERATE}" "${MODEL}" -p "Once upon a time" -n 12 ${common}
                OUTPUT_VARIABLE whole ERROR_VARIABLE err RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "the single run exited with ${rc}:\n${err}")
endif()
execute_process(COMMAND "${GENERATE}" "${MODEL}" -p "Once upon a time" -n 5 ${common}
                        --save-session "${session}"
                OUTPUT_VARIABLE first ERROR_VARIABLE err RESULT_VARIABLE rc)
if(NOT rc EQUAL 0 OR NOT EXISTS "${session}")
  message(FATAL_ERROR "the saving run exited with ${rc}:\n${err}")
endif()
execute_process(COMMAND "${GENERATE}" "${MODEL}" --load-session "${session}" -n 7 ${common}
                OUTPUT_VARIABLE resumed ERROR_VARIABLE err RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "the loading run exited with ${rc}:\n${err}")
endif()
if(NOT resumed STREQUAL whole)
  message(FATAL_ERROR "resumed output differs from one run:\n  one run: [${whole}]\n"
                      "  saved:   [${first}]\n  resumed: [${resumed}]")
endif()
if(NOT "${first}" MATCHES "^Once upon a time")
  message(FATAL_ERROR "the saving run did not echo its prompt: [${first}]")
endif()

execute_process(COMMAND "${GENERATE}" "${OTHER_MODEL}" --load-session "${session}" -n 2 ${common}
                OUTPUT_VARIABLE out ERROR_VARIABLE err RESULT_VARIABLE rc)
if(NOT rc EQUAL 1 OR NOT err MATCHES "written by model .*fingerprint 0x[0-9a-f]+.*this context runs model .*fingerprint 0x[0-9a-f]+")
  message(FATAL_ERROR "loading into another model: exit ${rc}, expected 1 naming both models:\n${err}")
endif()
message(STATUS "resumed: [${resumed}]")
