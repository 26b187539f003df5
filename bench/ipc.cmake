# IPC benchmark (owner G): the same workload through the Unix socket, ZeroMQ and the Engine in
# process; prints tokens/s ratios and the added latency of a minimal request.
if(TARGET vks_server)
  add_executable(ipc_bench ${CMAKE_CURRENT_LIST_DIR}/ipc_bench.cpp)
  target_link_libraries(ipc_bench PRIVATE vks_server vks_protocol cppzmq CLI11::CLI11 Threads::Threads)
  target_compile_definitions(ipc_bench PRIVATE VKS_DAEMON_PATH="$<TARGET_FILE:vkstreamd>")
  vks_warnings(ipc_bench)
endif()
