# Decode speed at a short and a long context, alternating in one process (bench/context_decode.cpp):
# whether sliding-window layers keep long-context decode flat.
if(TARGET vks_vulkan AND TARGET vks_model)
  add_executable(vks_bench_context_decode ${CMAKE_CURRENT_LIST_DIR}/context_decode.cpp)
  target_link_libraries(vks_bench_context_decode PRIVATE vks_bench_runner_steps CLI11::CLI11 spdlog::spdlog)
  vks_warnings(vks_bench_context_decode)
endif()
