# HTTP front end benchmark: added latency of HTTP vs the Unix socket and the throughput ratio at 16
# concurrent streams, against one vkstreamd.
if(TARGET vks_server)
  add_executable(http_bench ${CMAKE_CURRENT_LIST_DIR}/http_bench.cpp)
  target_link_libraries(http_bench PRIVATE nlohmann_json::nlohmann_json CLI11::CLI11 Threads::Threads)
  target_compile_definitions(http_bench PRIVATE VKS_DAEMON_PATH="$<TARGET_FILE:vkstreamd>")
  add_dependencies(http_bench vkstreamd)
  vks_warnings(http_bench)
endif()
