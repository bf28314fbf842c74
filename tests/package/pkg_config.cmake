# SPDX-License-Identifier: MIT
# pkg-config from an install tree: installs the built project into a scratch
# prefix, then builds one-file programs the way a Makefile user would,
#   c++ prog.cpp $(pkg-config --cflags --libs reactor-futures)
# (tests/install_consumer/futures.cpp, scheduler.cpp with reactor.pc,
# sim_guard.cpp with reactor-sim-guard.pc, and tls.cpp with reactor-tls.pc
# when the build has reactor::tls),
# and runs them; and faults.cpp, preloading the library
# `pkg-config --variable=preload reactor-syscall-faults` names. Skipped, saying so, where pkg-config is not installed.
find_program(PKG_CONFIG NAMES pkg-config pkgconf)
if(NOT PKG_CONFIG)
  message(STATUS "SKIPPED: no pkg-config here (Debian: apt-get install pkgconf)")
  return()
endif()
string(RANDOM LENGTH 12 run_id)
set(WORK_DIR ${WORK_DIR}/${run_id})
file(REMOVE_RECURSE ${WORK_DIR})
set(sanitize_flags "")
if(SANITIZE MATCHES "^(ON|on|address|true|1|yes)$")
  set(sanitize_flags -fsanitize=address,undefined)
endif()
execute_process(COMMAND ${CMAKE_COMMAND} --install ${BUILD_DIR} --prefix ${WORK_DIR}/prefix
                OUTPUT_QUIET COMMAND_ERROR_IS_FATAL ANY)
file(GLOB pc_dirs ${WORK_DIR}/prefix/*/pkgconfig ${WORK_DIR}/prefix/*/*/pkgconfig)
set(ENV{PKG_CONFIG_PATH} "${pc_dirs}")
execute_process(COMMAND ${PKG_CONFIG} --modversion reactor-futures OUTPUT_VARIABLE version
                OUTPUT_STRIP_TRAILING_WHITESPACE COMMAND_ERROR_IS_FATAL ANY)
if(NOT version STREQUAL VERSION)
  message(FATAL_ERROR "pkg-config --modversion reactor-futures: '${version}', the project is ${VERSION}")
endif()
# The shared libraries, when there are any, are found where they were installed.
file(GLOB lib_dirs ${WORK_DIR}/prefix/lib ${WORK_DIR}/prefix/lib64 ${WORK_DIR}/prefix/lib/*-linux-gnu*)
string(REPLACE ";" ":" lib_path "${lib_dirs}")
set(ENV{LD_LIBRARY_PATH} "${lib_path}")
set(pairs "reactor-futures:futures" "reactor:scheduler" "reactor-sim-guard:sim_guard")
if(TLS)
  list(APPEND pairs "reactor-tls:tls" "reactor-futures-tls:streams_tls")
endif()
foreach(pair IN LISTS pairs)
  string(REPLACE ":" ";" pair "${pair}")
  list(GET pair 0 package)
  list(GET pair 1 program)
  execute_process(COMMAND ${PKG_CONFIG} --cflags --libs ${package} OUTPUT_VARIABLE flags
                  OUTPUT_STRIP_TRAILING_WHITESPACE COMMAND_ERROR_IS_FATAL ANY)
  message(STATUS "pkg-config --cflags --libs ${package}: ${flags}")
  if(NOT flags MATCHES "-lreactor( |$)")
    message(FATAL_ERROR "pkg-config --libs ${package} does not name libreactor: ${flags}")
  endif()
  separate_arguments(flags UNIX_COMMAND "${flags}")
  execute_process(COMMAND ${CXX} ${sanitize_flags} ${SOURCE_DIR}/tests/install_consumer/${program}.cpp ${flags}
                          -o ${WORK_DIR}/${program}
                  RESULT_VARIABLE rc ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "c++ ${program}.cpp $(pkg-config --cflags --libs ${package}) failed:\n${err}")
  endif()
  execute_process(COMMAND ${WORK_DIR}/${program} OUTPUT_VARIABLE out ERROR_VARIABLE err RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "${program} (built with pkg-config): exit ${rc}\n${out}${err}")
  endif()
  string(STRIP "${out}" out)
  message(STATUS "${out}")
endforeach()
# The fault seam: reactor-syscall-faults.pc names the installed library to
# preload; the faults program, given that path, preloads it and sees a call fail.
execute_process(COMMAND ${PKG_CONFIG} --variable=preload reactor-syscall-faults OUTPUT_VARIABLE preload
                OUTPUT_STRIP_TRAILING_WHITESPACE COMMAND_ERROR_IS_FATAL ANY)
if(NOT EXISTS "${preload}")
  message(FATAL_ERROR "pkg-config --variable=preload reactor-syscall-faults: '${preload}' does not exist")
endif()
execute_process(COMMAND ${PKG_CONFIG} --cflags --libs reactor OUTPUT_VARIABLE flags
                OUTPUT_STRIP_TRAILING_WHITESPACE COMMAND_ERROR_IS_FATAL ANY)
separate_arguments(flags UNIX_COMMAND "${flags}")
execute_process(COMMAND ${CXX} ${sanitize_flags} "-DFAULTS_LIBRARY=\"${preload}\""
                        ${SOURCE_DIR}/tests/install_consumer/faults.cpp ${flags} -o ${WORK_DIR}/faults
                RESULT_VARIABLE rc ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "c++ faults.cpp $(pkg-config --cflags --libs reactor) failed:\n${err}")
endif()
execute_process(COMMAND ${WORK_DIR}/faults OUTPUT_VARIABLE out ERROR_VARIABLE err RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "faults (built with pkg-config, preloading ${preload}): exit ${rc}\n${out}${err}")
endif()
string(STRIP "${out}" out)
message(STATUS "${out}")
file(REMOVE_RECURSE ${WORK_DIR})
