# SPDX-License-Identifier: MIT
# Installs the already-built project into a scratch prefix, then, for each of
# LINKS ("static", and "shared" in a shared build), configures and builds the
# outside project beside this file (find_package(reactor CONFIG REQUIRED): one
# program per public area) and runs every program. A shared program must need
# libreactor.so.<major> or libreactor_futures.so.<major> (its ELF says so: the
# loop-only programs need only the first), a static one neither; none needs
# libsyscall_faults.so, which the faults program preloads into itself.
# A fresh directory per run, removed afterwards: two runs of the suite on one
# build tree at once (a loaded CI machine, ctest twice) must not share it.
string(RANDOM LENGTH 12 run_id)
set(WORK_DIR ${WORK_DIR}/${run_id})
file(REMOVE_RECURSE ${WORK_DIR})
set(extra_flags "")
if(SANITIZE MATCHES "^(ON|on|address|true|1|yes)$")  # the installed library was built with sanitizers: so must its consumer be
  set(extra_flags "-DCMAKE_CXX_FLAGS=-fsanitize=address,undefined" "-DCMAKE_EXE_LINKER_FLAGS=-fsanitize=address,undefined")
elseif(SANITIZE STREQUAL "thread")
  set(extra_flags "-DCMAKE_CXX_FLAGS=-fsanitize=thread" "-DCMAKE_EXE_LINKER_FLAGS=-fsanitize=thread")
endif()
execute_process(COMMAND ${CMAKE_COMMAND} --install ${BUILD_DIR} --prefix ${WORK_DIR}/prefix
                OUTPUT_QUIET COMMAND_ERROR_IS_FATAL ANY)
string(REPLACE "," ";" LINKS "${LINKS}")
set(areas scheduler net futures streams toolkit processes testing faults sim_guard)
if(EXPECT_TLS)  # the package was built with reactor::tls: it must export it, and it must work
  list(APPEND areas tls streams_tls)
endif()
foreach(link IN LISTS LINKS)
  set(build ${WORK_DIR}/build-${link})
  execute_process(COMMAND ${CMAKE_COMMAND} -S ${SOURCE_DIR}/tests/install_consumer -B ${build}
                          -DCMAKE_PREFIX_PATH=${WORK_DIR}/prefix -DCONSUMER_LINK=${link} ${extra_flags}
                  OUTPUT_QUIET COMMAND_ERROR_IS_FATAL ANY)
  execute_process(COMMAND ${CMAKE_COMMAND} --build ${build} -j2 OUTPUT_QUIET COMMAND_ERROR_IS_FATAL ANY)
  foreach(area IN LISTS areas)
    if(NOT EXISTS ${build}/${area})
      message(FATAL_ERROR "${link}: no program ${area} (does the package export reactor::${area}?)")
    endif()
    execute_process(COMMAND ${build}/${area} OUTPUT_VARIABLE out ERROR_VARIABLE err RESULT_VARIABLE rc)
    if(NOT rc EQUAL 0 OR NOT out MATCHES "^${area}: ")
      message(FATAL_ERROR "${link} ${area}: exit ${rc}\n${out}${err}")
    endif()
    execute_process(COMMAND readelf -d ${build}/${area} OUTPUT_VARIABLE elf COMMAND_ERROR_IS_FATAL ANY)
    if(elf MATCHES "libsyscall_faults")  # the fault seam is preloaded, never linked
      message(FATAL_ERROR "${link} ${area}: needs the fault seam:\n${elf}")
    endif()
    string(FIND "${elf}" "[libreactor" needs_shared)
    if(link STREQUAL "shared" AND needs_shared EQUAL -1)
      message(FATAL_ERROR "shared ${area}: needs no libreactor*.so:\n${elf}")
    elseif(link STREQUAL "static" AND NOT needs_shared EQUAL -1)
      message(FATAL_ERROR "static ${area}: needs a libreactor*.so:\n${elf}")
    endif()
    string(STRIP "${out}" out)
    message(STATUS "${link}: ${out}")
  endforeach()
endforeach()
file(REMOVE_RECURSE ${WORK_DIR})
