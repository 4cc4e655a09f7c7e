# The HTTP server (examples/server.cpp, target mnemo-server) and its tests need
# cpp-httplib and nlohmann-json (Debian: libcpp-httplib-dev, nlohmann-json3-dev). The
# library under include/mnemo/serve/ needs neither, except serve/openai_request.hpp and
# serve/openai_response.hpp (nlohmann-json). Sets MNEMO_HAVE_SERVE_DEPS and the targets mnemo_httplib and
# nlohmann_json::nlohmann_json.
set(MNEMO_HAVE_SERVE_DEPS OFF)
find_package(nlohmann_json 3 QUIET)
# Upstream cpp-httplib installs httplibConfig.cmake; Debian's package has only a
# pkg-config file (a compiled libcpp-httplib with TLS and compression).
find_package(httplib CONFIG QUIET)
if(TARGET mnemo_httplib)
elseif(TARGET httplib::httplib)
  add_library(mnemo_httplib INTERFACE)
  target_link_libraries(mnemo_httplib INTERFACE httplib::httplib)
else()
  find_package(PkgConfig QUIET)
  if(PkgConfig_FOUND)
    pkg_check_modules(MNEMO_CPP_HTTPLIB QUIET IMPORTED_TARGET GLOBAL cpp-httplib)
    if(MNEMO_CPP_HTTPLIB_FOUND)
      add_library(mnemo_httplib INTERFACE)
      target_link_libraries(mnemo_httplib INTERFACE PkgConfig::MNEMO_CPP_HTTPLIB)
    endif()
  endif()
endif()
find_package(Threads REQUIRED)

if(nlohmann_json_FOUND AND TARGET mnemo_httplib AND TARGET mnemo_engine)
  set(MNEMO_HAVE_SERVE_DEPS ON)
elseif(NOT MNEMO_SERVE_DEPS_REPORTED)
  set(MNEMO_SERVE_DEPS_REPORTED ON CACHE INTERNAL "")
  message(STATUS "mnemo: mnemo-server and its tests are not built: they need cpp-httplib "
                 "and nlohmann-json (tools/setup-deps.sh) and MNEMO_BUILD_ENGINE")
endif()
