# ctest clients_install_test: `cmake --install --component client` into a temporary prefix, then
# build the example program against it using only pkg-config, and run it without a daemon (it must
# link, start, and fail with the "not running" message).
# -DBUILD_DIR=... -DSOURCE_DIR=... -DCXX=...
set(prefix ${BUILD_DIR}/tests/clients/install-check)
file(REMOVE_RECURSE ${prefix})
execute_process(COMMAND ${CMAKE_COMMAND} --install ${BUILD_DIR} --component client --prefix ${prefix}
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "cmake --install failed: ${out}${err}")
endif()
foreach(f include/vkstream/client.h include/vkstream/types.h include/vkstream/value.h include/vkstream/errors.h)
  if(NOT EXISTS ${prefix}/${f})
    message(FATAL_ERROR "not installed: ${f}")
  endif()
endforeach()
file(GLOB_RECURSE pc_files ${prefix}/*/vkstream-client.pc)
list(LENGTH pc_files n)
if(NOT n EQUAL 1)
  message(FATAL_ERROR "expected one vkstream-client.pc under ${prefix}, found: ${pc_files}")
endif()
get_filename_component(pc_dir ${pc_files} DIRECTORY)
set(ENV{PKG_CONFIG_PATH} ${pc_dir})
execute_process(COMMAND pkg-config --cflags --libs vkstream-client
                RESULT_VARIABLE rc OUTPUT_VARIABLE flags ERROR_VARIABLE err OUTPUT_STRIP_TRAILING_WHITESPACE)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "pkg-config vkstream-client failed: ${err}")
endif()
separate_arguments(flags UNIX_COMMAND "${flags}")
execute_process(COMMAND ${CXX} -std=c++20 ${SOURCE_DIR}/clients/cpp/examples/stream_example.cpp -o ${prefix}/stream_example ${flags}
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "building the example against the installed library failed: ${out}${err}")
endif()
execute_process(COMMAND ${prefix}/stream_example --socket ${prefix}/no-daemon.sock
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL 1 OR NOT err MATCHES "vkstreamd is not running")
  message(FATAL_ERROR "installed example: expected exit 1 and 'vkstreamd is not running', got ${rc}: ${out}${err}")
endif()
file(REMOVE_RECURSE ${prefix})
message(STATUS "installed client library builds and runs")
