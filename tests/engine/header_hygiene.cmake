# engine.header_hygiene: the engine's public header must not pull in the models or the
# memory strategies (a host TU that uses the handle compiles fast). Lists the headers a
# TU including only mnemo/engine/engine.hpp reads (the compiler's -M) and fails on any
# mnemo header outside the allowed set.
#   cmake -DCXX=... -DINCLUDE=.../include -DWORK=... -P header_hygiene.cmake
set(allowed
    "base/[a-z_]+\\.hpp" "batch/batch\\.hpp" "engine/engine\\.hpp" "engine/backend\\.hpp"
    "engine/options\\.hpp" "memory/types\\.hpp" "attention/params\\.hpp" "sampling\\.hpp")
file(WRITE "${WORK}/engine_header_hygiene.cpp" "#include \"mnemo/engine/engine.hpp\"\n")
execute_process(COMMAND "${CXX}" -std=c++20 -M -I "${INCLUDE}" "${WORK}/engine_header_hygiene.cpp"
                OUTPUT_VARIABLE deps ERROR_VARIABLE err RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "the compiler failed on engine.hpp: ${err}")
endif()
string(REGEX MATCHALL "mnemo/[A-Za-z0-9_/]+\\.(hpp|inl)" headers "${deps}")
list(REMOVE_DUPLICATES headers)
set(bad "")
foreach(h IN LISTS headers)
  set(ok FALSE)
  foreach(a IN LISTS allowed)
    if(h MATCHES "^mnemo/${a}$")
      set(ok TRUE)
    endif()
  endforeach()
  if(NOT ok)
    list(APPEND bad "${h}")
  endif()
endforeach()
list(LENGTH headers n)
if(bad)
  message(FATAL_ERROR "engine.hpp includes headers outside its allowed set: ${bad}")
endif()
message(STATUS "engine.hpp reads ${n} mnemo headers, all allowed")
