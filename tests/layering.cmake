# The folders of include/mnemo/ form layers: a header includes only headers of its own
# folder or of lower ones, so no folder loop can form. tests/layering/check_layering.cmake
# reads every `#include "mnemo/..."` under include/ and fails naming the first include
# that goes up or sideways; it needs no build and runs as a ctest.
add_test(NAME layering.includes
         COMMAND ${CMAKE_COMMAND} -DMNEMO_INCLUDE_DIR=${PROJECT_SOURCE_DIR}/include
                 -P ${CMAKE_CURRENT_LIST_DIR}/layering/check_layering.cmake)
set_tests_properties(layering.includes PROPERTIES LABELS layering TIMEOUT 60)
