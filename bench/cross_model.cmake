# Cross-model latency (bench/cross_model_latency.cpp): model B's inter-token latency alone and while
# model A prefills a long prompt in the same vkstreamd (issue 33's scheduler figure).
if(TARGET vks_protocol AND TARGET vkstreamd)
  add_executable(vks_bench_cross_model ${CMAKE_CURRENT_LIST_DIR}/cross_model_latency.cpp)
  target_link_libraries(vks_bench_cross_model PRIVATE vks_protocol CLI11::CLI11 Threads::Threads)
  target_compile_definitions(vks_bench_cross_model PRIVATE VKS_DAEMON_PATH="$<TARGET_FILE:vkstreamd>")
  vks_warnings(vks_bench_cross_model)
endif()
