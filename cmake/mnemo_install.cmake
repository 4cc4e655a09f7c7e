# Install and export rules, so that a host project can do
#
#   find_package(mnemo 0.1 REQUIRED)
#   target_link_libraries(app PRIVATE mnemo::mnemo)
#
# after `cmake --install`. mnemo is header-only: the package is the headers, the
# exported INTERFACE target and its config/version files, and it is the same on every
# architecture (ARCH_INDEPENDENT). ISA flags are the consumer's choice, so the export
# carries none; a check below keeps it that way.

# Installing is on for a top-level build and off under add_subdirectory(), where the
# host project decides what it installs.
option(MNEMO_INSTALL "Generate mnemo's install and export rules" ${_mnemo_top})

set(MNEMO_INSTALL_CMAKEDIR "${CMAKE_INSTALL_DATADIR}/cmake/mnemo"
    CACHE STRING "Where mnemoConfig.cmake is installed, relative to the prefix")

# No -m<isa> flag may reach the consumer through the target.
foreach(_mnemo_prop INTERFACE_COMPILE_OPTIONS INTERFACE_LINK_OPTIONS)
  get_target_property(_mnemo_opts mnemo ${_mnemo_prop})
  if(_mnemo_opts AND _mnemo_opts MATCHES "(^|;)-m(arch|tune|cpu|avx|fma|f16c|sse|neon)")
    message(FATAL_ERROR "mnemo::mnemo must not carry ISA flags, but ${_mnemo_prop} is "
                        "'${_mnemo_opts}'. Put them on your own targets instead.")
  endif()
endforeach()

if(MNEMO_INSTALL)
  install(TARGETS mnemo EXPORT mnemoTargets)
  install(DIRECTORY "${mnemo_SOURCE_DIR}/include/"
          DESTINATION "${CMAKE_INSTALL_INCLUDEDIR}"
          FILES_MATCHING PATTERN "*.hpp" PATTERN "*.inl")
  install(EXPORT mnemoTargets
          NAMESPACE mnemo::
          FILE mnemoTargets.cmake
          DESTINATION "${MNEMO_INSTALL_CMAKEDIR}")

  configure_package_config_file(
    "${mnemo_SOURCE_DIR}/cmake/mnemoConfig.cmake.in"
    "${mnemo_BINARY_DIR}/mnemoConfig.cmake"
    INSTALL_DESTINATION "${MNEMO_INSTALL_CMAKEDIR}")
  write_basic_package_version_file(
    "${mnemo_BINARY_DIR}/mnemoConfigVersion.cmake"
    VERSION "${PROJECT_VERSION}"
    COMPATIBILITY SameMajorVersion
    ARCH_INDEPENDENT)
  install(FILES "${mnemo_BINARY_DIR}/mnemoConfig.cmake"
                "${mnemo_BINARY_DIR}/mnemoConfigVersion.cmake"
          DESTINATION "${MNEMO_INSTALL_CMAKEDIR}")
endif()
