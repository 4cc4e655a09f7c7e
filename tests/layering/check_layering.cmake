# Checks the include layering of include/mnemo/ (run with cmake -P, see
# tests/layering.cmake). Every folder has a rank; a header of rank r may include mnemo
# headers of rank < r and of its own folder only. Headers directly in include/mnemo/
# (context, sampling, the umbrella) are the top. Folders of equal rank do not include
# each other, so the folder graph has no loop.
#
#   -DMNEMO_INCLUDE_DIR=<repo>/include

if(NOT MNEMO_INCLUDE_DIR)
  message(FATAL_ERROR "check_layering: pass -DMNEMO_INCLUDE_DIR=<repo>/include")
endif()

# From the bottom up. A new folder must be placed here.
set(rank_base 0)
set(rank_simd 1)
set(rank_dtype 2)
set(rank_attention 3)
set(rank_batch 3)
set(rank_ssm 3)
set(rank_gguf 3)
set(rank_evict 4)
set(rank_text 4)
set(rank_memory 5)
set(rank_model 6)
set(rank_TOP 7)
# The run-time handle sits on context.hpp and sampling.hpp; the C API on the handle.
set(rank_engine 8)
set(rank_c 9)
# The server's scheduler, prefix cache and request parsing sit on the handle.
set(rank_serve 9)

# The folder ("area") of a path relative to include/mnemo/: its first component, or TOP.
function(area_of rel out)
  if(rel MATCHES "^([a-z_0-9]+)/")
    set(${out} "${CMAKE_MATCH_1}" PARENT_SCOPE)
  else()
    set(${out} "TOP" PARENT_SCOPE)
  endif()
endfunction()

file(GLOB_RECURSE headers RELATIVE "${MNEMO_INCLUDE_DIR}/mnemo"
     "${MNEMO_INCLUDE_DIR}/mnemo/*.hpp" "${MNEMO_INCLUDE_DIR}/mnemo/*.inl"
     "${MNEMO_INCLUDE_DIR}/mnemo/*.h")
list(LENGTH headers n_headers)
if(n_headers EQUAL 0)
  message(FATAL_ERROR "check_layering: no headers under ${MNEMO_INCLUDE_DIR}/mnemo")
endif()

set(violations "")
set(edges "")
foreach(h IN LISTS headers)
  area_of("${h}" from)
  if(NOT DEFINED rank_${from})
    string(APPEND violations "  ${h}: folder '${from}' has no rank in check_layering.cmake\n")
    continue()
  endif()
  file(STRINGS "${MNEMO_INCLUDE_DIR}/mnemo/${h}" lines REGEX "^[ \t]*#[ \t]*include[ \t]*\"mnemo/")
  foreach(line IN LISTS lines)
    if(NOT line MATCHES "\"mnemo/([^\"]+)\"")
      continue()
    endif()
    set(target "${CMAKE_MATCH_1}")
    area_of("${target}" to)
    if(to STREQUAL from)
      continue()
    endif()
    if(NOT EXISTS "${MNEMO_INCLUDE_DIR}/mnemo/${target}")
      string(APPEND violations "  ${h}: includes mnemo/${target}, which does not exist\n")
    elseif(NOT DEFINED rank_${to})
      string(APPEND violations "  ${h}: includes mnemo/${target} of unranked folder '${to}'\n")
    elseif(NOT rank_${to} LESS rank_${from})
      string(APPEND violations
             "  ${h} (${from}, rank ${rank_${from}}) includes mnemo/${target} "
             "(${to}, rank ${rank_${to}}): a header may include only lower folders\n")
    endif()
    list(APPEND edges "${from}->${to}")
  endforeach()
endforeach()

if(NOT violations STREQUAL "")
  message(FATAL_ERROR "include layering of ${MNEMO_INCLUDE_DIR}/mnemo broken:\n${violations}")
endif()
list(REMOVE_DUPLICATES edges)
list(SORT edges)
string(REPLACE ";" " " edges "${edges}")
message(STATUS "${n_headers} headers, folder includes all downward: ${edges}")
