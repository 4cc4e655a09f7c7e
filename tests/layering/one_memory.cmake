# layering.one_memory: a host TU with one model and one memory parses that memory alone.
# Lists the headers a TU including context.hpp, memory/full/full_cache.hpp and
# model/llama.hpp reads (the compiler's -M) and fails on any other memory strategy's
# header or any eviction header (a model header may read the strategies' *_fwd.hpp:
# their configurations and declarations).
#   cmake -DCXX=... -DINCLUDE=.../include -DWORK=... -P one_memory.cmake
set(forbidden "memory/(stream|window|layered|recurrent|bounded)/[a-z_]+\\.hpp" "evict/.*")
set(allowed "memory/[a-z]+/[a-z_]+_fwd\\.hpp")
file(WRITE "${WORK}/layering_one_memory.cpp"
     "#include \"mnemo/context.hpp\"\n#include \"mnemo/memory/full/full_cache.hpp\"\n"
     "#include \"mnemo/model/llama.hpp\"\n")
execute_process(COMMAND "${CXX}" -std=c++20 -M -I "${INCLUDE}" "${WORK}/layering_one_memory.cpp"
                OUTPUT_VARIABLE deps ERROR_VARIABLE err RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "the compiler failed on context.hpp + full_cache.hpp + llama.hpp: ${err}")
endif()
string(REGEX MATCHALL "mnemo/[A-Za-z0-9_/]+\\.(hpp|inl)" headers "${deps}")
list(REMOVE_DUPLICATES headers)
set(bad "")
foreach(h IN LISTS headers)
  set(is_bad FALSE)
  foreach(f IN LISTS forbidden)
    if(h MATCHES "^mnemo/${f}$")
      set(is_bad TRUE)
    endif()
  endforeach()
  foreach(a IN LISTS allowed)
    if(h MATCHES "^mnemo/${a}$")
      set(is_bad FALSE)
    endif()
  endforeach()
  if(is_bad)
    list(APPEND bad "${h}")
  endif()
endforeach()
list(LENGTH headers n)
if(bad)
  message(FATAL_ERROR "llama.hpp + full_cache.hpp + context.hpp read other strategies: ${bad}")
endif()
message(STATUS "llama.hpp + full_cache.hpp + context.hpp read ${n} mnemo headers, no other strategy")
