# mnemo::c: the compiled part of mnemo, a shared library holding engine::open with its
# model x memory instantiations and the C API over it (include/mnemo/c/mnemo.h,
# src/c/mnemo.cpp). Everything else stays header-only. C++ programs that use
# mnemo::engine link it too.
option(MNEMO_BUILD_C_API "Build the engine / C API shared library mnemo::c"
       ${_mnemo_own_default})

if(MNEMO_BUILD_C_API)
  add_library(mnemo_c SHARED "${PROJECT_SOURCE_DIR}/src/c/mnemo.cpp")
  add_library(mnemo::c ALIAS mnemo_c)
  target_link_libraries(mnemo_c PUBLIC mnemo::mnemo)
  set_target_properties(mnemo_c PROPERTIES VERSION ${PROJECT_VERSION}
                                           SOVERSION ${PROJECT_VERSION_MAJOR}
                                           EXPORT_NAME c)
  # Our own build compiles it like the tests (warnings as errors, MNEMO_ISA); a host
  # project's add_subdirectory() gets its own flags only.
  if(COMMAND mnemo_strict)
    mnemo_strict(mnemo_c)
  endif()

  if(MNEMO_INSTALL)
    install(TARGETS mnemo_c EXPORT mnemoCTargets
            LIBRARY DESTINATION "${CMAKE_INSTALL_LIBDIR}"
            ARCHIVE DESTINATION "${CMAKE_INSTALL_LIBDIR}"
            RUNTIME DESTINATION "${CMAKE_INSTALL_BINDIR}")
    install(FILES "${PROJECT_SOURCE_DIR}/include/mnemo/c/mnemo.h"
            DESTINATION "${CMAKE_INSTALL_INCLUDEDIR}/mnemo/c")
    # A file of its own: the header-only package stays architecture-independent, and
    # mnemoConfig.cmake adds mnemo::c when this file was installed.
    install(EXPORT mnemoCTargets
            NAMESPACE mnemo::
            FILE mnemoCTargets.cmake
            DESTINATION "${MNEMO_INSTALL_CMAKEDIR}")
  endif()
endif()
