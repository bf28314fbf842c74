# Installs the already-built project into a scratch prefix, then configures and
# builds a separate project that uses find_package(reactor CONFIG REQUIRED),
# and runs it.
# A fresh directory per run, removed afterwards: two runs of the suite on one
# build tree at once (a loaded CI machine, ctest twice) must not share it.
string(RANDOM LENGTH 12 run_id)
set(WORK_DIR ${WORK_DIR}/${run_id})
file(REMOVE_RECURSE ${WORK_DIR})
set(extra_flags "")
if(SANITIZE)  # the installed library was built with sanitizers: so must its consumer be
  set(extra_flags "-DCMAKE_CXX_FLAGS=-fsanitize=address,undefined" "-DCMAKE_EXE_LINKER_FLAGS=-fsanitize=address,undefined")
endif()
execute_process(COMMAND ${CMAKE_COMMAND} --install ${BUILD_DIR} --prefix ${WORK_DIR}/prefix
                COMMAND_ERROR_IS_FATAL ANY)
execute_process(COMMAND ${CMAKE_COMMAND} -S ${SOURCE_DIR}/tests/install_consumer -B ${WORK_DIR}/build
                        -DCMAKE_PREFIX_PATH=${WORK_DIR}/prefix ${extra_flags} COMMAND_ERROR_IS_FATAL ANY)
execute_process(COMMAND ${CMAKE_COMMAND} --build ${WORK_DIR}/build COMMAND_ERROR_IS_FATAL ANY)
execute_process(COMMAND ${WORK_DIR}/build/consumer OUTPUT_VARIABLE out COMMAND_ERROR_IS_FATAL ANY)
if(NOT out MATCHES "consumer: 3 callbacks ran")
  message(FATAL_ERROR "unexpected consumer output: ${out}")
endif()
# reactor::tls is exported when it was built (EXPECT_TLS), and works.
if(EXPECT_TLS)
  if(NOT EXISTS ${WORK_DIR}/build/consumer_tls)
    message(FATAL_ERROR "the installed package does not export reactor::tls")
  endif()
  execute_process(COMMAND ${WORK_DIR}/build/consumer_tls OUTPUT_VARIABLE tls_out COMMAND_ERROR_IS_FATAL ANY)
  if(NOT tls_out MATCHES "consumer_tls: contexts made")
    message(FATAL_ERROR "unexpected consumer_tls output: ${tls_out}")
  endif()
  string(APPEND out "${tls_out}")
endif()
file(REMOVE_RECURSE ${WORK_DIR})
message(STATUS "installed package works: ${out}")
