# SPDX-License-Identifier: MIT
# Debian packages: `cpack -G DEB` in a build tree (tests/package/check_deb.cmake
# builds them and installs them into a scratch root).
#   libreactor<major>  the shared libraries (a shared build only)
#   libreactor-dev     headers, static archives, the .so links, the CMake and
#                      pkg-config files, the docs and the examples' sources
# A static build (the default) makes libreactor-dev alone, depending on no
# runtime package. Dependencies are written here rather than computed by
# dpkg-shlibdeps, which a minimal Debian lacks: the C++ runtime of the
# compiler that built the package, and fmt.
set(CPACK_PACKAGE_NAME reactor)
set(CPACK_PACKAGE_VENDOR "The reactor project")
set(CPACK_PACKAGE_CONTACT "The reactor project <reactor@localhost>")
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "${PROJECT_DESCRIPTION}")
set(CPACK_RESOURCE_FILE_LICENSE ${PROJECT_SOURCE_DIR}/LICENSE)
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_GENERATOR DEB)
set(CPACK_STRIP_FILES ON)  # as dh_strip does: debug information is not shipped
set(CPACK_DEB_COMPONENT_INSTALL ON)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_RELEASE 1)
set(CPACK_DEBIAN_PACKAGE_HOMEPAGE "https://localhost/reactor")

set(reactor_runtime_package libreactor${PROJECT_VERSION_MAJOR})
set(CPACK_DEBIAN_RUNTIME_PACKAGE_NAME ${reactor_runtime_package})
set(CPACK_DEBIAN_RUNTIME_PACKAGE_SECTION libs)
set(CPACK_DEBIAN_RUNTIME_PACKAGE_DEPENDS "libc6 (>= 2.34), libstdc++6 (>= 12), libgcc-s1, libfmt9")
set(reactor_dev_depends "libfmt-dev")
if(TARGET reactor_tls)  # libreactor_tls.so, and its headers' users link OpenSSL
  string(APPEND CPACK_DEBIAN_RUNTIME_PACKAGE_DEPENDS ", libssl3 (>= 3.0)")
  string(APPEND reactor_dev_depends ", libssl-dev (>= 3.0)")
endif()
set(CPACK_DEBIAN_RUNTIME_DESCRIPTION "${PROJECT_DESCRIPTION} (shared libraries)
 libreactor.so, libreactor_futures.so and libreactor_tls.so: a callback and
 future based event loop (timers, signals, sockets, TLS, streams, subprocesses);
 libreactor_sim_guard.so, which its simulated worlds' tests link.")
# The shlibs file and the ldconfig trigger a Debian shared library package has.
set(CPACK_DEBIAN_RUNTIME_PACKAGE_GENERATE_SHLIBS ON)
set(CPACK_DEBIAN_RUNTIME_PACKAGE_GENERATE_SHLIBS_POLICY "=")

set(CPACK_DEBIAN_DEVELOPMENT_PACKAGE_NAME libreactor-dev)
set(CPACK_DEBIAN_DEVELOPMENT_PACKAGE_SECTION libdevel)
set(CPACK_DEBIAN_DEVELOPMENT_DESCRIPTION "${PROJECT_DESCRIPTION} (development files)
 Headers, static libraries, CMake and pkg-config files, guides and example
 sources of reactor, a small C++20 event loop with callbacks and futures.")
if(BUILD_SHARED_LIBS)
  set(CPACK_COMPONENTS_ALL runtime development)
  set(CPACK_DEBIAN_DEVELOPMENT_PACKAGE_DEPENDS
      "${reactor_runtime_package} (= ${PROJECT_VERSION}-${CPACK_DEBIAN_PACKAGE_RELEASE}), ${reactor_dev_depends}")
else()
  set(CPACK_COMPONENTS_ALL development)
  set(CPACK_DEBIAN_DEVELOPMENT_PACKAGE_DEPENDS "${reactor_dev_depends}")
endif()
include(CPack)
