# The compiled part of mnemo; everything else stays header-only.
#
# mnemo::engine (static, position-independent): engine::open with every
# engine_backend_for<Model, Memory> instantiation it offers, compiled once in
# src/engine/*.cpp (one file per memory family, so they build in parallel). C++ programs
# that use mnemo::engine (include/mnemo/engine/engine.hpp) link it and compile none of
# the models or memories behind it.
#
# mnemo::c (shared): the C API over the engine (include/mnemo/c/mnemo.h,
# src/c/mnemo.cpp), for C, Python's ctypes, Rust or Go.
option(MNEMO_BUILD_ENGINE "Build the run-time handle library mnemo::engine"
       ${_mnemo_own_default})
option(MNEMO_BUILD_C_API "Build the C API shared library mnemo::c (needs MNEMO_BUILD_ENGINE)"
       ${_mnemo_own_default})
if(MNEMO_BUILD_C_API AND NOT MNEMO_BUILD_ENGINE)
  message(FATAL_ERROR "MNEMO_BUILD_C_API needs MNEMO_BUILD_ENGINE=ON (mnemo::c wraps mnemo::engine)")
endif()

# Our own build compiles them like the tests (warnings as errors, MNEMO_ISA); a host
# project's add_subdirectory() gets its own flags only.
function(_mnemo_compiled_flags target)
  if(COMMAND mnemo_strict)
    mnemo_strict(${target})
  endif()
endfunction()

if(MNEMO_BUILD_ENGINE)
  add_library(mnemo_engine STATIC
              "${PROJECT_SOURCE_DIR}/src/engine/open.cpp"
              "${PROJECT_SOURCE_DIR}/src/engine/attention_full.cpp"
              "${PROJECT_SOURCE_DIR}/src/engine/attention_split.cpp"
              "${PROJECT_SOURCE_DIR}/src/engine/attention_bounded.cpp"
              "${PROJECT_SOURCE_DIR}/src/engine/attention_iswa.cpp"
              "${PROJECT_SOURCE_DIR}/src/engine/recurrent.cpp")
  # Its models' kernels, compiled once for the files above; in our own build the objects
  # of mnemo_kernels, which are compiled with the same flags (cmake/mnemo_own_targets.cmake).
  if(TARGET mnemo_kernel_objects)
    target_sources(mnemo_engine PRIVATE $<TARGET_OBJECTS:mnemo_kernel_objects>)
  else()
    target_sources(mnemo_engine PRIVATE "${PROJECT_SOURCE_DIR}/src/kernels/products.cpp"
                                        "${PROJECT_SOURCE_DIR}/src/kernels/attention.cpp")
  endif()
  add_library(mnemo::engine ALIAS mnemo_engine)
  target_link_libraries(mnemo_engine PUBLIC mnemo::mnemo)
  target_include_directories(mnemo_engine PRIVATE "${PROJECT_SOURCE_DIR}/src")
  target_compile_definitions(mnemo_engine PRIVATE MNEMO_EXTERN_KERNELS)
  # It also goes into the shared mnemo::c.
  set_target_properties(mnemo_engine PROPERTIES POSITION_INDEPENDENT_CODE ON EXPORT_NAME engine)
  _mnemo_compiled_flags(mnemo_engine)
endif()

if(MNEMO_BUILD_C_API)
  add_library(mnemo_c SHARED "${PROJECT_SOURCE_DIR}/src/c/mnemo.cpp")
  add_library(mnemo::c ALIAS mnemo_c)
  target_link_libraries(mnemo_c PUBLIC mnemo::mnemo PRIVATE mnemo::engine)
  set_target_properties(mnemo_c PROPERTIES VERSION ${PROJECT_VERSION}
                                           SOVERSION ${PROJECT_VERSION_MAJOR}
                                           EXPORT_NAME c)
  _mnemo_compiled_flags(mnemo_c)
endif()

if(MNEMO_INSTALL AND MNEMO_BUILD_ENGINE)
  set(_mnemo_compiled mnemo_engine)
  if(MNEMO_BUILD_C_API)
    list(APPEND _mnemo_compiled mnemo_c)
    install(FILES "${PROJECT_SOURCE_DIR}/include/mnemo/c/mnemo.h"
            DESTINATION "${CMAKE_INSTALL_INCLUDEDIR}/mnemo/c")
  endif()
  install(TARGETS ${_mnemo_compiled} EXPORT mnemoCTargets
          LIBRARY DESTINATION "${CMAKE_INSTALL_LIBDIR}"
          ARCHIVE DESTINATION "${CMAKE_INSTALL_LIBDIR}"
          RUNTIME DESTINATION "${CMAKE_INSTALL_BINDIR}")
  # A file of its own: the header-only package stays architecture-independent, and
  # mnemoConfig.cmake adds mnemo::engine (and mnemo::c) when this file was installed.
  install(EXPORT mnemoCTargets
          NAMESPACE mnemo::
          FILE mnemoCTargets.cmake
          DESTINATION "${MNEMO_INSTALL_CMAKEDIR}")
endif()
