# The folders of include/mnemo/ form layers: a header includes only headers of its own
# folder or of lower ones, so no folder loop can form. tests/layering/check_layering.cmake
# reads every `#include "mnemo/..."` under include/ and fails naming the first include
# that goes up or sideways; it needs no build and runs as a ctest.
add_test(NAME layering.includes
         COMMAND ${CMAKE_COMMAND} -DMNEMO_INCLUDE_DIR=${PROJECT_SOURCE_DIR}/include
                 -P ${CMAKE_CURRENT_LIST_DIR}/layering/check_layering.cmake)
set_tests_properties(layering.includes PROPERTIES LABELS layering TIMEOUT 60)

# A host TU with one model and one memory parses no other strategy (model headers read
# only the strategies' *_fwd.hpp).
add_test(NAME layering.one_memory
         COMMAND "${CMAKE_COMMAND}" "-DCXX=${CMAKE_CXX_COMPILER}"
                 "-DINCLUDE=${PROJECT_SOURCE_DIR}/include" "-DWORK=${CMAKE_CURRENT_BINARY_DIR}"
                 -P "${CMAKE_CURRENT_LIST_DIR}/layering/one_memory.cmake")
set_tests_properties(layering.one_memory PROPERTIES LABELS layering TIMEOUT 60)
