# SPDX-License-Identifier: MIT
# The Debian packages (a shared build only; cmake/packaging.cmake): runs
# `cpack -G DEB` on the build tree, checks what each package holds and
# depends on, installs both with dpkg into a scratch root (its own dpkg
# database; maintainer scripts not run, dependencies taken from the machine),
# then builds the install_consumer programs against that root, with CMake and
# with pkg-config, and runs them.
string(RANDOM LENGTH 12 run_id)
set(WORK_DIR ${WORK_DIR}/${run_id})
file(REMOVE_RECURSE ${WORK_DIR})
file(MAKE_DIRECTORY ${WORK_DIR})
execute_process(COMMAND ${CPACK} -G DEB --config ${BUILD_DIR}/CPackConfig.cmake -B ${WORK_DIR}/packages
                OUTPUT_VARIABLE out ERROR_VARIABLE err RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "cpack -G DEB failed:\n${out}${err}")
endif()
file(GLOB runtime_deb ${WORK_DIR}/packages/libreactor${MAJOR}_*.deb)
file(GLOB dev_deb ${WORK_DIR}/packages/libreactor-dev_*.deb)
if(NOT runtime_deb OR NOT dev_deb)
  file(GLOB made ${WORK_DIR}/packages/*.deb)
  message(FATAL_ERROR "expected libreactor${MAJOR} and libreactor-dev packages, cpack made: ${made}")
endif()

# What each holds (dpkg-deb -c) and what it needs (its control file).
function(expect_in deb what)
  execute_process(COMMAND dpkg-deb -c ${deb} OUTPUT_VARIABLE listing COMMAND_ERROR_IS_FATAL ANY)
  execute_process(COMMAND dpkg-deb -f ${deb} Package Depends OUTPUT_VARIABLE control COMMAND_ERROR_IS_FATAL ANY)
  string(STRIP "${what}" what)
  string(REPLACE "\n" ";" what "${what}")
  foreach(pattern IN LISTS what)
    if(NOT listing MATCHES "${pattern}" AND NOT control MATCHES "${pattern}")
      get_filename_component(name ${deb} NAME)
      message(FATAL_ERROR "${name}: nothing matches '${pattern}':\n${control}\n${listing}")
    endif()
  endforeach()
endfunction()
expect_in(${runtime_deb} [[
Package: libreactor[0-9]+
Depends: [^\n]*libfmt9
Depends: [^\n]*libstdc\+\+6
/usr/lib/[^ \n]*libreactor\.so\.[0-9]+\.[0-9]+\.[0-9]+
/usr/lib/[^ \n]*libreactor\.so\.[0-9]+ -> 
/usr/lib/[^ \n]*libreactor_futures\.so\.[0-9]+\.[0-9]+\.[0-9]+
/usr/lib/[^ \n]*libreactor_sim_guard\.so\.[0-9]+\.[0-9]+\.[0-9]+
/usr/share/doc/libreactor[0-9]+/copyright
]])
expect_in(${dev_deb} [[
Package: libreactor-dev
Depends: [^\n]*libreactor[0-9]+ \(= 
Depends: [^\n]*libfmt-dev
/usr/include/reactor/scheduler\.hpp
/usr/include/reactor/version\.hpp
/usr/include/reactor/export\.hpp
/usr/include/reactor/net/connection\.hpp
/usr/include/reactor/testing/virtual_loop\.hpp
/usr/include/reactor/testing/sim/real_time_guard\.hpp
/usr/lib/[^ \n]*libreactor_sim_guard\.a
/usr/lib/[^ \n]*pkgconfig/reactor-sim-guard\.pc
/usr/include/futures/futures\.hpp
/usr/lib/[^ \n]*libreactor\.a
/usr/lib/[^ \n]*libreactor_futures\.a
/usr/lib/[^ \n]*libreactor\.so -> 
/usr/lib/[^ \n]*cmake/reactor/reactorConfig\.cmake
/usr/lib/[^ \n]*cmake/reactor/reactorConfigVersion\.cmake
/usr/lib/[^ \n]*pkgconfig/reactor\.pc
/usr/lib/[^ \n]*pkgconfig/reactor-futures\.pc
/usr/lib/([^ \n]*/)?reactor/libsyscall_faults\.so
/usr/lib/[^ \n]*pkgconfig/reactor-syscall-faults\.pc
/usr/share/doc/reactor/LICENSE
/usr/share/doc/reactor/README\.md
/usr/share/doc/reactor/docs/networking\.md
/usr/share/doc/reactor/examples/09_echo_server/echo_server\.cpp
]])
if(TLS)
  expect_in(${runtime_deb} [[
/usr/lib/[^ \n]*libreactor_tls\.so\.[0-9]+\.[0-9]+\.[0-9]+
/usr/lib/[^ \n]*libreactor_futures_tls\.so\.[0-9]+\.[0-9]+\.[0-9]+
Depends: [^\n]*libssl3
]])
  expect_in(${dev_deb} [[
/usr/include/reactor/tls/connection\.hpp
/usr/lib/[^ \n]*pkgconfig/reactor-tls\.pc
/usr/lib/[^ \n]*pkgconfig/reactor-futures-tls\.pc
/usr/include/futures/tls/stream\.hpp
/usr/lib/[^ \n]*libreactor_tls\.a
Depends: [^\n]*libssl-dev
]])
endif()
foreach(deb ${runtime_deb} ${dev_deb})  # the shared libraries are in one package only
  execute_process(COMMAND dpkg-deb -c ${deb} OUTPUT_VARIABLE listing COMMAND_ERROR_IS_FATAL ANY)
  if(deb STREQUAL dev_deb AND listing MATCHES "(^|\n)-[^\n]*\\.so\\.[0-9]")  # a file, not the dev link
    message(FATAL_ERROR "libreactor-dev holds a versioned shared library:\n${listing}")
  endif()
  if(deb STREQUAL runtime_deb AND listing MATCHES "/include/|\\.a\n|/pkgconfig/|/cmake/")
    message(FATAL_ERROR "the runtime package holds development files:\n${listing}")
  endif()
endforeach()

# Install both into a scratch root with dpkg itself.
set(root ${WORK_DIR}/root)
file(MAKE_DIRECTORY ${root}/var/lib/dpkg/info ${root}/var/lib/dpkg/updates ${root}/var/lib/dpkg/triggers)
file(TOUCH ${root}/var/lib/dpkg/status ${root}/var/lib/dpkg/available)
execute_process(COMMAND dpkg --root=${root} --log=${WORK_DIR}/dpkg.log --force-not-root --force-depends
                             --force-script-chrootless --no-triggers -i ${runtime_deb} ${dev_deb}
                OUTPUT_VARIABLE out ERROR_VARIABLE err RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "dpkg -i into ${root} failed:\n${out}${err}")
endif()
execute_process(COMMAND dpkg --root=${root} -l OUTPUT_VARIABLE installed COMMAND_ERROR_IS_FATAL ANY)
if(NOT installed MATCHES "ii  libreactor-dev" OR NOT installed MATCHES "ii  libreactor${MAJOR}")
  message(FATAL_ERROR "dpkg does not list both packages as installed in ${root}:\n${installed}")
endif()

# Build against the scratch root: CMake, then pkg-config.
file(GLOB_RECURSE so_files ${root}/usr/lib/libreactor.so.${MAJOR})
get_filename_component(lib_dir "${so_files}" DIRECTORY)
set(ENV{LD_LIBRARY_PATH} ${lib_dir})
execute_process(COMMAND ${CMAKE_COMMAND} -S ${SOURCE_DIR}/tests/install_consumer -B ${WORK_DIR}/consumer
                        -DCMAKE_PREFIX_PATH=${root}/usr -DCONSUMER_LINK=shared
                OUTPUT_QUIET COMMAND_ERROR_IS_FATAL ANY)
execute_process(COMMAND ${CMAKE_COMMAND} --build ${WORK_DIR}/consumer -j2 OUTPUT_QUIET COMMAND_ERROR_IS_FATAL ANY)
set(areas scheduler net futures streams toolkit processes testing faults sim_guard)
if(TLS)
  list(APPEND areas tls streams_tls)
endif()
foreach(area IN LISTS areas)
  execute_process(COMMAND ${WORK_DIR}/consumer/${area} OUTPUT_VARIABLE out ERROR_VARIABLE err RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "${area}, built against the installed packages: exit ${rc}\n${out}${err}")
  endif()
endforeach()
find_program(PKG_CONFIG NAMES pkg-config pkgconf)
if(PKG_CONFIG)
  set(ENV{PKG_CONFIG_PATH} ${lib_dir}/pkgconfig)
  execute_process(COMMAND ${PKG_CONFIG} --cflags --libs reactor-futures OUTPUT_VARIABLE flags
                  OUTPUT_STRIP_TRAILING_WHITESPACE COMMAND_ERROR_IS_FATAL ANY)
  separate_arguments(flags UNIX_COMMAND "${flags}")
  execute_process(COMMAND ${CXX} ${SOURCE_DIR}/tests/install_consumer/streams.cpp ${flags} -o ${WORK_DIR}/streams
                  COMMAND_ERROR_IS_FATAL ANY)
  execute_process(COMMAND ${WORK_DIR}/streams COMMAND_ERROR_IS_FATAL ANY OUTPUT_QUIET)
endif()
file(REMOVE_RECURSE ${WORK_DIR})
message(STATUS "libreactor${MAJOR} and libreactor-dev: built, installed by dpkg into a scratch root, used")
