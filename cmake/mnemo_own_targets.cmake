# Flags for mnemo's own tests, benches and examples (never for the mnemo target).
# mnemo_strict(target): warnings as errors plus the ISA chosen by MNEMO_ISA.
function(mnemo_strict target)
  target_compile_options(${target} PRIVATE -Wall -Wextra -Wpedantic -Werror)
  # GCC 12 at -O3 reports false -Warray-bounds / -Wstringop-overflow / -Wrestrict inside
  # libstdc++'s std::string (operator+ chains on literals), depending on a literal's
  # length and on inlining; GCC 13 no longer does. ASan checks the real bounds at run time.
  if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU" AND CMAKE_CXX_COMPILER_VERSION VERSION_LESS 13)
    target_compile_options(${target} PRIVATE -Wno-array-bounds -Wno-stringop-overflow
                                             -Wno-restrict)
  endif()
  if(MNEMO_ISA STREQUAL "scalar")
    target_compile_definitions(${target} PRIVATE MNEMO_FORCE_SCALAR=1)
  elseif(MNEMO_ISA STREQUAL "native")
    include(CheckCXXCompilerFlag)
    check_cxx_compiler_flag(-march=native MNEMO_HAS_MARCH_NATIVE)
    if(MNEMO_HAS_MARCH_NATIVE)
      target_compile_options(${target} PRIVATE -march=native)
    endif()
  else()
    message(FATAL_ERROR "MNEMO_ISA must be native or scalar, not '${MNEMO_ISA}'")
  endif()
  # Our targets share one compiled copy of the native kernels; the compiled libraries
  # (mnemo::engine, mnemo::c) carry their own, and the no-exceptions check compiles alone.
  if(MNEMO_KERNELS_LIBRARY AND NOT target MATCHES "^mnemo_(kernels|kernel_objects|other_isa_kernel_objects|engine|c|noexcept_check)$")
    target_link_libraries(${target} PRIVATE mnemo_kernels)
  endif()
endfunction()

# mnemo_kernels: the weight products and the attention kernels of the native ISA
# (src/kernels/), compiled once instead of in every test, example and bench that runs a
# model; MNEMO_EXTERN_KERNELS makes the headers declare them extern (docs/compile-time.md).
# Not installed: it is compiled with our MNEMO_ISA flags. The native objects are
# position-independent so that mnemo::engine (also linked into the shared mnemo::c) takes
# them as they are instead of compiling the same kernels a second time. The other
# compiled ISAs' kernels (MNEMO_EXTERN_OTHER_ISA_KERNELS), which only the tests and
# benches comparing ISAs call, are in mnemo_kernels alone.
option(MNEMO_KERNELS_LIBRARY "Compile the native kernels once for our own targets" ON)
if(MNEMO_KERNELS_LIBRARY)
  add_library(mnemo_kernel_objects OBJECT ${PROJECT_SOURCE_DIR}/src/kernels/products.cpp
                                          ${PROJECT_SOURCE_DIR}/src/kernels/attention.cpp)
  target_link_libraries(mnemo_kernel_objects PUBLIC mnemo::mnemo)
  target_compile_definitions(mnemo_kernel_objects PUBLIC MNEMO_EXTERN_KERNELS)
  set_target_properties(mnemo_kernel_objects PROPERTIES POSITION_INDEPENDENT_CODE ON)
  mnemo_strict(mnemo_kernel_objects)
  add_library(mnemo_other_isa_kernel_objects OBJECT
              ${PROJECT_SOURCE_DIR}/src/kernels/other_isas.cpp)
  target_link_libraries(mnemo_other_isa_kernel_objects PUBLIC mnemo::mnemo)
  target_compile_definitions(mnemo_other_isa_kernel_objects
                             PUBLIC MNEMO_EXTERN_KERNELS MNEMO_EXTERN_OTHER_ISA_KERNELS)
  mnemo_strict(mnemo_other_isa_kernel_objects)
  add_library(mnemo_kernels STATIC $<TARGET_OBJECTS:mnemo_kernel_objects>
                                   $<TARGET_OBJECTS:mnemo_other_isa_kernel_objects>)
  target_link_libraries(mnemo_kernels PUBLIC mnemo::mnemo)
  target_compile_definitions(mnemo_kernels PUBLIC MNEMO_EXTERN_KERNELS
                                                  MNEMO_EXTERN_OTHER_ISA_KERNELS)
endif()
